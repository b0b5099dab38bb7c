"""TopK and topk: each row's k best labels, ties broken by the lower label index (see :mod:`mlgp.scores`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..errors import ShapeError
from ..arguments import positive_int

__all__ = ["TopK", "topk"]

# Number of score entries handled at once when ranking a dense matrix.
_CHUNK_ELEMENTS = 1 << 22


@dataclass(frozen=True)
class TopK:
    """Top-``k`` labels per row, sorted by descending score.

    Attributes
    ----------
    indices : np.ndarray of shape (N, k), int64
        Label indices; ``indices[i, 0]`` is the best label of row ``i``.
    scores : np.ndarray of shape (N, k), float64
        The matching scores (non-increasing along each row when produced by
        :func:`topk`).
    """

    indices: np.ndarray
    scores: np.ndarray

    def __post_init__(self) -> None:
        indices = np.asarray(self.indices)
        scores = np.asarray(self.scores)
        if indices.ndim != 2 or scores.ndim != 2:
            raise ShapeError(
                f"TopK indices and scores must be 2-D (N, k); got shapes {indices.shape} "
                f"and {scores.shape}"
            )
        if indices.shape != scores.shape:
            raise ShapeError(
                f"TopK indices shape {indices.shape} does not match scores shape {scores.shape}"
            )
        if indices.size and not np.issubdtype(indices.dtype, np.integer):
            raise ShapeError(f"TopK indices must be integers, got dtype {indices.dtype}")
        if indices.size and indices.min() < 0:
            raise ShapeError("TopK indices must be non-negative label indices")
        object.__setattr__(self, "indices", np.ascontiguousarray(indices, dtype=np.int64))
        object.__setattr__(self, "scores", np.ascontiguousarray(scores, dtype=np.float64))

    @property
    def k(self) -> int:
        """Number of columns (labels kept per row)."""
        return int(self.indices.shape[1])

    @property
    def num_rows(self) -> int:
        """Number of rows ``N``."""
        return int(self.indices.shape[0])


def _rank_in_row(rows: np.ndarray, c: int) -> np.ndarray:
    """0-based position of each entry within its row, for row ids sorted ascending."""
    starts = np.zeros(c + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=c), out=starts[1:])
    return np.arange(rows.size, dtype=np.int64) - starts[rows]


def _finish(chunk: np.ndarray, flat: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Sort candidate entries (flat positions, row-major ascending) by (row, -score, col)
    and keep the first k of each row; every row must have at least k candidates."""
    c, K = chunk.shape
    r, col = np.divmod(flat, K)
    vals = chunk.ravel()[flat]
    order = np.lexsort((-vals, r))  # stable, and col is increasing within a row
    keep = order[_rank_in_row(r[order], c) < k]
    return (
        col[keep].astype(np.int64).reshape(c, k),
        vals[keep].astype(np.float64).reshape(c, k),
    )


