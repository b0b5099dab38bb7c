"""A content hash of (N, D) data, for recording which data a checkpoint or a stored tree belongs to.

:func:`data_fingerprint` hashes each matrix's shape and its canonical sparse form (duplicates
summed, zeros dropped, column indices sorted) in row blocks, so a matrix gives the same hash dense
or sparse, in any index dtype, and memory stays O(block)."""

from __future__ import annotations

import hashlib

import numpy as np
import scipy.sparse as sp

__all__ = ["data_fingerprint"]

_ROWS = 4096  # rows hashed per block


def data_fingerprint(*arrays) -> str:
    """A 32-hex-digit hash of the given (N, D) arrays (dense or scipy sparse)."""
    h = hashlib.blake2b(digest_size=16)
    for A in arrays:
        h.update(np.asarray(A.shape, np.int64).tobytes())
        for a in range(0, A.shape[0], _ROWS):
            block = sp.csr_matrix(A[a : a + _ROWS], dtype=np.float64)
            block.sum_duplicates()
            block.eliminate_zeros()
            for part in (np.diff(block.indptr), block.indices):
                h.update(part.astype(np.int64).tobytes())
            h.update(block.data.tobytes())
    return h.hexdigest()
