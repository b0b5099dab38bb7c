"""Tests of mlgp.estimator.calibration against independent references: scikit-learn's
IsotonicRegression, a known over-confidence (p = sigmoid(3 z) where the truth is sigmoid(z)), NumPy
log-likelihoods, and the wrapped estimator's own scores (rankings unchanged, probabilities mapped)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import expit
from sklearn.base import clone
from sklearn.frozen import FrozenEstimator
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression

from mlgp.baselines import MLkNN
from mlgp.errors import ArgumentError, ShapeError
from mlgp.estimator import MultiLabelEstimator, ParameterError
from mlgp.estimator.calibration import CalibratedEstimator, ProbabilityCalibrator

from _probes import Ranker


def nll(p: np.ndarray, y: np.ndarray) -> float:
    """Mean Bernoulli negative log-likelihood, p clipped to [1e-12, 1 - 1e-12]."""
    p = np.clip(np.asarray(p, dtype=np.float64), 1e-12, 1 - 1e-12)
    y = np.asarray(y.toarray() if sp.issparse(y) else y, dtype=np.float64)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log1p(-p)))


def overconfident(seed: int, shape=(2000, 10), factor: float = 3.0):
    """``(sigmoid(factor z), y)`` with y ~ Bernoulli(sigmoid(z)), z ~ N(0, 1.5^2): 20,000 entries."""
    rng = np.random.default_rng(seed)
    z = rng.normal(0.0, 1.5, shape)
    return expit(factor * z), (rng.random(shape) < expit(z)).astype(np.int64)


def split_data(seed: int = 0, N: int = 300, D: int = 5, K: int = 4):
    """Features and labels that depend on them, split into training and held-out rows."""
    rng = np.random.default_rng(seed)
    X = rng.random((N, D))
    Y = (X[:, :K] + 0.6 * rng.random((N, K)) > 0.8).astype(np.int64)
    return X[: N // 2], Y[: N // 2], X[N // 2:], Y[N // 2:]


@pytest.fixture(scope="module")
def mlknn():
    X, Y, Xh, Yh = split_data()
    return MLkNN(n_neighbors=5, calibration=None).fit(X, Y), Xh, Yh  # its own probabilities, to be calibrated


class CalibrationProbe(MultiLabelEstimator):
    """A tiny estimator: probabilities sigmoid(X W - 1) + shift, W fitted as X^T Y / N."""

    _parameter_constraints: dict = {}

    def __init__(self, *, shift: float = 0.0) -> None:
        self.shift = shift

    def fit(self, X, Y):
        X, Y = self._validate_fit_data(X, Y)
        self.W_ = np.asarray((X.T @ Y).todense() if sp.issparse(X) else X.T @ Y.toarray()) / X.shape[0]
        self._set_fitted_shape(X.shape[0], X.shape[1], Y.shape[1])
        return self

    def _decision_block(self, xb):
        return np.asarray(xb @ self.W_)

    def _proba_block(self, xb):
        return expit(4 * self._decision_block(xb) - 1) + self.shift


class CalibrationCsrProbe(CalibrationProbe):
    """The probe on CSR blocks, returning its probabilities as a sparse matrix."""

    _block_format = "csr"

    def _proba_block(self, xb):
        assert sp.issparse(xb) and xb.format == "csr"
        return sp.csr_matrix(super()._proba_block(xb))


# ------------------------------------------------------------------------ ProbabilityCalibrator --
def test_isotonic_transform_is_sklearns_isotonic_regression_and_non_decreasing() -> None:
    p, y = overconfident(0, shape=(300, 6))
    cal = ProbabilityCalibrator(method="isotonic").fit(p, y)
    reference = IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip", increasing=True).fit(p.ravel(), y.ravel())
    new = np.random.default_rng(1).random((50, 6))
    new[0] = [0.0, 1.0, p.min() / 2, (1 + p.max()) / 2, 0.5, p.min()]  # outside the fitted range: clipped
    for q in (p, new):
        floor = 0.5 / (p.size + 1)  # the steps are kept off 0 and 1
        expected = np.clip(reference.predict(q.ravel()), floor, 1 - floor).reshape(q.shape)
        np.testing.assert_allclose(cal.transform(q), expected, rtol=0, atol=1e-12)
    assert cal.x_thresholds_.dtype == cal.y_thresholds_.dtype == np.float64
    grid = cal.transform(np.linspace(0, 1, 6000).reshape(-1, 6)).ravel()
    assert np.all(np.diff(grid) >= 0) and grid[-1] > grid[0]
    same = cal.transform(np.tile(new[:, :1], (1, 6)))      # one map pooled over every label
    assert np.array_equal(same, np.tile(same[:, :1], (1, 6)))
    assert nll(cal.transform(p), y) <= nll(p, y) - 0.05   # over-confident: calibration helps clearly


def test_temperature_recovers_an_over_confidence_of_three_and_lowers_the_nll() -> None:
    p, y = overconfident(2)
    cal = ProbabilityCalibrator(method="temperature").fit(p, y)
    assert abs(cal.temperature_ - 3.0) < 0.3
    calibrated = cal.transform(p)
    z = np.log(p) - np.log1p(-p)                           # 3 * the true logit
    np.testing.assert_allclose(calibrated, expit(z / cal.temperature_), rtol=1e-10, atol=1e-14)
    assert nll(calibrated, y) < nll(p, y) - 0.05
    assert nll(calibrated, y) < nll(expit(z / 3.0), y) + 1e-3  # as good as the true map, within noise


def test_temperature_is_one_on_calibrated_probabilities() -> None:
    p, y = overconfident(3, factor=1.0)
    cal = ProbabilityCalibrator(method="temperature").fit(p, y)
    assert abs(cal.temperature_ - 1.0) < 0.05
    assert nll(cal.transform(p), y) <= nll(p, y) + 1e-12


def test_temperature_preserves_the_order_of_probabilities_exactly() -> None:
    p, y = overconfident(4, shape=(400, 5))
    cal = ProbabilityCalibrator(method="temperature").fit(p, y)
    q = np.random.default_rng(5).uniform(1e-6, 1 - 1e-6, (200, 5))
    out = cal.transform(q)
    order = np.argsort(q, axis=None, kind="stable")
    assert np.all(np.diff(out.ravel()[order]) > 0)        # strictly increasing where the input is
    assert np.array_equal(np.argsort(-out, axis=1, kind="stable"), np.argsort(-q, axis=1, kind="stable"))
    assert out.min() >= 0 and out.max() <= 1 and out.dtype == np.float64


@pytest.mark.parametrize("method", ["isotonic", "temperature"])
def test_calibrator_leaves_the_callers_arrays_unchanged_and_takes_sparse_labels(method) -> None:
    p, y = overconfident(6, shape=(100, 4))
    p_before, y_sparse = p.copy(), sp.csr_matrix(y)
    dense = ProbabilityCalibrator(method=method).fit(p, y)
    from_sparse = ProbabilityCalibrator(method=method).fit(p, y_sparse)
    out = dense.transform(p)
    assert np.array_equal(p, p_before) and out is not p
    np.testing.assert_array_equal(from_sparse.transform(p), out)
    np.testing.assert_array_equal(dense.transform(p[:7]), out[:7])  # any block of rows


@pytest.mark.parametrize(("proba", "Y", "match"), [
    (np.array([[0.2, 1.5]]), np.array([[0, 1]]), r"outside \[0, 1\]"),
    (np.array([[-0.1, 0.5]]), np.array([[0, 1]]), r"outside \[0, 1\]"),
    (np.array([[np.nan, 0.5]]), np.array([[0, 1]]), "NaN or inf"),
    (np.array([[np.inf, 0.5]]), np.array([[0, 1]]), "NaN or inf"),
    (np.array([0.2, 0.5]), np.array([[0, 1]]), "must be 2-D"),
    (sp.csr_matrix([[0.2, 0.5]]), np.array([[0, 1]]), "dense"),
    (np.array([["a", "b"]]), np.array([[0, 1]]), "real numbers"),
    (np.array([[0.2, 0.5]]), np.array([[0, 1, 1]]), r"Y has shape \(1, 3\) but proba has \(1, 2\)"),
    (np.array([[0.2, 0.5]]), np.array([[0, 2]]), "0/1"),
])
def test_calibrator_rejects_bad_input(proba, Y, match) -> None:
    for method in ("isotonic", "temperature"):
        with pytest.raises(ShapeError, match=match):
            ProbabilityCalibrator(method=method).fit(proba, Y)


def test_calibrator_rejects_bad_transform_input_and_method() -> None:
    cal = ProbabilityCalibrator(method="temperature").fit(np.array([[0.2, 0.9], [0.6, 0.4]]), np.eye(2))
    with pytest.raises(ShapeError, match="3 columns but the calibrator was fitted on K = 2"):
        cal.transform(np.full((1, 3), 0.5))
    with pytest.raises(ShapeError, match="NaN"):
        cal.transform(np.array([[0.5, np.nan]]))
    with pytest.raises(ParameterError, match="method"):
        ProbabilityCalibrator(method="platt").fit(np.array([[0.5]]), np.array([[1]]))


# -------------------------------------------------------------------------- CalibratedEstimator --
@pytest.mark.parametrize("method", ["isotonic", "temperature"])
@pytest.mark.parametrize("sparse", [False, True])
def test_calibrated_estimator_ranks_as_before_and_maps_the_probabilities(mlknn, method, sparse) -> None:
    model, Xh, Yh = mlknn
    Xq = np.random.default_rng(7).random((30, Xh.shape[1]))
    X_fit, X_score = (sp.csr_matrix(Xh), sp.csr_matrix(Xq)) if sparse else (Xh, Xq)
    copies = (X_fit.copy(), Yh.copy(), X_score.copy())
    cal = CalibratedEstimator(model, method=method, threshold=0.4).fit(X_fit, Yh)
    assert (cal.n_features_in_, cal.n_labels_, cal.n_samples_) == (Xh.shape[1], Yh.shape[1], Xh.shape[0])
    mine, theirs = cal.predict_topk(X_score, k=3, batch_size=7), model.predict_topk(X_score, k=3, batch_size=7)
    assert np.array_equal(mine.indices, theirs.indices) and np.array_equal(mine.scores, theirs.scores)
    assert np.array_equal(cal.decision_function(X_score), model.decision_function(X_score))
    proba = cal.predict_proba(X_score, batch_size=7)
    expected = cal.calibrator_.transform(model.predict_proba(X_score))
    np.testing.assert_allclose(proba, expected, rtol=0, atol=1e-12)
    assert np.abs(proba - model.predict_proba(X_score)).max() > 1e-3  # the map does change them
    assert np.array_equal(cal.predict(X_score), (proba >= 0.4).astype(np.int64))
    held = ProbabilityCalibrator(method=method).fit(model.predict_proba(Xh), Yh)
    np.testing.assert_allclose(proba, held.transform(model.predict_proba(Xq)), rtol=0, atol=1e-12)
    for before, after in zip(copies, (X_fit, Yh, X_score)):
        assert (before != after).nnz == 0 if sp.issparse(before) else np.array_equal(before, after)


def test_isotonic_calibration_lowers_the_held_out_nll(mlknn) -> None:
    model, Xh, Yh = mlknn
    cal = CalibratedEstimator(model).fit(Xh, Yh)
    assert nll(cal.predict_proba(Xh), Yh) <= nll(model.predict_proba(Xh), Yh)


def test_csr_blocks_and_sparse_probabilities_of_the_wrapped_estimator_are_handled() -> None:
    X, Y, Xh, Yh = split_data(1)
    model = CalibrationCsrProbe().fit(sp.csr_matrix(X), Y)
    cal = CalibratedEstimator(model, method="temperature").fit(Xh, Yh)  # dense X: CSR blocks for the probe
    assert cal._block_format == "csr"
    dense_proba = CalibrationProbe().fit(X, Y).predict_proba(Xh)
    np.testing.assert_allclose(cal.predict_proba(Xh), cal.calibrator_.transform(dense_proba), rtol=0, atol=1e-12)


def test_clone_and_get_params() -> None:
    X, Y, Xh, Yh = split_data(2)
    model = MLkNN(n_neighbors=4).fit(X, Y)
    cal = CalibratedEstimator(model, method="temperature", threshold=0.3).fit(Xh, Yh)
    params = cal.get_params()
    assert params["estimator"] is model and params["estimator__n_neighbors"] == 4
    assert (params["method"], params["threshold"]) == ("temperature", 0.3)
    copy = clone(cal)
    assert type(copy) is CalibratedEstimator and not hasattr(copy, "calibrator_")
    assert copy.estimator is not model and copy.estimator.get_params() == model.get_params()
    with pytest.raises(ArgumentError, match="MLkNN is not fitted"):  # clone clones the wrapped model unfitted
        copy.fit(Xh, Yh)
    frozen = clone(CalibratedEstimator(FrozenEstimator(model), method="temperature")).fit(Xh, Yh)
    np.testing.assert_allclose(frozen.predict_proba(Xh), cal.predict_proba(Xh), rtol=0, atol=1e-12)
    assert copy.set_params(method="isotonic", estimator__n_neighbors=2).estimator.n_neighbors == 2


def test_bad_wrapped_estimators_and_held_out_data_are_refused(mlknn) -> None:
    model, Xh, Yh = mlknn
    before = model.predict_proba(Xh)
    with pytest.raises(ArgumentError, match="MLkNN is not fitted"):
        CalibratedEstimator(MLkNN()).fit(Xh, Yh)
    with pytest.raises(ArgumentError, match="Ranker has no predict_proba"):
        CalibratedEstimator(Ranker().fit(Xh, Yh)).fit(Xh, Yh)
    with pytest.raises(ArgumentError, match="LogisticRegression is not one"):
        CalibratedEstimator(LogisticRegression()).fit(Xh, Yh)
    with pytest.raises(ShapeError, match="Y has 3 labels but the wrapped MLkNN was fitted on K = 4"):
        CalibratedEstimator(model).fit(Xh, Yh[:, :3])
    with pytest.raises(ShapeError, match="X has 4 features, but the wrapped MLkNN is expecting 5"):
        CalibratedEstimator(model).fit(Xh[:, :4], Yh)
    with pytest.raises(ShapeError, match="rows"):
        CalibratedEstimator(model).fit(Xh, Yh[:-1])
    with pytest.raises(ParameterError, match="method"):
        CalibratedEstimator(model, method="platt").fit(Xh, Yh)
    with pytest.raises(ShapeError, match="threshold"):
        CalibratedEstimator(model, threshold=[0.5, 0.5]).fit(Xh, Yh)
    np.testing.assert_array_equal(model.predict_proba(Xh), before)  # never refitted


@pytest.mark.parametrize(("shift", "match"), [(0.6, r"outside \[0, 1\]"), (np.nan, "NaN or inf")])
def test_wrapped_probabilities_outside_zero_one_are_refused(shift, match) -> None:
    X, Y, Xh, Yh = split_data(3)
    model = CalibrationProbe(shift=shift).fit(X, Y)
    with pytest.raises(ShapeError, match=match):
        CalibratedEstimator(model).fit(Xh, Yh)


def test_save_and_load_are_refused_with_what_to_do(mlknn, tmp_path) -> None:
    model, Xh, Yh = mlknn
    cal = CalibratedEstimator(model).fit(Xh, Yh)
    with pytest.raises(ArgumentError, match="save the wrapped estimator with its own save"):
        cal.save(tmp_path / "cal")
    with pytest.raises(ArgumentError, match="not saved as one file"):
        CalibratedEstimator.load(tmp_path / "cal")
    assert not list(tmp_path.iterdir())


def test_isotonic_steps_without_positives_stay_improbable_not_impossible() -> None:
    """Low probabilities with no held-out positive: scikit-learn's step is 0; ours 0.5 / (n + 1)."""
    p = np.linspace(0.01, 0.99, 400).reshape(100, 4)
    y = (p > 0.6).astype(int)  # nothing below 0.6 is positive, everything above is
    cal = ProbabilityCalibrator(method="isotonic").fit(p, y)
    out = cal.transform(np.array([[0.0, 0.3, 0.8, 1.0]]))
    floor = 0.5 / (p.size + 1)
    np.testing.assert_allclose(out, [[floor, floor, 1 - floor, 1 - floor]], rtol=1e-12)
