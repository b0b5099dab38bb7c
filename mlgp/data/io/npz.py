"""Reader and writer for labelled data as ``.npz``: an archive (stored or deflated) of exactly
eight plain arrays, the CSR parts of X and Y: ``X_data`` (nnz,) numeric, ``X_indices`` (nnz,) int,
``X_indptr`` (N+1,) int, ``X_shape`` (2,) int, and ``Y_data`` (0/1), ``Y_indices``, ``Y_indptr``,
``Y_shape`` alike. Read with :func:`mlgp.files.read_npz` (no pickle, CRCs checked), rebuilt with
:func:`mlgp.files.csr_from_parts` (indices in range, in any order within a row, no entry stored
twice); stored zeros are dropped by the caller (:func:`mlgp.data.io.canonical.conformed`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ...errors import DataFormatError
from ...files import as_path, atomic_write, csr_from_parts, read_npz
from .canonical import canonical_pair

__all__ = ["read_labelled_npz", "write_labelled_npz"]

_NPZ_KEYS = tuple(f"{m}_{part}" for m in "XY" for part in ("data", "indices", "indptr", "shape"))


def _npz_matrix(arrays: dict, m: str, path) -> sp.csr_matrix:
    shape = arrays[f"{m}_shape"]
    if shape.shape != (2,) or shape.dtype.kind not in "iu" or shape.min() < 0 or shape.max() > 2**62:
        raise DataFormatError(f"{m}_shape must hold two non-negative integers (rows, columns), got "
                              f"{shape.dtype} array of shape {shape.shape}", path)
    parts = [arrays[f"{m}_{part}"] for part in ("data", "indices", "indptr")]
    try:
        return csr_from_parts(*parts, tuple(int(s) for s in shape))
    except (ValueError, TypeError, OverflowError) as err:
        raise DataFormatError(f"{m}_data, {m}_indices, {m}_indptr, {m}_shape do not form a CSR matrix: {err}",
                              path) from None


def read_labelled_npz(path) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """X (N, D) float64 with finite values and Y (N, K) with 0/1 values (stored zeros kept, indices
    as stored) of a labelled ``.npz``; any other content raises :class:`DataFormatError` naming the
    file and the entry."""
    arrays = read_npz(path, "labelled data file")
    missing = [k for k in _NPZ_KEYS if k not in arrays]
    extra = sorted(set(arrays) - set(_NPZ_KEYS))
    if missing or extra:
        raise DataFormatError(f"expected the entries {', '.join(_NPZ_KEYS)}; missing: {', '.join(missing) or '-'}; "
                              f"unexpected: {', '.join(extra) or '-'}", path)
    X, Y = _npz_matrix(arrays, "X", path), _npz_matrix(arrays, "Y", path)
    if X.shape[0] != Y.shape[0]:
        raise DataFormatError(f"X_shape says {X.shape[0]} rows but Y_shape says {Y.shape[0]}", path)
    X = sp.csr_matrix(X, dtype=np.float64, copy=True)
    if not np.all(np.isfinite(X.data)):
        row = np.searchsorted(X.indptr, np.flatnonzero(~np.isfinite(X.data))[0], side="right") - 1
        raise DataFormatError(f"X_data: a value that is not finite in float64 (row {row})", path)
    Y = sp.csr_matrix(Y, copy=True)
    wrong = (Y.data != 0) & (Y.data != 1)
    if wrong.any():
        raise DataFormatError(f"Y_data: labels must be 0 or 1, found {np.unique(Y.data[wrong])[:5]}", path)
    return X, Y


def write_labelled_npz(path, X, Y) -> None:
    """Write X (N, D) and Y (N, K, 0/1) as the eight-array ``.npz`` of the module docstring, atomically.
    Raises what :func:`write_labelled` raises."""
    X, Y = canonical_pair(X, Y)
    arrays = {f"{m}_{part}": value for m, A in (("X", X), ("Y", Y))
              for part, value in (("data", A.data), ("indices", A.indices), ("indptr", A.indptr),
                                  ("shape", np.array(A.shape, np.int64)))}
    atomic_write(as_path(path), lambda fh: np.savez_compressed(fh, **arrays))
