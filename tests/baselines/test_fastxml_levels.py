"""Trees grown a level at a time (:func:`mlgp.baselines._fastxml.tree.grow_tree`, with the compiled
alternation of :mod:`mlgp.baselines._fastxml.kernels`) are the trees the node-by-node reference
grows (``_fastxml_reference``) from the same seed, array for array, for every split loss and
option that changes the alternation; and with ``node_features`` they are trees of the same
objective."""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest
import scipy.sparse as sp

from mlgp.baselines import FastXML
from mlgp.baselines._fastxml.forest import Forest
from mlgp.baselines._fastxml.loss import split_loss
from mlgp.baselines._fastxml.split import SplitOptions
from mlgp.baselines._fastxml.tree import Tree, grow_tree

from _fastxml_helpers import _data
from _fastxml_reference import grow_tree_reference


def _assert_same_tree(a: Tree, b: Tree) -> None:
    for f in fields(Tree):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if sp.issparse(x):
            for part in ("data", "indices", "indptr"):
                np.testing.assert_array_equal(getattr(x, part), getattr(y, part), err_msg=f"{f.name}.{part}")
                assert getattr(x, part).dtype == getattr(y, part).dtype, f"{f.name}.{part}"
            assert x.shape == y.shape
        else:
            np.testing.assert_array_equal(x, y, err_msg=f.name)
            assert x.dtype == y.dtype, f.name


def _problem(rng, N=300, D=40, K=25, loss="ndcg", loss_k=None, weights=False):
    X, Y = _data(rng, N=N, D=D, K=K)
    X, Y = sp.csr_matrix(X), sp.csr_matrix(Y.astype(np.int8))
    label_weights = rng.uniform(0.5, 3.0, K) if weights else None
    G, discount = split_loss(Y, loss, loss_k, label_weights)
    return X, Y, G, discount


@pytest.mark.parametrize("loss, loss_k, weights", [("ndcg", None, False), ("dcg", 5, True), ("precision", 3, False)])
@pytest.mark.parametrize("opts", [SplitOptions(), SplitOptions(n_w_updates=3, c_pos=4.0, c_neg=4.0),
                                  SplitOptions(max_alternations=1, c_rank=3.0), SplitOptions(bias=0.0, tol=0.01)],
                         ids=["paper", "w-updates", "one-alternation", "no-bias"])
@pytest.mark.slow
def test_level_wise_tree_is_the_reference_tree(rng, loss, loss_k, weights, opts) -> None:
    X, Y, G, discount = _problem(rng, loss=loss, loss_k=loss_k, weights=weights)
    n_nodes = []
    for seed in (0, 11):
        for max_leaf in (3, 12):
            got = grow_tree(X, Y, G, discount, opts, max_leaf, 4, seed)
            _assert_same_tree(got, grow_tree_reference(X, Y, G, discount, opts, max_leaf, 4, seed))
            n_nodes.append(got.depth.size)
    assert max(n_nodes) > 20  # the trees do split


def test_level_wise_tree_with_unlabelled_points_and_tied_weights(rng) -> None:
    """Points without labels (zero weight in the nDCG loss), empty feature rows and duplicate
    points (exact ties in the summed weights and the costs) take the same paths."""
    X, Y, G, discount = _problem(rng, N=200)
    X = sp.vstack([X, X[:50], sp.csr_matrix((10, X.shape[1]))], format="csr")
    Y = sp.vstack([Y, Y[:50], sp.csr_matrix((10, Y.shape[1]), dtype=Y.dtype)], format="csr")
    Y = Y.tolil()
    Y[:20] = 0
    Y = Y.tocsr()
    G, discount = split_loss(Y, "ndcg")
    X.data[:] = 1.0  # many equal separator scores
    for seed in range(3):
        _assert_same_tree(grow_tree(X, Y, G, discount, SplitOptions(), 5, 3, seed),
                          grow_tree_reference(X, Y, G, discount, SplitOptions(), 5, 3, seed))


def test_level_wise_forest_is_the_reference_forest_on_enron(data_home) -> None:
    from mlgp.data import load

    ds = load("enron", data_home=data_home)
    est = FastXML(n_estimators=2, random_state=3).fit(ds.train.X, ds.train.Y)
    X, Y = est._validate_fit_data(ds.train.X, ds.train.Y)
    G, discount = split_loss(Y, "ndcg")
    want = Forest.from_trees([grow_tree_reference(X, Y, G, discount, est._split_options(), 10, 20, int(s))
                              for s in est.tree_seeds_])
    got, ref = est.forest_.to_arrays(), want.to_arrays()
    for key in ref:
        np.testing.assert_array_equal(got[key], ref[key], err_msg=key)


