"""Tests of mlgp.baselines.mlknn.MLkNN: scikit-learn's estimator checks and hand-made references."""

from __future__ import annotations

import doctest
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp
from _sklearn_checks import estimator_check_tests
from sklearn.base import clone, is_classifier
from sklearn.exceptions import NotFittedError
from sklearn.utils._param_validation import InvalidParameterError

import mlgp.baselines.mlknn
from mlgp.baselines.mlknn import MLkNN
from mlgp.errors import ShapeError
from mlgp.scores import TopK

#: scikit-learn checks expected to fail, with why. Most feed a target that is not a 2-D 0/1 label
#: matrix (a 1-D y, or class labels {1, 2}), which a multi-label estimator refuses; the others
#: expect the single-output conventions for predict_proba / decision_function.
EXPECTED_FAILED_CHECKS = {
    "check_classifiers_classes": "fits a 1-D y of string / integer class labels; multi-label needs a 2-D 0/1 Y",
    "check_classifiers_train": "fits a 1-D binary y (given here as one (N, 1) column) and expects 1-D (N,) "
                               "predictions; multi-label predict returns (N, K)",
    "check_classifier_not_supporting_multiclass": "fits a 1-D multiclass y and expects the message 'Only binary "
                                                  "classification is supported'; every 1-D y is refused",
    "check_decision_proba_consistency": "fits a 1-D binary y; multi-label needs a 2-D 0/1 Y",
    "check_estimators_dtypes": "the target is the class labels {1, 2}, not 0/1 labels",
    "check_classifier_data_not_an_array": "the target is the class labels {1, 2}, not 0/1 labels",
    "check_fit2d_1feature": "the target is the class labels {1, 2}, not 0/1 labels",
    "check_estimator_sparse_matrix": "sparse X is fitted and predicted fine; the check then wants predict_proba "
                                     "of a one-column target to have shape (N, 2), a column per class, while "
                                     "multi-label predict_proba returns (N, K) presence probabilities",
    "check_estimator_sparse_array": "as check_estimator_sparse_matrix, with a csr_array",
    "check_classifier_multioutput": "wants (decision_function > 0) == predict, a signed margin; here "
                                    "decision_function is the posterior in [0, 1] and predict thresholds it "
                                    "at `threshold` (and numpy's round(0.5) = 0 disagrees with 0.5 >= 0.5)",
    # Not about multi-label: mlgp reports every bad input as ShapeError (a ValueError) by design.
}
#: Only for the default n_neighbors=10: the check fits 10 points, fewer than k + 1 = 11.
TOO_FEW_POINTS = {"check_estimators_nan_inf": "fits 10 training points; n_neighbors=10 needs at least 11 "
                                              "(ShapeError), so it cannot go on to predict on NaN"}


def _expected_failed(est: MLkNN) -> dict:
    return {**EXPECTED_FAILED_CHECKS, **(TOO_FEW_POINTS if est.n_neighbors >= 10 else {})}


CHECKED = [MLkNN(), MLkNN(n_neighbors=3, metric="cosine", smoothing=0.5)]

# the k=3 cosine instance runs in the exhaustive test only, to keep this file fast
test_sklearn_estimator_checks, test_skipped_checks_are_exactly_the_failing_ones = estimator_check_tests(
    CHECKED[:1], _expected_failed, exhaustive=CHECKED, ids=["default", "k3-cosine"])


