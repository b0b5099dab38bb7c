"""Ranking and classification metrics for extreme multi-label classification.

The ranking metrics (P@k, nDCG@k, PSP@k, PSnDCG@k) and the inverse propensity
weights follow the conventions of pyxclib (``xclib/evaluation/xc_metrics.py``):

* **P@k** ``= mean_i (1/k) sum_{j<k} y_i[r_ij]``, where ``r_i`` is the ranking of
  row ``i``. Rows without any relevant label stay in the mean and add zero.
* **nDCG@k** ``= mean_i DCG_i@k / IDCG(min(k, |y_i|))`` with
  ``DCG_i@k = sum_{j<k} y_i[r_ij] / log2(j + 2)`` and ``IDCG(m)`` the DCG of ``m``
  ones. Rows without labels contribute zero (and stay in the mean).
* **PSP@k** is a *ratio of means*: the mean over rows of the propensity-weighted
  precision ``(1/k) sum_{j<k} w[r_ij] y_i[r_ij]`` divided by the mean over rows of
  the same quantity for the best achievable ranking (each row's relevant labels
  sorted by descending weight ``w``).
* **PSnDCG@k** is also a ratio of means: the mean over rows of
  ``sum_{j<k} w[r_ij] y_i[r_ij] / log2(j + 2) / IDCG(min(k, |y_i|))`` (note: the
  per-row normaliser is the *unweighted* ideal DCG, as in pyxclib) divided by the
  mean over rows of the same quantity for the best propensity-weighted ranking.
  When the denominator is zero (no row has a label) PSP/PSnDCG are reported as 0.

Tie rule
--------
When ranking a score matrix, equal scores are broken by label index: among equal
scores the *lower label index ranks first*. This makes the ranking deterministic
and is applied identically for dense and sparse score matrices (where missing
entries count as ``-inf``, so every stored entry outranks every missing one and
missing entries are ranked by increasing label index; an explicitly stored 0 is a
stored score). A :class:`TopK` passed by the caller is taken in its given order
(only truncated to ``k``). pyxclib itself breaks ties arbitrarily (argpartition /
argsort), so on tied scores its numbers may differ from these; everything here is
computed in float64 (pyxclib's nDCG uses float32, so it can differ by ~1e-7).

Scores must be finite: NaN or infinite scores raise :class:`~mlgp.errors.ShapeError`.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd
import scipy.sparse as sp

from mlgp.errors import ShapeError

__all__ = [
    "TopK",
    "topk",
    "inverse_propensity",
    "propensity_params",
    "precision_at_k",
    "ndcg_at_k",
    "psprecision_at_k",
    "psndcg_at_k",
    "f1_scores",
    "hamming_loss",
    "evaluate",
]

# Number of score entries handled at once when ranking a dense matrix.
_CHUNK_ELEMENTS = 1 << 22


# --------------------------------------------------------------------------- #
# Top-k
# --------------------------------------------------------------------------- #
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


def _check_k(k: Any, name: str = "k") -> int:
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral):
        raise ShapeError(f"{name} must be a positive integer, got {k!r}")
    k = int(k)
    if k < 1:
        raise ShapeError(f"{name} must be >= 1, got {k}")
    return k


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
    k = _check_k(k)
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


# --------------------------------------------------------------------------- #
# Input handling
# --------------------------------------------------------------------------- #
def _as_binary_csr(Y: Any, name: str = "Y_true") -> sp.csr_matrix:
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


def _resolve_topk(Y: sp.csr_matrix, scores: Any, k: int) -> TopK:
    """Top-k of ``scores`` checked against the labels ``Y`` (N, K)."""
    N, K = Y.shape
    if isinstance(scores, TopK):
        if scores.num_rows != N:
            raise ShapeError(f"Y_true has {N} rows but the TopK has {scores.num_rows}")
        t = topk(scores, k)
        if np.isnan(t.scores).any():
            raise ShapeError("TopK scores contain NaN")
        if t.indices.size and t.indices.max() >= K:
            raise ShapeError(
                f"TopK contains label index {int(t.indices.max())} >= K={K} (Y_true columns)"
            )
        if k > 1:
            s = np.sort(t.indices, axis=1)
            if np.any(s[:, 1:] == s[:, :-1]):
                raise ShapeError("TopK rows contain duplicate label indices")
        return t
    shape = scores.shape if sp.issparse(scores) else np.shape(scores)
    if len(shape) != 2:
        raise ShapeError(f"scores must be 2-D (N, K), got shape {tuple(shape)}")
    if shape[0] != N:
        raise ShapeError(f"Y_true has {N} rows but scores have {shape[0]}")
    if shape[1] != K:
        raise ShapeError(f"Y_true has {K} columns (labels) but scores have {shape[1]}")
    return topk(scores, k)


def _hits(Y: sp.csr_matrix, indices: np.ndarray) -> np.ndarray:
    """(N, k) float array: ``Y[i, indices[i, j]]`` for a 0/1 CSR ``Y`` with sorted indices."""
    N, K = Y.shape
    k = indices.shape[1]
    if Y.nnz == 0 or indices.size == 0:
        return np.zeros((N, k), dtype=np.float64)
    row_of = np.repeat(np.arange(N, dtype=np.int64), np.diff(Y.indptr))
    true_keys = row_of * K + Y.indices.astype(np.int64)  # sorted (CSR, sorted indices)
    q = np.arange(N, dtype=np.int64)[:, None] * K + indices
    pos = np.searchsorted(true_keys, q)
    pos_c = np.minimum(pos, true_keys.size - 1)
    return (true_keys[pos_c] == q).astype(np.float64)


def _check_inv_propensity(w: Any, K: int) -> np.ndarray:
    w = np.asarray(w, dtype=np.float64)
    if w.ndim != 1 or w.shape[0] != K:
        raise ShapeError(f"inv_propensity must have shape ({K},) to match Y_true, got {w.shape}")
    if not np.isfinite(w).all():
        raise ShapeError("inv_propensity contains non-finite values")
    return w


def _ideal_weights(Y: sp.csr_matrix, w: np.ndarray, k: int) -> np.ndarray:
    """(N, k): each row's relevant-label weights sorted descending, zero padded."""
    N = Y.shape[0]
    out = np.zeros((N, k), dtype=np.float64)
    if Y.nnz == 0:
        return out
    counts = np.diff(Y.indptr).astype(np.int64)
    row_of = np.repeat(np.arange(N, dtype=np.int64), counts)
    wt = w[Y.indices]
    order = np.lexsort((-wt, row_of))
    pos = np.arange(order.size, dtype=np.int64) - Y.indptr[row_of].astype(np.int64)
    keep = pos < k
    out[row_of[keep], pos[keep]] = wt[order][keep]
    return out


