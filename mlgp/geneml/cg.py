"""Conjugate gradients on many symmetric positive-definite systems at once, and batch EM's M-step
for U and V by a few of its steps.

:func:`batched_cg` solves A_i x_i = h_i for a stack of systems that share a matrix-vector product
``matvec`` (one system per row of the (S, k) arrays), each with its own step sizes, optionally
with a Jacobi (diagonal) preconditioner. Started from x₀, every step lowers each system's quadratic
½ xᵀA x − hᵀx (conjugate gradients minimise the A-norm of the error over a growing Krylov space),
so a few warm-started steps are a valid M-step of a generalised EM: the expected complete log
joint Q still rises, and with it the log posterior.

For GenEML with weights a_nl = γ_nl ω_nl and b_nl = γ_nl κ_nl (:mod:`mlgp.geneml.updates`), u_n's
system is Λ_n = Σ_l a_nl v_l v_lᵀ + λ_u I, so Λ U for a block is ((U Vᵀ) ∘ a) V + λ_u U: two
(B, K, k) matrix products instead of forming the B matrices Λ_n (B K k² / 2 multiplications).
V's systems take the same products summed over the row blocks, whose weights are kept for it.

:func:`refined_cg` takes those steps in single precision on the correction δ = x − x₀ of a
double-precision residual r₀ = h − A x₀ (one step of mixed-precision iterative refinement): the
quadratic's decrease is −½ r₀ᵀA⁻¹r₀ up to errors relative to r₀, not to x, so the steps still
lower it, at about half the cost of the matrix products.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

__all__ = ["batched_cg", "label_residual", "label_step", "refined_cg", "row_step"]


def batched_cg(matvec: Callable[[np.ndarray], np.ndarray], rhs: np.ndarray, x0: np.ndarray,
               diagonal: np.ndarray | None, iterations: int, rtol: float | None = None) -> np.ndarray:
    """``iterations`` preconditioned CG steps on the systems A_i x_i = rhs_i from ``x0``, or fewer:
    with ``rtol`` the steps end once every residual ‖h_i − A_i x_i‖ is at most ``rtol`` ‖h_i‖.

    ``matvec(P)`` (S, k) → (A_i p_i)_i (S, k); ``rhs``, ``x0`` (S, k); ``diagonal`` (S, k) the
    diagonals of the A_i (Jacobi preconditioner), None for plain CG. Returns x (S, k). A system
    whose residual is exactly 0 stays where it is, and one whose preconditioned residual rᵀD⁻¹r fell
    to the precision's ε² of its start stops moving (past that the steps are rounding noise). Works
    in the precision of ``rhs``.
    """
    x = np.array(x0, dtype=rhs.dtype, copy=True)
    r = rhs - matvec(x)
    z = r if diagonal is None else r / diagonal
    p = z.copy()
    rz = np.einsum("ij,ij->i", r, z)
    floor = rz * np.finfo(rhs.dtype).eps ** 2
    limit = None if rtol is None else (rtol * np.linalg.norm(rhs, axis=1)) ** 2
    for _ in range(iterations):
        if limit is not None and np.all(np.einsum("ij,ij->i", r, r) <= limit):
            break
        Ap = matvec(p)
        curvature = np.einsum("ij,ij->i", p, Ap)
        alpha = np.divide(rz, curvature, out=np.zeros_like(rz), where=(curvature > 0) & (rz > floor))
        x += alpha[:, None] * p
        r -= alpha[:, None] * Ap
        z = r if diagonal is None else r / diagonal
        rz_next = np.einsum("ij,ij->i", r, z)
        beta = np.divide(rz_next, rz, out=np.zeros_like(rz), where=rz > 0)
        p = z + beta[:, None] * p
        rz = rz_next
    return x


def refined_cg(residual: np.ndarray, x0: np.ndarray, low_matvec: Callable[[np.ndarray], np.ndarray],
               diagonal: np.ndarray, iterations: int) -> np.ndarray:
    """x₀ + δ (float64, (S, k)): ``iterations`` Jacobi-preconditioned CG steps in float32 on
    A δ = ``residual`` (r₀ = h − A x₀, computed by the caller in float64) from δ = 0, with
    ``low_matvec`` A's product in float32 and ``diagonal`` (S, k) A's diagonals."""
    correction = batched_cg(low_matvec, residual.astype(np.float32), np.zeros(residual.shape, np.float32),
                            diagonal.astype(np.float32), iterations)
    return x0 + correction


def row_step(U_b: np.ndarray, V: np.ndarray, a: np.ndarray, b: np.ndarray, prior_mean: np.ndarray,
             lambda_u: float, iterations: int, psi: np.ndarray | None = None,
             a32: np.ndarray | None = None) -> np.ndarray:
    """The block's new u_n (B, k): ``iterations`` Jacobi-preconditioned CG steps from ``U_b``
    (B, k) on Λ_n u_n = Σ_l b_nl v_l + λ_u W x_n, for ``V`` (K, k), weights ``a``, ``b`` (B, K)
    and ``prior_mean`` = X_b W (B, k), in float32 on the float64 residual
    (b − a ∘ ψ) V + λ_u (X_b W − U_b) (:func:`refined_cg`). ``psi`` = U_b Vᵀ (B, K) and ``a32``,
    ``a`` in float32, when the caller has them; a given ``psi`` is overwritten (the residual is
    formed in its buffer)."""
    psi = U_b @ V.T if psi is None else psi
    psi *= a
    np.subtract(b, psi, out=psi)
    residual = psi @ V + lambda_u * (prior_mean - U_b)
    a32 = a.astype(np.float32) if a32 is None else a32
    V32, lam = V.astype(np.float32), np.float32(lambda_u)
    return refined_cg(residual, U_b, lambda P: (a32 * (P @ V32.T)) @ V32 + lam * P, a32 @ (V32 * V32) + lam,
                      iterations)


def label_residual(U_b: np.ndarray, V: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A row block's part of V's residual, Σ_n (b_nl − a_nl u_nᵀ v_l) u_n (K, k), in float64, for
    the block's new ``U_b`` (B, k), ``V`` (K, k) and its weights ``a``, ``b`` (B, K)."""
    weighted = U_b @ V.T
    weighted *= a
    np.subtract(b, weighted, out=weighted)
    return weighted.T @ U_b


