"""``mlgpf_seed_ensemble``: the groups of seeds whose probabilities are averaged, and the score of
averaged probabilities against a direct computation."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from _scripts import load_script


@pytest.fixture(scope="module")
def script():
    return load_script("mlgpf_seed_ensemble")


def test_groups_are_consecutive_seeds_then_all_of_them(script):
    assert script.groups_of(list(range(9)), 3) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], list(range(9))]
    # a short last group is dropped; all seeds come last
    assert script.groups_of([4, 7, 1, 2, 9], 2) == [[4, 7], [1, 2], [4, 7, 1, 2, 9]]
    # all seeds as one group are not repeated
    assert script.groups_of([3, 5], 2) == [[3, 5]]
    assert script.groups_of([0, 1, 2], 1) == [[0], [1], [2], [0, 1, 2]]


def test_score_ranks_and_judges_the_probabilities_it_is_given(script):
    Y = sp.csr_matrix(np.array([[1, 0, 0, 0, 0], [0, 1, 1, 0, 0], [0, 0, 1, 0, 1], [1, 0, 0, 0, 0]]))
    proba = np.array([[0.9, 0.2, 0.1, 0.05, 0.3], [0.3, 0.4, 0.8, 0.2, 0.1], [0.6, 0.1, 0.5, 0.3, 0.2],
                      [0.2, 0.7, 0.6, 0.1, 0.4]])
    out = script.score(Y, proba)
    top1_hits = [1, 1, 0, 0]  # each row's highest probability is a positive for the first two rows only
    assert out["P@1"] == pytest.approx(100 * np.mean(top1_hits))
    dense = Y.toarray()
    nll = -np.mean(dense * np.log(proba) + (1 - dense) * np.log1p(-proba))
    assert out["NLL"] == pytest.approx(nll, rel=1e-12)
    assert out["LPD"] == pytest.approx(-nll * 5, rel=1e-12)  # nats per row: K = 5 entries
    # P@3: hits among each row's three most probable labels, over 3
    assert out["P@3"] == pytest.approx(100 * np.mean([1, 2, 1, 0]) / 3)


def test_a_stored_member_is_checked_before_it_is_averaged(script, tmp_path):
    good = np.full((4, 5), 0.25)
    np.save(tmp_path / "good.npy", good)
    np.testing.assert_array_equal(script.load_member(tmp_path / "good.npy", (4, 5)), good)
    np.save(tmp_path / "shape.npy", np.full((4, 6), 0.25))
    np.save(tmp_path / "range.npy", np.full((4, 5), 1.5))
    np.save(tmp_path / "negative.npy", np.full((4, 5), -0.5))
    np.save(tmp_path / "nan.npy", np.full((4, 5), np.nan))
    np.save(tmp_path / "objects.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    (tmp_path / "cut.npy").write_bytes((tmp_path / "good.npy").read_bytes()[:100])
    for name in ("shape", "range", "negative", "nan", "objects", "cut", "missing"):
        with pytest.raises(SystemExit, match="--fresh"):
            script.load_member(tmp_path / f"{name}.npy", (4, 5))