def _discounts(k: int) -> np.ndarray:
    return 1.0 / np.log2(np.arange(k, dtype=np.float64) + 2.0)


def _idcg(Y: sp.csr_matrix, k: int) -> np.ndarray:
    """(N,) ideal DCG with min(k, |y_i|) ones; zero for rows without labels."""
    n = np.minimum(np.diff(Y.indptr), k)
    cum = np.concatenate([[0.0], np.cumsum(_discounts(k))])
    return cum[n]


def _safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.zeros_like(num, dtype=np.float64)
    nz = den > 0
    out[nz] = num[nz] / den[nz]
    return out


class _Ranked:
    """Hits of a top-k ranking against labels, reused for all metrics and ks."""

    def __init__(self, Y: sp.csr_matrix, t: TopK):
        self.Y = Y
        self.t = t
        self.hits = _hits(Y, t.indices)
        self.N = Y.shape[0]
        self._ideal: tuple[np.ndarray, np.ndarray] | None = None

    def ideal(self, k: int, w: np.ndarray) -> np.ndarray:
        """(N, k) best achievable weights per row (cached for the largest k and ``w``)."""
        if self._ideal is None or self._ideal[0] is not w or self._ideal[1].shape[1] < k:
            self._ideal = (w, _ideal_weights(self.Y, w, max(k, self.t.k)))
        return self._ideal[1][:, :k]

    def precision(self, k: int) -> float:
        if self.N == 0:
            return 0.0
        return float(self.hits[:, :k].sum(axis=1).mean() / k)

    def ndcg(self, k: int) -> float:
        if self.N == 0:
            return 0.0
        dcg = self.hits[:, :k] @ _discounts(k)
        return float(_safe_div(dcg, _idcg(self.Y, k)).mean())

    def psprecision(self, k: int, w: np.ndarray) -> float:
        if self.N == 0:
            return 0.0
        num = (self.hits[:, :k] * w[self.t.indices[:, :k]]).sum(axis=1).mean() / k
        den = self.ideal(k, w).sum(axis=1).mean() / k
        return float(num / den) if den > 0 else 0.0

    def psndcg(self, k: int, w: np.ndarray) -> float:
        if self.N == 0:
            return 0.0
        d = _discounts(k)
        idcg = _idcg(self.Y, k)
        num = _safe_div((self.hits[:, :k] * w[self.t.indices[:, :k]]) @ d, idcg).mean()
        den = _safe_div(self.ideal(k, w) @ d, idcg).mean()
        return float(num / den) if den > 0 else 0.0


