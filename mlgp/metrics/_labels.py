"""Label-matrix helpers shared by the metric modules."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import ShapeError


def as_binary_csr(Y: Any, name: str = "Y_true") -> sp.csr_matrix:
    """Validate a 0/1 label matrix and return it as CSR float64 with sorted indices."""
    if sp.issparse(Y):
        if len(Y.shape) != 2:
            raise ShapeError(f"{name} must be 2-D (N, K), got shape {Y.shape}")
        M = sp.csr_matrix(Y, copy=True)
        M.sum_duplicates()
    else:
        arr = np.asarray(Y)
        if arr.ndim != 2:
            raise ShapeError(f"{name} must be 2-D (N, K), got shape {arr.shape}")
        if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
            raise ShapeError(f"{name} must be numeric or boolean, got dtype {arr.dtype}")
        M = sp.csr_matrix(arr)
    data = M.data
    if data.dtype != np.bool_:
        if not np.all((data == 0) | (data == 1)):
            raise ShapeError(f"{name} must contain only 0/1 values")
    M = sp.csr_matrix(M, dtype=np.float64)
    M.eliminate_zeros()
    M.sort_indices()
    return M


def safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.zeros_like(num, dtype=np.float64)
    nz = den > 0
    out[nz] = num[nz] / den[nz]
    return out
