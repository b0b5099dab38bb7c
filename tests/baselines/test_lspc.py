"""Tests of mlgp.baselines.LSPC: scikit-learn's estimator checks, the closed form against a direct
solve, the clipped posterior, class labels of any kind, label matrices and bad input."""

from __future__ import annotations

import doctest

import numpy as np
import pytest
import scipy.sparse as sp
from _sklearn_checks import estimator_check_tests
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.utils._param_validation import InvalidParameterError

import mlgp.baselines.lspc
from mlgp.baselines import LSPC, median_heuristic
from mlgp.errors import ShapeError

EXPECTED_FAILED_CHECKS = {
    "check_supervised_y_2d": "passes class labels as an (N, 1) column and expects them raveled with a "
                             "warning; LSPC reads every 2-D target as a 0/1 label matrix (K = 1 is valid)",
    "check_classifier_multioutput": "wants decision_function to rank points as predict_proba does; "
                                    "(max(0, q1) + w π) / (max(0, q1) + max(0, q0) + w) is not monotone in q1 − q0",
    "check_decision_proba_consistency": "wants predict_proba to rank points as decision_function does; with "
                                        "prior_weight w > 0, (max(0, q1) + w π) / (max(0, q1) + max(0, q0) + w) is "
                                        "not monotone in q1 − q0",
    "check_classifier_data_not_an_array": "its _NotAnArray target is neither 1-D class labels nor a label "
                                          "matrix that LSPC can tell apart without converting it",
}

test_sklearn_estimator_checks, test_skipped_checks_are_exactly_the_failing_ones = estimator_check_tests(
    [LSPC(random_state=0)], EXPECTED_FAILED_CHECKS)


def test_lspc_docstring_example_runs() -> None:
    result = doctest.testmod(mlgp.baselines.lspc, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 5 and result.failed == 0


def _three_classes(rng: np.random.Generator, N: int = 120):
    X = rng.normal(size=(N, 3))
    y = np.array(["a", "b", "c"])[np.argmax(X[:, :3] + 0.3 * rng.normal(size=(N, 3)), axis=1)]
    return X, y


def test_closed_form_is_the_ridge_solution(rng) -> None:
    X, y = _three_classes(rng)
    est = LSPC(n_basis=None, alpha=0.5, kernel_width=1.3, prior_weight=0.0).fit(X, y)  # the paper's posterior
    assert est.coef_.shape == (120, 3) and not est.multilabel_
    sq = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)        # every point a centre (B = N)
    Phi = np.exp(-sq / (2 * 1.3 ** 2))
    Pi = (y[:, None] == np.array(["a", "b", "c"])[None, :]).astype(float)
    theta = np.linalg.solve(Phi.T @ Phi + 0.5 * np.eye(120), Phi.T @ Pi)
    np.testing.assert_allclose(est.coef_, theta, rtol=1e-6, atol=1e-8)
    X_test = rng.normal(size=(10, 3))
    Phi_t = np.exp(-((X_test[:, None, :] - X[None, :, :]) ** 2).sum(-1) / (2 * 1.3 ** 2))
    q = Phi_t @ theta
    np.testing.assert_allclose(est.decision_function(X_test), q, rtol=1e-6, atol=1e-8)
    p = np.maximum(q, 0)
    prior = Pi.mean(axis=0)  # where every output is <= 0: the training class frequencies
    p = np.where(p.sum(1, keepdims=True) > 0, p / np.where(p.sum(1, keepdims=True) > 0, p.sum(1, keepdims=True), 1), prior)
    proba = est.predict_proba(X_test)
    np.testing.assert_allclose(proba, p, atol=1e-8)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(est.predict(X_test), np.array(["a", "b", "c"])[np.argmax(proba, axis=1)])
    assert est.predict_topk(X_test, 2).indices.shape == (10, 2)


def _skewed_classes(rng: np.random.Generator):
    """100 points in 2-D whose classes "a", "b", "c" have 60, 30 and 10 members (shuffled)."""
    X = rng.normal(size=(100, 2))
    y = rng.permutation(np.repeat(np.array(["a", "b", "c"]), [60, 30, 10]))
    return X, y


def test_far_points_get_the_training_class_frequencies(rng) -> None:
    """Far from every basis centre all outputs are 0 (none positive): the probabilities are the
    training class frequencies 0.6 / 0.3 / 0.1 exactly, not uniform, and predict the majority class."""
    X, y = _skewed_classes(rng)
    est = LSPC(n_basis=50, random_state=0, prior_weight=0.0).fit(X, y)
    np.testing.assert_array_equal(est.prior_, [0.6, 0.3, 0.1])
    far = np.array([[1e3, 1e3], [-1e3, 2e3]])  # > 1e3 from every training point
    np.testing.assert_array_equal(est.decision_function(far), 0.0)  # every output <= 0: the fallback
    np.testing.assert_array_equal(est.predict_proba(far), [[0.6, 0.3, 0.1]] * 2)
    # with the prior's weight (the default) far points get the Jeffreys-smoothed frequencies, w π / w
    smoothed = LSPC(n_basis=50, random_state=0).fit(X, y)
    np.testing.assert_allclose(smoothed.predict_proba(far), [[60.5 / 101.5, 30.5 / 101.5, 10.5 / 101.5]] * 2,
                               rtol=1e-14)
    np.testing.assert_array_equal(est.predict(far), ["a", "a"])
    # a near point is unaffected: its probabilities come from the fitted outputs and sum to one
    near = est.predict_proba(X[:5])
    np.testing.assert_allclose(near.sum(axis=1), 1.0)


