"""LSPC: the least-squares probabilistic classifier (Sugiyama 2010, as Nam et al. review it).

Contract: ``fit(X, y)`` takes features ``X`` (N, D), CSR or dense, and either class labels ``y``
(N,) (multi-class: any hashable labels, at least two classes) or a 0/1 label matrix ``Y`` (N, K)
(multi-label: one presence/absence classifier per label, the paper's "plain LSPC"), checked before
any work. For each class y it fits ``q(y|x) = θ_yᵀ φ(x)`` with B Gaussian basis functions by the
closed-form ridge solution ``θ_y = (ΦᵀΦ + α I)⁻¹ Φᵀ π_y``; probabilities are
``max(0, q_y) / Σ_y' max(0, q_y')``. Outputs for 1-D ``y``: ``decision_function`` (N, Y) raw
``q`` ((N,) ``q_1 − q_0`` for two classes), ``predict_proba`` (N, Y), ``predict`` the most probable
class. For a label matrix: as :class:`~mlgp.baselines.MLLSPC` with no coupling — ``decision_function``
``q(present|x) − q(absent|x)`` (N, K), ``predict_proba`` (N, K), ``predict`` int64 0/1 (N, K).
``predict_topk`` ranks the raw outputs (indices into ``classes_``). The scoring methods and
``save`` / ``load`` are :class:`~mlgp.estimator.MultiLabelEstimator`'s.
"""

from __future__ import annotations

from numbers import Real

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval
from sklearn.utils.multiclass import check_classification_targets

from ..errors import ShapeError
from ..estimator import MultiLabelEstimator, SavedState
from ..estimator.prior_map import CALIBRATION
from ..estimator.budget import MAX_SECONDS, Budget
from ..validation import check_thresholds
from ._least_squares import (BASIS_CONSTRAINTS, binary_posterior, fit_basis, fit_proba_map_within,
                             multiclass_posterior, restore_basis, restore_coef)

__all__ = ["LSPC"]


def _class_targets(y, num_points: int) -> tuple[np.ndarray, np.ndarray]:
    """Classes (sorted) and each point's class index for 1-D class labels ``y`` (N,)."""
    y = np.asarray(y)
    if y.shape[0] != num_points:
        raise ShapeError(f"y has {y.shape[0]} entries but X has {num_points} rows: labels/features shape mismatch")
    try:
        check_classification_targets(y)
    except ValueError as err:
        raise ShapeError(str(err)) from None
    classes, index = np.unique(y, return_inverse=True)
    if classes.size < 2:
        raise ShapeError(f"LSPC needs at least 2 classes in y; got 1 class ({classes[0]!r})")
    return classes, index


