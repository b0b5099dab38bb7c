"""Tests of mlgp.baselines.FastXML: scikit-learn's estimator checks, the docstring example, the same
trees for a seed whatever the parallelism (joblib processes, Dask), hand-made problems (two separable clusters, one leaf), the leaves against the
training points routed to them, scoring (decision_function, predict_topk, predict, batches, CSR),
select_trees, and bad input refused before any work."""

from __future__ import annotations

import doctest

import joblib
import numpy as np
import pytest
import scipy.sparse as sp
from _fastxml_helpers import _assert_same_forest, _data, _ref_top, _subtree_sizes, _tree_leaves_by_walking
from _sklearn_checks import estimator_check_tests
from sklearn.utils._param_validation import InvalidParameterError

import mlgp.baselines._fastxml.growing
import mlgp.baselines.fastxml
from mlgp.baselines._fastxml import tree as tree_module
from mlgp.baselines import FastXML
from mlgp.errors import ArgumentError, ShapeError
from mlgp.scores import TopK, topk

#: scikit-learn checks expected to fail, with why. All but the last two feed a target that is not a
#: 2-D 0/1 label matrix (a 1-D y, or class labels {1, 2}), which a multi-label estimator refuses.
EXPECTED_FAILED_CHECKS = {
    "check_classifiers_classes": "fits a 1-D y of string / integer class labels; multi-label needs a 2-D 0/1 Y",
    "check_classifiers_train": "fits a 1-D binary y (given here as one (N, 1) column) and expects 1-D (N,) "
                               "predictions; multi-label predict returns (N, K)",
    "check_classifier_not_supporting_multiclass": "fits a 1-D multiclass y and expects the message 'Only binary "
                                                  "classification is supported'; every 1-D y is refused",
    "check_estimators_dtypes": "the target is the class labels {1, 2}, not 0/1 labels",
    "check_classifier_data_not_an_array": "the target is the class labels {1, 2}, not 0/1 labels",
    "check_fit2d_1feature": "the target is the class labels {1, 2}, not 0/1 labels",
    "check_decision_proba_consistency": "fits a 1-D binary y; multi-label needs a 2-D 0/1 Y",
    "check_estimator_sparse_matrix": "sparse X is fitted and predicted fine; the check then wants predict_proba of a "
                                     "one-column target to have shape (N, 2), a column per class, while multi-label "
                                     "predict_proba returns (N, K) presence probabilities",
    "check_estimator_sparse_array": "as check_estimator_sparse_matrix, with a csr_array",
    "check_classifier_multioutput": "wants predict to equal decision_function > 0; the scores are leaf label "
                                    "frequencies in [0, 1] (0 only for labels no reached leaf keeps) and "
                                    "predict thresholds them at threshold=0.5",
    "check_non_transformer_estimators_n_iter": "wants every n_iter_ >= 1; n_iter_ is per tree, and on the "
                                               "check's data (iris with a one-column 0/1 target) one tree is "
                                               "a single leaf that ran no liblinear iteration (n_iter_ 0)",
}

test_sklearn_estimator_checks, test_skipped_checks_are_exactly_the_failing_ones = estimator_check_tests(
    [FastXML(n_estimators=3, max_leaf=5, random_state=0)], EXPECTED_FAILED_CHECKS)


