"""Inverse label propensities (Jain, Prabhu & Varma, 2016) and their per-dataset parameters.

:func:`propensity_params` is the one source of the parameters (A, B): the dataset registry, the
CLI and the recipes all ask it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import ShapeError
from ..arguments import positive_int

__all__ = ["inverse_propensity", "propensity_params"]


def inverse_propensity(
    Y_train: Any,
    a: float = 0.55,
    b: float = 1.5,
    *,
    num_points: int | None = None,
) -> np.ndarray:
    """Inverse propensity weights of Jain et al. (2016), as in pyxclib.

    ``w_l = 1 + C (N_l + b)^(-a)`` with ``C = (ln N - 1)(b + 1)^a``.

    Parameters
    ----------
    Y_train : scipy sparse / np.ndarray (N, K), or np.ndarray (K,) of label counts
        Training label matrix (``N`` = its rows, ``N_l`` = column sums), or the
        counts ``N_l`` directly, in which case ``num_points`` gives ``N``.
    a, b : float
        Propensity parameters (see :func:`propensity_params`).
    num_points : int, optional
        Number of training rows; required with a counts vector.

    Returns
    -------
    np.ndarray of shape (K,), float64
    """
    if sp.issparse(Y_train) or np.ndim(Y_train) == 2:
        if sp.issparse(Y_train):
            n = Y_train.shape[0]
            counts = np.asarray(Y_train.sum(axis=0), dtype=np.float64).ravel()
        else:
            arr = np.asarray(Y_train)
            n = arr.shape[0]
            counts = arr.sum(axis=0, dtype=np.float64)
        if num_points is not None and int(num_points) != n:
            raise ShapeError(f"num_points={num_points} disagrees with Y_train's {n} rows")
    else:
        counts = np.asarray(Y_train, dtype=np.float64)
        if counts.ndim != 1:
            raise ShapeError(f"label counts must be 1-D (K,), got shape {counts.shape}")
        if num_points is None:
            raise ShapeError("num_points is required when Y_train is a vector of label counts")
        n = num_points
    n = positive_int(n, "num_points")
    if not np.isfinite(counts).all() or (counts.size and counts.min() < 0):
        raise ShapeError("label counts must be finite and non-negative")
    c = (np.log(n) - 1.0) * (b + 1.0) ** a
    return 1.0 + c * np.power(counts + b, -a)


def propensity_params(name: str) -> tuple[float, float]:
    """Default ``(a, b)`` propensity parameters for a dataset name (pyxclib).

    Names containing "amazon" give (0.6, 2.6), "wiki" give (0.5, 0.4), any other
    (0.55, 1.5). Matching is case-insensitive.
    """
    low = str(name).lower()
    if "amazon" in low:
        return 0.6, 2.6
    if "wiki" in low:
        return 0.5, 0.4
    return 0.55, 1.5