def test_node_features_grows_trees_of_the_same_objective(rng) -> None:
    """Fitting separators on each node's own columns changes liblinear's coordinate order only: the
    trees differ, but they are valid, route every training point to a leaf of its node's size, and
    a separator only uses columns its node's points use."""
    X, Y, G, discount = _problem(rng, N=400, D=300, K=20)
    X = X.tocsr()
    a = grow_tree(X, Y, G, discount, SplitOptions(), 8, 5, 0, node_features=True)
    b = grow_tree(X, Y, G, discount, SplitOptions(), 8, 5, 0)
    f = Forest.from_trees([a, b])
    f.check(X.shape[1], Y.shape[1])
    np.testing.assert_array_equal(np.bincount(f.leaf_tree, weights=f.leaf_size), [400, 400])
    leaves = f.leaves(X)
    for t in range(2):
        np.testing.assert_array_equal(np.bincount(leaves[:, t], minlength=f.leaf_size.size)[f.leaf_tree == t],
                                      f.leaf_size[f.leaf_tree == t])
    # the root's separator has the same support either way: only columns some point uses
    used = np.unique(X.indices)
    assert set(a.W[0].indices) <= set(used) and a.W[0].nnz > 0


def test_separator_features_is_checked_and_saved(rng, tmp_path) -> None:
    X, Y = _data(rng, N=150)
    with pytest.raises(ValueError, match="separator_features"):
        FastXML(separator_features="some").fit(X, Y)
    est = FastXML(n_estimators=3, max_leaf=6, separator_features="node", random_state=1).fit(X, Y)
    again = FastXML.load(est.save(tmp_path / "node.npz"))
    assert again.separator_features == "node"
    np.testing.assert_array_equal(again.decision_function(X), est.decision_function(X))
    # the training points reach the leaves they were sent to while the trees grew
    leaves = est.forest_.leaves(sp.csr_matrix(X))
    for t in range(3):
        counts = np.bincount(leaves[:, t], minlength=est.forest_.leaf_size.size)
        np.testing.assert_array_equal(counts[est.forest_.leaf_tree == t], est.forest_.leaf_size[est.forest_.leaf_tree == t])


def test_predict_topk_never_forms_dense_scores(rng) -> None:
    """With K = 200,000 labels one block of dense scores would be 500 × 200,000 × 8 B = 800 MB and all
    of them 4.8 GB; top-k over the sparse leaf scores stays far below either."""
    import tracemalloc

    X, Y = _data(rng, N=300, D=12, K=7)
    K = 200_000
    Y = sp.csr_matrix((np.ones(int(Y.sum())), np.nonzero(Y)[1] * 1000, np.concatenate([[0], np.cumsum(Y.sum(1))])),
                      shape=(300, K))
    est = FastXML(n_estimators=2, max_leaf=6, random_state=0).fit(X, Y)
    Xt = sp.csr_matrix(np.tile(X, (10, 1)))  # 3,000 points
    tracemalloc.start()
    try:
        top = est.predict_topk(Xt, 5, batch_size=500)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert top.indices.shape == (3000, 5) and set(np.unique(top.indices[:, 0])) <= set(range(0, 7000, 1000))
    assert peak < 50e6, peak


def test_a_level_split_in_chunks_is_the_same_tree(rng, monkeypatch) -> None:
    """Levels split a run of nodes at a time (bounded non-zeros of X) grow the same tree."""
    import mlgp.baselines._fastxml.tree as tree_module

    X, Y, G, discount = _problem(rng, N=300)
    whole = grow_tree(X, Y, G, discount, SplitOptions(), 4, 4, 5)
    monkeypatch.setattr(tree_module, "CHUNK_NNZ", 50)  # a few nodes per call, big nodes alone
    _assert_same_tree(grow_tree(X, Y, G, discount, SplitOptions(), 4, 4, 5), whole)
    _assert_same_tree(grow_tree_reference(X, Y, G, discount, SplitOptions(), 4, 4, 5), whole)


def test_several_w_updates_with_few_alternations_is_the_reference_tree(rng) -> None:
    """The alternation cap reached right after a separator update (``just_updated`` still set)."""
    X, Y, G, discount = _problem(rng)
    for opts in (SplitOptions(n_w_updates=3, max_alternations=2, c_pos=4.0, c_neg=4.0),
                 SplitOptions(n_w_updates=2, max_alternations=3)):
        for seed in (0, 7):
            _assert_same_tree(grow_tree(X, Y, G, discount, opts, 5, 4, seed),
                              grow_tree_reference(X, Y, G, discount, opts, 5, 4, seed))


def test_int64_indices_grow_the_same_trees(rng) -> None:
    """scipy keeps int64 indices when asked (sklearn's csr_64 / csc_64 checks); the root is split on
    X itself, so they are narrowed to liblinear's int32 once, in fit."""
    X, Y = _data(rng, N=150)
    X64 = sp.csc_array(X)  # as scikit-learn's check_estimator_sparse_array builds it
    X64.indices, X64.indptr = X64.indices.astype(np.int64), X64.indptr.astype(np.int64)
    a = FastXML(n_estimators=2, max_leaf=6, random_state=0).fit(X64, Y)
    b = FastXML(n_estimators=2, max_leaf=6, random_state=0).fit(sp.csr_matrix(X), Y)
    A, B = a.forest_.to_arrays(), b.forest_.to_arrays()
    for key in A:
        np.testing.assert_array_equal(A[key], B[key], err_msg=key)
    np.testing.assert_array_equal(a.decision_function(X64), b.decision_function(X))