def test_docstring_example_runs() -> None:
    result = doctest.testmod(mlgp.baselines.fastxml, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 5 and result.failed == 0


# --------------------------------------------------------------------------- #
# Determinism
# --------------------------------------------------------------------------- #
def test_same_seed_gives_the_same_forest_for_any_n_jobs(rng) -> None:
    X, Y = _data(rng)
    one = FastXML(n_estimators=4, max_leaf=6, random_state=11, n_jobs=1).fit(X, Y)
    again = FastXML(n_estimators=4, max_leaf=6, random_state=11, n_jobs=1).fit(X, Y)
    two = FastXML(n_estimators=4, max_leaf=6, random_state=11, n_jobs=2).fit(X, Y)
    # bit for bit across processes: liblinear's L1 solver, the alternation and the compiled walk call
    # no BLAS, so each tree is the very same computation whatever the thread count
    _assert_same_forest(one, again)
    _assert_same_forest(one, two)
    np.testing.assert_array_equal(two.decision_function(X), one.decision_function(X))
    other = FastXML(n_estimators=4, max_leaf=6, random_state=12, n_jobs=1).fit(X, Y)
    assert not np.array_equal(other.tree_seeds_, one.tree_seeds_)
    A, B = one.forest_.to_arrays(), other.forest_.to_arrays()
    assert any(A[k].shape != B[k].shape or not np.array_equal(A[k], B[k]) for k in ("W.data", "bias", "leaf_size"))


def test_dask_backend_grows_the_same_trees(rng) -> None:
    """Runs only when dask's ``distributed`` is installed (skipped otherwise): an in-process
    LocalCluster takes the trees through joblib's "dask" backend and grows the same forest as
    ``n_jobs=1``. The worker has two threads: with one, joblib sees a single slot and grows the
    trees itself in the calling thread, and the test would prove nothing."""
    distributed = pytest.importorskip("distributed")
    X, Y = _data(rng, N=200, D=30)
    ref = FastXML(n_estimators=8, max_leaf=5, random_state=5, n_jobs=1, calibration=None).fit(X, Y)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster):
        with distributed.get_task_stream() as stream, joblib.parallel_backend("dask"):
            est = FastXML(n_estimators=8, max_leaf=5, random_state=5, calibration=None).fit(X, Y)
    assert len(stream.data) >= 1  # the trees were grown by the cluster's worker
    _assert_same_forest(ref, est)


@pytest.mark.parametrize("solver", ["newglmnet", "liblinear"])
def test_threads_grow_the_same_trees(rng, solver) -> None:
    """Trees grown by threads of one process (joblib's threading backend, a threaded Dask worker)
    are the trees of n_jobs=1 — for liblinear thanks to its lock, for the compiled solver without
    one; repeated, as a race between threads need not show every time."""
    X, Y = _data(rng, N=200, D=30)
    ref = FastXML(n_estimators=8, max_leaf=5, random_state=0, n_jobs=1, solver=solver).fit(X, Y)
    for _ in range(3):
        with joblib.parallel_backend("threading", n_jobs=2):
            _assert_same_forest(ref, FastXML(n_estimators=8, max_leaf=5, random_state=0, solver=solver).fit(X, Y))


# --------------------------------------------------------------------------- #
# Hand-made problems
# --------------------------------------------------------------------------- #
def test_separable_clusters_never_mix(rng) -> None:
    n = 25  # points per cluster; features in disjoint columns, labels in disjoint sets
    X = np.zeros((2 * n, 8))
    X[:n, :4] = rng.random((n, 4)) + 0.5
    X[n:, 4:] = rng.random((n, 4)) + 0.5
    Y = np.zeros((2 * n, 6), dtype=np.int64)
    Y[:n, 0] = 1
    Y[:n, 1:3] = rng.random((n, 2)) < 0.5
    Y[n:, 3] = 1
    Y[n:, 4:] = rng.random((n, 2)) < 0.5
    for seed in range(3):
        S = FastXML(n_estimators=4, max_leaf=4, random_state=seed).fit(X, Y).decision_function(X)
        np.testing.assert_array_equal(S[:n, 3:], 0.0)
        np.testing.assert_array_equal(S[n:, :3], 0.0)
        assert np.all(Y[np.arange(2 * n), S.argmax(axis=1)] == 1)  # top-1 is one of the point's labels