def _ranked(Y_true: Any, scores: Any, k: int) -> _Ranked:
    k = _check_k(k)
    Y = _as_binary_csr(Y_true)
    if not isinstance(scores, TopK) and k > Y.shape[1]:
        raise ShapeError(f"k={k} exceeds the number of labels K={Y.shape[1]}")
    return _Ranked(Y, _resolve_topk(Y, scores, k))


# --------------------------------------------------------------------------- #
# Public ranking metrics
# --------------------------------------------------------------------------- #
def precision_at_k(Y_true: Any, scores: Any, k: int) -> float:
    """Precision@k (pyxclib convention).

    Parameters
    ----------
    Y_true : scipy sparse or np.ndarray (N, K)
        0/1 relevance (any int/float/bool dtype).
    scores : np.ndarray (N, K), scipy sparse (N, K) or TopK (N, >= k)
        Scores to rank (see :func:`topk`), or a ranking.
    k : int
        Cut-off, ``>= 1``.

    Returns
    -------
    float
        ``mean_i |top-k(i) ∩ y_i| / k``; rows without labels count as 0.
    """
    return _ranked(Y_true, scores, k).precision(int(k))


def ndcg_at_k(Y_true: Any, scores: Any, k: int) -> float:
    """nDCG@k (pyxclib convention): mean over rows of ``DCG@k / IDCG(min(k, |y_i|))``.

    Shapes as in :func:`precision_at_k`. Rows without labels contribute 0.
    """
    return _ranked(Y_true, scores, k).ndcg(int(k))


def psprecision_at_k(Y_true: Any, scores: Any, k: int, inv_propensity: Any) -> float:
    """Propensity-scored precision@k (pyxclib convention).

    ``PSP@k = mean_i[sum_{j<k} w[r_ij] y_i[r_ij] / k] / mean_i[best_i / k]`` where
    ``best_i`` is the sum of the ``k`` largest weights among row ``i``'s relevant
    labels (a ratio of means over rows, not a mean of per-row ratios).

    Parameters
    ----------
    Y_true, scores, k
        As in :func:`precision_at_k`.
    inv_propensity : np.ndarray (K,)
        Inverse propensity weights ``w`` (see :func:`inverse_propensity`).

    Returns
    -------
    float
        PSP@k in ``[0, 1]``; 0 when no row has a label.
    """
    r = _ranked(Y_true, scores, k)
    return r.psprecision(int(k), _check_inv_propensity(inv_propensity, r.Y.shape[1]))


def psndcg_at_k(Y_true: Any, scores: Any, k: int, inv_propensity: Any) -> float:
    """Propensity-scored nDCG@k (pyxclib convention).

    ``PSnDCG@k = mean_i[wDCG_i / IDCG_i] / mean_i[wDCG*_i / IDCG_i]`` with
    ``wDCG_i = sum_{j<k} w[r_ij] y_i[r_ij] / log2(j+2)``, ``wDCG*_i`` the same for
    row ``i``'s relevant labels sorted by descending weight, and ``IDCG_i`` the
    unweighted ideal DCG with ``min(k, |y_i|)`` ones (rows without labels add 0).
    A ratio of means over rows, as in pyxclib.

    Shapes as in :func:`psprecision_at_k`.
    """
    r = _ranked(Y_true, scores, k)
    return r.psndcg(int(k), _check_inv_propensity(inv_propensity, r.Y.shape[1]))


# --------------------------------------------------------------------------- #
# Propensities
# --------------------------------------------------------------------------- #
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
    n = _check_k(n, "num_points")
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


# --------------------------------------------------------------------------- #
# Classification metrics
# --------------------------------------------------------------------------- #
def _confusion(Y_true: Any, Y_pred: Any) -> tuple[sp.csr_matrix, sp.csr_matrix, sp.csr_matrix]:
    T = _as_binary_csr(Y_true, "Y_true")
    P = _as_binary_csr(Y_pred, "Y_pred")
    if T.shape != P.shape:
        raise ShapeError(f"Y_true shape {T.shape} does not match Y_pred shape {P.shape}")
    TP = T.multiply(P).tocsr()
    return T, P, TP


