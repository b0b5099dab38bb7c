"""Initial inducing variables for MLGPF, chosen by name from :data:`INDUCING`.

``"kmeans"``: free ``InducingPoints`` at a few k-means iterations' centres; ``"unit-sphere"``: the
same centres scaled onto the unit sphere and kept there (:class:`mlgp.inducing.
UnitSphereInducingPoints`); ``"fixed"``: random training points, not trained (the paper's SE-F);
``"fixed-unit-sphere"``: the same points as unit-sphere inducing points, not trained.
Every choice sees the model's inputs: the rows of X through the model's input map
(:mod:`mlgp.blocks`), so no dense (N, D) block of raw features is formed.
"""

from __future__ import annotations

import warnings

from typing import Callable

import numpy as np
import scipy.sparse as sp
from gpflow import set_trainable
from gpflow.inducing_variables import InducingPoints, InducingVariables

from ..blocks import InputMap, take_rows
from ..errors import ArgumentError, ShapeError
from ..inducing import UnitSphereInducingPoints

__all__ = ["INDUCING", "kmeans_inducing", "make_inducing", "random_inducing"]


def kmeans_inducing(X: sp.spmatrix | np.ndarray, num_inducing: int, iterations: int = 5, seed: int = 0,
                    max_points: int = 20000, *, input_map: InputMap | None = None) -> np.ndarray:
    """Cluster centres of ``X`` (N, D) after a few k-means iterations; returns dense (M, d)
    (d = D, or the width of ``input_map``'s output).

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
    sub = take_rows(X, rows, input_map=input_map, dense=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning: stopping early is the point
        km = KMeans(n_clusters=M, n_init=1, max_iter=int(iterations), random_state=seed).fit(sub)
    return np.asarray(km.cluster_centers_, dtype=np.float64)


def random_inducing(X: sp.spmatrix | np.ndarray, num_inducing: int, seed: int = 0, *,
                    input_map: InputMap | None = None, nonzero: bool = False) -> np.ndarray:
    """``num_inducing`` distinct training rows of ``X`` (N, D) chosen at random; dense (M, d).

    ``nonzero``: rows that are zero (after ``input_map``) are replaced by other rows drawn at
    random (unit-sphere inducing inputs cannot start at 0); a :class:`~mlgp.errors.ShapeError`
    when fewer than M rows are non-zero.
    """
    N = X.shape[0]
    M = int(num_inducing)
    if not 1 <= M <= N:
        raise ShapeError(f"num_inducing must be in [1, N={N}], got {num_inducing}")
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(N, size=M, replace=False))
    Z = np.asarray(take_rows(X, rows, input_map=input_map), dtype=np.float64)
    if nonzero:
        spare = rng.permutation(np.setdiff1d(np.arange(N), rows))
        while True:
            zero = np.flatnonzero(~np.any(Z[:, : _span(Z, input_map)] != 0, axis=1))
            if zero.size == 0:
                break
            if spare.size < zero.size:
                raise ShapeError(f"fewer than M = {M} training rows are non-zero: unit-sphere inducing inputs need "
                                 "M non-zero rows to start from")
            rows[zero], spare = spare[: zero.size], spare[zero.size:]
            Z[zero] = np.asarray(take_rows(X, rows[zero], input_map=input_map), dtype=np.float64)
        Z = Z[np.argsort(rows)]
    return Z


def _span(Z: np.ndarray, input_map: InputMap | None) -> int:
    """The columns of a mapped row that place it: all of them, except a subspace projection's
    residual norm (an inducing input in the subspace has residual 0 whatever the data's)."""
    from ..data.subspace import SubspaceProjection

    return Z.shape[1] - 1 if isinstance(input_map, SubspaceProjection) else Z.shape[1]


def _kmeans(X, M, iterations, seed, input_map) -> InducingVariables:
    return InducingPoints(kmeans_inducing(X, M, iterations, seed, input_map=input_map))


def _unit_sphere(X, M, iterations, seed, input_map) -> InducingVariables:
    Z = kmeans_inducing(X, M, iterations, seed, input_map=input_map)
    empty = np.flatnonzero(~np.any(Z[:, : _span(Z, input_map)] != 0, axis=1))
    if empty.size:  # a cluster of all-zero rows has no direction: start those at non-zero training rows
        rows = take_rows(X, slice(None), input_map=input_map, dense=False)
        nonzero = np.flatnonzero(np.asarray(abs(rows).sum(axis=1)).ravel() > 0)
        if nonzero.size == 0:
            raise ShapeError("every training row is zero: unit-sphere inducing inputs have no direction to start from")
        picked = np.random.default_rng(seed).choice(nonzero, size=empty.size, replace=nonzero.size < empty.size)
        Z[empty] = np.asarray(take_rows(X, np.sort(picked), input_map=input_map), dtype=np.float64)
    return UnitSphereInducingPoints(Z)


def _fixed(X, M, iterations, seed, input_map) -> InducingVariables:
    Z = InducingPoints(random_inducing(X, M, seed, input_map=input_map))
    set_trainable(Z, False)
    return Z


def _fixed_unit_sphere(X, M, iterations, seed, input_map) -> InducingVariables:
    Z = UnitSphereInducingPoints(random_inducing(X, M, seed, input_map=input_map, nonzero=True))
    set_trainable(Z, False)
    return Z


#: The inducing variables :func:`make_inducing` builds by name.
INDUCING: dict[str, Callable[..., InducingVariables]] = {"kmeans": _kmeans, "unit-sphere": _unit_sphere,
                                                          "fixed": _fixed, "fixed-unit-sphere": _fixed_unit_sphere}


def make_inducing(name: str, X, num_inducing: int, *, iterations: int = 5, seed: int = 0,
                  input_map: InputMap | None = None) -> InducingVariables:
    """The inducing variables ``name`` (:data:`INDUCING`) for M = ``num_inducing`` from training
    features ``X`` (N, D), in GPflow's current float type.

    Raises
    ------
    ArgumentError
        For a name not in :data:`INDUCING`.
    """
    if name not in INDUCING:
        raise ArgumentError(f"inducing must be one of {', '.join(repr(n) for n in INDUCING)}; got {name!r}")
    return INDUCING[name](X, int(num_inducing), int(iterations), seed, input_map)