def label_step(V: np.ndarray, blocks: Sequence[tuple[np.ndarray, np.ndarray]], data_residual: np.ndarray,
               precisions: np.ndarray, iterations: int) -> np.ndarray:
    """The new V (K, k): ``iterations`` Jacobi-preconditioned CG steps from ``V`` on
    Λ_l v_l = Σ_n b_nl u_n with Λ_l = Σ_n a_nl u_n u_nᵀ + diag(``precisions`` (k,)), in float32 on
    the float64 residual ``data_residual`` − V diag(``precisions``) (:func:`refined_cg`), where
    ``data_residual`` (K, k) is the sum of the blocks' :func:`label_residual`. ``blocks``
    [(U_b (B, k), a_b (B, K)), ...] give Λ_l's products (float32 is enough), summed in their order."""
    low = [(U_b.astype(np.float32), a.astype(np.float32, copy=False)) for U_b, a in blocks]
    low_precisions = precisions.astype(np.float32)
    diagonal = sum((a.T @ (U_b * U_b) for U_b, a in low), np.zeros(V.shape, np.float32)) + low_precisions

    def low_matvec(P: np.ndarray) -> np.ndarray:
        return sum(((a * (U_b @ P.T)).T @ U_b for U_b, a in low), np.zeros_like(P)) + P * low_precisions

    return refined_cg(data_residual - V * precisions, V, low_matvec, diagonal, iterations)
