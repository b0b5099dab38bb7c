"""The plumbing the multi-label estimators of :mod:`mlgp.baselines` share.

Contract: :class:`MultiLabelScoringMixin` declares scikit-learn's tags for estimators fitted on a
2-D 0/1 label matrix with CSR or dense features, marks ``batch_size`` as a non-routed argument of
the scoring methods, and gives ``_score(fn, X, batch_size, top_k)``: check that the estimator is
fitted and that ``X`` has the D columns seen in ``fit``, then score it through
:func:`mlgp.scores.score_in_batches` (dense (N, K) float64, or a TopK when ``top_k`` is given).
Subclasses record N, D and K in ``fit`` with ``_set_fitted_shape``.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from sklearn.utils import metadata_routing
from sklearn.utils.validation import check_is_fitted

from ..scores import score_in_batches
from ..validation import check_estimator_features

__all__ = ["MultiLabelScoringMixin"]


class MultiLabelScoringMixin:
    """Tags, metadata requests and batched scoring of a multi-label scikit-learn estimator.

    Put it first among the bases (before :class:`sklearn.base.BaseEstimator`).
    """

    # batch_size only sets how many rows are scored at a time: not metadata to route
    __metadata_request__decision_function = {"batch_size": metadata_routing.UNUSED}
    __metadata_request__predict = {"batch_size": metadata_routing.UNUSED}
    __metadata_request__predict_proba = {"batch_size": metadata_routing.UNUSED}
    __metadata_request__predict_topk = {"batch_size": metadata_routing.UNUSED}

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.required = True
        tags.target_tags.two_d_labels = True
        tags.target_tags.single_output = False
        tags.classifier_tags.multi_label = True
        tags.classifier_tags.multi_class = False
        return tags

    def _set_fitted_shape(self, num_samples: int, num_features: int, num_labels: int) -> None:
        """Record N, D and K after ``fit``: ``n_samples_``, ``n_features_in_``, ``n_labels_`` and
        ``classes_ = arange(K)`` (scikit-learn's label names for indicator targets)."""
        self.n_samples_ = int(num_samples)
        self.n_features_in_ = int(num_features)
        self.n_labels_ = int(num_labels)
        self.classes_ = np.arange(num_labels)

    def _score(self, fn: Callable[[np.ndarray], np.ndarray], X, batch_size: int, top_k: int | None = None,
               num_labels: int | None = None):
        """``fn`` (a dense (B, D) block → (B, K) scores) over ``X`` (N, D) in batches of ``batch_size``
        rows, after the checks; ``num_labels`` defaults to ``n_labels_``."""
        check_is_fitted(self)
        X = check_estimator_features(X, self.n_features_in_, type(self).__name__)
        return score_in_batches(fn, X, batch_size, top_k=top_k,
                                num_labels=self.n_labels_ if num_labels is None else num_labels,
                                num_features=self.n_features_in_)