def test_docstring_example_runs() -> None:
    result = doctest.testmod(mlgp.baselines.mlknn, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 6 and result.failed == 0


# --------------------------------------------------------------------------- #
# Independent reference: plain Python loops over points and labels
# --------------------------------------------------------------------------- #
def _distance(a, b, metric: str) -> float:
    if metric == "euclidean":
        return sum((x - y) ** 2 for x, y in zip(a, b)) ** 0.5
    if metric == "manhattan":
        return sum(abs(x - y) for x, y in zip(a, b))
    dot = sum(x * y for x, y in zip(a, b))
    na, nb = sum(x * x for x in a) ** 0.5, sum(y * y for y in b) ** 0.5
    return 1.0 - (dot / (na * nb) if na > 0 and nb > 0 else 0.0)


def _ref_neighbours(X_train, x, k: int, metric: str, exclude: int | None = None) -> list[int]:
    order = sorted((_distance(x, X_train[j], metric), j) for j in range(len(X_train)) if j != exclude)
    return [j for _, j in order[:k]]


def _ref_mlknn(X, Y, X_test, k: int, s: float, metric: str = "euclidean"):
    """Priors, likelihood tables and test posteriors of ML-kNN, straight from the paper."""
    X, Y, X_test = np.asarray(X).tolist(), np.asarray(Y).tolist(), np.asarray(X_test).tolist()
    N, K = len(Y), len(Y[0])
    prior = [(s + sum(Y[i][l] for i in range(N))) / (2 * s + N) for l in range(K)]
    c1 = [[0] * K for _ in range(k + 1)]
    c0 = [[0] * K for _ in range(k + 1)]
    for i in range(N):
        nbrs = _ref_neighbours(X, X[i], k, metric, exclude=i)
        for l in range(K):
            count = sum(Y[j][l] for j in nbrs)
            if Y[i][l] == 1:
                c1[count][l] += 1
            else:
                c0[count][l] += 1
    true = [[0.0] * K for _ in range(k + 1)]
    false = [[0.0] * K for _ in range(k + 1)]
    for l in range(K):
        s1 = sum(c1[p][l] for p in range(k + 1))
        s0 = sum(c0[p][l] for p in range(k + 1))
        for j in range(k + 1):
            true[j][l] = (s + c1[j][l]) / (s * (k + 1) + s1)
            false[j][l] = (s + c0[j][l]) / (s * (k + 1) + s0)
    post = []
    for x in X_test:
        nbrs = _ref_neighbours(X, x, k, metric)
        row = []
        for l in range(K):
            count = sum(Y[j][l] for j in nbrs)
            a = prior[l] * true[count][l]
            b = (1 - prior[l]) * false[count][l]
            row.append(a / (a + b))
        post.append(row)
    return np.array(prior), np.array(c1), np.array(c0), np.array(true), np.array(false), np.array(post)


def _data(rng: np.random.Generator, N: int = 40, D: int = 5, K: int = 6):
    X = rng.normal(size=(N, D))
    X[X < -0.8] = 0.0
    Y = (rng.random((N, K)) < np.linspace(0.1, 0.6, K)).astype(np.int64)
    return X, Y


def _counts(est: MLkNN):
    """Recover c1, c0 from the fitted likelihood tables (their denominators are known)."""
    s, k = est.smoothing, est.n_neighbors
    n_pos = est.labels_.sum(axis=0).A.ravel()
    c1 = est.cond_prob_true_ * (s * (k + 1) + n_pos) - s
    c0 = est.cond_prob_false_ * (s * (k + 1) + est.n_samples_ - n_pos) - s
    return c1, c0


# --------------------------------------------------------------------------- #
# Hand-computed case: 6 points on a line, k = 2, 2 labels
# --------------------------------------------------------------------------- #
LINE_X = np.array([[0.0], [1.0], [3.0], [7.0], [8.0], [10.0]])
LINE_Y = np.array([[1, 0], [1, 0], [0, 1], [0, 1], [1, 1], [0, 1]])


def test_hand_computed_line() -> None:
    # neighbours without self: 0:{1,2} 1:{0,2} 2:{1,0} 3:{4,5} 4:{3,5} 5:{4,3}
    # label 0: C = [1, 1, 2, 1, 0, 1]; positives 0, 1, 4 → c1 = [1, 2, 0]; negatives 2, 3, 5 → c0 = [0, 2, 1]
    # label 1: C = [1, 1, 0, 2, 2, 2]; positives 2..5 → c1 = [1, 0, 3]; negatives 0, 1 → c0 = [0, 2, 0]
    def F(a: int, b: int) -> float:  # an exact fraction, rounded once to float64
        return float(Fraction(a, b))

    est = MLkNN(n_neighbors=2, smoothing=1.0).fit(LINE_X, LINE_Y)
    assert [sorted(r) for r in est.nn_.kneighbors(return_distance=False).tolist()] == \
        [[1, 2], [0, 2], [0, 1], [4, 5], [3, 5], [3, 4]]
    c1, c0 = _counts(est)
    np.testing.assert_allclose(c1, [[1, 1], [2, 0], [0, 3]], atol=1e-12)
    np.testing.assert_allclose(c0, [[0, 0], [2, 2], [1, 0]], atol=1e-12)
    np.testing.assert_allclose(est.prior_, [F(4, 8), F(5, 8)], rtol=0, atol=1e-15)
    np.testing.assert_allclose(est.cond_prob_true_, [[F(2, 6), F(2, 7)], [F(3, 6), F(1, 7)], [F(1, 6), F(4, 7)]],
                               rtol=0, atol=1e-15)
    np.testing.assert_allclose(est.cond_prob_false_, [[F(1, 6), F(1, 5)], [F(3, 6), F(3, 5)], [F(2, 6), F(1, 5)]],
                               rtol=0, atol=1e-15)
    # x = 0.4: neighbours {0, 1}, C = (2, 0); x = 9: neighbours {4, 5}, C = (1, 2)
    # label 1 at x = 0.4: (5/8 · 2/7) / (5/8 · 2/7 + 3/8 · 1/5) = 50/71
    expected = [[F(1, 3), F(50, 71)], [F(1, 2), F(100, 121)]]
    proba = est.predict_proba(np.array([[0.4], [9.0]]))
    np.testing.assert_allclose(proba, expected, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(est.predict(np.array([[0.4], [9.0]])), [[0, 1], [1, 1]])
    ref = _ref_mlknn(LINE_X, LINE_Y, [[0.4], [9.0]], k=2, s=1.0)
    np.testing.assert_allclose(ref[5], expected, rtol=0, atol=1e-12)
    assert (est.n_samples_, est.n_features_in_, est.n_labels_) == (6, 1, 2)
    np.testing.assert_array_equal(est.classes_, [0, 1])
    assert sp.isspmatrix_csr(est.labels_) and is_classifier(est)


@pytest.mark.parametrize("metric", ["euclidean", "cosine", "manhattan"])
@pytest.mark.parametrize(("k", "s"), [(1, 1.0), (4, 0.3), (7, 2.5)])
def test_matches_loop_reference_dense_and_csr(rng, metric, k, s) -> None:
    X, Y = _data(rng)
    X_test = rng.normal(size=(12, X.shape[1]))
    prior, c1, c0, true, false, post = _ref_mlknn(X, Y, X_test, k, s, metric)
    ests = [MLkNN(n_neighbors=k, smoothing=s, metric=metric).fit(X, Y),
            MLkNN(n_neighbors=k, smoothing=s, metric=metric).fit(sp.csr_matrix(X), sp.csr_matrix(Y))]
    for est in ests:
        got_c1, got_c0 = _counts(est)
        np.testing.assert_allclose(got_c1, c1, rtol=0, atol=1e-9)
        np.testing.assert_allclose(got_c0, c0, rtol=0, atol=1e-9)
        np.testing.assert_allclose(est.prior_, prior, rtol=0, atol=1e-12)
        np.testing.assert_allclose(est.cond_prob_true_, true, rtol=0, atol=1e-12)
        np.testing.assert_allclose(est.cond_prob_false_, false, rtol=0, atol=1e-12)
        for xt in (X_test, sp.csr_matrix(X_test), sp.csr_array(X_test)):
            scores = est.decision_function(xt)
            assert scores.dtype == np.float64 and scores.shape == (12, Y.shape[1])
            np.testing.assert_allclose(scores, post, rtol=0, atol=1e-12)


# --------------------------------------------------------------------------- #
# The posterior
# --------------------------------------------------------------------------- #
def test_posterior_is_normalised_and_predict_thresholds_it(rng) -> None:
    X, Y = _data(rng, N=60)
    est = MLkNN(n_neighbors=5, smoothing=0.7, calibration=None).fit(X, Y)
    np.testing.assert_allclose(est.cond_prob_true_.sum(axis=0), 1.0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(est.cond_prob_false_.sum(axis=0), 1.0, rtol=0, atol=1e-12)
    X_test = rng.normal(size=(25, X.shape[1]))
    proba = est.predict_proba(X_test)
    np.testing.assert_array_equal(proba, est.decision_function(X_test))
    assert np.all((proba >= 0) & (proba <= 1))
    # the ratio, recomputed from the neighbour counts and the fitted tables
    nbrs = est.nn_.kneighbors(X_test, return_distance=False)
    C = Y[nbrs].sum(axis=1)  # (25, K)
    cols = np.arange(Y.shape[1])
    a = est.prior_ * est.cond_prob_true_[C, cols]
    b = (1 - est.prior_) * est.cond_prob_false_[C, cols]
    np.testing.assert_allclose(proba, a / (a + b), rtol=0, atol=1e-12)
    for t in (0.0, 0.3, 0.5, float(np.median(proba)), 1.0):
        pred = est.set_params(threshold=t).predict(X_test)
        assert pred.dtype == np.int64
        np.testing.assert_array_equal(pred, (proba >= t).astype(np.int64))


def test_predict_topk_ranks_posteriors_ties_by_lower_label(rng) -> None:
    X, Y = _data(rng, N=50, K=8)
    est = MLkNN(n_neighbors=3).fit(X, Y)
    X_test = rng.normal(size=(30, X.shape[1]))
    proba = est.decision_function(X_test)
    # bit for bit at any batch size: a KD-tree finds each row's neighbours on its own (no BLAS), and
    # the scores are looked up in the fitted tables
    t = est.predict_topk(X_test, 5, batch_size=7)
    assert isinstance(t, TopK) and t.indices.shape == (30, 5)
    for i in range(30):
        ref = sorted(range(8), key=lambda j: (-proba[i, j], j))[:5]
        np.testing.assert_array_equal(t.indices[i], ref)
        np.testing.assert_array_equal(t.scores[i], proba[i, ref])
    np.testing.assert_array_equal(est.decision_function(sp.csr_matrix(X_test), batch_size=4), proba)


def test_training_point_is_not_its_own_neighbour() -> None:
    # Each point's single other-neighbour carries the opposite label: without self-exclusion the
    # counts would say "a neighbour with the label means the label" (c1 = [0, 2]); with it they say
    # the reverse, and an exact training point (whose nearest training point is itself) scores 1/4.
    X = np.array([[0.0], [1.0], [10.0], [11.0]])
    Y = np.array([[1], [0], [1], [0]])
    est = MLkNN(n_neighbors=1, smoothing=1.0).fit(X, Y)
    c1, c0 = _counts(est)
    np.testing.assert_allclose(c1[:, 0], [2, 0], atol=1e-12)
    np.testing.assert_allclose(c0[:, 0], [0, 2], atol=1e-12)
    np.testing.assert_allclose(est.decision_function(X[:1]), [[0.25]], rtol=0, atol=1e-15)
    np.testing.assert_allclose(est.decision_function(X[1:2]), [[0.75]], rtol=0, atol=1e-15)


def test_duplicates_are_other_points_not_self() -> None:
    # Four identical points, only the first labelled: whichever duplicate is its neighbour, it is not
    # itself, so the labelled point has 0 labelled neighbours (c1 = [1, 0]).
    X = np.zeros((4, 2))
    Y = np.array([[1], [0], [0], [0]])
    for k in (1, 2, 3):
        c1, _ = _counts(MLkNN(n_neighbors=k).fit(X, Y))
        np.testing.assert_allclose(c1[:, 0], [1] + [0] * k, atol=1e-12)
    # two pairs of duplicates: each point's neighbour is its twin
    est = MLkNN(n_neighbors=1).fit(np.array([[0.0], [0.0], [5.0], [5.0]]), np.array([[1], [1], [0], [0]]))
    c1, c0 = _counts(est)
    np.testing.assert_allclose(c1[:, 0], [0, 2], atol=1e-12)
    np.testing.assert_allclose(c0[:, 0], [2, 0], atol=1e-12)


# --------------------------------------------------------------------------- #
# scikit-learn API
# --------------------------------------------------------------------------- #
def test_params_and_clone() -> None:
    est = MLkNN(n_neighbors=3, smoothing=2.0, metric="cosine", threshold=0.3, n_jobs=1)
    assert est.get_params() == {"n_neighbors": 3, "smoothing": 2.0, "metric": "cosine", "threshold": 0.3,
                                "n_jobs": 1, "calibration": "prior", "max_seconds": None}
    assert est.set_params(smoothing=0.5) is est and est.smoothing == 0.5
    est.fit(LINE_X, LINE_Y)
    copy = clone(est)
    assert copy.get_params() == est.get_params()
    assert not hasattr(copy, "prior_") and not hasattr(copy, "nn_")
    with pytest.raises(NotFittedError, match="not fitted yet"):
        copy.decision_function(LINE_X)


@pytest.mark.parametrize("method", ["decision_function", "predict", "predict_proba", "predict_topk"])
def test_predicting_before_fit_raises(method) -> None:
    args = (np.zeros((2, 3)), 1) if method == "predict_topk" else (np.zeros((2, 3)),)
    with pytest.raises(NotFittedError, match="This MLkNN instance is not fitted yet"):
        getattr(MLkNN(), method)(*args)


@pytest.mark.parametrize(("params", "name"), [
    ({"n_neighbors": 0}, "n_neighbors"), ({"n_neighbors": 2.5}, "n_neighbors"),
    ({"smoothing": 0.0}, "smoothing"), ({"smoothing": -1.0}, "smoothing"),
    ({"metric": "hamming"}, "metric"), ({"threshold": 1.5}, "threshold"), ({"n_jobs": "2"}, "n_jobs"),
])
def test_invalid_params_are_rejected_in_fit(params, name) -> None:
    est = MLkNN(**params)  # __init__ only stores
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter of MLkNN must be"):
        est.fit(LINE_X, LINE_Y)
    assert not hasattr(est, "nn_")


def test_bad_training_data(rng) -> None:
    X, Y = _data(rng)
    est = MLkNN(n_neighbors=3)
    with pytest.raises(ShapeError, match=r"must hold 0/1 labels; found values \[2\.\]"):
        est.fit(X, np.where(Y == 1, 2, 0))
    X_nan = X.copy()
    X_nan[3, 1] = np.nan
    for bad in (X_nan, sp.csr_matrix(X_nan)):
        with pytest.raises(ShapeError, match=r"X contains NaN or inf \(first in row 3\)"):
            est.fit(bad, Y)
    with pytest.raises(ShapeError, match="Y has 39 rows but the features have 40"):
        est.fit(X, Y[:-1])
    with pytest.raises(ShapeError, match=r"got a 1-D target of type 'binary' with shape \(40,\)"):
        est.fit(X, Y[:, 0])
    with pytest.raises(ShapeError, match="requires y to be passed"):
        est.fit(X, None)
    with pytest.raises(ShapeError, match=r"n_neighbors=10 needs at least 11 training points.*got 10 sample"):
        MLkNN(n_neighbors=10).fit(X[:10], Y[:10])
    with pytest.raises(ShapeError, match=r"n_neighbors=40 needs at least 41 training points.*got 40 sample"):
        MLkNN(n_neighbors=40).fit(X, Y)
    MLkNN(n_neighbors=39).fit(X, Y)  # N = k + 1 is enough
    assert not hasattr(est, "nn_")


def test_bad_prediction_data(rng) -> None:
    X, Y = _data(rng)
    est = MLkNN(n_neighbors=3).fit(X, Y)
    for method, args in (("decision_function", ()), ("predict", ()), ("predict_proba", ()), ("predict_topk", (3,))):
        fn = getattr(est, method)
        with pytest.raises(ShapeError, match="X has 4 features, but MLkNN is expecting 5 features"):
            fn(X[:, :4], *args)
        X_inf = X[:4].copy()
        X_inf[2, 0] = np.inf
        with pytest.raises(ShapeError, match=r"X contains NaN or inf \(first in row 2\)"):
            fn(X_inf, *args)
    with pytest.raises(ShapeError, match="top_k=7 exceeds the number of labels K=6"):
        est.predict_topk(X, 7)


# --------------------------------------------------------------------------- #
# Import hygiene
# --------------------------------------------------------------------------- #
def test_import_does_not_load_tensorflow_or_gpflow() -> None:
    code = ("import sys, mlgp.baselines.mlknn; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('tensorflow', 'gpflow')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]", out.stdout[:500]