class LSPC(MultiLabelEstimator):
    """Least-squares probabilistic classifier with a Gaussian kernel basis.

    Parameters
    ----------
    kernel_width : float or None, default=None
        Gaussian kernel width σ; None takes the median distance between training points.
    n_basis : int or None, default=1000
        Number B of basis functions, centred on B training points drawn with ``random_state``
        (all N when ``n_basis >= N``); None uses every training point (the paper's B = N).
    alpha : float, default=0.1
        Ridge regularisation ρ > 0.
    prior_weight : float, default=0.1
        Weight w >= 0 of the training label prior π in the probabilities:
        ``(max(0, q1) + w π) / (max(0, q1) + max(0, q0) + w)``. The paper's w = 0 gives probability
        0 wherever q1 <= 0 (5 % of Enron's test positives, which then cost 36 nats each in the
        held-out log-likelihood); 0.1 keeps them improbable instead (Enron's test NLL per entry
        0.241 → 0.137 for LSPC, 0.211 → 0.135 for ML-LSPC). The ranking by q1 − q0 is unchanged.
    threshold : float or array-like of shape (K,), default=0.5
        For a label matrix only: ``predict`` marks label t present where its probability is
        ``>= threshold[t]``.
    random_state : int, RandomState or None, default=None
        Seeds the choice of centres (and of the points the median heuristic looks at when N > 1000).
    calibration : {"prior"} or None, default="prior"
        ``"prior"``: ``predict_proba`` through the map toward the label prior fitted on held-out rows
        (:mod:`mlgp.estimator.prior_map`, ``proba_map_``; docs/probabilities.md); None: its own.
    max_seconds : float or None, default=None
        Wall seconds of ``fit`` from its start (:class:`mlgp.estimator.budget.Budget`). The model
        is one closed-form solve (the design matrix, one Cholesky factorisation), which has no point
        to stop at and always runs whole; what the bound governs is the prior map (label matrices
        with ``calibration="prior"``): its copies share a quarter of ``max_seconds`` or what the solve
        left, the smaller (a copy begun in time runs whole), and once the solve has spent the budget
        the map is left out (``proba_map_`` None) with a :class:`~mlgp.errors.BudgetWarning`.

    Attributes
    ----------
    coef_ : np.ndarray
        Θ: (B, Y) for class labels; (2, B, K) for a label matrix (presence, then absence).
    basis_ : GaussianBasis
        The centres (B, D), ``width`` and centre norms.
    kernel_width_ : float
        The width used.
    classes_ : np.ndarray
        The Y sorted class labels, or ``arange(K)`` for a label matrix.
    prior_ : np.ndarray
        Training class (or label) frequencies: the probabilities where every output is <= 0.
    multilabel_ : bool
        Whether ``fit`` was given a label matrix.
    n_features_in_, n_samples_
        D and N.

    Examples
    --------
    >>> import numpy as np
    >>> from mlgp.baselines import LSPC
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2))
    >>> y = np.where(X[:, 0] > 0, "right", "left")
    >>> est = LSPC(random_state=0).fit(X, y)
    >>> est.classes_
    array(['left', 'right'], dtype='<U5')
    >>> est.predict([[2.0, 0.0], [-2.0, 0.0]])
    array(['right', 'left'], dtype='<U5')
    >>> proba = est.predict_proba([[2.0, 0.0]])
    >>> proba.shape, bool(proba[0, 1] > 0.7), round(float(proba.sum()), 12)
    ((1, 2), True, 1.0)
    """

    _parameter_constraints: dict = {
        **BASIS_CONSTRAINTS,
        "threshold": [Interval(Real, 0, 1, closed="both"), "array-like"],
        "calibration": CALIBRATION,
        "max_seconds": MAX_SECONDS,
    }
    _predict_from = "proba"

    def __init__(self, *, kernel_width: float | None = None, n_basis: int | None = 1000, alpha: float = 0.1,
                 prior_weight: float = 0.1, threshold=0.5, random_state=None, calibration: str | None = "prior",
                 max_seconds: float | None = None) -> None:
        self.kernel_width = kernel_width
        self.n_basis = n_basis
        self.alpha = alpha
        self.prior_weight = prior_weight
        self.threshold = threshold
        self.random_state = random_state
        self.calibration = calibration
        self.max_seconds = max_seconds

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()           # the multi-label tags, then 1-D targets too
        tags.target_tags.two_d_labels = False
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = True
        tags.classifier_tags.multi_class = True
        return tags

    def _validate_targets(self, y, num_points: int) -> tuple[sp.csr_matrix, np.ndarray | None]:
        """``(Π, classes)``: for a 0/1 label matrix (2-D or sparse ``y``) Π is it as CSR float64
        (N, K) and ``classes`` None; for 1-D class labels Π is the (N, Y) class indicator and
        ``classes`` the Y sorted labels."""
        if y is not None and (sp.issparse(y) or np.ndim(y) == 2):
            return super()._validate_targets(y, num_points), None
        if y is None:
            raise ShapeError("LSPC requires y to be passed, but the target y is None")
        classes, index = _class_targets(y, num_points)
        indicator = sp.csr_matrix((np.ones(num_points), (np.arange(num_points), index)),
                                  shape=(num_points, classes.size))
        return indicator, classes

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y) -> "LSPC":
        """Fit one ridge-regularised least-squares model per class; returns ``self``.

        Parameters
        ----------
        X : np.ndarray or scipy sparse matrix of shape (N, D)
        y : array-like of shape (N,) (class labels) or (N, K) (0/1 label matrix, CSR or dense)
        """
        budget = Budget.trusted(self.max_seconds)
        X, (Y, classes) = self._validate_fit_data(X, y)
        N = X.shape[0]
        self.multilabel_ = classes is None
        if self.multilabel_:
            check_thresholds(self.threshold, Y.shape[1])
            self.classes_ = np.arange(Y.shape[1])
            self.prior_ = np.asarray(Y.mean(axis=0)).ravel()
        else:
            self.classes_ = classes
            self.prior_ = np.asarray(Y.sum(axis=0)).ravel() / N     # class counts / N
        self.basis_, Phi = fit_basis(X, self.n_basis, self.kernel_width, self.random_state)
        G = Phi.T @ Phi
        G[np.diag_indices_from(G)] += float(self.alpha)
        factor = sla.cho_factor(G, lower=True, check_finite=False)
        R = np.asarray((Y.T @ Phi).T)                                  # Φᵀ Π (B, Y or K)
        if self.multilabel_:
            R = np.stack([R, Phi.sum(axis=0)[:, None] - R])          # presence, absence
            self.coef_ = np.stack([sla.cho_solve(factor, r, check_finite=False) for r in R])
        else:
            self.coef_ = sla.cho_solve(factor, R, check_finite=False)
        self.kernel_width_ = self.basis_.width
        self.n_features_in_ = int(X.shape[1])
        self.n_samples_ = int(N)
        if self.multilabel_:  # class probabilities sum to one: the map is for label probabilities
            fit_proba_map_within(self, X, Y, budget)
        else:
            self.proba_map_ = None
        return self

    # ---------------------------------------------------------------- scoring
    @property
    def _n_outputs(self) -> int:
        return self.classes_.size

    def _decision_block(self, xb: np.ndarray) -> np.ndarray:
        """Multi-class: q (B, Y); label matrix: q(present) − q(absent) (B, K)."""
        Phi = self.basis_.design(xb)
        if self.multilabel_:
            return Phi @ self.coef_[0] - Phi @ self.coef_[1]
        return Phi @ self.coef_

    def _proba_block(self, xb: np.ndarray) -> np.ndarray:
        """Class probabilities (B, Y), rows summing to one; or presence probabilities (B, K)."""
        Phi = self.basis_.design(xb)
        if self.multilabel_:
            return binary_posterior(Phi @ self.coef_[0], Phi @ self.coef_[1], self.prior_, float(self.prior_weight),
                                    self.n_samples_)
        return multiclass_posterior(Phi @ self.coef_, self.prior_, float(self.prior_weight), self.n_samples_)

    def _decide(self, proba: np.ndarray) -> np.ndarray:
        """The most probable class (ties: the first in ``classes_``), or ``proba >= threshold``."""
        if self.multilabel_:
            return super()._decide(proba)
        return self.classes_[np.argmax(proba, axis=1)]

    def decision_function(self, X, batch_size: int = 1000) -> np.ndarray:
        """Raw least-squares outputs, float64: (N, Y) ``q(y|x)`` for class labels ((N,)
        ``q_1 − q_0`` for two classes), (N, K) ``q(present|x) − q(absent|x)`` for a label matrix.
        ``X`` (N, D), CSR or dense; ``batch_size`` rows are scored at a time."""
        scores = super().decision_function(X, batch_size)
        if not self.multilabel_ and scores.shape[1] == 2:
            return scores[:, 1] - scores[:, 0]
        return scores

    # ------------------------------------------------------------ persistence
    def _fitted_scalars(self) -> dict:
        return {"n_samples_": self.n_samples_, "n_features_in_": self.n_features_in_,
                "multilabel_": self.multilabel_, "kernel_width_": self.kernel_width_, **self._proba_map_scalars()}

    def _fitted_arrays(self) -> dict:
        classes = self.classes_
        if classes.dtype.kind == "O" and all(isinstance(c, str) for c in classes):
            classes = classes.astype(str)  # object-dtype strings (e.g. from pandas) as a string array
        return {**super()._fitted_arrays(), "coef_": self.coef_, "classes_": classes, "prior_": self.prior_, "basis_.centres": self.basis_.centres}

    def _restore_fitted(self, state: SavedState) -> None:
        self.n_samples_ = state.count("n_samples_")
        self.n_features_in_ = state.count("n_features_in_")
        self.multilabel_ = state.scalar("multilabel_", bool)
        self.classes_ = state.array("classes_", (None,), "biufU")
        C = self.classes_.size
        if self.multilabel_ and not np.array_equal(self.classes_, np.arange(C)):
            raise state.error("a label-matrix LSPC must have classes_ = arange(K)")
        if not self.multilabel_ and (C < 2 or np.unique(self.classes_).size != C):
            raise state.error("a class-label LSPC needs at least 2 distinct classes")
        self.coef_ = restore_coef(state, (2, None, C) if self.multilabel_ else (None, C))
        self.prior_ = state.array("prior_", (C,), low=0, high=1)
        self.basis_ = restore_basis(state, self.coef_.shape[-2], self.n_features_in_)
        self.kernel_width_ = self.basis_.width
        if self.multilabel_:
            check_thresholds(self.threshold, C)
