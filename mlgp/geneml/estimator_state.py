"""GenEML's fitted attributes: set from an inference's result (:meth:`GenEMLState._set_fitted_state`),
saved and restored (the persistence hooks of :class:`mlgp.estimator.MultiLabelEstimator`), in one
mixin before it in :class:`~mlgp.geneml.GenEML`'s bases."""

from __future__ import annotations

import numpy as np

from ..estimator import SavedState
from .features import FeatureMap
from .predictive import residual_covariance
from .relevance import components_in_use, effective_rank

__all__ = ["GenEMLState"]


class GenEMLState:
    """The fitted state of :class:`~mlgp.geneml.GenEML` (a mixin before
    :class:`~mlgp.estimator.MultiLabelEstimator`): its attributes from an inference's
    :class:`~mlgp.geneml.inference.Result`, and their files."""

    def _set_fitted_state(self, result, X) -> None:
        """``trace_``, the inference's own attributes, W_, V_, the exposure and relevances, the
        residual covariance, the ranks in use and ``n_iter_`` from ``result`` on the preprocessed
        training rows ``X`` (N, D)."""
        state, self.trace_ = result.state, result.trace
        for name, value in result.attributes.items():
            setattr(self, name, value)
        self.W_, self.V_, self.exposure_, self.relevance_ = state.W, state.V, state.mu, state.relevance
        self.residual_covariance_ = residual_covariance(X, self.W_, state.U, float(self.lambda_u))
        self.effective_rank_ = effective_rank(np.asarray(X @ self.W_), self.V_)
        self.components_in_use_ = components_in_use(self.W_, self.V_)
        if state.covariates is not None:  # μ_nl averaged over the training points
            N = X.shape[0]
            self.exposure_coef_ = state.covariates.coef
            rows = int(self.batch_size) if self.inference == "online-em" else int(self.block_rows)
            self.exposure_ = sum(state.covariates.probs(slice(s, s + rows)).sum(axis=0) for s in range(0, N, rows)) / N
        self.n_iter_ = len(self.trace_)

    def _fitted_arrays(self) -> dict:
        arrays = {**super()._fitted_arrays(), "W_": self.W_, "V_": self.V_, "residual_covariance_": self.residual_covariance_}
        if self.exposure == "covariates":
            arrays["exposure_coef_"] = self.exposure_coef_
        if self.inference == "gibbs":
            arrays["coef_"] = self.coef_
        if self.exposure_ is not None:
            arrays["exposure_"] = self.exposure_
        arrays.update(self.feature_map_.saved()[1])
        if self.relevance_ is not None:
            arrays["relevance_"] = self.relevance_
        return arrays

    def _fitted_scalars(self) -> dict:
        return {**super()._fitted_scalars(), "n_iter_": self.n_iter_, "n_components_": self.n_components_,
                "effective_rank_": self.effective_rank_, **self.feature_map_.saved()[0]}

    def _restore_fitted(self, state: SavedState) -> None:
        super()._restore_fitted(state)
        self.n_iter_ = state.count("n_iter_")
        # files written before ARD hold neither: k was n_components, and every dimension counted as in use
        k = self.n_components_ = state.count("n_components_") if state.has_scalar("n_components_") \
            else int(self.n_components)
        self.effective_rank_ = state.scalar("effective_rank_", int, low=0) if state.has_scalar("effective_rank_") else k
        self.relevance_ = state.array("relevance_", (k,), low=0) if state.has("relevance_") else None
        self.feature_map_ = FeatureMap.restore(state, self.n_features_in_, bool(self.normalize_rows))
        self.W_ = state.array("W_", (self.n_features_in_, k))
        self.V_ = state.array("V_", (self.n_labels_, k))
        self.components_in_use_ = components_in_use(self.W_, self.V_)
        # files of releases before the predictive probabilities: the plug-in μ σ(ψ) (no spread of u)
        self.residual_covariance_ = state.array("residual_covariance_", (k, k)) if state.has("residual_covariance_") \
            else np.zeros((k, k))
        C = self.residual_covariance_
        scale = max(1.0, float(np.abs(C).max(initial=0.0)))
        if not np.allclose(C, C.T, rtol=0, atol=1e-9 * scale) or np.linalg.eigvalsh(C).min(initial=0.0) < -1e-9 * scale:
            raise state.error("residual_covariance_ must be a symmetric positive semi-definite (k, k) matrix")
        if self.inference == "gibbs":  # a Gibbs fit saves coef_; loading checks it is there
            self.coef_ = state.array("coef_", (self.n_features_in_, self.n_labels_))
        self.exposure_ = None if self.exposure is None else state.array("exposure_", (self.n_labels_,), low=0, high=1)
        if self.exposure == "covariates":
            self.exposure_coef_ = state.array("exposure_coef_")
