"""PfastXML and PfastreXML (Jain, Prabhu & Varma, KDD 2016): FastXML for missing and tail labels.

Contract: :class:`PfastXML` is :class:`~mlgp.baselines.FastXML` whose split loss weights label l by
its inverse propensity w_l (:func:`mlgp.metrics.inverse_propensity` with ``propensity_a``,
``propensity_b``) and uses DCG instead of nDCG; leaves still keep plain label frequencies.
:class:`PfastreXML` re-ranks PfastXML's candidates (the labels its reached leaves keep) with a
per-label tail classifier: features are L2-normalised row by row, c_l is the centroid (mean) of
the normalised training points carrying label l, and candidate l of point x scores

    pf_l(x)^α · σ(−γ ‖x̂ − c_l‖²)^(1−α)      (σ the logistic function; γ = 30, α = 0.8),

labels that are not candidates score 0. Scoring stays sparse: the tail classifier is evaluated
only at the candidate (point, label) pairs. The re-ranking changes the ranking only: the re-ranked
scores are not probabilities (a product of powers of two of them), so ``predict_proba`` and
``predict`` are FastXML's smoothed leaf distributions of the same trees.
"""

from __future__ import annotations

from numbers import Real

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import Interval

from ..data.preprocessing import normalise_rows
from ..estimator import SavedState
from ..metrics import inverse_propensity
from ._fastxml.forest import paired_row_dots
from .fastxml import FastXML

__all__ = ["PfastXML", "PfastreXML"]


class PfastXML(FastXML):
    """FastXML with a propensity-weighted DCG split loss.

    Parameters
    ----------
    propensity_a, propensity_b : float, default=0.55, 1.5
        The (A, B) of :func:`mlgp.metrics.inverse_propensity` (see
        :func:`mlgp.metrics.propensity_params` for the per-dataset values).
    split_loss : default="dcg"
        As in FastXML; PfastXML's is DCG.
    **others
        The other parameters of :class:`~mlgp.baselines.FastXML`.

    Attributes
    ----------
    inv_propensity_ : np.ndarray (K,), float64
        The label weights of the split loss.
    """

    _parameter_constraints: dict = {
        **FastXML._parameter_constraints,
        "propensity_a": [Interval(Real, 0, None, closed="neither")],
        "propensity_b": [Interval(Real, 0, None, closed="left")],
    }

    def __init__(self, *, n_estimators: int = 50, max_leaf: int = 10, max_leaf_labels: int = 20,
                 c_pos: float = 1.0, c_neg: float = 1.0, c_rank: float = 1.0, bias: float = 1.0,
                 n_w_updates: int = 1, max_iter: int = 10, tol: float = 0.1, split_loss: str = "dcg",
                 split_loss_k: int | None = None, threshold: float = 0.5, n_jobs: int | None = None,
                 random_state=None, verbose: int = 0, separator_features: str | None = None,
                 solver: str = "newglmnet", propensity_a: float = 0.55, propensity_b: float = 1.5,
                 prior_strength: float = 1.0, max_seconds: float | None = None,
                 calibration: str | None = "prior") -> None:
        super().__init__(n_estimators=n_estimators, max_leaf=max_leaf, max_leaf_labels=max_leaf_labels,
                         c_pos=c_pos, c_neg=c_neg, c_rank=c_rank, bias=bias, n_w_updates=n_w_updates,
                         max_iter=max_iter, tol=tol, split_loss=split_loss, split_loss_k=split_loss_k,
                         threshold=threshold, n_jobs=n_jobs, random_state=random_state, verbose=verbose,
                         separator_features=separator_features, solver=solver, prior_strength=prior_strength,
                         max_seconds=max_seconds, calibration=calibration)
        self.propensity_a = propensity_a
        self.propensity_b = propensity_b

    def _label_weights(self, Y: sp.csr_matrix) -> np.ndarray:
        self.inv_propensity_ = inverse_propensity(Y, float(self.propensity_a), float(self.propensity_b))
        return self.inv_propensity_

    def _fitted_arrays(self) -> dict:
        return {**super()._fitted_arrays(), "inv_propensity_": self.inv_propensity_}

    def _restore_fitted(self, state: SavedState) -> None:
        super()._restore_fitted(state)
        self.inv_propensity_ = state.array("inv_propensity_", (self.n_labels_,), low=0)