def f1_scores(Y_true: Any, Y_pred: Any) -> dict[str, float]:
    """Micro, macro and example-based F1 of 0/1 predictions.

    Parameters
    ----------
    Y_true, Y_pred : scipy sparse or np.ndarray (N, K)
        0/1 matrices of the same shape.

    Returns
    -------
    dict
        ``micro``: ``2TP / (2TP + FP + FN)`` over all entries; ``macro``: mean over
        all K labels of the per-label F1; ``example``: mean over all N rows of the
        per-row F1. Every 0/0 is taken as 0 (a label or row with neither true nor
        predicted positives scores 0), matching scikit-learn's
        ``f1_score(..., zero_division=0)`` with average micro/macro/samples.
    """
    T, P, TP = _confusion(Y_true, Y_pred)
    tp_l = np.asarray(TP.sum(axis=0)).ravel()
    t_l = np.asarray(T.sum(axis=0)).ravel()
    p_l = np.asarray(P.sum(axis=0)).ravel()
    tp_i = np.asarray(TP.sum(axis=1)).ravel()
    t_i = np.asarray(T.sum(axis=1)).ravel()
    p_i = np.asarray(P.sum(axis=1)).ravel()
    tp, tot = tp_l.sum(), t_l.sum() + p_l.sum()
    micro = float(2 * tp / tot) if tot > 0 else 0.0
    macro = float(_safe_div(2 * tp_l, t_l + p_l).mean()) if tp_l.size else 0.0
    example = float(_safe_div(2 * tp_i, t_i + p_i).mean()) if tp_i.size else 0.0
    return {"micro": micro, "macro": macro, "example": example}


def hamming_loss(Y_true: Any, Y_pred: Any) -> float:
    """Fraction of the N*K entries where ``Y_pred`` differs from ``Y_true`` (both (N, K) 0/1)."""
    T, P, TP = _confusion(Y_true, Y_pred)
    n = T.shape[0] * T.shape[1]
    if n == 0:
        return 0.0
    wrong = T.nnz + P.nnz - 2 * TP.sum()
    return float(wrong / n)


# --------------------------------------------------------------------------- #
# Summary
# --------------------------------------------------------------------------- #
def evaluate(
    Y_true: Any,
    scores: Any,
    ks: Sequence[int] | Iterable[int] = (1, 3, 5),
    inv_propensity: Any = None,
    percent: bool = True,
) -> pd.DataFrame:
    """All ranking metrics at several cut-offs, from a single top-``max(ks)``.

    Parameters
    ----------
    Y_true : scipy sparse or np.ndarray (N, K)
        0/1 relevance.
    scores : np.ndarray (N, K), scipy sparse (N, K) or TopK (N, >= max(ks))
        Scores or a ranking (see :func:`topk`).
    ks : sequence of int
        Cut-offs (each ``>= 1``).
    inv_propensity : np.ndarray (K,), optional
        When given, the rows "PSP" and "PSnDCG" are added.
    percent : bool
        Report values multiplied by 100.

    Returns
    -------
    pandas.DataFrame
        Index ``["P", "nDCG"]`` (+ ``["PSP", "PSnDCG"]``), columns the ints of
        ``ks``; ``.attrs`` has ``num_points`` (N) and ``percent``.
    """
    ks = [_check_k(k, "each k in ks") for k in ks]
    if not ks:
        raise ShapeError("ks must contain at least one cut-off")
    kmax = max(ks)
    r = _ranked(Y_true, scores, kmax)
    w = None
    if inv_propensity is not None:
        w = _check_inv_propensity(inv_propensity, r.Y.shape[1])
    rows: dict[str, list[float]] = {
        "P": [r.precision(k) for k in ks],
        "nDCG": [r.ndcg(k) for k in ks],
    }
    if w is not None:
        rows["PSP"] = [r.psprecision(k, w) for k in ks]
        rows["PSnDCG"] = [r.psndcg(k, w) for k in ks]
    scale = 100.0 if percent else 1.0
    df = pd.DataFrame(
        [[v * scale for v in vals] for vals in rows.values()],
        index=list(rows.keys()),
        columns=ks,
    )
    df.attrs["num_points"] = int(r.N)
    df.attrs["percent"] = bool(percent)
    return df
