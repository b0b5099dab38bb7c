"""Solvers of ML-LSPC's coupled least-squares system, the Sylvester equation ``G Θ + Θ C = R``.

Contract: ``G = ΦᵀΦ`` (B, B) is symmetric positive semi-definite, ``C`` (T, T) is the symmetric
positive definite coupling matrix ``C = diag(λ + Σ_t' γ_tt') − Γ`` of :func:`coupling_matrix`, and
each right-hand side ``R`` is (B, T). :func:`solve_coupled` returns the (B, T) solutions by one of

- ``"eig"``: the paper's two eigendecompositions, ``Θ = F [(Fᵀ R U) / (f_b + g_t)] Uᵀ`` with
  ``G = F diag(f) Fᵀ`` and ``C = U diag(g) Uᵀ``; O(B³ + T³ + B²T + BT²), one factorisation
  shared by all right-hand sides;
- ``"sylvester"``: :func:`scipy.linalg.solve_sylvester` (Bartels–Stewart) per right-hand side;
- ``"cg"``: conjugate gradients (:func:`scipy.sparse.linalg.cg`) on the BT unknowns with a
  :class:`~scipy.sparse.linalg.LinearOperator` whose product is ``G Θ + Θ C`` (O(B²T + BT²) per
  iteration); the BT × BT matrix is never formed; stops at relative residual ``tol``;
- ``"dense"``: the naive reference that forms ``H = I_T ⊗ G + C ⊗ I_B`` (BT × BT) and solves it
  by Cholesky; refused above :data:`DENSE_MAX_UNKNOWNS` unknowns (its memory is 8 (BT)² bytes).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, cg

from ..errors import ArgumentError, MLGPError

__all__ = ["DENSE_MAX_UNKNOWNS", "SOLVERS", "SolveInfo", "coupling_matrix", "pearson_similarity",
           "solve_coupled", "sylvester_residual"]

SOLVERS = ("eig", "sylvester", "cg", "dense")

#: The largest B·T the ``"dense"`` solver accepts: H then takes 3.2 GB.
DENSE_MAX_UNKNOWNS = 20_000


@dataclass
class SolveInfo:
    """How a solve went: the solver used and, for ``"cg"``, iterations and relative residuals per
    right-hand side."""

    solver: str
    iterations: list[int] = field(default_factory=list)
    residuals: list[float] = field(default_factory=list)


def pearson_similarity(Y) -> np.ndarray:
    """Label similarity ``W_tt' = max(0, ρ_tt')`` from the Pearson correlations of the columns of
    the 0/1 label matrix ``Y`` (N, T), CSR or dense; the diagonal and every pair involving a
    constant column (a label that is always or never present) are 0. Returns (T, T) float64."""
    Y = sp.csr_matrix(Y, dtype=np.float64)
    n = float(Y.shape[0])
    counts = np.asarray(Y.sum(axis=0)).ravel()                        # exact integers in float64
    cov = n * (Y.T @ Y).toarray() - np.outer(counts, counts)          # N² × covariance, exact
    std = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    ok = std > 0
    W = np.zeros_like(cov)
    sub = np.ix_(ok, ok)
    W[sub] = np.clip(cov[sub] / np.outer(std[ok], std[ok]), 0.0, 1.0)
    np.fill_diagonal(W, 0.0)
    return W


def coupling_matrix(alpha, similarity: np.ndarray) -> np.ndarray:
    """``C_tt' = δ_tt' (λ_t + Σ_t'' γ_tt'') − γ_tt'`` for regularisation ``alpha`` (a scalar or
    (T,) array of λ_t > 0) and the symmetric non-negative similarity Γ (T, T); returns (T, T)."""
    gamma = np.asarray(similarity, dtype=np.float64)
    C = -gamma.copy()
    C[np.diag_indices_from(C)] += np.broadcast_to(np.asarray(alpha, dtype=np.float64), gamma.shape[:1]) \
        + gamma.sum(axis=1)
    return C


def sylvester_residual(G: np.ndarray, C: np.ndarray, theta: np.ndarray, R: np.ndarray) -> float:
    """Relative residual ``‖G Θ + Θ C − R‖_F / ‖R‖_F`` (absolute when ``R = 0``)."""
    r = np.linalg.norm(G @ theta + theta @ C - R)
    scale = np.linalg.norm(R)
    return float(r / scale) if scale > 0 else float(r)


def _eig(G, C, rhs):
    f, F = np.linalg.eigh(G)
    g, U = np.linalg.eigh(C)
    denom = f[:, None] + g[None, :]
    return [F @ ((F.T @ R @ U) / denom) @ U.T for R in rhs]


def _dense(G, C, rhs):
    B, T = G.shape[0], C.shape[0]
    if B * T > DENSE_MAX_UNKNOWNS:
        raise ArgumentError(f"solver='dense' forms the (B·T)² = {B * T}² matrix H "
                            f"({8 * (B * T) ** 2 / 1e9:.1f} GB); it is limited to B·T <= {DENSE_MAX_UNKNOWNS}. "
                            "Use solver='eig', 'sylvester' or 'cg'")
    H = np.kron(np.eye(T), G) + np.kron(C, np.eye(B))
    b = np.stack([R.ravel(order="F") for R in rhs], axis=1)
    x = sla.solve(H, b, assume_a="pos", check_finite=False)
    return [x[:, i].reshape((B, T), order="F") for i in range(len(rhs))]


def _cg(G, C, rhs, tol, max_iter, info):
    B, T = G.shape[0], C.shape[0]

    def matvec(v):
        theta = v.reshape((B, T), order="F")
        return (G @ theta + theta @ C).ravel(order="F")

    H = LinearOperator((B * T, B * T), matvec=matvec, dtype=np.float64)
    out = []
    for R in rhs:
        b = R.ravel(order="F")
        count = [0]

        def callback(_xk, count=count):
            count[0] += 1

        x, status, res = None, 0, np.inf
        # scipy's cg stops on its recursively updated residual; restart from the iterate until the
        # true residual ‖GΘ + ΘC − R‖ / ‖R‖ is within tol too (rounding can leave it just above)
        for _ in range(4):
            x, status = cg(H, b, x0=x, rtol=tol, atol=0.0, maxiter=max(max_iter - count[0], 1),
                           callback=callback)
            res = sylvester_residual(G, C, x.reshape((B, T), order="F"), R)
            if status > 0 or res <= tol or count[0] >= max_iter:
                break
        theta = x.reshape((B, T), order="F")
        if status > 0 or res > tol:
            raise MLGPError(f"conjugate gradients did not reach the relative residual {tol:g} in "
                            f"{count[0]} iterations (reached {res:.3g}); raise max_iter or tol, or "
                            "use solver='eig'")
        info.iterations.append(count[0])
        info.residuals.append(res)
        out.append(theta)
    return out


def solve_coupled(G: np.ndarray, C: np.ndarray, rhs: list[np.ndarray], solver: str = "eig",
                  tol: float = 1e-10, max_iter: int | None = None) -> tuple[list[np.ndarray], SolveInfo]:
    """Solve ``G Θ + Θ C = R`` for every ``R`` in ``rhs``.

    Parameters
    ----------
    G : np.ndarray of shape (B, B)
        Symmetric positive semi-definite (``ΦᵀΦ``).
    C : np.ndarray of shape (T, T)
        Symmetric positive definite (:func:`coupling_matrix`).
    rhs : list of np.ndarray of shape (B, T)
    solver : {"eig", "sylvester", "cg", "dense"}
    tol : float
        Relative residual at which ``"cg"`` stops.
    max_iter : int, optional
        Iteration cap of ``"cg"`` (default 10 · B · T).

    Returns
    -------
    thetas : list of np.ndarray of shape (B, T)
    info : SolveInfo
    """
    info = SolveInfo(solver)
    if solver == "eig":
        return _eig(G, C, rhs), info
    if solver == "sylvester":
        return [sla.solve_sylvester(G, C, R) for R in rhs], info
    if solver == "cg":
        return _cg(G, C, rhs, tol, max_iter, info), info
    if solver == "dense":
        return _dense(G, C, rhs), info
    raise ArgumentError(f"solver must be one of {SOLVERS}, got {solver!r}")
