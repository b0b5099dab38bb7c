"""Tests of mlgp.baselines.MLLSPC: scikit-learn's estimator checks, the optimum against the
paper's criterion, the solvers, the decoupled limit against LSPC, model selection and bad input."""

from __future__ import annotations

import doctest

import numpy as np
import pytest
import scipy.sparse as sp
from _rounding import assert_topk_close
from _sklearn_checks import estimator_check_tests
from sklearn.base import clone
from sklearn.metrics import hamming_loss, make_scorer
from sklearn.model_selection import GridSearchCV
from sklearn.utils._param_validation import InvalidParameterError

import mlgp.baselines.mllspc
from mlgp.baselines import LSPC, MLLSPC, MLLSPCCV, pearson_similarity
from mlgp.baselines._kernel_basis import gaussian_design
from mlgp.baselines._sylvester import sylvester_residual
from mlgp.data import lspc_toy
from mlgp.errors import ShapeError
from mlgp.scores import TopK

_TARGET = "the target is the class labels {1, 2} (or 0..3), not 0/1 labels"
EXPECTED_FAILED_CHECKS = {
    "check_classifiers_classes": "fits a 1-D y of string / integer class labels; multi-label needs a 2-D 0/1 Y",
    "check_classifiers_train": "fits a 1-D binary y (given here as one (N, 1) column) and expects 1-D (N,) "
                               "predictions; multi-label predict returns (N, K)",
    "check_classifier_not_supporting_multiclass": "fits a 1-D multiclass y and expects the message 'Only binary "
                                                  "classification is supported'; every 1-D y is refused",
    "check_decision_proba_consistency": "fits a 1-D binary y; multi-label needs a 2-D 0/1 Y",
    "check_estimators_dtypes": _TARGET,
    "check_classifier_data_not_an_array": _TARGET,
    "check_fit2d_1feature": _TARGET,
    "check_estimator_sparse_array": "expects (N, n_classes) probabilities for one target; multi-label "
                                    "predict_proba returns one presence probability per label, (N, K)",
    "check_estimator_sparse_matrix": "as check_estimator_sparse_array",
    # Properties of the paper's method, not of the estimator's plumbing:
    "check_classifier_multioutput": "wants decision_function to rank points as predict_proba does; "
                                    "(max(0, q1) + w π) / (max(0, q1) + max(0, q0) + w) is not monotone in q1 − q0",
}

# MLLSPCCV (a small grid) wraps MLLSPC and fails exactly the same checks
test_sklearn_estimator_checks, test_skipped_checks_are_exactly_the_failing_ones = estimator_check_tests(
    [MLLSPC(random_state=0), MLLSPCCV(alphas=(0.1,), couplings=(0.0, 0.1), cv=3, random_state=0)],
    EXPECTED_FAILED_CHECKS)


