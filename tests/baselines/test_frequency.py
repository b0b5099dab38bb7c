"""Tests of mlgp.baselines.LabelFrequency: scikit-learn's estimator checks and hand-made references."""

from __future__ import annotations

import doctest
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from _sklearn_checks import estimator_check_tests
from sklearn.base import clone, is_classifier
from sklearn.exceptions import NotFittedError
from sklearn.metrics import f1_score
from sklearn.utils._param_validation import InvalidParameterError

import mlgp.baselines.frequency
from mlgp.baselines import LabelFrequency
from mlgp.errors import ArgumentError, ShapeError
from mlgp.metrics import evaluate
from mlgp.scores import TopK

#: scikit-learn checks expected to fail, with why: all but the last feed a target that is not a
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
    # Not about multi-label: mlgp reports every bad input as ShapeError (a ValueError) by design.
}

test_sklearn_estimator_checks, test_skipped_checks_are_exactly_the_failing_ones = estimator_check_tests(
    [LabelFrequency()], EXPECTED_FAILED_CHECKS)


def test_docstring_example_runs() -> None:
    result = doctest.testmod(mlgp.baselines.frequency, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 5 and result.failed == 0


# --------------------------------------------------------------------------- #
# Hand-made references
# --------------------------------------------------------------------------- #
def _data(rng: np.random.Generator, N: int = 60, D: int = 7, K: int = 9):
    X = rng.normal(size=(N, D))
    X[X < 0.3] = 0.0
    Y = (rng.random((N, K)) < np.linspace(0.05, 0.7, K)).astype(np.int64)
    return X, Y


def _ref_ranking(counts: np.ndarray) -> np.ndarray:
    """Labels by decreasing count, the lower index first among equal counts (plain Python sort)."""
    return np.array(sorted(range(len(counts)), key=lambda j: (-counts[j], j)))


@pytest.mark.parametrize("smoothing", [0.0, 1.5])
def test_scores_are_the_smoothed_frequencies(rng, smoothing) -> None:
    X, Y = _data(rng)
    est = LabelFrequency(smoothing=smoothing).fit(X, Y)
    counts = Y.sum(axis=0).astype(np.float64)
    expected = (counts + smoothing) / (Y.shape[0] + 2 * smoothing)
    np.testing.assert_array_equal(est.label_counts_, counts)
    np.testing.assert_allclose(est.scores_, expected, rtol=0, atol=1e-15)
    assert (est.n_samples_, est.n_features_in_, est.n_labels_) == (60, 7, 9)
    np.testing.assert_array_equal(est.classes_, np.arange(9))
    X_test = rng.normal(size=(5, 7))
    scores = est.decision_function(X_test)
    assert scores.dtype == np.float64 and scores.shape == (5, 9)
    np.testing.assert_allclose(scores, np.tile(expected, (5, 1)), rtol=0, atol=1e-15)
    assert is_classifier(est)


def test_predict_topk_breaks_ties_by_lower_label_index() -> None:
    # counts per label: [2, 3, 3, 0, 2, 3]
    Y = np.array([[1, 1, 1, 0, 0, 1],
                  [1, 1, 0, 0, 1, 1],
                  [0, 1, 1, 0, 1, 1],
                  [0, 0, 1, 0, 0, 0]])
    counts = Y.sum(axis=0)
    est = LabelFrequency(smoothing=0.0).fit(np.ones((4, 2)), Y)
    ref = _ref_ranking(counts)
    np.testing.assert_array_equal(ref, [1, 2, 5, 0, 4, 3])
    for k in (1, 3, 4, 6):
        t = est.predict_topk(np.zeros((3, 2)), k)
        assert isinstance(t, TopK) and t.indices.shape == (3, k)
        np.testing.assert_array_equal(t.indices, np.tile(ref[:k], (3, 1)))
        np.testing.assert_allclose(t.scores, np.tile(counts[ref[:k]] / 4.0, (3, 1)))


def test_predict_thresholds_the_frequencies() -> None:
    Y = np.array([[1, 0, 1], [0, 0, 1], [1, 0, 1], [0, 1, 0]])  # frequencies 0.5, 0.25, 0.75
    X = np.zeros((4, 1))
    pred = LabelFrequency().fit(X, Y).predict(X)
    assert pred.dtype == np.int64
    np.testing.assert_array_equal(pred, np.tile([1, 0, 1], (4, 1)))
    np.testing.assert_array_equal(LabelFrequency(threshold=0.2).fit(X, Y).predict(X[:1]), [[1, 1, 1]])
    np.testing.assert_array_equal(LabelFrequency(threshold=1.0).fit(X, Y).predict(X[:1]), [[0, 0, 0]])
    # scikit-learn's classification metrics take the (N, K) 0/1 predictions
    assert f1_score(Y, pred, average="micro") == pytest.approx(2 * 5 / (8 + 6))  # TP 5, 8 predicted, 6 true


def test_csr_and_dense_inputs_agree(rng) -> None:
    X, Y = _data(rng)
    dense = LabelFrequency(smoothing=0.5).fit(X, Y)
    sparse = LabelFrequency(smoothing=0.5).fit(sp.csr_matrix(X), sp.csr_matrix(Y))
    np.testing.assert_array_equal(dense.scores_, sparse.scores_)
    for est in (dense, sparse):
        for X_test in (X[:11], sp.csr_matrix(X[:11]), sp.csr_array(X[:11])):
            np.testing.assert_array_equal(est.decision_function(X_test), dense.decision_function(X[:11]))
            np.testing.assert_array_equal(est.predict_topk(X_test, 4).indices, dense.predict_topk(X[:11], 4).indices)
            np.testing.assert_array_equal(est.predict(X_test), dense.predict(X[:11]))


def test_batches_give_the_same_scores(rng) -> None:
    X, Y = _data(rng, N=2500, D=4, K=12)
    est = LabelFrequency().fit(X, Y)
    X_csr = sp.csr_matrix(X)
    one = est.decision_function(X, batch_size=2500)
    np.testing.assert_array_equal(est.decision_function(X_csr, batch_size=1000), one)
    np.testing.assert_array_equal(est.decision_function(X), one)
    t1, t3 = est.predict_topk(X, 5, batch_size=2500), est.predict_topk(X_csr, 5, batch_size=1000)
    np.testing.assert_array_equal(t3.indices, t1.indices)
    np.testing.assert_array_equal(t3.scores, t1.scores)
    np.testing.assert_array_equal(t1.indices, np.tile(_ref_ranking(Y.sum(axis=0))[:5], (2500, 1)))


def test_evaluate_accepts_both_outputs(rng) -> None:
    X, Y = _data(rng)
    est = LabelFrequency().fit(X[:40], Y[:40])
    by_topk = evaluate(Y[40:], est.predict_topk(X[40:], 5))
    by_scores = evaluate(sp.csr_matrix(Y[40:]), est.decision_function(X[40:]))
    assert list(by_topk.index) == ["P", "nDCG"] and list(by_topk.columns) == [1, 3, 5]
    np.testing.assert_allclose(by_topk.to_numpy(), by_scores.to_numpy())
    best = _ref_ranking(Y[:40].sum(axis=0))[0]
    assert by_topk.loc["P", 1] == pytest.approx(100 * Y[40:, best].mean())


# --------------------------------------------------------------------------- #
# scikit-learn API
# --------------------------------------------------------------------------- #
def test_params_and_clone(rng) -> None:
    est = LabelFrequency(smoothing=2.0, threshold=0.3)
    assert est.get_params() == {"smoothing": 2.0, "threshold": 0.3}
    assert est.set_params(smoothing=0.5) is est and est.smoothing == 0.5
    X, Y = _data(rng)
    est.fit(X, Y)
    copy = clone(est)
    assert copy.get_params() == est.get_params()
    assert not hasattr(copy, "scores_") and not hasattr(copy, "n_features_in_")
    with pytest.raises(NotFittedError, match="not fitted yet"):
        copy.decision_function(X)


def test_invalid_params_are_rejected_in_fit(rng) -> None:
    X, Y = _data(rng)
    LabelFrequency(smoothing=-1.0)  # __init__ only stores
    with pytest.raises(InvalidParameterError, match="'smoothing' parameter of LabelFrequency must be"):
        LabelFrequency(smoothing=-1.0).fit(X, Y)
    with pytest.raises(InvalidParameterError, match="'threshold' parameter of LabelFrequency must be"):
        LabelFrequency(threshold=1.5).fit(X, Y)


@pytest.mark.parametrize("method", ["decision_function", "predict", "predict_topk"])
def test_predicting_before_fit_raises(method) -> None:
    args = (np.zeros((2, 3)), 1) if method == "predict_topk" else (np.zeros((2, 3)),)
    with pytest.raises(NotFittedError, match="This LabelFrequency instance is not fitted yet"):
        getattr(LabelFrequency(), method)(*args)


# --------------------------------------------------------------------------- #
# Bad input: mlgp's ShapeError with a message saying what is wrong
# --------------------------------------------------------------------------- #
def test_bad_training_data(rng) -> None:
    X, Y = _data(rng)
    est = LabelFrequency()
    with pytest.raises(ShapeError, match=r"must hold 0/1 labels; found values \[2\.\]"):
        est.fit(X, np.where(Y == 1, 2, 0))
    X_nan = X.copy()
    X_nan[3, 1] = np.nan
    with pytest.raises(ShapeError, match=r"X contains NaN or inf \(first in row 3\)"):
        est.fit(X_nan, Y)
    with pytest.raises(ShapeError, match=r"X contains NaN or inf \(first in row 3\)"):
        est.fit(sp.csr_matrix(X_nan), Y)
    with pytest.raises(ShapeError, match="Y has 59 rows but the features have 60"):
        est.fit(X, Y[:-1])
    with pytest.raises(ShapeError, match=r"got a 1-D target of type 'binary' with shape \(60,\)"):
        est.fit(X, Y[:, 0])
    with pytest.raises(ShapeError, match="requires y to be passed, but the target y is None"):
        est.fit(X, None)
    with pytest.raises(ShapeError, match=r"X has 0 feature\(s\)"):
        est.fit(np.zeros((60, 0)), Y)
    with pytest.raises(ShapeError, match="X has no rows"):
        est.fit(np.zeros((0, 3)), np.zeros((0, 2)))
    assert not hasattr(est, "scores_")


def test_bad_prediction_data(rng) -> None:
    X, Y = _data(rng)
    est = LabelFrequency().fit(X, Y)
    for method, args in (("decision_function", ()), ("predict", ()), ("predict_topk", (3,))):
        fn = getattr(est, method)
        with pytest.raises(ShapeError, match="X has 6 features, but LabelFrequency is expecting 7 features"):
            fn(X[:, :6], *args)
        with pytest.raises(ShapeError, match="X has 8 features, but LabelFrequency is expecting 7 features"):
            fn(sp.csr_matrix(np.ones((2, 8))), *args)
        X_inf = X[:4].copy()
        X_inf[2, 0] = np.inf
        with pytest.raises(ShapeError, match=r"X contains NaN or inf \(first in row 2\)"):
            fn(X_inf, *args)
        with pytest.raises(ShapeError, match="Reshape your data"):
            fn(X[0], *args)
    with pytest.raises(ShapeError, match="top_k=10 exceeds the number of labels K=9"):
        est.predict_topk(X, 10)
    with pytest.raises(ArgumentError, match="batch_size must be a positive integer"):
        est.decision_function(X, batch_size=0.5)


# --------------------------------------------------------------------------- #
# Import hygiene
# --------------------------------------------------------------------------- #
@pytest.mark.slow
@pytest.mark.parametrize("module", ["mlgp.baselines", "mlgp.metrics", "mlgp.scores"])
def test_import_does_not_load_tensorflow_or_gpflow(module) -> None:
    code = (f"import sys, {module}; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('tensorflow', 'gpflow')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]", out.stdout[:500]
