"""A FastXML node's points laid out for the compiled node solver (:mod:`.l1_logistic`): column by
column and row by row, over the node's own columns only.

:func:`_gather_columns` reads a node's rows of a level's CSR arrays in place and renumbers the
columns they use in increasing order (a column no point of the node uses has zero gradient and keeps
weight 0, so it is left out and the layout does not depend on D); with a bias feature it appends a
last column of that value. The column form is liblinear's transposed copy, made per node, not per X,
into arrays sized by the node. :class:`NodeData` holds the result. Positions in X are int64: more
than 2³¹ non-zeros index correctly.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._jit import compiled

__all__ = ["NodeData"]


class NodeData(NamedTuple):
    """One node's n points over its m columns, as :func:`_gather_columns` lays them out: column by
    column (column j's points ``col_row[col_ptr[j]:col_ptr[j + 1]]``, increasing, and their values
    ``col_val``) and row by row (row i's columns ``row_col[row_ptr[i]:row_ptr[i + 1]]`` and values
    ``row_val``, the bias column left out). With ``bias`` > 0 the last of the m columns is the bias
    feature, of value ``bias`` in every row; ``bias`` = 0: there is none.

    Shapes: ``col_ptr`` (m + 1,) int64; ``col_row`` (nnz,) uint32 and ``col_val`` (nnz,) float64;
    ``row_ptr`` (n + 1,) int64; ``row_col`` and ``row_val`` (nnz − n if bias > 0 else nnz,);
    ``side`` (n,) ±1, the points' sides δ. n and m are read off ``side`` and ``col_ptr``.
    """

    col_ptr: np.ndarray
    col_row: np.ndarray
    col_val: np.ndarray
    row_ptr: np.ndarray
    row_col: np.ndarray
    row_val: np.ndarray
    side: np.ndarray
    bias: float


@compiled
def _gather_columns(x_indptr, x_indices, x_data, x_offset, lo, hi, bias, colmap, used):  # pragma: no cover - compiled
    """Rows ``lo:hi`` of CSR X in column form over their own columns (renumbered in increasing
    order in ``colmap``, a (D,) int64 array of −1 that is left numbering them; their original
    numbers in ``used[:m]``), the bias a last column of value ``bias`` when it is > 0; and in row
    form over the renumbered columns (the bias left out; the values are X's own, a view). Returns
    (col_ptr, col_row, col_val, row_ptr, row_col, row_val, m, number of columns)."""
    a, z = np.uint64(x_indptr[lo] - x_offset), np.uint64(x_indptr[hi] - x_offset)
    m = 0
    for p in range(a, z):  # count each column's entries (colmap: −1, then the count)
        c = np.uint64(x_indices[p])
        if colmap[c] < 0:
            colmap[c] = 1
            used[m] = c
            m += 1
        else:
            colmap[c] += 1
    used[:m].sort()
    n = hi - lo
    width = m + 1 if bias > 0 else m
    col_ptr = np.zeros(width + 1, np.int64)
    for q in range(m):
        col_ptr[q + 1] = col_ptr[q] + colmap[used[q]]
        colmap[used[q]] = q
    if bias > 0:
        col_ptr[m + 1] = col_ptr[m] + n
    fill = col_ptr[:-1].copy()
    col_row = np.empty(col_ptr[width], np.uint32)
    col_val = np.empty(col_ptr[width])
    row_ptr = np.empty(n + 1, np.int64)
    row_col = np.empty(z - a, np.uint32)
    for i in range(lo, hi):
        row = np.uint32(i - lo)
        row_ptr[i - lo] = x_indptr[i] - x_offset - a
        for p in range(np.uint64(x_indptr[i] - x_offset), np.uint64(x_indptr[i + 1] - x_offset)):
            q = np.uint64(colmap[np.uint64(x_indices[p])])
            row_col[p - a] = q
            at = np.uint64(fill[q])
            col_row[at] = row
            col_val[at] = x_data[p]
            fill[q] += 1
    row_ptr[n] = z - a
    if bias > 0:
        for i in range(n):
            col_row[fill[m] + i] = i
            col_val[fill[m] + i] = bias
    return col_ptr, col_row, col_val, row_ptr, row_col, x_data[a:z], m, width
