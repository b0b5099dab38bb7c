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
"""

from __future__ import annotations

from numbers import Real

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.utils._param_validation import Interval
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from ..errors import ShapeError
from ..scores import TopK
from ..validation import check_estimator_features, check_estimator_labels, check_features
from ._estimator import MultiLabelScoringMixin
from ._least_squares import BASIS_CONSTRAINTS, binary_posterior, check_threshold, fit_basis, multiclass_posterior

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


class LSPC(MultiLabelScoringMixin, ClassifierMixin, BaseEstimator):
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
    threshold : float or array-like of shape (K,), default=0.5
        For a label matrix only: ``predict`` marks label t present where its probability is
        ``>= threshold[t]``.
    random_state : int, RandomState or None, default=None
        Seeds the choice of centres (and of the points the median heuristic looks at when N > 1000).

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
    }

    def __init__(self, kernel_width: float | None = None, n_basis: int | None = 1000, alpha: float = 0.1,
                 threshold=0.5, random_state=None) -> None:
        self.kernel_width = kernel_width
        self.n_basis = n_basis
        self.alpha = alpha
        self.threshold = threshold
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()           # the multi-label tags, then 1-D targets too
        tags.target_tags.two_d_labels = False
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = True
        tags.classifier_tags.multi_class = True
        return tags

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y) -> "LSPC":
        """Fit one ridge-regularised least-squares model per class; returns ``self``.

        Parameters
        ----------
        X : np.ndarray or scipy sparse matrix of shape (N, D)
        y : array-like of shape (N,) (class labels) or (N, K) (0/1 label matrix, CSR or dense)
        """
        X = check_features(check_estimator_features(X, None, type(self).__name__))
        N = X.shape[0]
        if y is not None and (sp.issparse(y) or np.ndim(y) == 2):
            Y = check_estimator_labels(y, N, type(self).__name__).astype(np.float64)
            check_threshold(self.threshold, Y.shape[1])
            self.multilabel_, self.classes_ = True, np.arange(Y.shape[1])
            self.prior_ = np.asarray(Y.mean(axis=0)).ravel()
        else:
            if y is None:
                raise ShapeError("LSPC requires y to be passed, but the target y is None")
            self.classes_, index = _class_targets(y, N)
            Y = sp.csr_matrix((np.ones(N), (np.arange(N), index)), shape=(N, self.classes_.size))
            self.multilabel_ = False
            self.prior_ = np.bincount(index, minlength=self.classes_.size) / N
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
        return self

    # ---------------------------------------------------------------- scoring
    @property
    def _num_outputs(self) -> int:
        check_is_fitted(self)
        return self.classes_.size

    def _raw_block(self, xb: np.ndarray) -> np.ndarray:
        """Multi-class: q (B, Y); label matrix: q(present) − q(absent) (B, K)."""
        Phi = self.basis_.design(xb)
        if self.multilabel_:
            return Phi @ self.coef_[0] - Phi @ self.coef_[1]
        return Phi @ self.coef_

    def _proba_block(self, xb: np.ndarray) -> np.ndarray:
        Phi = self.basis_.design(xb)
        if self.multilabel_:
            return binary_posterior(Phi @ self.coef_[0], Phi @ self.coef_[1], self.prior_)
        return multiclass_posterior(Phi @ self.coef_, self.prior_)

    def decision_function(self, X, batch_size: int = 1000) -> np.ndarray:
        """Raw least-squares outputs, float64: (N, Y) ``q(y|x)`` for class labels ((N,)
        ``q_1 − q_0`` for two classes), (N, K) ``q(present|x) − q(absent|x)`` for a label matrix.
        ``X`` (N, D), CSR or dense; ``batch_size`` rows are scored at a time."""
        scores = self._score(self._raw_block, X, batch_size, num_labels=self._num_outputs)
        if not self.multilabel_ and self._num_outputs == 2:
            return scores[:, 1] - scores[:, 0]
        return scores

    def predict_proba(self, X, batch_size: int = 1000) -> np.ndarray:
        """Probabilities, float64: (N, Y) rows summing to one for class labels; (N, K) presence
        probabilities for a label matrix."""
        return self._score(self._proba_block, X, batch_size, num_labels=self._num_outputs)

    def predict(self, X, batch_size: int = 1000) -> np.ndarray:
        """The most probable class (N,) (ties: the first in ``classes_``); for a label matrix the
        int64 0/1 (N, K) matrix ``predict_proba(X) >= threshold``."""
        proba = self.predict_proba(X, batch_size)
        if self.multilabel_:
            return (proba >= check_threshold(self.threshold, self._num_outputs)).astype(np.int64)
        return self.classes_[np.argmax(proba, axis=1)]

    def predict_topk(self, X, k: int, batch_size: int = 1000) -> TopK:
        """Each point's ``k`` best classes or labels by the raw outputs (ties: lower index first),
        as a :class:`~mlgp.scores.TopK` of shape (N, k); indices refer to ``classes_``."""
        return self._score(self._raw_block, X, batch_size, top_k=k, num_labels=self._num_outputs)
