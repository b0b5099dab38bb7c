"""Doubly stochastic minibatches: points × labels.

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
from gpflow import default_float

from ..errors import ShapeError
from ..likelihoods import LabelBatch
from ..validation import check_training_data

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
    # negatives: the n smallest random keys among the non-positive labels of each row
    take = min(n, K)
    keys = rng.random((B, K))
    keys[row_of, Y.indices] = np.inf
    picked = np.argpartition(keys, take - 1, axis=1)[:, :take] if take < K else np.tile(np.arange(K), (B, 1))
    valid = np.isfinite(np.take_along_axis(keys, picked, axis=1))  # False where a positive was picked
    n_drawn = valid.sum(axis=1)
    w_neg = np.where(n_drawn > 0, n_neg_avail / np.maximum(n_drawn, 1), 0.0)
    slots = n_pos[:, None] + np.cumsum(valid, axis=1) - 1
    r, c = np.nonzero(valid)
    indices[r, slots[r, c]] = picked[r, c]
    signs[r, slots[r, c]] = -1.0
    weights[r, slots[r, c]] = w_neg[r]
    return indices, signs, weights


class MinibatchSampler:
    """Iterates over shuffled minibatches of (dense features, labels).

    Parameters
    ----------
    X
        (N, D) features, CSR or dense; only minibatches are densified.
    Y
        (N, K) 0/1 labels.
    batch_size
        |B|; the last batch of an epoch may be smaller.
    negatives
        Sampled negatives per point, or ``None`` for all labels (dense (B, K) 0/1 label blocks).
    seed
        Seed of the point order and negative samples.
    check_input
        Check ``X`` and ``Y`` (:func:`mlgp.validation.check_training_data`); ``False`` trusts a
        caller that has checked them already.
    float_type
        dtype of the batches' tensors (default GPflow's ``default_float()``).
    """

    def __init__(self, X, Y, batch_size: int, negatives: int | None = None, seed: int = 0,
                 check_input: bool = True, float_type=None) -> None:
        self.float_type = np.dtype(default_float() if float_type is None else float_type)
        if check_input:
            self.X, self.Y = check_training_data(X, Y)
        else:  # checked by the caller: only the storage and dtype the sampler slices
            self.X = sp.csr_matrix(X).astype(np.float64, copy=False) if sp.issparse(X) else np.asarray(X, dtype=np.float64)
            self.Y = sp.csr_matrix(Y).astype(np.float64, copy=False)
        N, K = self.Y.shape
        if not 1 <= int(batch_size):
            raise ShapeError(f"batch_size must be ≥ 1, got {batch_size}")
        self.batch_size = min(int(batch_size), N)
        if negatives is not None and int(negatives) < 1:
            raise ShapeError(f"negatives must be ≥ 1 (or None for all labels), got {negatives}")
        if negatives is not None and int(negatives) >= K:
            negatives = None  # sampling every negative is the exact bound
        self.negatives = None if negatives is None else int(negatives)
        self.rng = np.random.default_rng(seed)
        self.num_slots = None if self.negatives is None else int(np.diff(self.Y.indptr).max(initial=0)) + self.negatives

    @property
    def num_data(self) -> int:
        return self.X.shape[0]

    @property
    def steps_per_epoch(self) -> int:
        return -(-self.num_data // self.batch_size)

    def batch(self, rows: np.ndarray):
        """The minibatch of the given rows: ``(X_b (B, D) tensor, labels)``."""
        xb = self.X[rows]
        ft = self.float_type
        xb = tf.constant(xb.toarray() if sp.issparse(xb) else xb, dtype=ft)
        yb = self.Y[rows]
        if self.negatives is None:
            return xb, tf.constant(yb.toarray(), dtype=ft)
        idx, sgn, w = sample_labels(yb, self.negatives, self.rng, self.num_slots)
        return xb, LabelBatch(tf.constant(idx), tf.constant(sgn, dtype=ft), tf.constant(w, dtype=ft))

    def epoch(self) -> Iterator:
        """One shuffled pass over the data."""
        order = self.rng.permutation(self.num_data)
        for start in range(0, self.num_data, self.batch_size):
            yield self.batch(order[start : start + self.batch_size])
