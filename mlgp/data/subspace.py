"""The subspace of the training features, and the projection onto it (subspace inducing inputs).

Contract: :func:`subspace_basis` takes (N, D) CSR or dense training features and returns a
:class:`SubspaceBasis`: the top-R right singular vectors X̃ (R, D) with orthonormal rows, from a
sparse truncated SVD (scikit-learn's ``randomized_svd`` or SciPy's ``svds``; neither densifies X),
and the training points' coordinates X X̃ᵀ (N, R; U S), for initialising inducing inputs.
:class:`SubspaceProjection` is the input map (:class:`mlgp.blocks.InputMap`) x ↦ (x X̃ᵀ, r(x)) with
r(x) = max(‖x‖² − ‖x X̃ᵀ‖², 0), the squared norm of the part of x orthogonal to the subspace: a
(B, D) block, CSR or dense, becomes a dense (B, R + 1) block at cost O(nnz · R), so a model on it
never forms a (B, D) dense block, and everything a subspace kernel needs of x — inner products with
Z = A X̃ (x zᵀ = (x X̃ᵀ) aᵀ) and ‖x‖² = ‖x X̃ᵀ‖² + r(x) — is in the R + 1 numbers. No TensorFlow.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from .. import arguments
from ..blocks import register_input_map
from ..errors import ArgumentError, ShapeError
from ..validation import check_features

__all__ = ["RANK_TOLERANCE", "SVD_SOLVERS", "SubspaceBasis", "SubspaceProjection", "subspace_basis"]

#: The truncated-SVD solvers :func:`subspace_basis` can use.
SVD_SOLVERS = ("randomized", "svds")


class SubspaceBasis(NamedTuple):
    """The result of :func:`subspace_basis`.

    Attributes
    ----------
    basis : np.ndarray (R, D)
        The top-R right singular vectors X̃, orthonormal rows, by decreasing singular value.
    coordinates : np.ndarray (n, R)
        X X̃ᵀ (= U S up to the solver's accuracy) of the rows the SVD saw: the training points'
        coordinates in the subspace, as :class:`SubspaceProjection` gives them (n = N, or the
        row sample's size).
    singular_values : np.ndarray (R,)
        S, decreasing (of the row sample when there is one).
    rows : np.ndarray (n,) or None
        The sampled rows of X, increasing; ``None``: all rows.
    """

    basis: np.ndarray
    coordinates: np.ndarray
    singular_values: np.ndarray
    rows: np.ndarray | None = None


#: Singular values at or below this fraction of the largest count as zero: X's numerical rank.
RANK_TOLERANCE = 1e-8


def subspace_basis(X, rank: int, *, solver: str = "randomized", seed: int = 0, n_iter: int = 4,
                   sample_rows: int | None = None) -> SubspaceBasis:
    """The top-``rank`` right singular subspace of the features ``X`` (N, D), CSR or dense.

    Parameters
    ----------
    X
        Training features (checked: finite, 2-D; CSR stays sparse).
    rank
        R, with 1 ≤ R < min(N, D) for ``"svds"`` and R ≤ min(N, D) for ``"randomized"``.
    solver
        ``"randomized"``: :func:`sklearn.utils.extmath.randomized_svd` (``n_iter`` power
        iterations); ``"svds"``: :func:`scipy.sparse.linalg.svds` (ARPACK).
    seed
        Seeds the solver's random start and the row sample.
    sample_rows
        Take the basis from this many rows of X drawn uniformly without replacement (n < N), so
        that the solver's memory, O((n + D) R), does not grow with N; ``None`` (or n ≥ N): all
        rows. R must then fit the sample: R ≤ min(n, D) (``"svds"``: below it).

    Returns
    -------
    SubspaceBasis
        Signs fixed so that each basis row's largest-magnitude entry is positive (the result does
        not depend on the solver's sign convention).

    Raises
    ------
    ShapeError
        For R beyond the limit above (before any SVD), or beyond X's numerical rank (the number
        of singular values above :data:`RANK_TOLERANCE` × the largest, found by the SVD): the
        message gives the rank to use instead.
    """
    X = check_features(X)
    rank = arguments.positive_int(rank, "rank")
    seed = arguments.seed(seed)
    n_iter = arguments.non_negative_int(n_iter, "n_iter")
    if solver not in SVD_SOLVERS:
        raise ArgumentError(f"solver must be one of {', '.join(map(repr, SVD_SOLVERS))}; got {solver!r}")
    rows = None
    if sample_rows is not None and arguments.positive_int(sample_rows, "sample_rows") < X.shape[0]:
        rows = np.sort(np.random.default_rng(seed).choice(X.shape[0], int(sample_rows), replace=False))
    shape = X.shape if rows is None else (len(rows), X.shape[1])
    limit = min(shape) - (1 if solver == "svds" else 0)
    if rank > limit:
        seen = f"X of shape {X.shape}" if rows is None else f"a sample of {len(rows)} rows of X of shape {X.shape}"
        raise ShapeError(f"rank R must be at most {limit} for the {solver!r} solver on {seen}; got {rank}")
    if rows is not None:
        X = X[rows]
    if solver == "randomized":
        from sklearn.utils.extmath import randomized_svd

        _, S, Vt = randomized_svd(X, rank, n_iter=n_iter, random_state=seed)
    else:
        from scipy.sparse.linalg import svds

        v0 = np.random.default_rng(seed).standard_normal(min(X.shape))
        _, S, Vt = svds(X, k=rank, v0=v0)
        order = np.argsort(S)[::-1]
        S, Vt = S[order], Vt[order]
    numerical_rank = int(np.sum(S > RANK_TOLERANCE * S.max())) if S.size and S.max() > 0 else 0
    if numerical_rank < rank:
        raise ShapeError(f"rank R = {rank} exceeds the numerical rank {numerical_rank} of the "
                         f"{'features' if rows is None else 'row sample'} (singular values above "
                         f"{RANK_TOLERANCE:g} × the largest): use R ≤ {numerical_rank}"
                         + ("" if numerical_rank else " — X is all zeros"))
    signs = np.sign(Vt[np.arange(rank), np.argmax(np.abs(Vt), axis=1)])
    signs[signs == 0] = 1.0
    Vt = np.ascontiguousarray(Vt * signs[:, None])
    coordinates = np.asarray(X @ Vt.T, dtype=np.float64)  # U S, exactly what the projection gives
    return SubspaceBasis(Vt, coordinates, np.asarray(S, dtype=np.float64), rows)


@register_input_map
class SubspaceProjection:
    """x ↦ (x X̃ᵀ, max(‖x‖² − ‖x X̃ᵀ‖², 0)): D features to R + 1 model inputs.

    Parameters
    ----------
    basis
        X̃ (R, D) with orthonormal rows (:attr:`SubspaceBasis.basis`), R < D; copied.

    The map takes D = ``num_features`` columns and gives ``num_outputs`` = R + 1: the coordinates
    in the subspace, then the squared norm of the residual orthogonal to it.
    """

    def __init__(self, basis) -> None:
        basis = np.asarray(basis, dtype=np.float64)
        if basis.ndim != 2 or basis.shape[0] < 1 or basis.shape[0] >= basis.shape[1]:
            raise ShapeError(f"the basis must be (R, D) with 1 ≤ R < D; got shape {basis.shape}")
        # one copy, held as X̃ᵀ (D, R) in C order: what a CSR block's product needs without a copy
        self._basis_t = np.array(basis.T, order="C")
        if not np.all(np.isfinite(self._basis_t)):
            raise ShapeError("the basis contains NaN or inf")
        gram = self._basis_t.T @ self._basis_t
        if not np.allclose(gram, np.eye(gram.shape[0]), atol=1e-6):
            raise ShapeError("the basis rows must be orthonormal (X̃ X̃ᵀ = I): use subspace_basis(X, R).basis")
        self.num_features = int(basis.shape[1])
        self.num_outputs = int(basis.shape[0]) + 1

    @property
    def basis(self) -> np.ndarray:
        """X̃ (R, D), a read-only view of the map's one copy."""
        view = self._basis_t.T
        view.flags.writeable = False
        return view

    def __call__(self, block: sp.csr_matrix | np.ndarray) -> np.ndarray:
        """(B, D) CSR or dense → (B, R + 1) dense float64."""
        coords = np.asarray(block @ self._basis_t, dtype=np.float64)
        if sp.issparse(block):
            squared = np.asarray(block.multiply(block).sum(axis=1), dtype=np.float64).ravel()
        else:
            squared = np.einsum("ij,ij->i", block, block)
        residual = np.maximum(squared - np.einsum("ij,ij->i", coords, coords), 0.0)
        return np.hstack([coords, residual[:, None]])