def test_far_points_get_the_training_label_frequencies_for_a_label_matrix(rng) -> None:
    """For a label matrix, a point far from every centre gets each label's training frequency
    (0.6, 0.3, 0.1) as its presence probability, not 1/2."""
    X, y = _skewed_classes(rng)
    Y = np.zeros((100, 3), dtype=np.int64)
    Y[:60, 0] = 1
    Y[30:60, 1] = 1
    Y[90:, 2] = 1
    Y = Y[rng.permutation(100)]
    est = LSPC(n_basis=50, random_state=0, prior_weight=0.0, calibration=None).fit(X, Y)  # the paper's fallback
    assert est.multilabel_
    np.testing.assert_allclose(est.prior_, [0.6, 0.3, 0.1], rtol=1e-15, atol=0)  # a sparse mean: to rounding
    far = np.full((1, 2), 1e3)
    np.testing.assert_array_equal(est.decision_function(far), 0.0)  # both outputs <= 0: the fallback
    proba = est.predict_proba(far)
    np.testing.assert_array_equal(proba, est.prior_[None, :])
    np.testing.assert_allclose(proba, [[0.6, 0.3, 0.1]], rtol=1e-15, atol=0)
    np.testing.assert_array_equal(est.predict(far), [[1, 0, 0]])


def test_median_heuristic_is_the_default_width(rng) -> None:
    X, y = _three_classes(rng)
    assert LSPC().fit(X, y).kernel_width_ == pytest.approx(median_heuristic(X))
    assert LSPC(kernel_width=2.5).fit(X, y).kernel_width_ == 2.5


def test_binary_decision_is_the_difference_and_agrees_with_predict(rng) -> None:
    X = rng.normal(size=(150, 2))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int) * 5 + 1      # classes 1 and 6
    est = LSPC(random_state=0).fit(X, y)
    np.testing.assert_array_equal(est.classes_, [1, 6])
    X_test = rng.normal(size=(40, 2))
    d = est.decision_function(X_test)
    q = est.basis_.design(X_test) @ est.coef_
    assert d.shape == (40,)
    np.testing.assert_allclose(d, q[:, 1] - q[:, 0], atol=1e-12)
    pred = est.predict(X_test)
    np.testing.assert_array_equal(pred[d > 1e-9], 6)
    np.testing.assert_array_equal(pred[d < -1e-9], 1)
    assert np.mean(pred == (X_test[:, 0] + 0.5 * X_test[:, 1] > 0) * 5 + 1) > 0.85


def test_label_matrix_fits_one_classifier_per_label(rng) -> None:
    X = rng.normal(size=(90, 3))
    Y = np.column_stack([X[:, 0] > 0, X[:, 1] > 0.5, X[:, 2] < 0]).astype(int)
    est = LSPC(n_basis=40, random_state=0).fit(sp.csr_matrix(X), sp.csr_matrix(Y))
    assert est.multilabel_ and est.coef_.shape == (2, 40, 3)
    np.testing.assert_array_equal(est.classes_, [0, 1, 2])
    for t in range(3):
        single = LSPC(n_basis=40, random_state=0).fit(X, Y[:, t])
        np.testing.assert_allclose(est.coef_[0, :, t], single.coef_[:, 1], atol=1e-10)
    proba = est.predict_proba(X)
    assert proba.shape == (90, 3) and proba.min() >= 0 and proba.max() <= 1
    np.testing.assert_array_equal(est.predict(X), (proba >= 0.5).astype(np.int64))
    assert np.mean(est.predict(X) == Y) > 0.9


def test_grid_search_and_clone(rng) -> None:
    X, y = _three_classes(rng, N=100)
    search = GridSearchCV(LSPC(random_state=0), {"alpha": [0.01, 1.0], "kernel_width": [0.5, 2.0]}, cv=5).fit(X, y)
    assert search.best_score_ > 0.5
    est = LSPC(alpha=0.3, random_state=4)
    np.testing.assert_array_equal(clone(est).fit(X, y).coef_, est.fit(X, y).coef_)


@pytest.mark.parametrize("y, message", [
    (np.zeros(100), r"LSPC needs at least 2 classes in y; got 1 class \(np\.float64\(0\.0\)\)|LSPC needs at least 2 classes in y; got 1 class \(0\.0\)"),
    (np.linspace(0, 1, 100), r"Unknown label type: continuous"),
    (np.arange(99) % 2, r"y has 99 entries but X has 100 rows: labels/features shape mismatch"),
    (None, r"LSPC requires y to be passed, but the target y is None"),
])
def test_bad_targets_are_refused(rng, y, message) -> None:
    with pytest.raises(ShapeError, match=message):
        LSPC().fit(rng.normal(size=(100, 2)), y)


@pytest.mark.parametrize("kwargs", [{"alpha": 0.0}, {"n_basis": 0}, {"kernel_width": -1.0}, {"threshold": -0.1}])
def test_bad_lspc_parameters_are_refused(rng, kwargs) -> None:
    with pytest.raises(InvalidParameterError, match=f"The '{next(iter(kwargs))}' parameter of LSPC must be"):
        LSPC(**kwargs).fit(rng.normal(size=(20, 2)), np.arange(20) % 2)
