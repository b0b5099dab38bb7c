r"""A warm start for MLGPF from a cheap linear solution: Φ from the labels' principal directions.

With the centred labels Y_c = Y − ȳ (N, K) and its top-P principal directions V (K, P) (unit
columns; ``eigh`` of Y_cᵀY_c), the latent targets are the standardised scores H = Y_c V / s
(N, P) (s the scores' standard deviations), so that Y_c ≈ H (V diag s)ᵀ. Each h_p is then fitted
by kernel ridge regression on the inducing inputs (the subset-of-regressors predictor
h(x) = k_xZ α with α = (K_ZX K_XZ + λ K_ZZ + ε I)⁻¹ K_ZX H, λ = ``ridge``), computed a block of rows
at a time. Finally one scale c is chosen by maximising the training Bernoulli log-likelihood of
f = b + c · Ĥ (V diag s)ᵀ on at most 2,000 rows, and Φ = c · V diag s.

:func:`warm_start` returns α (M, P) and Φ (K, P); each q(u) family turns α into its mean
parameter (m = K_ZZ α for the Cholesky family, L_Kᵀ α whitened, α itself preconditioned).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize_scalar

from ..blocks import InputMap, row_blocks, take_rows

__all__ = ["warm_start"]


def _principal_directions(Y: sp.csr_matrix, P: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ȳ (K,), the top-P principal directions V (K, P) of the centred labels and the score stds (P,)."""
    N = Y.shape[0]
    ybar = np.asarray(Y.mean(axis=0)).ravel()
    if Y.shape[1] <= 4000:
        cov = np.asarray((Y.T @ Y).toarray(), dtype=np.float64) - N * np.outer(ybar, ybar)
        w, V = np.linalg.eigh(cov)
        w, V = w[::-1][:P], V[:, ::-1][:, :P]
    else:
        from scipy.sparse.linalg import LinearOperator, svds

        op = LinearOperator(Y.shape, matvec=lambda v: Y @ v - ybar @ v, rmatvec=lambda u: Y.T @ u - ybar * u.sum(),
                            dtype=np.float64)
        _, sv, Vt = svds(op, k=P, random_state=0)
        order = np.argsort(sv)[::-1]
        w, V = sv[order] ** 2, Vt[order].T
    std = np.sqrt(np.maximum(w, 0.0) / N)
    return ybar, V, np.where(std > 0, std, 1.0)


def warm_start(X, Y, kernel_matrix, Kuu: np.ndarray, bias: np.ndarray, num_latent_gps: int, ridge: float = 1.0,
               block: int = 2000, seed: int = 0, *, input_map: InputMap | None = None) -> tuple[np.ndarray, np.ndarray]:
    """α (M, P) and Φ (K, P) of the warm start described in :mod:`mlgp.models.warm_start`.

    Parameters
    ----------
    X
        (N, D) features, CSR or dense, walked a block of rows at a time (:mod:`mlgp.blocks`).
    Y
        (N, K) 0/1 labels, CSR.
    kernel_matrix
        ``kernel_matrix(X_block)`` → K_XZ (n, M) for a dense block of the kernel's inputs (n, d).
    Kuu
        K_ZZ (M, M).
    bias
        b (K,), already initialised.
    num_latent_gps
        P.
    ridge
        λ of the ridge fit (the latent targets have unit variance).
    block
        Rows per block.
    seed
        Seeds the rows the scale is fitted on.
    input_map
        The model's input map, applied to each block before anything densifies it.
    """
    Y = sp.csr_matrix(Y, dtype=np.float64)
    N, K = Y.shape
    P = int(num_latent_gps)
    M = Kuu.shape[0]
    ybar, V, std = _principal_directions(Y, P)
    G = np.zeros((M, M))
    R = np.zeros((M, P))
    for rows, xb in row_blocks(X, block, input_map=input_map):
        Kxz = np.asarray(kernel_matrix(xb), dtype=np.float64)
        H = (np.asarray((Y[rows] @ V)) - ybar @ V) / std
        G += Kxz.T @ Kxz
        R += Kxz.T @ H
    A = G + ridge * Kuu
    A[np.diag_indices(M)] += 1e-8 * max(float(np.trace(A)) / M, 1e-12)
    alpha = np.linalg.solve(A, R)
    # one scale for the loadings, by maximum likelihood on a subsample
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(N, size=min(N, 2000), replace=False))
    Hs = np.asarray(kernel_matrix(take_rows(X, rows, input_map=input_map)), dtype=np.float64) @ alpha
    U = Hs @ (V * std).T  # (n, K): the linear reconstruction of the centred labels
    Ys = Y[rows].toarray()
    sign = 2.0 * Ys - 1.0

    def nll(c: float) -> float:
        return float(np.logaddexp(0.0, -sign * (bias + c * U)).sum())

    c = minimize_scalar(nll, bounds=(0.0, 100.0), method="bounded").x
    return alpha, c * V * std
