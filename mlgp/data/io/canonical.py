"""The canonical labelled pair (X, Y) of the labelled data files: X a float64 CSR matrix (N, D)
with sorted, unique column indices in every row, finite values and no stored zeros, and Y an int8
0/1 CSR matrix (N, K) with sorted indices. :func:`conformed` brings what a format's reader returns
to it (and to the D and K a caller asks for); :func:`canonical_pair` checks and copies a caller's
arrays into it before the LIBSVM and npz writers write them.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ...errors import DataFormatError, ShapeError
from ...validation import check_labels

__all__ = ["canonical_pair", "conformed"]


def conformed(X: sp.csr_matrix, Y: sp.csr_matrix, path, num_features: int | None,
              num_labels: int | None) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """The canonical pair of a file's X (N, D) and 0/1 Y (N, K), widened with empty columns to
    ``num_features`` (``num_labels``) when given.

    Raises
    ------
    DataFormatError
        For a file without points, or without any label.
    ShapeError
        When the file has more features (labels) than ``num_features`` (``num_labels``).
    """
    n, d = X.shape
    if n == 0:
        raise DataFormatError("no data points in the file", path)
    for have, want, what, letter in ((d, num_features, "features", "D"), (Y.shape[1], num_labels, "labels", "K")):
        if want is not None and have > want:
            raise ShapeError(f"{path}: the file has {letter} = {have} {what} but {letter} = {want} is expected")
    X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(n, num_features or d), dtype=np.float64)
    Y = sp.csr_matrix((Y.data.astype(np.int8), Y.indices, Y.indptr), shape=(n, num_labels or Y.shape[1]))
    for A in (X, Y):
        A.sum_duplicates()  # sorts the npz reader's indices; marks the others' canonical
        A.eliminate_zeros()
    if Y.nnz == 0:
        raise DataFormatError("no labels: every point in the file is unlabelled", path)
    return X, Y


def canonical_pair(X, Y) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """Copies of X as canonical float64 CSR without zeros and of Y as sorted int8 0/1 CSR.

    Raises
    ------
    ShapeError
        When X has a non-finite value, or (:func:`mlgp.validation.check_labels`) Y is not 0/1 or
        has another number of rows.
    """
    X = sp.csr_matrix(X, dtype=np.float64, copy=True)
    X.sum_duplicates()
    if not np.all(np.isfinite(X.data)):
        raise ShapeError("X has non-finite values")
    X.eliminate_zeros()
    return X, sp.csr_matrix(check_labels(Y, num_points=X.shape[0]), dtype=np.int8)
