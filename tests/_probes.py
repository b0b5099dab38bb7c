"""Tiny estimators for tests of the floor's plumbing (``tests/`` is on ``sys.path``)."""

from __future__ import annotations

import numpy as np

from mlgp.estimator import MultiLabelEstimator

__all__ = ["Ranker"]


class Ranker(MultiLabelEstimator):
    """Ranks every label equally and states no probabilities (no ``_proba_block``)."""

    _parameter_constraints: dict = {}

    def fit(self, X, Y):
        X, Y = self._validate_fit_data(X, Y)
        self._set_fitted_shape(X.shape[0], X.shape[1], Y.shape[1])
        return self

    def _decision_block(self, xb):
        return np.zeros((xb.shape[0], self.n_labels_))
