"""Gaps found by mutation testing of :mod:`mlgp.estimator.held_out_split`: the upper end of the
count. A fraction that would hold out every row is refused by the grid search (nothing left to fit)
and clipped to N − 1 by MLGPF (``clip=True``), the rows still the head of the seed's permutation."""

from __future__ import annotations

import numpy as np
import pytest

from mlgp.errors import ArgumentError
from mlgp.estimator import HeldOutSplit
from mlgp.estimator.held_out_split import held_out_split


@pytest.mark.parametrize("N", [4, 5])
def test_a_count_of_every_row_is_refused_without_clip(N) -> None:
    """round(0.99 · N) = N: the grid search refuses, naming the N rows held and the 0 left to fit."""
    with pytest.raises(ArgumentError, match=rf"of N={N} rows holds out {N} row\(s\), leaving 0 to fit"):
        HeldOutSplit(0.99, 0).rows(N)


@pytest.mark.parametrize("N", [4, 5])
def test_clip_keeps_one_row_to_fit(N) -> None:
    """With ``clip`` the same count becomes N − 1: one row kept, the other N − 1 held out, and those
    the head of default_rng(seed).permutation(N)."""
    kept, held = held_out_split(N, 0.99, 3, clip=True)
    order = np.random.default_rng(3).permutation(N)
    assert len(kept) == 1 and len(held) == N - 1
    np.testing.assert_array_equal(held, np.sort(order[:N - 1]))
    np.testing.assert_array_equal(kept, order[N - 1:])


def test_the_largest_allowed_count_is_n_minus_one() -> None:
    """round(0.75 · 4) = 3 = N − 1 is allowed without clip; one row is left to fit."""
    kept, held = HeldOutSplit(0.75, 0).rows(4)
    assert len(kept) == 1 and len(held) == 3
