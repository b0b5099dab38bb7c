"""One held-out split for every family that holds rows out (:func:`mlgp.estimator.held_out_split.held_out_split`):
MLGPFClassifier's rows (:func:`mlgp.recipes.held_out.held_out_rows`) and GenEMLCV's
(:class:`~mlgp.estimator.HeldOutSplit`) are the same rows for the same seed and fraction."""

from __future__ import annotations

import numpy as np
import pytest

from mlgp.errors import ArgumentError
from mlgp.estimator import HeldOutSplit

CASES = [(N, fraction, seed) for N in (3, 10, 47, 150, 1001) for fraction in (0.1, 0.25, 0.3, 0.5, 0.9)
         for seed in (0, 5, 123) if 1 <= round(fraction * N) <= N - 1]


@pytest.mark.parametrize("N, fraction, seed", CASES)
def test_mlgpf_and_the_grid_search_hold_out_the_same_rows(N, fraction, seed) -> None:
    from mlgp.recipes.held_out import held_out_rows

    kept, held = held_out_rows(N, fraction, "auto", seed)
    fitting, held_out = HeldOutSplit(fraction, seed).rows(N)
    np.testing.assert_array_equal(held, held_out)
    np.testing.assert_array_equal(kept, fitting)


def test_genemlcv_splits_as_mlgpf_does() -> None:
    """GenEMLCV's splitter (its ``validation_fraction`` and ``random_state``) holds out the rows
    MLGPFClassifier holds out with that fraction and seed."""
    from mlgp.geneml import GenEMLCV
    from mlgp.recipes.held_out import held_out_rows

    fitting, held = next(GenEMLCV(validation_fraction=0.3, random_state=5)._cv().split(np.zeros((150, 2))))
    kept, held_mlgpf = held_out_rows(150, 0.3, "auto", 5)
    np.testing.assert_array_equal(held, held_mlgpf)
    np.testing.assert_array_equal(fitting, kept)


def test_the_rows_are_the_head_of_the_seeds_permutation() -> None:
    """The documented choice: the first round(fraction · N) entries of default_rng(seed).permutation(N)."""
    from mlgp.estimator.held_out_split import held_out_split

    order = np.random.default_rng(7).permutation(40)
    kept, held = held_out_split(40, 0.25, 7)
    np.testing.assert_array_equal(held, np.sort(order[:10]))
    np.testing.assert_array_equal(kept, np.sort(order[10:]))


def test_only_the_count_outside_one_to_n_minus_one_differs() -> None:
    """Where round(fraction · N) leaves a side empty, MLGPF keeps one row on it (``clip``) and the
    grid search refuses; the rows MLGPF then holds out are still the head of the permutation."""
    from mlgp.estimator.held_out_split import held_out_split
    from mlgp.recipes.held_out import held_out_rows

    with pytest.raises(ArgumentError, match=r"holds out 0 row\(s\)"):
        HeldOutSplit(0.1, 0).rows(4)
    kept, held = held_out_rows(4, 0.1, "auto", 0)
    np.testing.assert_array_equal(held, np.random.default_rng(0).permutation(4)[:1])
    np.testing.assert_array_equal(held_out_split(4, 0.1, 0, clip=True)[1], held)
    assert len(kept) == 3
