"""GenEML's conditional updates under Pólya-Gamma augmentation, shared by every inference.

Notation: ψ_nl = u_nᵀ v_l, κ_nl = y_nl − ½, ω_nl ~ PG(1, ψ_nl) for an exposed entry, γ_nl = E[ξ_nl]
(1 where y_nl = 1; for y_nl = 0, μ(1 − σ(ψ)) / (μ(1 − σ(ψ)) + 1 − μ); 1 everywhere without
exposure). Given weights a_nl = γ_nl ω_nl and b_nl = γ_nl κ_nl (expectations in EM, draws in
Gibbs), each u_n and v_l has a Gaussian conditional with precision and shift

    Λ_n = Σ_l a_nl v_l v_lᵀ + λ_u I,   h_n = Σ_l b_nl v_l + λ_u W x_n    (u_n = Λ_n⁻¹ h_n at the mode),
    Λ_l = Σ_n a_nl u_n u_nᵀ + λ_v I,   h_l = Σ_n b_nl u_n,

and W solves the ridge regression (λ_u XᵀX + λ_w I) W = λ_u Xᵀ U. Everything here works on a block
of rows (NumPy; labels as CSR 0/1 blocks, used through their positives only, so no dense 0/1 block
is formed) so that callers can spread blocks over workers. :func:`normal_log_density` is the exact
Gaussian log density every log posterior of the package adds up.
"""

from __future__ import annotations

import functools

import numpy as np
import scipy.sparse as sp
from scipy.special import expit, log_expit

__all__ = ["OUTER_CHUNK", "centred_weights", "exposure_posterior", "label_statistics", "log_likelihood", "mean_omega",
           "normal_log_density", "positives", "row_updates", "solve_spd"]


def mean_omega(psi: np.ndarray) -> np.ndarray:
    """E[ω] for ω ~ PG(1, ψ): tanh(h) / (4h) with h = ψ/2, and its limit ¼ where h is 0 (ψ = 0, or
    so small that ψ/2 underflows). Dividing tanh(h) by the same rounded h keeps the ratio exact
    for tiny and subnormal ψ (tanh(h) rounds to h there). Few passes over the block: the E-step's
    costliest elementwise step."""
    half = np.multiply(psi, 0.5, dtype=np.float64)
    out = np.tanh(half)
    with np.errstate(invalid="ignore"):  # 0 / 0 where h = 0, replaced below
        np.divide(out, half, out=out)
    out *= 0.25
    out.flat[np.flatnonzero(half == 0)] = 0.25
    return out


def positives(Y_b) -> tuple[np.ndarray, np.ndarray]:
    """Row and column indices (nnz,) of the ones of a 0/1 block ``Y_b`` (B, K): CSR (its stored
    entries that are > 0), or dense (its entries > 0)."""
    if not sp.issparse(Y_b):
        return np.nonzero(np.asarray(Y_b) > 0)
    Y_b = sp.csr_matrix(Y_b)
    rows = np.repeat(np.arange(Y_b.shape[0]), np.diff(Y_b.indptr))
    keep = Y_b.data > 0
    return rows[keep], Y_b.indices[keep]


def exposure_posterior(psi: np.ndarray, Y_b, mu: np.ndarray | None) -> np.ndarray:
    """γ = E[ξ | y, ψ, μ] (B, K) for ``psi`` (B, K) and the 0/1 block ``Y_b`` (B, K), CSR (or dense):
    μ(1 − σ(ψ)) / (μ(1 − σ(ψ)) + 1 − μ) everywhere, then 1 at the positives; all ones when ``mu``
    is None (every label exposed). ``mu`` broadcasts against (B, K)."""
    if mu is None:
        return np.ones_like(psi)
    mu = np.asarray(mu, dtype=np.float64)
    with np.errstate(divide="ignore"):  # μ = 1: −log(1 − μ) = inf, and γ = 1
        shift = -np.log1p(-mu)
    gamma = np.subtract(shift, psi)  # μσ(−ψ) / (μσ(−ψ) + 1 − μ) = μ σ(−ψ − log(1 − μ)): one transcendental
    expit(gamma, out=gamma)
    gamma *= mu
    gamma[positives(Y_b)] = 1.0
    return gamma


def centred_weights(gamma: np.ndarray, Y_b) -> np.ndarray:
    """b = γ κ = γ (y − ½) (B, K) from γ (B, K) and the 0/1 block ``Y_b`` (B, K), CSR (or dense):
    −½ γ everywhere, then ½ at the positives (where γ = 1)."""
    b = -0.5 * gamma
    b[positives(Y_b)] = 0.5
    return b


#: Most float64 entries of outer products (v_l v_lᵀ in :func:`row_updates`, u_n u_nᵀ in
#: :func:`label_statistics`; their upper triangles) formed at once.
OUTER_CHUNK = 2 ** 21


def row_updates(V: np.ndarray, a: np.ndarray, b: np.ndarray, prior_mean: np.ndarray, lambda_u: float) -> tuple[np.ndarray, np.ndarray]:
    """Precisions Λ_n (B, k, k) and shifts h_n (B, k) of the rows' u_n (module docstring).

    ``V`` (K, k); ``a``, ``b`` (B, K); ``prior_mean`` (B, k) = X_b W. Σ_l a_nl v_l v_lᵀ is one
    matrix product a (B, K) · [upper triangle of v_l v_lᵀ] (K, k(k + 1)/2), taken over chunks of
    labels and mirrored (:func:`_weighted_outer_sum`).
    """
    B, k = a.shape[0], V.shape[1]
    precision = _weighted_outer_sum(a, V).reshape(B, k, k)
    precision[:, np.arange(k), np.arange(k)] += lambda_u
    shift = b @ V + lambda_u * prior_mean
    return precision, shift


