"""Tests of FastXML's flat forest (mlgp.baselines._fastxml.forest) and the per-tree statistics
FastXML derives from it: scoring a chosen subset of trees averages over those trees only, the
balance of a one-leaf tree is exactly 0 (never NaN), and ``n_iter_`` is each tree's largest node
iteration count."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from _fastxml_helpers import _data

from mlgp.baselines import FastXML


# --------------------------------------------------------------------------- #
# Scoring a subset of trees
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("trees", [[1], [0, 3], [4, 2, 2], [2, 0, 4, 1]])
def test_scores_of_chosen_trees_average_over_those_trees_only(rng, trees) -> None:
    """``Forest.scores(X, trees)`` is the mean of the chosen trees' own scores (each tree scored
    alone as a one-tree forest), and equals the scores of a forest made of just those trees."""
    X, Y = _data(rng)
    est = FastXML(n_estimators=5, max_leaf=5, max_leaf_labels=4, random_state=3).fit(X, Y)
    f = est.forest_
    assert f.n_trees == 5
    X_test = sp.csr_matrix(_data(np.random.default_rng(11), N=30)[0])
    single = {t: f.subset([t]).scores(X_test).toarray() for t in set(trees)}
    expected = np.mean([single[t] for t in trees], axis=0)
    got = f.scores(X_test, trees)
    assert sp.isspmatrix_csr(got) and got.shape == (30, 7)
    np.testing.assert_allclose(got.toarray(), expected, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(f.subset(trees).scores(X_test).toarray(), expected, rtol=1e-14, atol=1e-15)
    assert expected.max() > 0  # a real comparison, not of empty scores
    # and all trees (None) is the mean over all five
    every = np.mean([f.subset([t]).scores(X_test).toarray() for t in range(5)], axis=0)
    np.testing.assert_allclose(f.scores(X_test).toarray(), every, rtol=1e-14, atol=1e-15)


# --------------------------------------------------------------------------- #
# Tree balance
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("N, max_leaf", [(30, 30), (20, 20), (30, 31)])
def test_balance_of_a_one_leaf_tree_is_exactly_zero(rng, tmp_path, N, max_leaf) -> None:
    """With N <= max_leaf every tree is one leaf at depth 0: its balance is exactly 0 (not NaN from
    log2(N / max_leaf) = 0 when N == max_leaf), also after saving and loading."""
    X, Y = _data(rng, N=N)
    est = FastXML(n_estimators=3, max_leaf=max_leaf, random_state=0).fit(X, Y)
    np.testing.assert_array_equal(est.n_leaves_, [1, 1, 1])
    assert est.tree_balance_.shape == (3,) and est.tree_balance_.dtype == np.float64
    assert np.all(np.isfinite(est.tree_balance_))
    assert np.all(est.tree_balance_ == 0.0)
    loaded = FastXML.load(est.save(tmp_path / "one_leaf.npz"))
    assert np.all(np.isfinite(loaded.tree_balance_)) and np.all(loaded.tree_balance_ == 0.0)
    assert np.all(est.forest_.balance(N, max_leaf) == 0.0)


def test_balance_is_finite_and_positive_for_grown_trees(rng) -> None:
    """A grown forest's balance is finite and positive for every tree, and finite for any N and
    max_leaf (N below, equal to or above max_leaf)."""
    X, Y = _data(rng, N=60)
    est = FastXML(n_estimators=3, max_leaf=4, random_state=2).fit(X, Y)
    assert np.all(np.isfinite(est.tree_balance_)) and np.all(est.tree_balance_ > 0)
    for n, leaf in ((60, 60), (60, 4), (4, 60), (1, 1)):
        assert np.all(np.isfinite(est.forest_.balance(n, leaf)))


# --------------------------------------------------------------------------- #
# n_iter_
# --------------------------------------------------------------------------- #
def test_n_iter_is_the_largest_node_count_of_each_tree(rng) -> None:
    """``n_iter_[t]`` is the maximum of liblinear's iteration counts over tree t's nodes (not their
    sum) and so stays within max_iter × n_w_updates, for trees with many internal nodes; a tree
    chosen by select_trees keeps its count."""
    X, Y = _data(rng, N=120, D=15, K=8)
    max_iter, n_w_updates = 2, 2
    est = FastXML(n_estimators=3, max_leaf=4, max_iter=max_iter, n_w_updates=n_w_updates, c_pos=10.0,
                  c_neg=10.0, random_state=5).fit(X, Y)
    f = est.forest_
    assert est.n_iter_.shape == (3,) and est.n_iter_.dtype == np.int64
    expected = [int(f.n_iter[f.node_tree == t].max()) for t in range(3)]
    np.testing.assert_array_equal(est.n_iter_, expected)
    assert np.all(est.n_iter_ >= 1) and np.all(est.n_iter_ <= max_iter * n_w_updates)
    # the check means something: each tree has many separators, whose counts sum past the bound
    for t in range(3):
        internal = (f.node_tree == t) & (f.leaf < 0)
        assert internal.sum() >= 5
        assert f.n_iter[internal].sum() > max_iter * n_w_updates
    sub = est.select_trees([2, 0])
    np.testing.assert_array_equal(sub.n_iter_, [expected[2], expected[0]])
