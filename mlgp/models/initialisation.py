"""Initial inducing inputs for MLGPF: a few k-means iterations, or random training points (SE-F)."""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp

from ..errors import ShapeError

__all__ = ["kmeans_inducing", "random_inducing"]


def kmeans_inducing(X: sp.spmatrix | np.ndarray, num_inducing: int, iterations: int = 5, seed: int = 0, max_points: int = 20000) -> np.ndarray:
    """Cluster centres of ``X`` (N, D) after a few k-means iterations; returns dense (M, D).

    Uses scikit-learn's ``KMeans`` (k-means++ seeding, sparse input accepted) on at most
    ``max_points`` rows drawn at random. Raises :class:`~mlgp.errors.ShapeError` (a ``ValueError``)
    unless 1 ≤ M ≤ N.
    """
    from sklearn.cluster import KMeans

    N = X.shape[0]
    M = int(num_inducing)
    if not 1 <= M <= N:
        raise ShapeError(f"num_inducing must be in [1, N={N}], got {num_inducing}")
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(N, size=min(N, max_points), replace=False))
    sub = X[rows]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning: stopping early is the point
        km = KMeans(n_clusters=M, n_init=1, max_iter=int(iterations), random_state=seed).fit(sub)
    return np.asarray(km.cluster_centers_, dtype=np.float64)


def random_inducing(X: sp.spmatrix | np.ndarray, num_inducing: int, seed: int = 0) -> np.ndarray:
    """``num_inducing`` distinct training rows of ``X`` (N, D) chosen at random; dense (M, D)."""
    N = X.shape[0]
    M = int(num_inducing)
    if not 1 <= M <= N:
        raise ShapeError(f"num_inducing must be in [1, N={N}], got {num_inducing}")
    rows = np.sort(np.random.default_rng(seed).choice(N, size=M, replace=False))
    Z = X[rows]
    return np.asarray(Z.toarray() if sp.issparse(Z) else Z, dtype=np.float64)