def test_docstring_example_runs() -> None:
    result = doctest.testmod(mlgp.baselines.mllspc, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 5 and result.failed == 0


def _toy(T: int = 6, N: int = 150, D: int = 5, seed: int = 0):
    ds = lspc_toy(N, 60, num_labels=T, num_features=D, seed=seed)
    return ds.train.X.toarray(), ds.train.Y.toarray(), ds.test.X.toarray(), ds.test.Y.toarray()


def _criterion(theta, Phi, Pi, C) -> float:
    """½ tr(ΘᵀΦᵀΦΘ) − tr(ΘᵀΦᵀΠ) + ½ tr(ΘCΘᵀ), the paper's ML-LSPC criterion, written out."""
    return 0.5 * np.sum((Phi @ theta) ** 2) - np.sum(theta * (Phi.T @ Pi)) + 0.5 * np.trace(theta @ C @ theta.T)


@pytest.mark.parametrize("solver", ["eig", "sylvester", "cg", "dense"])
def test_fit_minimises_the_papers_criterion(rng, solver) -> None:
    X, Y, _, _ = _toy(T=4, N=60)
    est = MLLSPC(n_basis=25, alpha=0.3, coupling=2.0, solver=solver, tol=1e-12, random_state=1).fit(X, Y)
    assert est.solver_ == solver and est.coef_.shape == (2, 25, 4)
    Phi = gaussian_design(X, est.basis_.centres, est.kernel_width_)
    W = np.maximum(np.corrcoef(Y.T), 0.0)
    np.fill_diagonal(W, 0.0)
    np.testing.assert_allclose(est.similarity_, W, atol=1e-12)
    gamma = 2.0 * W
    C = np.diag(0.3 + gamma.sum(axis=1)) - gamma
    for theta, Pi in zip(est.coef_, (Y, 1 - Y)):
        assert sylvester_residual(Phi.T @ Phi, C, theta, Phi.T @ Pi) <= (1e-12 if solver == "cg" else 1e-10)
        f0 = _criterion(theta, Phi, Pi, C)
        for _ in range(5):  # a strictly convex criterion: every perturbation increases it
            assert _criterion(theta + 1e-3 * rng.normal(size=theta.shape), Phi, Pi, C) > f0
    if solver == "cg":
        assert len(est.solve_info_.iterations) == 2 and max(est.solve_info_.residuals) <= 1e-12


def test_solvers_give_the_same_model(rng) -> None:
    X, Y, X_test, _ = _toy()
    fits = {s: MLLSPC(n_basis=40, solver=s, tol=1e-12, random_state=0).fit(X, Y) for s in ("eig", "sylvester", "cg", "dense")}
    ref = fits["dense"].coef_
    for s, est in fits.items():
        assert np.linalg.norm(est.coef_ - ref) / np.linalg.norm(ref) < 1e-8, s
        np.testing.assert_allclose(est.decision_function(X_test), fits["dense"].decision_function(X_test), atol=1e-7)
    assert MLLSPC(n_basis=40, random_state=0).fit(X, Y).solver_ == "eig"  # auto


def test_no_coupling_equals_independent_lspcs() -> None:
    X, Y, X_test, _ = _toy(T=5)
    ml = MLLSPC(n_basis=50, alpha=0.2, coupling=0.0, random_state=3, calibration=None).fit(X, Y)
    plain = LSPC(n_basis=50, alpha=0.2, random_state=3, calibration=None).fit(X, Y)
    np.testing.assert_allclose(ml.coef_, plain.coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ml.predict_proba(X_test), plain.predict_proba(X_test), atol=1e-10)
    np.testing.assert_allclose(ml.decision_function(X_test), plain.decision_function(X_test), atol=1e-10)
    # and each label alone: LSPC on the label's 1-D 0/1 classes (classes_ = [0, 1]: absent, present)
    for t in range(Y.shape[1]):
        single = LSPC(n_basis=50, alpha=0.2, random_state=3).fit(X, Y[:, t])
        np.testing.assert_allclose(single.coef_[:, 1], ml.coef_[0, :, t], rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(single.coef_[:, 0], ml.coef_[1, :, t], rtol=1e-9, atol=1e-12)
        # the same presence/absence difference; the binary LSPC's proba is one label's column
        np.testing.assert_allclose(single.decision_function(X_test), ml.decision_function(X_test)[:, t], atol=1e-10)
        np.testing.assert_allclose(single.predict_proba(X_test)[:, 1], ml.predict_proba(X_test)[:, t], atol=1e-10)


@pytest.mark.parametrize("weight", [0.0, 0.1, 2.0])
def test_probabilities_clip_normalise_and_fall_back_to_the_prior(weight) -> None:
    X, Y, X_test, _ = _toy()
    est = MLLSPC(n_basis=60, random_state=0, prior_weight=weight, calibration=None).fit(X, Y)
    Phi = gaussian_design(X_test, est.basis_.centres, est.kernel_width_)
    q1, q0 = Phi @ est.coef_[0], Phi @ est.coef_[1]
    p1, p0 = np.maximum(q1, 0), np.maximum(q0, 0)
    if weight == 0:  # the paper's clipped, normalised outputs, the prior where both are <= 0
        expected = np.where(p1 + p0 > 0, p1 / np.where(p1 + p0 > 0, p1 + p0, 1), est.prior_)
    else:
        smoothed = (est.prior_ * X.shape[0] + 0.5) / (X.shape[0] + 1)  # Jeffreys: no label impossible
        expected = (p1 + weight * smoothed) / (p1 + p0 + weight)
        assert expected.min() > 0  # no label is impossible
    proba = est.predict_proba(X_test)
    np.testing.assert_allclose(proba, expected, atol=1e-14)
    assert proba.min() >= 0 and proba.max() <= 1
    np.testing.assert_array_equal(est.predict(X_test), (proba >= 0.5).astype(np.int64))
    np.testing.assert_allclose(est.decision_function(X_test), q1 - q0, atol=1e-12)
    np.testing.assert_allclose(est.prior_, Y.mean(axis=0))
    # far from every centre both outputs underflow to 0: the label frequencies
    far = np.full((1, X.shape[1]), 1e3)
    far_expected = est.prior_ if weight == 0 else (est.prior_ * X.shape[0] + 0.5) / (X.shape[0] + 1)
    np.testing.assert_allclose(est.predict_proba(far)[0], far_expected, rtol=1e-14)
    # one threshold per label
    thresholds = np.linspace(0.1, 0.9, Y.shape[1])
    est.set_params(threshold=thresholds)
    np.testing.assert_array_equal(est.predict(X_test), (proba >= thresholds).astype(np.int64))


def test_coupling_helps_on_the_rotating_toy_problem() -> None:
    """The paper's toy claim in miniature: many similar labels, few points — coupling lowers the error."""
    ds = lspc_toy(120, 400, num_labels=20, num_features=4, seed=5)
    X, Y, Xt, Yt = ds.train.X, ds.train.Y.toarray(), ds.test.X, ds.test.Y.toarray()
    errors = {c: np.mean(MLLSPC(alpha=0.1, coupling=c, kernel_width=1.0, random_state=0).fit(X, Y).predict(Xt) != Yt)
              for c in (0.0, 3.0)}
    assert errors[3.0] < errors[0.0] - 0.01, errors


def test_csr_dense_batches_and_topk_agree(rng) -> None:
    X, Y, X_test, _ = _toy()
    dense = MLLSPC(n_basis=70, random_state=2).fit(X, Y)
    sparse = MLLSPC(n_basis=70, random_state=2).fit(sp.csr_matrix(X), sp.csr_matrix(Y))
    np.testing.assert_allclose(sparse.coef_, dense.coef_, rtol=1e-9, atol=1e-12)
    scores = dense.decision_function(X_test)
    for X_in in (sp.csr_matrix(X_test), sp.csr_array(X_test)):
        np.testing.assert_allclose(sparse.decision_function(X_in, batch_size=7), scores, atol=1e-12)
    top = dense.predict_topk(X_test, 3, batch_size=11)
    assert isinstance(top, TopK) and top.indices.shape == (X_test.shape[0], 3)
    # blocks of 11 rows take other BLAS kernels than one block: the ranking of `scores` to rounding,
    # labels exactly away from near-ties
    assert_topk_close(top, scores)


def test_fixed_seed_reproduces_and_clone_refits_identically() -> None:
    X, Y, X_test, _ = _toy(N=150)
    a = MLLSPC(n_basis=30, random_state=7).fit(X, Y)
    b = clone(a).fit(X, Y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.basis_.centres, b.basis_.centres)
    c = MLLSPC(n_basis=30, random_state=8).fit(X, Y)
    assert not np.array_equal(a.basis_.centres, c.basis_.centres)
    assert clone(a).get_params() == a.get_params()


def test_user_similarity_and_grid_search() -> None:
    X, Y, X_test, Y_test = _toy(T=4, N=100)
    W = pearson_similarity(Y)
    np.testing.assert_allclose(MLLSPC(n_basis=30, similarity=W, random_state=0).fit(X, Y).coef_,
                               MLLSPC(n_basis=30, random_state=0).fit(X, Y).coef_, atol=1e-12)
    search = GridSearchCV(MLLSPC(n_basis=40, random_state=0),
                          {"alpha": [0.1, 1.0], "coupling": [0.0, 1.0], "kernel_width": [1.0, 3.0]},
                          cv=5, scoring=make_scorer(hamming_loss, greater_is_better=False))
    search.fit(X, Y)
    assert len(search.cv_results_["params"]) == 8 and np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    assert search.best_estimator_.predict(X_test).shape == Y_test.shape


@pytest.mark.parametrize("kwargs, data, message", [
    ({}, "mismatch", r"Y has 59 rows but the features have 60: labels/features shape mismatch"),
    ({}, "labels", r"Y must hold 0/1 labels; found values \[2\.\]"),
    ({}, "nan", r"X contains NaN or inf \(first in row 3\)"),
    ({"similarity": np.ones((3, 3))}, None, r"similarity must be a \(K, K\) = \(4, 4\) matrix, got shape \(3, 3\)"),
    ({"similarity": np.triu(np.ones((4, 4)))}, None, r"similarity must be symmetric: entry \(0, 1\) is 1\.0 but \(1, 0\) is 0\.0"),
    ({"similarity": -np.ones((4, 4))}, None, r"similarity must be non-negative"),
    ({"similarity": np.full((4, 4), np.nan)}, None, r"similarity contains NaN or inf"),
    ({"threshold": [0.5, 0.5]}, None, r"threshold must be a number or an array of one value per label, shape \(4,\); got shape \(2,\)"),
])
def test_bad_input_is_refused_before_any_work(monkeypatch, kwargs, data, message) -> None:
    X, Y, _, _ = _toy(T=4, N=60)
    if data == "mismatch":
        Y = Y[:-1]
    elif data == "labels":
        Y = Y.copy()
        Y[0, 0] = 2
    elif data == "nan":
        X = X.copy()
        X[3, 1] = np.nan

    def no_work(*args, **kwargs):
        raise AssertionError("fit started working on bad input")

    monkeypatch.setattr(mlgp.baselines.mllspc, "fit_basis", no_work)
    with pytest.raises(ShapeError, match=message):
        MLLSPC(**kwargs).fit(X, Y)


@pytest.mark.parametrize("kwargs", [{"alpha": -1.0}, {"alpha": 0.0}, {"coupling": -0.5}, {"n_basis": 0},
                                    {"kernel_width": 0.0}, {"solver": "lu"}, {"tol": 0.0}, {"threshold": 1.5}])
def test_bad_parameters_are_refused(kwargs) -> None:
    X, Y, _, _ = _toy(T=4, N=30)
    with pytest.raises(InvalidParameterError, match=f"The '{next(iter(kwargs))}' parameter of MLLSPC must be"):
        MLLSPC(**kwargs).fit(X, Y)
