"""LabelFrequency: rank every point's labels by how often they occur in the training labels.

Contract: ``fit(X, Y)`` takes features ``X`` (N, D), CSR or dense, and 0/1 labels ``Y`` (N, K),
CSR or dense, checks them through :mod:`mlgp.validation` (bad input raises
:class:`~mlgp.errors.ShapeError`, a ``ValueError``) and learns one score per label, the smoothed
training frequency ``(count + smoothing) / (N + 2 * smoothing)`` in [0, 1]. Every point gets the
same scores: ``decision_function`` returns them as a dense float64 (N, K) array (they are
frequencies, so they read as probabilities; there is no separate ``predict_proba``),
``predict_topk`` ranks them (equal scores: lower label index first, the rule of
:func:`mlgp.scores.topk`), ``predict`` returns the int64 0/1 (N, K) matrix ``scores >= threshold``.
``X`` is used only for its shape and checked like a real model's input (D columns, finite values),
so the class is the template for the other estimators of :mod:`mlgp.baselines`.
"""

from __future__ import annotations

from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, MultiOutputMixin, _fit_context
from sklearn.utils._param_validation import Interval

from ..scores import TopK
from ..validation import check_estimator_features, check_estimator_labels, check_features
from ._estimator import MultiLabelScoringMixin

__all__ = ["LabelFrequency"]


class LabelFrequency(MultiLabelScoringMixin, MultiOutputMixin, ClassifierMixin, BaseEstimator):
    """Frequency-ranking baseline: every point gets the labels' training frequencies as scores.

    The ranking (most frequent labels first, ties by the lower label index) is the same for all
    points; it is the reference every multi-label model must beat.

    Parameters
    ----------
    smoothing : float, default=0.0
        Pseudo-count ``s >= 0`` added to each label's positive and negative counts: the score of
        label ``j`` is ``(count_j + s) / (N + 2 s)``, the posterior mean of its frequency under a
        Beta(s, s) prior. It keeps scores away from 0 and 1 but never changes the ranking.
    threshold : float, default=0.5
        ``predict`` marks label ``j`` present when its score is ``>= threshold`` (in [0, 1]).

    Attributes
    ----------
    label_counts_ : np.ndarray of shape (K,), float64
        Number of training points carrying each label (``Y.sum(axis=0)``).
    scores_ : np.ndarray of shape (K,), float64
        The smoothed frequencies, each point's decision scores.
    n_features_in_ : int
        Number of features D seen in ``fit``; ``X`` passed later must have D columns.
    n_labels_ : int
        Number of labels K.
    classes_ : np.ndarray of shape (K,), int
        ``arange(K)``, scikit-learn's label names for multi-label indicator targets.
    n_samples_ : int
        Number of training points N.

    Examples
    --------
    >>> import numpy as np
    >>> from mlgp.baselines import LabelFrequency
    >>> X = np.zeros((4, 3))
    >>> Y = np.array([[1, 0, 1], [0, 0, 1], [1, 0, 1], [0, 1, 0]])
    >>> est = LabelFrequency().fit(X, Y)
    >>> est.scores_
    array([0.5 , 0.25, 0.75])
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

    def __init__(self, smoothing: float = 0.0, threshold: float = 0.5) -> None:
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
        X = check_features(check_estimator_features(X, None, type(self).__name__))
        Y = check_estimator_labels(Y, X.shape[0], type(self).__name__)
        N, K = Y.shape
        s = float(self.smoothing)
        self.label_counts_ = np.asarray(Y.sum(axis=0), dtype=np.float64).ravel()
        self.scores_ = (self.label_counts_ + s) / (N + 2.0 * s)
        self._set_fitted_shape(N, X.shape[1], K)
        return self

    def _score_block(self, xb: np.ndarray) -> np.ndarray:
        """The (B, K) scores of a dense block (B, D): the same row of frequencies for every point."""
        return np.broadcast_to(self.scores_, (xb.shape[0], self.n_labels_))

    def decision_function(self, X, batch_size: int = 1000) -> np.ndarray:
        """Scores of every label for every point: a float64 (N, K) array, each row ``scores_``.

        Parameters
        ----------
        X : np.ndarray or scipy sparse matrix of shape (N, D)
            Features with the D columns seen in ``fit``.
        batch_size : int, default=1000
            Rows scored at a time.
        """
        return self._score(self._score_block, X, batch_size)

    def predict_topk(self, X, k: int, batch_size: int = 1000) -> TopK:
        """Each point's ``k`` best labels (``1 <= k <= K``), most frequent first, ties by the lower
        label index: a :class:`~mlgp.scores.TopK` with ``indices`` and ``scores`` of shape (N, k).

        ``X`` and ``batch_size`` are as in :meth:`decision_function`.
        """
        return self._score(self._score_block, X, batch_size, top_k=k)

    def predict(self, X, batch_size: int = 1000) -> np.ndarray:
        """0/1 predictions: label ``j`` is present when its score is ``>= threshold``.

        Same arguments as :meth:`decision_function`; returns an int64 (N, K) array.
        """
        return (self._score(self._score_block, X, batch_size) >= self.threshold).astype(np.int64)
