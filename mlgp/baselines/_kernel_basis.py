"""Gaussian kernel basis functions for the least-squares classifiers (LSPC, ML-LSPC).

Contract: ``phi_b(x) = exp(-||x - c_b||^2 / (2 sigma^2))`` for B centres ``c_b`` drawn from the
training points. :func:`choose_centres` picks the centre rows, :func:`median_heuristic` gives the
default width ``sigma`` (the median distance between training points), :func:`gaussian_design`
computes the (N, B) design matrix for CSR or dense ``X``. Everything is float64 NumPy/SciPy.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.metrics.pairwise import euclidean_distances
from sklearn.utils import check_random_state

__all__ = ["choose_centres", "gaussian_design", "median_heuristic", "row_norms_squared"]


def row_norms_squared(X) -> np.ndarray:
    """Squared Euclidean norm of every row of ``X`` (N, D), CSR or dense: a float64 array (N,)."""
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1), dtype=np.float64).ravel()
    X = np.asarray(X, dtype=np.float64)
    return np.einsum("ij,ij->i", X, X)


def median_heuristic(X, max_points: int = 1000, random_state=0) -> float:
    """The median Euclidean distance between distinct pairs of rows of ``X`` (N, D).

    At most ``max_points`` rows (drawn without replacement with ``random_state``) enter, so the
    cost is O(max_points^2 D). Pairs at distance 0 (duplicate rows) are left out; when every pair
    is a duplicate (or N = 1) the width is 1.0, since no scale can be read from the data.

    Returns
    -------
    float
        A positive kernel width ``sigma``.
    """
    n = X.shape[0]
    if n > max_points:
        rows = np.sort(check_random_state(random_state).choice(n, size=max_points, replace=False))
        X = X[rows]
    d = euclidean_distances(X, X)
    d = d[np.triu_indices(d.shape[0], k=1)]
    d = d[d > 0]
    return float(np.median(d)) if d.size else 1.0


def choose_centres(n_samples: int, n_basis: int | None, random_state=None) -> np.ndarray:
    """Indices (sorted, int64) of the training points that centre the basis functions.

    ``n_basis=None`` or ``n_basis >= n_samples`` takes every point (the paper's B = N); otherwise
    ``n_basis`` distinct points are drawn uniformly with ``random_state``.
    """
    if n_basis is None or n_basis >= n_samples:
        return np.arange(n_samples, dtype=np.int64)
    rng = check_random_state(random_state)
    return np.sort(rng.choice(n_samples, size=int(n_basis), replace=False)).astype(np.int64)


def gaussian_design(X, centres, width: float, centre_norms: np.ndarray | None = None) -> np.ndarray:
    """The design matrix ``Phi[n, b] = exp(-||x_n - c_b||^2 / (2 width^2))``.

    Parameters
    ----------
    X : np.ndarray or scipy sparse matrix of shape (N, D)
    centres : np.ndarray or scipy sparse matrix of shape (B, D)
    width : float
        The kernel width ``sigma > 0``.
    centre_norms : np.ndarray of shape (B,), optional
        Precomputed squared norms of the centres (saves their recomputation per block).

    Returns
    -------
    np.ndarray of shape (N, B), float64 in (0, 1]
    """
    Y_norms = None if centre_norms is None else centre_norms[None, :]
    sq = euclidean_distances(X, centres, squared=True, Y_norm_squared=Y_norms)
    sq *= -0.5 / (float(width) ** 2)
    return np.exp(sq, out=sq)
