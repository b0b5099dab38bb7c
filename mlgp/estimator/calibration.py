"""Post-hoc calibration of any estimator's probabilities, fitted on held-out rows.

Contract: :class:`ProbabilityCalibrator` learns one monotone map ``[0, 1] -> [0, 1]`` from dense
(N, K) probabilities of held-out rows and their 0/1 labels (N, K), pooled over all N*K entries, and
``transform`` applies it to any (B, K) block; its fitted state is plain float64 arrays / floats.
:class:`CalibratedEstimator` wraps an already-fitted :class:`~mlgp.estimator.MultiLabelEstimator`
that has ``predict_proba``: ``fit(X_held, Y_held)`` fits the calibrator on the wrapped model's
probabilities of the held-out rows; ``predict_proba`` returns the calibrated probabilities,
``predict`` thresholds them, while ``decision_function`` and ``predict_topk`` are the wrapped
model's own, unchanged (so rankings are exactly as before calibration). Bad data raise
:class:`~mlgp.errors.ShapeError`, an unusable wrapped estimator :class:`~mlgp.errors.ArgumentError`.
A CalibratedEstimator is not saved as one file: ``save`` raises ArgumentError (save the wrapped
estimator and the calibrator's arrays separately). No TensorFlow, no model family.
"""

from __future__ import annotations

from numbers import Real

import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize_scalar
from scipy.special import expit, logit
from sklearn.base import BaseEstimator, _fit_context
from sklearn.exceptions import NotFittedError
from sklearn.isotonic import IsotonicRegression
from sklearn.utils._param_validation import Interval, InvalidParameterError, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..errors import ArgumentError, ShapeError
from ..metrics._labels import as_binary_csr
from ..validation import check_thresholds
from .base import MultiLabelEstimator, ParameterError

__all__ = ["CalibratedEstimator", "ProbabilityCalibrator"]

#: Probabilities are clipped to [EPS, 1 - EPS] before the logit (temperature scaling).
EPS = 1e-12
_LOG_T_BOUNDS = (-5.0, 5.0)
_METHODS = StrOptions({"isotonic", "temperature"})


def _check_proba(proba, name: str = "proba") -> np.ndarray:
    """``proba`` as a new float64 (N, K) array of finite values in [0, 1]; else a ShapeError."""
    if sp.issparse(proba):
        raise ShapeError(f"{name} must be a dense (N, K) array of probabilities, got a sparse matrix")
    p = np.asarray(proba)
    if p.dtype.kind not in "iuf":
        raise ShapeError(f"{name} must hold real numbers (probabilities), got dtype {p.dtype}")
    if p.ndim != 2 or 0 in p.shape:
        raise ShapeError(f"{name} must be 2-D (N, K) with N, K >= 1, got shape {p.shape}")
    p = np.array(p, dtype=np.float64)  # a copy: the caller's array is never changed
    if not np.all(np.isfinite(p)):
        raise ShapeError(f"{name} holds NaN or inf; probabilities must be finite")
    if p.min() < 0.0 or p.max() > 1.0:
        raise ShapeError(f"{name} has values outside [0, 1] (min {p.min():.6g}, max {p.max():.6g}); "
                         "calibrate probabilities, not decision scores")
    return p


