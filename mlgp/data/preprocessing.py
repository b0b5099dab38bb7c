"""Feature preprocessing shared by every model family: row normalisation.

Functions take (N, D) CSR or dense features and return CSR; they never densify the whole matrix.
A model carries the same normalisation as an input map, :class:`mlgp.blocks.RowNormalised` (this
function applied a block of rows at a time, bit for bit), so its callers pass raw rows.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..blocks import RowNormalised

__all__ = ["normalise_rows"]


def normalise_rows(X: sp.spmatrix | np.ndarray) -> sp.csr_matrix:
    """L2-normalise each row of ``X`` (N, D); rows of zeros stay zero. Returns float64 CSR (N, D)
    (:meth:`mlgp.blocks.RowNormalised.rows`, the arithmetic of the model's input map)."""
    return RowNormalised.rows(X)