@pytest.mark.parametrize("max_leaf", [30, 31, 100])
def test_one_leaf_scores_the_label_frequencies(rng, max_leaf) -> None:
    X, Y = _data(rng, N=30)
    Y[:, 6] = 0  # a label nobody carries
    est = FastXML(n_estimators=3, max_leaf=max_leaf, max_leaf_labels=7, random_state=0).fit(X, Y)
    np.testing.assert_array_equal(est.n_leaves_, [1, 1, 1])
    np.testing.assert_array_equal(est.forest_.leaf_size, [30, 30, 30])
    S = est.decision_function(_data(np.random.default_rng(3), N=5)[0])
    np.testing.assert_allclose(S, np.tile(Y.mean(axis=0), (5, 1)), rtol=1e-15, atol=0)
    # with fewer labels kept, only the most frequent ones (ties to the lower label) score
    freq = Y.mean(axis=0)
    two = FastXML(n_estimators=2, max_leaf=max_leaf, max_leaf_labels=2, random_state=0).fit(X, Y)
    S2 = two.decision_function(X[:3])
    kept = _ref_top(freq, 2)
    expected = np.zeros(7)
    expected[kept] = freq[kept]
    np.testing.assert_allclose(S2, np.tile(expected, (3, 1)), rtol=1e-15, atol=0)


@pytest.mark.parametrize("threshold, expected", [(0.5, [1, 0, 1]), (0.25, [1, 1, 1]), (0.2, [1, 1, 1]),
                                                 (0.26, [1, 0, 1]), (1.0, [0, 0, 1])])
def test_predict_marks_scores_at_or_above_the_threshold(rng, threshold, expected) -> None:
    X = rng.random((32, 3))
    Y = np.zeros((32, 3), dtype=np.int64)
    Y[:16, 0] = 1  # frequency 0.5
    Y[8:16, 1] = 1  # 0.25
    Y[:, 2] = 1  # 1.0
    # prior_strength=0: the probabilities are the bare leaf frequencies
    est = FastXML(n_estimators=2, max_leaf=32, threshold=threshold, prior_strength=0.0, random_state=0,
                  calibration=None).fit(X, Y)
    np.testing.assert_array_equal(est.decision_function(X[:2]), [[0.5, 0.25, 1.0]] * 2)
    np.testing.assert_array_equal(est.predict_proba(X[:2]), [[0.5, 0.25, 1.0]] * 2)
    np.testing.assert_array_equal(est.predict(X[:2]), [expected] * 2)


@pytest.mark.parametrize("loss, loss_k, c", [("ndcg", None, 1.0), ("dcg", 3, 1.0), ("precision", 2, 1.0),
                                         ("ndcg", None, 10.0)])
