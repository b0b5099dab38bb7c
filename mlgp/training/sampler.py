"""Doubly stochastic minibatches: points × labels, on the floor's row minibatches.

Each step draws a minibatch B of points (a shuffled pass over the data per epoch) and, for each
point i, either all K labels (the exact label sum) or all its positive labels P_i plus a uniform
sample L_i of ``negatives`` of its negative labels N_i without replacement, each weighted by
|N_i| / |L_i| so that the label sum is estimated without bias.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np
import scipy.sparse as sp
import tensorflow as tf

from ..data.minibatches import RowMinibatches
from ..errors import ShapeError
from ..likelihoods import LabelBatch

__all__ = ["MinibatchSampler", "sample_labels"]


def sample_labels(Y: sp.csr_matrix, negatives: int, rng: np.random.Generator, num_slots: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All positives plus ``negatives`` sampled negatives per row of ``Y`` (B, K).

    Returns
    -------
    indices, signs, weights
        (B, S) arrays with S = ``num_slots`` (default: max positives per row + negatives);
        positives first (sign +1, weight 1), then negatives (sign −1, weight |N_i|/|L_i|), then
        padding (weight 0).
    """
    Y = sp.csr_matrix(Y)
    B, K = Y.shape
    n_pos = np.diff(Y.indptr)
    n_neg_avail = K - n_pos
    n = int(negatives)
    if n < 1:
        raise ShapeError(f"negatives must be ≥ 1 (or None for all labels), got {negatives}")
    S = int(num_slots) if num_slots is not None else int(n_pos.max(initial=0)) + n
    if S < int(n_pos.max(initial=0)) + min(n, K):
        raise ShapeError(f"num_slots={S} cannot hold {n_pos.max()} positives plus {n} negatives")
    indices = np.zeros((B, S), dtype=np.int32)
    signs = np.ones((B, S), dtype=np.float64)
    weights = np.zeros((B, S), dtype=np.float64)
    # positives
    row_of = np.repeat(np.arange(B), n_pos)
    col_in_row = np.arange(Y.nnz) - np.repeat(Y.indptr[:-1], n_pos)
    indices[row_of, col_in_row] = Y.indices
    weights[row_of, col_in_row] = 1.0
    picked, valid = _negatives(Y, min(n, K), rng)
    n_drawn = valid.sum(axis=1)
    w_neg = np.where(n_drawn > 0, n_neg_avail / np.maximum(n_drawn, 1), 0.0)
    slots = n_pos[:, None] + np.cumsum(valid, axis=1) - 1
    r, c = np.nonzero(valid)
    indices[r, slots[r, c]] = picked[r, c]
    signs[r, slots[r, c]] = -1.0
    weights[r, slots[r, c]] = w_neg[r]
    return indices, signs, weights


def _rejection_width(n: int, max_positives: int) -> int:
    """Candidates drawn per row by :func:`_negatives`' rejection path."""
    return 2 * n + max_positives + 16