class ProbabilityCalibrator(BaseEstimator):
    """One monotone map of probabilities, fitted on held-out (N, K) probabilities and labels.

    The map is pooled over all N*K entries rather than fitted per label: the long tail of rare
    labels has too few held-out positives per label to fit a map each.

    Parameters
    ----------
    method : {"isotonic", "temperature"}, default="isotonic"
        ``"isotonic"``: scikit-learn's non-decreasing step function (``IsotonicRegression`` with
        ``y_min=0, y_max=1, out_of_bounds="clip"``), stored as its thresholds with the steps clipped to
        [0.5 / (n + 1), 1 − 0.5 / (n + 1)] for n held-out entries (a step without a positive is
        improbable, not impossible), and applied by linear interpolation. It can map distinct
        probabilities to the same value, so ties can change a top-k ranking by probability; rank by
        the model's original decision scores (:class:`CalibratedEstimator` does). ``"temperature"``:
        ``p' = sigmoid(logit(p) / T)`` (``p`` clipped to [1e-12, 1 - 1e-12]) with the ``T > 0`` that
        minimises the mean Bernoulli negative log-likelihood (``log T`` searched in [-5, 5]); it
        is strictly monotone, so rankings are unchanged (up to floating-point ties at the extremes).

    Attributes
    ----------
    x_thresholds_, y_thresholds_ : np.ndarray of shape (M,), float64
        The isotonic step function's knots (isotonic only); ``transform`` is
        ``np.interp(p, x_thresholds_, y_thresholds_)``.
    temperature_ : float
        The fitted T (temperature only).
    n_labels_ : int
        K, the width ``transform`` accepts.

    Examples
    --------
    >>> import numpy as np
    >>> cal = ProbabilityCalibrator(method="temperature")
    >>> cal = cal.fit(np.array([[0.9, 0.2], [0.8, 0.1]]), np.array([[1, 0], [0, 0]]))
    >>> cal.transform(np.array([[0.5, 0.9]])).shape
    (1, 2)
    """

    _parameter_constraints: dict = {"method": [_METHODS]}

    def __init__(self, *, method: str = "isotonic") -> None:
        self.method = method

    def _validate_params(self) -> None:
        try:
            super()._validate_params()
        except InvalidParameterError as err:
            raise ParameterError(str(err)) from None

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, proba, Y) -> "ProbabilityCalibrator":
        """Fit the map on held-out entries; returns ``self``.

        Parameters
        ----------
        proba : np.ndarray of shape (N, K)
            Probabilities, finite and in [0, 1].
        Y : np.ndarray or scipy sparse matrix of shape (N, K)
            0/1 labels of the same rows.
        """
        p = _check_proba(proba)
        Y = as_binary_csr(Y, "Y")
        if Y.shape != p.shape:
            raise ShapeError(f"Y has shape {Y.shape} but proba has {p.shape}; they must match")
        p, y = p.ravel(), Y.toarray().ravel()
        if self.method == "isotonic":
            iso = IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True, out_of_bounds="clip").fit(p, y)
            self.x_thresholds_ = np.asarray(iso.X_thresholds_, dtype=np.float64)
            # a step with no held-out positive (or no negative) would say 0 (or 1) and cost 36 nats
            # per surprise: the steps are kept within half an entry's frequency of the ends
            floor = 0.5 / (p.size + 1.0)
            self.y_thresholds_ = np.clip(np.asarray(iso.y_thresholds_, dtype=np.float64), floor, 1.0 - floor)
        else:
            z = logit(np.clip(p, EPS, 1.0 - EPS))

            def nll(log_t: float) -> float:  # mean of softplus(a) - y a, a = z / T
                a = z * np.exp(-log_t)
                return float(np.mean(np.logaddexp(0.0, a) - y * a))

            res = minimize_scalar(nll, bounds=_LOG_T_BOUNDS, method="bounded", options={"xatol": 1e-7})
            self.temperature_ = float(np.exp(res.x))
        self.n_labels_ = int(Y.shape[1])
        return self

    def transform(self, proba) -> np.ndarray:
        """Calibrated probabilities of any (B, K) block: float64 (B, K) in [0, 1], a new array."""
        check_is_fitted(self, "n_labels_")
        p = _check_proba(proba)
        if p.shape[1] != self.n_labels_:
            raise ShapeError(f"proba has {p.shape[1]} columns but the calibrator was fitted on K = {self.n_labels_}")
        if self.method == "isotonic":
            return np.interp(p, self.x_thresholds_, self.y_thresholds_)
        return expit(logit(np.clip(p, EPS, 1.0 - EPS)) / self.temperature_)


def _wrapped_labels(estimator) -> int:
    """K of a usable wrapped estimator; ArgumentError naming it when it cannot be calibrated."""
    name = type(estimator).__name__
    if not callable(getattr(estimator, "predict_proba", None)):
        raise ArgumentError(f"CalibratedEstimator: the wrapped estimator {name} has no predict_proba; "
                            "only probabilities can be calibrated")
    if not (hasattr(estimator, "_proba_block") and hasattr(estimator, "_decision_block")):
        raise ArgumentError(f"CalibratedEstimator wraps an mlgp MultiLabelEstimator; {name} is not one")
    try:
        check_is_fitted(estimator)
    except NotFittedError:
        raise ArgumentError(f"CalibratedEstimator: the wrapped estimator {name} is not fitted; fit it on the "
                            "training rows first, then fit the CalibratedEstimator on held-out rows") from None
    if getattr(estimator, "multilabel_", True) is False:
        raise ArgumentError(f"CalibratedEstimator: the wrapped {name} was fitted on class labels; only "
                            "per-label presence probabilities (a label matrix) can be calibrated")
    return int(getattr(estimator, "n_labels_", None) or estimator._n_outputs)


