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
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

__all__ = ["batched_cg", "label_step", "row_step"]


def batched_cg(matvec: Callable[[np.ndarray], np.ndarray], rhs: np.ndarray, x0: np.ndarray,
               diagonal: np.ndarray | None, iterations: int, rtol: float | None = None) -> np.ndarray:
    """``iterations`` preconditioned CG steps on the systems A_i x_i = rhs_i from ``x0``, or fewer:
    with ``rtol`` the steps end once every residual ‖h_i − A_i x_i‖ is at most ``rtol`` ‖h_i‖.

    ``matvec(P)`` (S, k) → (A_i p_i)_i (S, k); ``rhs``, ``x0`` (S, k); ``diagonal`` (S, k) the
    diagonals of the A_i (Jacobi preconditioner), None for plain CG. Returns x (S, k). A system
    whose residual is exactly 0 stays where it is.
    """
    x = np.array(x0, dtype=np.float64, copy=True)
    r = rhs - matvec(x)
    z = r if diagonal is None else r / diagonal
    p = z.copy()
    rz = np.einsum("ij,ij->i", r, z)
    limit = None if rtol is None else (rtol * np.linalg.norm(rhs, axis=1)) ** 2
    for _ in range(iterations):
        if limit is not None and np.all(np.einsum("ij,ij->i", r, r) <= limit):
            break
        Ap = matvec(p)
        curvature = np.einsum("ij,ij->i", p, Ap)
        alpha = np.divide(rz, curvature, out=np.zeros_like(rz), where=curvature > 0)
        x += alpha[:, None] * p
        r -= alpha[:, None] * Ap
        z = r if diagonal is None else r / diagonal
        rz_next = np.einsum("ij,ij->i", r, z)
        beta = np.divide(rz_next, rz, out=np.zeros_like(rz), where=rz > 0)
        p = z + beta[:, None] * p
        rz = rz_next
    return x


def row_step(U_b: np.ndarray, V: np.ndarray, a: np.ndarray, b: np.ndarray, prior_mean: np.ndarray,
             lambda_u: float, iterations: int) -> np.ndarray:
    """The block's new u_n (B, k): ``iterations`` Jacobi-preconditioned CG steps from ``U_b``
    (B, k) on Λ_n u_n = Σ_l b_nl v_l + λ_u W x_n, for ``V`` (K, k), weights ``a``, ``b`` (B, K)
    and ``prior_mean`` = X_b W (B, k)."""
    rhs = b @ V + lambda_u * prior_mean
    diagonal = a @ (V * V) + lambda_u
    return batched_cg(lambda P: (a * (P @ V.T)) @ V + lambda_u * P, rhs, U_b, diagonal, iterations)


def label_step(V: np.ndarray, blocks: Sequence[tuple[np.ndarray, np.ndarray]], rhs: np.ndarray,
               precisions: np.ndarray, iterations: int) -> np.ndarray:
    """The new V (K, k): ``iterations`` Jacobi-preconditioned CG steps from ``V`` on
    Λ_l v_l = ``rhs``_l with Λ_l = Σ_n a_nl u_n u_nᵀ + diag(``precisions`` (k,)), the sum taken over
    ``blocks`` [(U_b (B, k), a_b (B, K)), ...] in their order; ``rhs`` (K, k) is Σ_n b_nl u_n."""
    diagonal = sum((a.T @ (U_b * U_b) for U_b, a in blocks), np.zeros_like(V)) + precisions

    def matvec(P: np.ndarray) -> np.ndarray:
        return sum(((a * (U_b @ P.T)).T @ U_b for U_b, a in blocks), np.zeros_like(P)) + P * precisions

    return batched_cg(matvec, rhs, V, diagonal, iterations)
