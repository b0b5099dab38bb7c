"""W's ridge regression in GenEML: the conditional of W given U, and its mode.

Given U (N, k), W (D, k) has the Gaussian conditional with precision A = λ_u XᵀX + λ_w I (the same
for every column) and mean A⁻¹ λ_u Xᵀ U. :class:`WRidge` holds X and, when D ≤
:data:`DENSE_W_LIMIT`, a Cholesky factor of A (recomputed only when λ_u or λ_w change); above it,
conjugate gradients on A's matrix-vector product (every column of W at once). It gives the mean
from Xᵀ U (online EM blends that statistic over minibatches) and draws (the Gibbs sampler).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from .cg import batched_cg

__all__ = ["DENSE_W_LIMIT", "WRidge"]

#: Largest D for which A is factorised densely (D² floats; 128 MB at D = 4,000).
DENSE_W_LIMIT = 4000


class WRidge:
    """W | U for CSR (or dense) X (N, D) (module docstring); ``factorise=False``: conjugate gradients
    at every D (batch EM's few warm-started steps per iteration)."""

    def __init__(self, X, *, factorise: bool = True) -> None:
        self.X = X
        self.gram = None
        if factorise and X.shape[1] <= DENSE_W_LIMIT:
            gram = X.T @ X
            self.gram = np.asarray(gram.toarray() if sp.issparse(gram) else gram)
        self._key, self._factor = None, None

    def _precision_factor(self, lambda_u: float, lambda_w: float) -> np.ndarray:
        if self._key != (lambda_u, lambda_w):
            D = self.gram.shape[0]
            self._factor = scipy.linalg.cholesky(lambda_u * self.gram + lambda_w * np.eye(D), lower=True)
            self._key = (lambda_u, lambda_w)
        return self._factor

    def _cg(self, rhs: np.ndarray, W0: np.ndarray, lambda_u: float, lambda_w: float, maxiter: int | None) -> np.ndarray:
        """CG on every column of W at once (:func:`~mlgp.geneml.cg.batched_cg`, one system per
        column): ``maxiter`` steps, or (None) until every residual is within 1e-12 of its ``rhs``."""
        X = self.X

        def matvec(P: np.ndarray) -> np.ndarray:  # (k, D): the systems are W's columns
            return (lambda_u * np.asarray(X.T @ np.asarray(X @ P.T)) + lambda_w * P.T).T

        if maxiter is None:
            return batched_cg(matvec, rhs.T, W0.T, None, 10 * X.shape[1], rtol=1e-12).T
        return batched_cg(matvec, rhs.T, W0.T, None, maxiter).T

    def mean(self, XtU: np.ndarray, W0: np.ndarray, lambda_u: float, lambda_w: float,
             cg_iterations: int | None = None) -> np.ndarray:
        """A⁻¹ λ_u XᵀU (D, k) from the statistic ``XtU`` = Xᵀ U (D, k): exact through the factor, or
        ``cg_iterations`` CG steps from ``W0`` (None: to a tight tolerance)."""
        rhs = lambda_u * XtU
        if self.gram is not None:
            return scipy.linalg.cho_solve((self._precision_factor(lambda_u, lambda_w), True), rhs)
        return self._cg(rhs, W0, lambda_u, lambda_w, cg_iterations)

    def draw(self, U: np.ndarray, W0: np.ndarray, lambda_u: float, lambda_w: float,
             rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """(a draw of W (D, k), its conditional mean E[W | U]) given U (N, k); ``W0`` starts CG."""
        D, k = W0.shape
        mean = self.mean(np.asarray(self.X.T @ U), W0, lambda_u, lambda_w)
        if self.gram is not None:
            factor = self._precision_factor(lambda_u, lambda_w)
            return mean + scipy.linalg.solve_triangular(factor.T, rng.standard_normal((D, k)), lower=False), mean
        # perturb-then-solve: A z = √λ_u Xᵀ ε₁ + √λ_w ε₂ has z ~ N(0, A⁻¹)
        noise = np.sqrt(lambda_u) * np.asarray(self.X.T @ rng.standard_normal(U.shape)) \
            + np.sqrt(lambda_w) * rng.standard_normal((D, k))
        return mean + self._cg(noise, np.zeros_like(W0), lambda_u, lambda_w, None), mean