def test_leaves_are_the_training_points_routed_to_them(rng, monkeypatch, loss, loss_k, c) -> None:
    unsplit = []  # sizes of the nodes whose split failed (they become leaves)
    original = tree_module.split_level

    def recording(X, G, ptr, *args, **kwargs):
        res = original(X, G, ptr, *args, **kwargs)
        unsplit.extend(np.diff(ptr)[~res.split].tolist())
        return res

    monkeypatch.setattr(tree_module, "split_level", recording)
    X, Y = _data(rng, N=120, D=15, K=8)
    max_leaf, max_labels, T = 6, 3, 3
    est = FastXML(n_estimators=T, max_leaf=max_leaf, max_leaf_labels=max_labels, split_loss=loss,
                  split_loss_k=loss_k, c_pos=c, c_neg=c, random_state=4, calibration=None).fit(X, Y)
    f = est.forest_
    n_leaves = f.leaf_labels.shape[0]
    assert est.n_leaves_.shape == (T,) and est.n_leaves_.sum() == n_leaves == f.leaf_size.size
    reached = f.leaves(sp.csr_matrix(X))
    assert reached.shape == (120, T)
    for t in range(T):
        leaves, depths = _tree_leaves_by_walking(f, t)
        assert sorted(leaves) == list(np.flatnonzero(f.leaf_tree == t)) and est.n_leaves_[t] == len(leaves)
        assert est.tree_balance_[t] == pytest.approx(np.mean(depths) / np.log2(120 / max_leaf), rel=1e-12)
        assert f.leaf_size[leaves].sum() == 120
        assert set(reached[:, t]) <= set(leaves)
        # a node with at most max_leaf points is never split
        for node, size in _subtree_sizes(f, t).items():
            assert f.leaf[node] >= 0 or size > max_leaf
        counts = []
        for leaf in leaves:
            rows = np.flatnonzero(reached[:, t] == leaf)
            assert rows.size == f.leaf_size[leaf]
            freq = Y[rows].sum(axis=0) / max(rows.size, 1)
            row = f.leaf_labels[leaf]
            top = _ref_top(freq, max_labels)
            np.testing.assert_array_equal(row.indices, top)
            np.testing.assert_allclose(row.data, freq[top], rtol=1e-15)
            assert f.leaf_label_count[leaf] == np.count_nonzero(freq)
            counts.append(np.count_nonzero(freq))
        assert est.labels_per_leaf_[t] == pytest.approx(np.mean(counts), rel=1e-12)
    assert est.tree_balance_.shape == (T,) and np.all(est.tree_balance_ > 0)
    assert est.labels_per_leaf_.shape == (T,) and np.all(est.labels_per_leaf_ >= 1)
    assert np.all(np.diff(f.leaf_labels.indptr) <= max_labels)
    # a leaf bigger than max_leaf is a node that could not be split (or had no labels to split on)
    big = (f.leaf_size > max_leaf) & (f.leaf_label_count > 0)
    assert sorted(f.leaf_size[big]) == sorted(unsplit)
    # most leaves obey max_leaf; with the paper's C = 1 the L1 separator of a small node often sends
    # every point to one side, with weaker regularisation (C = 10) nearly every split succeeds
    assert np.mean(f.leaf_size <= max_leaf) >= (0.5 if c == 1.0 else 0.95)


# --------------------------------------------------------------------------- #
# Scoring
# --------------------------------------------------------------------------- #
@pytest.fixture
def fitted(rng):
    X, Y = _data(rng)
    est = FastXML(n_estimators=4, max_leaf=5, max_leaf_labels=4, threshold=0.3, random_state=1).fit(X, Y)
    X_test = _data(np.random.default_rng(7), N=40)[0]
    return est, X, X_test


def test_scores_rankings_and_predictions_agree(fitted) -> None:
    est, _, X_test = fitted
    S = est.decision_function(X_test)
    assert S.dtype == np.float64 and S.shape == (40, 7)
    assert S.min() >= 0.0 and S.max() <= 1.0
    assert np.any(S == 0.0) and np.any(S > 0.0)
    for k in (1, 3, 7):
        t = est.predict_topk(X_test, k)
        ref = topk(S, k)
        assert isinstance(t, TopK) and t.indices.shape == (40, k)
        np.testing.assert_array_equal(t.indices, ref.indices)
        np.testing.assert_array_equal(t.scores, ref.scores)
    # a plain ranking by (−score, label), written out
    for i in range(0, 40, 9):
        np.testing.assert_array_equal(est.predict_topk(X_test[i:i + 1], 7).indices[0],
                                      sorted(range(7), key=lambda j: (-S[i, j], j)))
    pred = est.predict(X_test)
    assert pred.dtype == np.int64
    np.testing.assert_array_equal(pred, (est.predict_proba(X_test) >= 0.3).astype(np.int64))


