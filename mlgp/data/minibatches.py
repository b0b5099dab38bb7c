"""Shuffled row minibatches of CSR (or dense) features and CSR labels: :class:`RowMinibatches`.

The iterator every family's stochastic training shares (MLGPF's doubly stochastic sampler adds
label subsampling on top, in :mod:`mlgp.training.sampler`; GenEML's online EM takes it with
minibatches of equal sizes and sorted rows). Each epoch is one pass over a fresh permutation drawn
from the iterator's own generator; the features of a minibatch go through the model's input map
(:mod:`mlgp.blocks`) before any densifying. The data are trusted: checked once at the public
boundary.
"""

from __future__ import annotations

from typing import Iterator, NamedTuple

import numpy as np
import scipy.sparse as sp

from ..blocks import InputMap, take_rows

__all__ = ["Minibatch", "RowMinibatches"]


class Minibatch(NamedTuple):
    """One minibatch: the row indices (B,), the features (as :func:`~mlgp.blocks.take_rows`
    returns them) and the labels (B, K) CSR."""

    rows: np.ndarray
    X: object
    Y: sp.csr_matrix


class RowMinibatches:
    """Shuffled minibatches of ``batch_size`` rows of ``(X, Y)``.

    Parameters
    ----------
    X
        (N, D) checked features, CSR or dense.
    Y
        (N, K) checked 0/1 labels, CSR.
    batch_size
        Rows per minibatch (clamped to N); the last minibatch of an epoch may be smaller.
    seed
        Seed of the generator ``rng`` that draws each epoch's order (replace ``rng`` to re-seed).
    input_map, dense
        How feature blocks are formed (:func:`mlgp.blocks.take_rows`).
    equal_sizes
        Split each epoch into ``steps_per_epoch`` minibatches whose sizes differ by at most one
        row, instead of full minibatches and a smaller last one.
    sorted_rows
        Give each minibatch's rows in increasing order (its draw is unchanged).
    """

    def __init__(self, X, Y: sp.csr_matrix, batch_size: int, seed=0, *, input_map: InputMap | None = None,
                 dense: bool = True, equal_sizes: bool = False, sorted_rows: bool = False) -> None:
        self.X, self.Y = X, Y
        self.batch_size = min(int(batch_size), X.shape[0])
        self.input_map, self.dense = input_map, dense
        self.equal_sizes, self.sorted_rows = equal_sizes, sorted_rows
        self.rng = np.random.default_rng(seed)

    @property
    def num_data(self) -> int:
        """N."""
        return self.X.shape[0]

    @property
    def steps_per_epoch(self) -> int:
        """Minibatches per epoch at the current ``batch_size``."""
        return -(-self.num_data // self.batch_size)

    def take(self, rows: np.ndarray) -> Minibatch:
        """The minibatch of the given rows."""
        return Minibatch(rows, take_rows(self.X, rows, input_map=self.input_map, dense=self.dense), self.Y[rows])

    def epoch_rows(self) -> Iterator[np.ndarray]:
        """The row indices of each minibatch of one pass over a fresh permutation of the rows."""
        order = self.rng.permutation(self.num_data)
        if self.equal_sizes:
            parts = np.array_split(order, self.steps_per_epoch)
        else:
            parts = (order[start:start + self.batch_size] for start in range(0, self.num_data, self.batch_size))
        for rows in parts:
            yield np.sort(rows) if self.sorted_rows else rows

    def epoch(self) -> Iterator[Minibatch]:
        """One pass over a fresh permutation of the rows."""
        for rows in self.epoch_rows():
            yield self.take(rows)