class PfastreXML(PfastXML):
    """PfastXML re-ranked by a per-label tail classifier (see the module docstring).

    Parameters
    ----------
    gamma : float, default=30.0
        Sharpness γ of the tail classifier σ(−γ ‖x̂ − c_l‖²).
    alpha : float, default=0.8
        Weight α of the tree score in pf^α · tail^(1−α) (1: PfastXML's ranking).
    **others
        The parameters of :class:`PfastXML`.

    Attributes
    ----------
    centroids_ : scipy.sparse.csr_matrix (K, D)
        Label centroids c_l: the mean of the L2-normalised training points carrying label l (zero
        rows for labels without training points).
    centroid_sq_norms_ : np.ndarray (K,), float64
        ‖c_l‖².
    """

    _parameter_constraints: dict = {
        **PfastXML._parameter_constraints,
        "gamma": [Interval(Real, 0, None, closed="left")],
        "alpha": [Interval(Real, 0, 1, closed="both")],
    }

    def __init__(self, *, n_estimators: int = 50, max_leaf: int = 10, max_leaf_labels: int = 20,
                 c_pos: float = 1.0, c_neg: float = 1.0, c_rank: float = 1.0, bias: float = 1.0,
                 n_w_updates: int = 1, max_iter: int = 10, tol: float = 0.1, split_loss: str = "dcg",
                 split_loss_k: int | None = None, threshold: float = 0.5, n_jobs: int | None = None,
                 random_state=None, verbose: int = 0, separator_features: str | None = None,
                 solver: str = "newglmnet", propensity_a: float = 0.55, propensity_b: float = 1.5, gamma: float = 30.0,
                 alpha: float = 0.8, prior_strength: float = 1.0, max_seconds: float | None = None,
                 calibration: str | None = "prior") -> None:
        super().__init__(n_estimators=n_estimators, max_leaf=max_leaf, max_leaf_labels=max_leaf_labels,
                         c_pos=c_pos, c_neg=c_neg, c_rank=c_rank, bias=bias, n_w_updates=n_w_updates,
                         max_iter=max_iter, tol=tol, split_loss=split_loss, split_loss_k=split_loss_k,
                         threshold=threshold, n_jobs=n_jobs, random_state=random_state, verbose=verbose,
                         separator_features=separator_features, solver=solver, propensity_a=propensity_a,
                         propensity_b=propensity_b, prior_strength=prior_strength, max_seconds=max_seconds,
                         calibration=calibration)
        self.gamma = gamma
        self.alpha = alpha

    def _fit_extra(self, X: sp.csr_matrix, Y: sp.csr_matrix) -> None:
        counts = np.asarray(Y.sum(axis=0)).ravel()
        inverse = np.divide(1.0, counts, out=np.zeros_like(counts, dtype=np.float64), where=counts > 0)
        self._set_centroids(sp.csr_matrix(sp.diags(inverse) @ (Y.T.tocsr() @ normalise_rows(X))))

    def _set_centroids(self, C: sp.csr_matrix) -> None:
        C.sort_indices()
        self.centroids_ = C
        self.centroid_sq_norms_ = np.asarray(C.multiply(C).sum(axis=1)).ravel()

    def _decision_block(self, xb: sp.csr_matrix) -> sp.csr_matrix:
        """PfastXML's sparse scores (B, K) of a canonical CSR block, re-ranked at the candidates."""
        S = self.forest_.scores(xb).tocoo()
        if S.nnz == 0:
            return S.tocsr()
        Xn = normalise_rows(xb)  # row scaling keeps the block's canonical column order
        dot = paired_row_dots(Xn, S.row, self.centroids_, S.col)
        x_sq = np.asarray(Xn.multiply(Xn).sum(axis=1)).ravel()
        dist = np.maximum(x_sq[S.row] + self.centroid_sq_norms_[S.col] - 2.0 * dot, 0.0)
        tail = np.exp(-np.logaddexp(0.0, self.gamma * dist))  # σ(−γ d²), without overflow
        a = float(self.alpha)
        data = S.data ** a * tail ** (1.0 - a)  # `**` by a scalar is exact at α = 1 (np.power need not be)
        out = sp.csr_matrix((data, (S.row, S.col)), shape=S.shape)
        out.eliminate_zeros()  # a tail that underflows to 0 ranks with the labels no leaf reached
        return out

    def _fitted_arrays(self) -> dict:
        return {**super()._fitted_arrays(), "centroids_": self.centroids_}

    def _restore_fitted(self, state: SavedState) -> None:
        super()._restore_fitted(state)
        self._set_centroids(state.csr("centroids_", (self.n_labels_, self.n_features_in_)))
        if not np.all(self.centroid_sq_norms_ <= 1.0 + 1e-9):  # means of unit vectors: no longer than 1
            raise state.error("the label centroids must have norms <= 1 (means of L2-normalised points)")