def _weighted_outer_sum(weights: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """Σ_j weights_ij z_j z_jᵀ for every i, flattened: (I, k²) from ``weights`` (I, J) and
    ``vectors`` (J, k). Each sum is symmetric, so only its upper triangle (k(k + 1)/2 entries) is
    computed, as matrix products with chunks of the triangles of z_j z_jᵀ, and then mirrored: half
    the product's cost."""
    J, k = vectors.shape
    upper, mirror = _triangle(k)
    step = max(1, OUTER_CHUNK // len(upper[0]))
    total = None
    for s in range(0, J, step):
        chunk = vectors[s:s + step]
        part = weights[:, s:s + step] @ (chunk[:, upper[0]] * chunk[:, upper[1]])
        total = part if total is None else total + part  # no zero-filled start: a fresh buffer costs more than the product
    if total is None:
        return np.zeros((weights.shape[0], k * k))
    return np.take(total, mirror, axis=1)


@functools.lru_cache(maxsize=8)
def _triangle(k: int) -> tuple[tuple[np.ndarray, np.ndarray], np.ndarray]:
    """The upper triangle's (row, column) indices of a k × k matrix and, for each of the k² entries
    of the flattened matrix, the position of its value among them (entry (i, j) and (j, i) share one)."""
    upper = np.triu_indices(k)
    mirror = np.empty(k * k, dtype=np.intp)
    position = np.arange(len(upper[0]))
    mirror[upper[0] * k + upper[1]] = position
    mirror[upper[1] * k + upper[0]] = position
    return upper, mirror


def label_statistics(U: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Σ_n a_nl u_n u_nᵀ (K, k, k) and Σ_n b_nl u_n (K, k) over a block of rows ``U`` (B, k)."""
    K, k = a.shape[1], U.shape[1]
    return _weighted_outer_sum(np.ascontiguousarray(a.T), U).reshape(K, k, k), b.T @ U


def solve_spd(precision: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """Λ⁻¹ h for a stack of symmetric positive-definite Λ (…, k, k) and h (…, k).

    One batched LU solve: NumPy has no batched triangular solve, and a Cholesky factor followed by
    two general solves costs about 2.5 times as much."""
    return np.linalg.solve(precision, shift[..., None])[..., 0]


def log_likelihood(psi: np.ndarray, Y_b, mu: np.ndarray | None) -> float:
    """log p(Y_b | U, V, μ) of a block with ξ summed out, for ``psi`` (B, K) and the 0/1 block
    ``Y_b`` (B, K), CSR (or dense): Σ_{y=1} log(μ σ(ψ)) + Σ_{y=0} log(1 − μ σ(ψ)), summed as the
    y = 0 term over every entry plus (y = 1 term − y = 0 term) over the positives (without
    exposure, μ = 1: the logistic likelihood). ``mu`` broadcasts against (B, K)."""
    rows, cols = positives(Y_b)
    psi_pos = psi[rows, cols]
    if mu is None:
        return float(np.sum(log_expit(-psi)) + np.sum(log_expit(psi_pos) - log_expit(-psi_pos)))
    mu = np.asarray(mu, dtype=np.float64)
    mu_pos = np.broadcast_to(mu, psi.shape)[rows, cols]
    with np.errstate(divide="ignore"):  # μ = 1 makes log(1 − μ) = −inf, which logaddexp handles
        if np.all(mu < 1.0):  # log(1 − μσ(ψ)) = log(1 − μ) + log1p(μ/(1 − μ) σ(−ψ)): two transcendentals, not four
            odds = mu / (1.0 - mu)
            negative = expit(-psi)
            negative *= odds
            np.log1p(negative, out=negative)
            # log(1 − μ) summed over every entry of the block without a pass over it (μ repeats
            # psi.size / μ.size times when it broadcasts)
            base = float(np.sum(np.log1p(-mu))) * (psi.size // mu.size)
            odds_pos = np.broadcast_to(odds, psi.shape)[rows, cols]
            negative_pos = np.log1p(odds_pos * expit(-psi_pos)) + np.log1p(-mu_pos)
            positive = np.log(mu_pos) + log_expit(psi_pos)
            return float(np.sum(negative) + base + np.sum(positive - negative_pos))
        negative = np.logaddexp(np.log1p(-mu), np.log(mu) + log_expit(-psi))
        positive = np.log(mu_pos) + log_expit(psi_pos)
    return float(np.sum(negative) + np.sum(positive - negative[rows, cols]))


def normal_log_density(residual: np.ndarray, precision) -> float:
    """Σ log N(r; 0, 1/λ) over the entries r of ``residual`` (any shape) for precision λ, a number or
    one per column (the last axis, (k,)): −½ Σ λ r² + ½ Σ (log λ − log 2π) over the entries (a
    normal prior, exactly)."""
    residual = np.asarray(residual)
    precision = np.asarray(precision, dtype=np.float64)
    if precision.ndim == 0:
        return float(-0.5 * precision * np.sum(residual ** 2)
                     + 0.5 * residual.size * (np.log(precision) - np.log(2 * np.pi)))
    rows = residual.size // max(residual.shape[-1], 1)
    squares = np.sum(residual * residual, axis=tuple(range(residual.ndim - 1)))
    return float(-0.5 * precision @ squares + 0.5 * rows * np.sum(np.log(precision))
                 - 0.5 * residual.size * np.log(2 * np.pi))