def _negatives(Y: sp.csr_matrix, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``n`` labels per row of ``Y`` (B, K) drawn uniformly without replacement from the row's
    non-positive labels: (B, n) label ids and a (B, n) mask of the slots filled (a row with fewer
    than ``n`` negatives fills that many).

    When ``n`` and the positives are few against K, each row takes the first ``n`` distinct
    non-positive labels of a sequence of uniform draws (rejection: O(B n) work); rows whose sequence
    runs short, and every row otherwise, take the ``n`` smallest of K uniform keys (O(B K)). Either
    way each n-subset of the row's negatives is equally likely.
    """
    B, K = Y.shape
    n_pos = np.diff(Y.indptr)
    picked, filled = np.zeros((B, n), dtype=np.int64), np.zeros((B, n), dtype=bool)
    todo = np.arange(B)
    max_pos = int(n_pos.max(initial=0))
    if 4 * (n + max_pos) <= K:
        cand = rng.integers(0, K, (B, _rejection_width(n, max_pos)))
        order = np.argsort(cand, axis=1, kind="stable")  # equal draws keep their order: the first is kept
        ordered = np.take_along_axis(cand, order, axis=1)
        repeat = np.zeros(cand.shape, dtype=bool)
        np.put_along_axis(repeat, order, np.pad(ordered[:, 1:] == ordered[:, :-1], ((0, 0), (1, 0))), axis=1)
        positive = np.isin(np.arange(B)[:, None] * K + cand, np.repeat(np.arange(B), n_pos) * K + Y.indices)
        ok = ~repeat & ~positive
        rank = np.cumsum(ok, axis=1)
        done = rank[:, -1] >= n
        r, c = np.nonzero(ok & (rank <= n) & done[:, None])
        picked[r, rank[r, c] - 1] = cand[r, c]
        filled[r, rank[r, c] - 1] = True
        todo = np.flatnonzero(~done)
    if todo.size:
        sub = Y[todo]
        keys = rng.random((todo.size, K))
        keys[np.repeat(np.arange(todo.size), np.diff(sub.indptr)), sub.indices] = np.inf
        chosen = np.argpartition(keys, n - 1, axis=1)[:, :n] if n < K else np.tile(np.arange(K), (todo.size, 1))
        picked[todo] = chosen
        filled[todo] = np.isfinite(np.take_along_axis(keys, chosen, axis=1))  # False where a positive was picked
    return picked, filled


class MinibatchSampler:
    """Doubly stochastic minibatches: the floor's row minibatches (:class:`mlgp.data.minibatches.
    RowMinibatches`, features through the model's input map) with label subsampling on top.

    The data are trusted: :func:`mlgp.training.fit` checks them once, at its boundary.

    Parameters
    ----------
    X
        (N, D) checked features, CSR or dense; only minibatches are mapped or densified.
    Y
        (N, K) checked 0/1 labels, CSR.
    batch_size
        |B| (≥ 1; clamped to N); the last batch of an epoch may be smaller.
    negatives
        Sampled negatives per point (≥ 1), or ``None`` for all labels (dense (B, K) 0/1 label
        blocks); ``negatives ≥ K`` is the exact bound.
    seed
        Seed of the point order and negative samples.
    float_type
        dtype of the batches' tensors.
    input_map
        The model's input map (:class:`mlgp.blocks.InputMap`) or ``None``.
    batch_growth
        ``(every, increment)``: the batch grows by ``increment`` points every ``every`` epochs.
    """

    def __init__(self, X, Y: sp.csr_matrix, batch_size: int, negatives: int | None = None, seed: int = 0, *,
                 float_type=np.float64, input_map=None, batch_growth: tuple[int, int] | None = None) -> None:
        self.rows = RowMinibatches(X, Y, batch_size, seed, input_map=input_map)
        self.float_type = np.dtype(float_type)
        self.base_batch_size = int(batch_size)
        self.batch_growth = batch_growth
        K = Y.shape[1]
        self.negatives = None if negatives is None or int(negatives) >= K else int(negatives)
        self.num_slots = None if self.negatives is None else int(np.diff(Y.indptr).max(initial=0)) + self.negatives

    @property
    def num_data(self) -> int:
        return self.rows.num_data

    @property
    def batch_size(self) -> int:
        return self.rows.batch_size

    @property
    def steps_per_epoch(self) -> int:
        return self.rows.steps_per_epoch

    def start_epoch(self, epoch: int, seed: int) -> None:
        """Set epoch ``epoch``'s (0-based) random stream and batch size: one stream per epoch, so a
        run resumed from a checkpoint draws the same minibatches and negatives as an uninterrupted one."""
        self.rows.rng = np.random.default_rng([seed, epoch])
        size = self.base_batch_size
        if self.batch_growth is not None:
            every, inc = self.batch_growth
            size += inc * (epoch // every)
        self.rows.batch_size = min(self.num_data, size)

    def _tensors(self, mb):
        ft = self.float_type
        xb = tf.constant(mb.X, dtype=ft)
        if self.negatives is None:
            return xb, tf.constant(mb.Y.toarray(), dtype=ft)
        idx, sgn, w = sample_labels(mb.Y, self.negatives, self.rows.rng, self.num_slots)
        return xb, LabelBatch(tf.constant(idx), tf.constant(sgn, dtype=ft), tf.constant(w, dtype=ft))

    def epoch(self) -> Iterator:
        """One shuffled pass over the data."""
        for mb in self.rows.epoch():
            yield self._tensors(mb)