def _select_exact(chunk: np.ndarray, kth: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Top-k given each row's exact k-th largest score ``kth``: all entries above it
    plus the lowest-index entries equal to it."""
    c, K = chunk.shape
    t = kth[:, None]
    gt = np.flatnonzero(chunk > t)
    eq = np.flatnonzero(chunk == t)
    need = k - np.bincount(gt // K, minlength=c)
    req = eq // K
    eq = eq[_rank_in_row(req, c) < need[req]]
    return _finish(chunk, np.sort(np.concatenate([gt, eq])), k)


def _topk_dense_chunk(chunk: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Top-k of a dense (c, K) block with the lower-index tie rule.

    For k much smaller than K the columns are split into B strided groups and each
    group's maximum is taken; the k-th largest group maximum ``t`` is a lower bound
    of the row's k-th largest score (k distinct groups reach it), so every entry
    that can be in the top-k, ties included, has ``score >= t``. Usually only a few
    times k entries pass; they are sorted exactly. Rows where many pass (heavy ties)
    are resolved from their exact k-th largest score instead.
    """
    chunk = np.ascontiguousarray(chunk)
    c, K = chunk.shape
    if k == K:
        idx = np.argsort(-chunk, axis=1, kind="stable")
        return idx.astype(np.int64), np.take_along_axis(chunk, idx, axis=1).astype(np.float64)
    s = 16 if K // 16 >= 4 * k else K // (4 * k)
    if s >= 2:
        B = K // s
        bm = chunk[:, : B * s].reshape(c, s, B).max(axis=1)
        if B * s < K:
            bm = np.concatenate([bm, chunk[:, B * s:].max(axis=1)[:, None]], axis=1)
        nb = bm.shape[1]
        thr = np.partition(bm, nb - k, axis=1)[:, nb - k]
        exact = False
    else:
        thr = np.partition(chunk, K - k, axis=1)[:, K - k]
        exact = True
    ge = chunk >= thr[:, None]
    light = np.count_nonzero(ge, axis=1) <= 64 * k
    if light.all():
        return _finish(chunk, np.flatnonzero(ge), k)
    idx = np.empty((c, k), dtype=np.int64)
    val = np.empty((c, k), dtype=np.float64)
    rows = np.flatnonzero(light)
    if rows.size:
        idx[rows], val[rows] = _finish(chunk[rows], np.flatnonzero(ge[rows]), k)
    rows = np.flatnonzero(~light)
    sub = chunk[rows]
    kth = thr[rows]
    if not exact:
        # if fewer than k entries exceed the bound, the bound is the k-th largest
        few = np.count_nonzero(sub > kth[:, None], axis=1) < k
        if not few.all():
            bad = np.flatnonzero(~few)
            kth = kth.copy()
            kth[bad] = np.partition(sub[bad], K - k, axis=1)[:, K - k]
    idx[rows], val[rows] = _select_exact(sub, kth, k)
    return idx, val


def _topk_dense(scores: np.ndarray, k: int) -> TopK:
    N, K = scores.shape
    out_idx = np.empty((N, k), dtype=np.int64)
    out_val = np.empty((N, k), dtype=np.float64)
    step = max(1, _CHUNK_ELEMENTS // max(K, 1))
    for a in range(0, N, step):
        chunk = scores[a:a + step]
        if not np.issubdtype(chunk.dtype, np.floating):
            chunk = chunk.astype(np.float64)
        if not np.isfinite(chunk).all():
            bad = a + int(np.flatnonzero(~np.isfinite(chunk).all(axis=1))[0])
            raise ShapeError(f"scores contain non-finite values (NaN or inf), first in row {bad}")
        out_idx[a:a + step], out_val[a:a + step] = _topk_dense_chunk(chunk, k)
    return TopK(out_idx, out_val)


def _topk_sparse(scores: sp.spmatrix, k: int) -> TopK:
    X = sp.csr_matrix(scores)
    N, K = X.shape
    data = np.asarray(X.data, dtype=np.float64)
    if not np.isfinite(data).all():
        raise ShapeError("sparse scores contain non-finite stored values (NaN or inf)")
    cols = X.indices.astype(np.int64)
    counts = np.diff(X.indptr).astype(np.int64)
    row_of = np.repeat(np.arange(N, dtype=np.int64), counts)
    if cols.size:
        # duplicate stored entries would make the ranking ambiguous
        key = row_of * K + cols
        skey = np.sort(key)
        if np.any(skey[1:] == skey[:-1]):
            raise ShapeError("sparse scores contain duplicate entries; call sum_duplicates() first")
    order = np.lexsort((cols, -data, row_of))
    pos = np.arange(order.size, dtype=np.int64) - X.indptr[row_of].astype(np.int64)
    keep = pos < k
    out_idx = np.empty((N, k), dtype=np.int64)
    out_val = np.full((N, k), -np.inf, dtype=np.float64)
    r = row_of[keep]
    p = pos[keep]
    out_idx[r, p] = cols[order][keep]
    out_val[r, p] = data[order][keep]
    short = np.flatnonzero(counts < k)
    if short.size:
        # Missing entries score -inf and are ranked by increasing label index; the
        # smallest k - count missing labels of a row always lie in [0, k).
        slot = np.full(N, -1, dtype=np.int64)
        slot[short] = np.arange(short.size)
        present = np.zeros((short.size, k), dtype=bool)
        m = (slot[row_of] >= 0) & (cols < k)
        present[slot[row_of[m]], cols[m]] = True
        missing_first = np.argsort(present, axis=1, kind="stable")  # False (missing) first
        p = np.arange(k)[None, :]
        c = counts[short][:, None]
        take = p >= c
        src = np.where(take, p - c, 0)
        fill = np.take_along_axis(missing_first, src, axis=1)
        sub = out_idx[short]
        sub[take] = fill[take]
        out_idx[short] = sub
    return TopK(out_idx, out_val)


def topk(scores: np.ndarray | sp.spmatrix | TopK, k: int) -> TopK:
    """Rank each row of a score matrix and keep its ``k`` best labels.

    Parameters
    ----------
    scores : np.ndarray (N, K), scipy sparse matrix (N, K) or TopK
        Dense scores, sparse scores (missing entries count as ``-inf``), or an
        already ranked :class:`TopK`, which is truncated to ``k`` in its own order.
    k : int
        Number of labels to keep, ``1 <= k <= K``.

    Returns
    -------
    TopK
        ``indices`` and ``scores`` of shape (N, k), sorted by descending score; ties
        put the lower label index first (see the module docstring).
    """
    k = positive_int(k, "k")
    if isinstance(scores, TopK):
        if scores.k < k:
            raise ShapeError(f"TopK has only {scores.k} columns, fewer than k={k}")
        if scores.k == k:
            return scores
        return TopK(scores.indices[:, :k], scores.scores[:, :k])
    if sp.issparse(scores):
        if len(scores.shape) != 2:
            raise ShapeError(f"scores must be 2-D (N, K), got shape {scores.shape}")
        if k > scores.shape[1]:
            raise ShapeError(f"k={k} exceeds the number of labels K={scores.shape[1]}")
        return _topk_sparse(scores, k)
    arr = np.asarray(scores)
    if arr.ndim != 2:
        raise ShapeError(f"scores must be 2-D (N, K), got shape {arr.shape}")
    if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
        raise ShapeError(f"scores must be numeric, got dtype {arr.dtype}")
    if k > arr.shape[1]:
        raise ShapeError(f"k={k} exceeds the number of labels K={arr.shape[1]}")
    return _topk_dense(arr, k)