class CalibratedEstimator(MultiLabelEstimator):
    """A fitted estimator whose probabilities are calibrated on held-out rows.

    ``predict_proba`` is :class:`ProbabilityCalibrator` ``.transform`` of the wrapped model's
    probabilities, block by block; ``predict`` thresholds the calibrated probabilities;
    ``decision_function`` and ``predict_topk`` are the wrapped model's (an isotonic map can tie
    distinct probabilities, the original scores keep the ranking). ``clone`` clones the wrapped
    estimator too (unfitted); wrap it in ``sklearn.frozen.FrozenEstimator`` to keep it fitted
    through ``clone``. ``save`` is refused: save ``estimator`` with its own ``save`` and the
    calibrator's arrays (``calibrator_.x_thresholds_`` / ``y_thresholds_``, or ``temperature_``).

    Parameters
    ----------
    estimator : MultiLabelEstimator
        Fitted on the training rows, with ``predict_proba``; never refitted or changed.
    method : {"isotonic", "temperature"}, default="isotonic"
        The calibration map (:class:`ProbabilityCalibrator`).
    threshold : float or array-like of shape (K,), default=0.5
        ``predict`` marks a label present when its calibrated probability is ``>= threshold``.

    Attributes
    ----------
    calibrator_ : ProbabilityCalibrator
        Fitted on ``estimator.predict_proba(X_held)`` and ``Y_held``.
    n_features_in_, n_labels_ : int
        D and K, the wrapped estimator's.
    n_samples_ : int
        Number of held-out rows the calibrator was fitted on.
    classes_ : np.ndarray of shape (K,), int
        ``arange(K)``.

    Examples
    --------
    >>> import numpy as np
    >>> from mlgp.baselines import MLkNN
    >>> rng = np.random.default_rng(0)
    >>> X, Y = rng.random((60, 3)), (rng.random((60, 2)) < 0.4).astype(int)
    >>> model = MLkNN(n_neighbors=3).fit(X[:40], Y[:40])
    >>> cal = CalibratedEstimator(model, method="temperature").fit(X[40:], Y[40:])
    >>> cal.predict_proba(X[:2]).shape
    (2, 2)
    """

    _parameter_constraints: dict = {
        "estimator": "no_validation",  # checked in fit, with messages naming the problem
        "method": [_METHODS],
        "threshold": [Interval(Real, 0, 1, closed="both"), "array-like"],
    }
    _predict_from = "proba"

    def __init__(self, estimator, *, method: str = "isotonic", threshold=0.5) -> None:
        self.estimator = estimator
        self.method = method
        self.threshold = threshold

    @property
    def _block_format(self) -> str:
        """The wrapped estimator's: blocks are handed to its hooks as they are."""
        return getattr(self.estimator, "_block_format", "dense")

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, Y) -> "CalibratedEstimator":
        """Fit the calibrator on held-out rows; returns ``self``.

        Parameters
        ----------
        X : np.ndarray or scipy sparse matrix of shape (N, D)
            Held-out features (not the rows the wrapped estimator was fitted on).
        Y : np.ndarray or scipy sparse matrix of shape (N, K)
            Their 0/1 labels, K the wrapped estimator's.
        """
        K = _wrapped_labels(self.estimator)
        X, Y = self._validate_fit_data(X, Y)
        D = int(self.estimator.n_features_in_)
        if X.shape[1] != D:
            raise ShapeError(f"X has {X.shape[1]} features, but the wrapped {type(self.estimator).__name__} "
                             f"is expecting {D} features as input.")
        if Y.shape[1] != K:
            raise ShapeError(f"Y has {Y.shape[1]} labels but the wrapped {type(self.estimator).__name__} "
                             f"was fitted on K = {K}")
        check_thresholds(self.threshold, K)
        proba = self.estimator.predict_proba(X)
        self.calibrator_ = ProbabilityCalibrator(method=self.method).fit(proba, Y)
        self._set_fitted_shape(X.shape[0], D, K)
        return self

    def _decision_block(self, xb):
        """The wrapped estimator's (B, K) decision scores of the block, unchanged."""
        return self.estimator._decision_block(xb)

    def _proba_block(self, xb) -> np.ndarray:
        """The calibrated (B, K) probabilities of the block: float64 in [0, 1]."""
        p = self.estimator._mapped_proba_block(xb)
        return self.calibrator_.transform(p.toarray() if sp.issparse(p) else p)

    def save(self, path) -> None:
        """Refused: a CalibratedEstimator holds another estimator, which the file format does not nest."""
        raise ArgumentError("a CalibratedEstimator cannot be saved as one file (it would need a nested-estimator "
                            "format); save the wrapped estimator with its own save() and the calibrator's arrays "
                            "(calibrator_.x_thresholds_ and y_thresholds_, or temperature_) separately")

    @classmethod
    def load(cls, path):
        """Refused, like :meth:`save`."""
        raise ArgumentError("a CalibratedEstimator is not saved as one file; load the wrapped estimator and "
                            "refit or rebuild the calibrator from its saved arrays")