def test_batches_and_csr_give_identical_results(fitted) -> None:
    est, _, X_test = fitted
    X_test = X_test[:20]
    S = est.decision_function(X_test)
    t = est.predict_topk(X_test, 3)
    for batch_size in (1, 7, 1000):
        for X in (X_test, sp.csr_matrix(X_test), sp.csr_array(X_test), sp.csc_matrix(X_test)):
            np.testing.assert_array_equal(est.decision_function(X, batch_size=batch_size), S)
            tb = est.predict_topk(X, 3, batch_size=batch_size)
            np.testing.assert_array_equal(tb.indices, t.indices)
            np.testing.assert_array_equal(tb.scores, t.scores)
            np.testing.assert_array_equal(est.predict(X, batch_size=batch_size), est.predict(X_test))


def _route_by_hand(forest, x: np.ndarray, t: int) -> int:
    """The leaf point x reaches in tree t, one node at a time with dense separators."""
    node = int(forest.tree_root[t])
    W = forest.W.toarray()
    while forest.leaf[node] < 0:
        node = int(forest.children[node, 0 if W[node] @ x + forest.bias[node] > 0 else 1])
    return int(forest.leaf[node])


def test_scores_are_the_average_of_the_reached_leaves(fitted) -> None:
    est, _, X_test = fitted
    f = est.forest_
    leaves = f.leaves(sp.csr_matrix(X_test))
    assert leaves.shape == (40, 4) and leaves.dtype == np.int64
    np.testing.assert_array_equal(leaves, [[_route_by_hand(f, x, t) for t in range(4)] for x in X_test])
    np.testing.assert_array_equal(f.leaves(sp.csr_matrix(X_test), [3, 1]), leaves[:, [3, 1]])
    dist = f.leaf_labels.toarray()
    np.testing.assert_allclose(est.decision_function(X_test), dist[leaves].mean(axis=1), rtol=1e-14, atol=1e-15)


def test_select_trees(fitted) -> None:
    est, _, X_test = fitted
    S = est.decision_function(X_test)
    np.testing.assert_array_equal(est.select_trees(range(4)).decision_function(X_test), S)
    dist = est.forest_.leaf_labels.toarray()
    for trees in ([0], [3], [2, 0]):
        sub = est.select_trees(trees)
        assert isinstance(sub, FastXML) and sub is not est
        assert sub.get_params() == dict(est.get_params(), n_estimators=len(trees))
        assert sub.forest_.n_trees == len(trees) and sub.n_leaves_.tolist() == est.n_leaves_[trees].tolist()
        by_hand = np.mean([dist[est.forest_.leaves(sp.csr_matrix(X_test), [t])[:, 0]] for t in trees], axis=0)
        np.testing.assert_allclose(sub.decision_function(X_test), by_hand, rtol=1e-14, atol=1e-15)
        np.testing.assert_array_equal(sub.predict_topk(X_test, 2).indices, topk(by_hand, 2).indices)
    np.testing.assert_array_equal(est.decision_function(X_test), S)  # the original is untouched
    for bad in ([], [-1], [4], [0, 9]):
        with pytest.raises(ValueError, match=r"trees must be a non-empty list of integer indices in \[0, 4\)"):
            est.select_trees(bad)


# --------------------------------------------------------------------------- #
# Bad input: refused with a message before any work
# --------------------------------------------------------------------------- #
@pytest.fixture
def no_tree_growing(monkeypatch):
    """Fail the test if fit gets as far as growing a tree."""
    def grow(*args, **kwargs):
        raise AssertionError("a tree was grown")

    monkeypatch.setattr(mlgp.baselines._fastxml.growing, "grow_tree", grow)


def _with_value(Y, value):
    Y = Y.copy().astype(np.float64)
    Y[5, 2] = value
    return Y


def _with_nonfinite(X, value, sparse):
    X = X.copy()
    X[3, 1] = value
    return sp.csr_matrix(X) if sparse else X


