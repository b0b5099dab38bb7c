"""Feature preprocessing shared by every model family: row normalisation.

Functions take (N, D) CSR or dense features and return CSR; they never densify the whole matrix.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["normalise_rows"]


def normalise_rows(X: sp.spmatrix | np.ndarray) -> sp.csr_matrix:
    """L2-normalise each row of ``X`` (N, D); rows of zeros stay zero. Returns float64 CSR (N, D)."""
    from sklearn.preprocessing import normalize

    return sp.csr_matrix(normalize(sp.csr_matrix(X, dtype=np.float64), norm="l2", axis=1))
