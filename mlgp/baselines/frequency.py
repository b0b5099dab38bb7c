"""LabelFrequency: rank every point's labels by how often they occur in the training labels.

Contract: ``fit(X, Y)`` takes features ``X`` (N, D), CSR or dense, and 0/1 labels ``Y`` (N, K),
CSR or dense, checks them through :mod:`mlgp.validation` (bad input raises
:class:`~mlgp.errors.ShapeError`, a ``ValueError``) and learns one score per label, the smoothed
training frequency ``(count + smoothing) / (N + 2 * smoothing)`` in (0, 1) (the posterior mean of
the label's frequency under a Beta(smoothing, smoothing) prior; the default 0.5 is Jeffreys'
prior, so a label never seen in training has probability 0.5 / (N + 1), not 0). Every point gets the
same scores: ``decision_function`` and ``predict_proba`` return them as a dense float64 (N, K)
array (the label prior every probabilistic model must beat in held-out likelihood),
``predict_topk`` ranks them (equal scores: lower label index first, the rule of
:func:`mlgp.scores.topk`), ``predict`` returns the int64 0/1 (N, K) matrix ``scores >= threshold``.
``X`` is used only for its shape and checked like a real model's input (D columns, finite values),
so the class is the template for the other estimators of :mod:`mlgp.baselines`. ``save(path)`` /
``LabelFrequency.load(path)`` keep the counts and scores (:mod:`mlgp.estimator.persistence`).
"""

from __future__ import annotations

from numbers import Real

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval

from ..estimator import MultiLabelEstimator, SavedState

__all__ = ["LabelFrequency"]


class LabelFrequency(MultiLabelEstimator):
    """Frequency-ranking baseline: every point gets the labels' training frequencies as scores.

    The ranking (most frequent labels first, ties by the lower label index) is the same for all
    points; it is the reference every multi-label model must beat. ``decision_function``,
    ``predict_topk`` and ``predict`` are :class:`~mlgp.estimator.MultiLabelEstimator`'s.

    Parameters
    ----------
    smoothing : float, default=0.5
        Pseudo-count ``s >= 0`` added to each label's positive and negative counts: the score of
        label ``j`` is ``(count_j + s) / (N + 2 s)``, the posterior mean of its frequency under a
        Beta(s, s) prior. It keeps scores away from 0 and 1 but never changes the ranking; with
        ``s = 0`` a label absent from the training data has probability 0, and a test point that
        carries it has log-likelihood −36 nats (the metrics clip at float64's epsilon).
    threshold : float, default=0.5
        ``predict`` marks label ``j`` present when its score is ``>= threshold`` (in [0, 1]).

    Attributes
    ----------
    label_counts_ : np.ndarray of shape (K,), float64
        Number of training points carrying each label (``Y.sum(axis=0)``).
    scores_ : np.ndarray of shape (K,), float64
        The smoothed frequencies, each point's decision scores.
    n_features_in_, n_labels_, classes_, n_samples_
        D, K, ``arange(K)`` and N, as every :class:`~mlgp.estimator.MultiLabelEstimator`.

    Examples
    --------
    >>> import numpy as np
    >>> from mlgp.baselines import LabelFrequency
    >>> X = np.zeros((4, 3))
    >>> Y = np.array([[1, 0, 1], [0, 0, 1], [1, 0, 1], [0, 1, 0]])
    >>> est = LabelFrequency().fit(X, Y)
    >>> est.scores_
    array([0.5, 0.3, 0.7])
    >>> est.predict_topk(X[:2], k=2).indices
    array([[2, 0],
           [2, 0]])
    >>> est.predict(X[:1])
    array([[1, 0, 1]])
    """

    _parameter_constraints: dict = {
        "smoothing": [Interval(Real, 0, None, closed="left")],
        "threshold": [Interval(Real, 0, 1, closed="both")],
    }

    _predict_from = "proba"

    def __init__(self, *, smoothing: float = 0.5, threshold: float = 0.5) -> None:
        self.smoothing = smoothing
        self.threshold = threshold

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, Y) -> "LabelFrequency":
        """Count each label's training points; returns ``self``.

        Parameters
        ----------
        X : np.ndarray or scipy sparse matrix of shape (N, D)
            Features; only their shape is used, but they must be finite.
        Y : np.ndarray or scipy sparse matrix of shape (N, K)
            0/1 labels.
        """
        X, Y = self._validate_fit_data(X, Y)
        N, K = Y.shape
        s = float(self.smoothing)
        self.label_counts_ = np.asarray(Y.sum(axis=0), dtype=np.float64).ravel()
        self.scores_ = (self.label_counts_ + s) / (N + 2.0 * s)
        self._set_fitted_shape(N, X.shape[1], K)
        return self

    def _decision_block(self, xb: np.ndarray) -> np.ndarray:
        """The (B, K) scores of a dense block (B, D): the same row of frequencies for every point."""
        return np.broadcast_to(self.scores_, (xb.shape[0], self.n_labels_))

    def _proba_block(self, xb: np.ndarray) -> np.ndarray:
        """The probability of each label (B, K): its smoothed training frequency, for every point."""
        return self._decision_block(xb)

    def _fitted_arrays(self) -> dict:
        return {"label_counts_": self.label_counts_, "scores_": self.scores_}

    def _restore_fitted(self, state: SavedState) -> None:
        super()._restore_fitted(state)
        K = self.n_labels_
        self.label_counts_ = state.array("label_counts_", (K,), low=0, high=self.n_samples_)
        self.scores_ = state.array("scores_", (K,), low=0, high=1)
        s = float(self.smoothing)
        if not np.allclose(self.scores_, (self.label_counts_ + s) / (self.n_samples_ + 2.0 * s), rtol=1e-12, atol=0):
            raise state.error("scores_ are not the smoothed frequencies of label_counts_ and n_samples_")