@pytest.mark.parametrize("make, message", [
    (lambda X, Y: (X, Y[:-1]), "Y has 89 rows but the features have 90"),
    (lambda X, Y: (X, _with_value(Y, 2)), r"must hold 0/1 labels; found values \[2\.\]"),
    (lambda X, Y: (X, _with_value(Y, -1)), r"must hold 0/1 labels; found values \[-1\.\]"),
    (lambda X, Y: (X, _with_value(Y, 0.5)), r"must hold 0/1 labels; found values \[0\.5\]"),
    (lambda X, Y: (X, sp.csr_matrix(_with_value(Y, 2))), r"must hold 0/1 labels; found values \[2\.\]"),
    (lambda X, Y: (_with_nonfinite(X, np.nan, False), Y), r"X contains NaN or inf \(first in row 3\)"),
    (lambda X, Y: (_with_nonfinite(X, np.inf, False), Y), r"X contains NaN or inf \(first in row 3\)"),
    (lambda X, Y: (_with_nonfinite(X, np.nan, True), Y), r"X contains NaN or inf \(first in row 3\)"),
    (lambda X, Y: (_with_nonfinite(X, -np.inf, True), Y), r"X contains NaN or inf \(first in row 3\)"),
    (lambda X, Y: (X, Y[:, 0]), r"got a 1-D target of type 'binary'"),
], ids=["rows", "label 2", "label -1", "label 0.5", "csr label 2", "nan", "inf", "csr nan", "csr -inf", "1-D Y"])
def test_bad_training_data_is_refused(rng, no_tree_growing, make, message) -> None:
    est = FastXML(n_estimators=2, max_leaf=5)
    with pytest.raises(ShapeError, match=message):
        est.fit(*make(*_data(rng)))
    assert not hasattr(est, "forest_")


@pytest.mark.parametrize("params, message", [
    ({"n_estimators": 0}, "'n_estimators' parameter of FastXML must be an int in the range"),
    ({"max_leaf": 0}, "'max_leaf' parameter of FastXML must be an int in the range"),
    ({"max_leaf_labels": 0}, "'max_leaf_labels' parameter of FastXML must be an int in the range"),
    ({"split_loss": "map"}, "'split_loss' parameter of FastXML must be a str among"),
    ({"split_loss_k": 0}, "'split_loss_k' parameter of FastXML must be"),
    ({"c_pos": 0.0}, "'c_pos' parameter of FastXML must be a float in the range"),
    ({"tol": -1.0}, "'tol' parameter of FastXML must be a float in the range"),
    ({"threshold": 1.5}, "'threshold' parameter of FastXML must be a float in the range"),
])
def test_bad_parameters_are_refused(rng, no_tree_growing, params, message) -> None:
    with pytest.raises(InvalidParameterError, match=message):
        FastXML(**params).fit(*_data(rng, N=20))


def test_bad_prediction_data_is_refused_before_scoring(fitted, monkeypatch) -> None:
    est, X, X_test = fitted
    scored = []
    monkeypatch.setattr(est, "_decision_block", lambda block: scored.append(block.shape[0]))
    for method, args in (("decision_function", ()), ("predict", ()), ("predict_topk", (3,))):
        fn = getattr(est, method)
        with pytest.raises(ShapeError, match="X has 11 features, but FastXML is expecting 12 features"):
            fn(X_test[:, :11], *args)
        with pytest.raises(ShapeError, match="X has 13 features, but FastXML is expecting 12 features"):
            fn(sp.csr_matrix(np.ones((2, 13))), *args)
        X_bad = X_test.copy()
        X_bad[39, 0] = np.nan  # the last row: nothing is scored before it is seen
        with pytest.raises(ShapeError, match=r"X contains NaN or inf \(first in row 39\)"):
            fn(X_bad, *args, batch_size=1)
    assert scored == []
    with pytest.raises(ValueError, match="k=8 exceeds the number of labels K=7"):
        est.predict_topk(X_test, 8)
    with pytest.raises(ArgumentError, match="k must be a positive integer"):
        est.predict_topk(X_test, 0)
    with pytest.raises(ArgumentError, match="batch_size must be a positive integer"):
        est.decision_function(X_test, batch_size=0.5)
