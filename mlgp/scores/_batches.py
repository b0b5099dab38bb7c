"""Scoring any block → (B, K) function over CSR or dense X a block of rows at a time, on the floor's
row-block path (:mod:`mlgp.blocks`): a model's input map is applied to each block before
anything densifies it."""

from __future__ import annotations

from typing import Callable, Iterator

import numpy as np
import scipy.sparse as sp

from ..blocks import InputMap, row_blocks
from ..errors import ShapeError
from ..arguments import positive_int
from ..validation import MAX_FEATURE_MAGNITUDE, check_features
from ._topk import TopK, topk

__all__ = ["score_in_batches", "scored_blocks"]


def score_in_batches(
    fn: Callable[[np.ndarray], np.ndarray],
    X,
    batch_size: int = 1000,
    top_k: int | None = None,
    num_labels: int | None = None,
    num_features: int | None = None,
    check_input: bool = True,
    *,
    input_map: InputMap | None = None,
    dense: bool = True,
    max_magnitude: float = MAX_FEATURE_MAGNITUDE,
):
    """Score ``X`` a block of rows at a time.

    Parameters
    ----------
    fn
        Maps a block of features — dense (B, D) float64, CSR (B, D) with ``dense=False``, or the
        (B, R) output of ``input_map`` — to its scores, an array (B, K) or a sparse (B, K) matrix of
        non-negative scores (absent entries are 0 and rank after every stored one, ties by the
        lower label index).
    X
        (N, D) features, CSR or dense; CSR is densified ``batch_size`` rows at a time (after the
        input map, when there is one), so memory is O(batch_size · (D + K) + N · top_k).
    batch_size
        Rows per call of ``fn``.
    top_k
        If given, keep each row's ``top_k`` best labels (:class:`TopK`, ties by lower label index)
        instead of the dense scores.
    num_labels
        K, when known: checked against each block's width.
    num_features
        D, when known: ``X`` is checked to have D columns (with its other checks, before ``fn`` is
        first called).
    check_input
        Check ``X`` with :func:`mlgp.validation.check_features` (2-D, finite, D columns);
        ``False`` trusts a caller that has checked it already and only needs CSR or an array.
    input_map
        Applied to each (B, D) block before anything densifies it (:func:`mlgp.blocks.take_rows`).
    dense
        With no map: give ``fn`` dense blocks (default) or the CSR blocks as they are.
    max_magnitude
        The largest feature magnitude accepted when ``check_input`` (a float32 model's is smaller:
        :attr:`mlgp.floats.FloatPolicy.max_feature_magnitude`).

    Returns
    -------
    np.ndarray (N, K) float64, or TopK (N, top_k)
    """
    if check_input:
        X = check_features(X, num_features=num_features, max_magnitude=max_magnitude)
    elif not sp.issparse(X):
        X = np.asarray(X)
    batch_size = positive_int(batch_size, "batch_size")
    if top_k is not None:
        top_k = positive_int(top_k, "top_k")
        if num_labels is not None and top_k > num_labels:
            raise ShapeError(f"top_k={top_k} exceeds the number of labels K={num_labels}")
    N = X.shape[0]
    out = idx = val = None
    for rows, f in scored_blocks(fn, X, batch_size, num_labels=num_labels, input_map=input_map, dense=dense):
        if top_k is None:
            if out is None:
                out = np.empty((N, f.shape[1]), dtype=np.float64)
            out[rows] = f.toarray() if sp.issparse(f) else f
        else:
            if idx is None:
                if top_k > f.shape[1]:
                    raise ShapeError(f"top_k={top_k} exceeds the number of labels K={f.shape[1]}")
                idx = np.empty((N, top_k), dtype=np.int64)
                val = np.empty((N, top_k), dtype=np.float64)
            t = topk(f, top_k)
            idx[rows] = t.indices
            val[rows] = np.where(np.isfinite(t.scores), t.scores, 0.0) if sp.issparse(f) else t.scores
    return out if top_k is None else TopK(idx, val)


def scored_blocks(fn: Callable[[np.ndarray], np.ndarray], X, batch_size: int = 1000, *, num_labels: int | None = None,
                  input_map: InputMap | None = None, dense: bool = True) -> Iterator[tuple[slice, np.ndarray]]:
    """``(rows, fn(X[rows]))`` for consecutive blocks of ``batch_size`` rows of a checked ``X``
    (CSR or an array): each block's scores as float64 (B, K) or CSR, their shape checked (B rows;
    K = ``num_labels`` columns when given). Memory is one block's. ``input_map`` and ``dense`` as in
    :func:`score_in_batches`."""
    for rows, xb in row_blocks(X, positive_int(batch_size, "batch_size"), input_map=input_map, dense=dense):
        f = fn(xb)
        f = f.tocsr() if sp.issparse(f) else np.asarray(f, dtype=np.float64)
        n = rows.stop - rows.start
        if f.ndim != 2 or f.shape[0] != n or (num_labels is not None and f.shape[1] != num_labels):
            raise ShapeError(f"the scoring function returned shape {f.shape} for a block of {n} rows"
                             + (f"; expected ({n}, {num_labels})" if num_labels is not None else ""))
        yield rows, f
