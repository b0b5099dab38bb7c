"""RowMinibatches: shuffled row minibatches of CSR X and Y, every row once per epoch, reproducible."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from mlgp.blocks import LinearInputMap
from mlgp.data.minibatches import RowMinibatches


def _data(n=23):
    rng = np.random.default_rng(0)
    X = sp.csr_matrix(rng.random((n, 5)) * (rng.random((n, 5)) < 0.5))
    Y = sp.csr_matrix((rng.random((n, 4)) < 0.4).astype(float))
    return X, Y


def test_each_epoch_visits_every_row_once_with_matching_labels():
    X, Y = _data()
    mb = RowMinibatches(X, Y, batch_size=5, seed=3)
    for _ in range(2):
        rows = []
        for batch in mb.epoch():
            np.testing.assert_array_equal(batch.X, X[batch.rows].toarray())
            assert (batch.Y != Y[batch.rows]).nnz == 0
            rows.append(batch.rows)
        rows = np.concatenate(rows)
        assert sorted(rows) == list(range(23)) and mb.steps_per_epoch == 5
    assert [len(b.rows) for b in mb.epoch()] == [5, 5, 5, 5, 3]


def test_the_order_follows_the_seed_and_the_batch_is_clamped():
    X, Y = _data(7)
    a = [b.rows for b in RowMinibatches(X, Y, 3, seed=1).epoch()]
    b = [b.rows for b in RowMinibatches(X, Y, 3, seed=1).epoch()]
    c = [b.rows for b in RowMinibatches(X, Y, 3, seed=2).epoch()]
    assert all((x == y).all() for x, y in zip(a, b)) and not all((x == y).all() for x, y in zip(a, c))
    assert RowMinibatches(X, Y, 100).batch_size == 7


def test_csr_blocks_or_mapped_blocks():
    X, Y = _data()
    raw = next(RowMinibatches(X, Y, 4, dense=False).epoch())
    assert sp.issparse(raw.X)
    A = np.arange(10.0).reshape(5, 2)
    mapped = next(RowMinibatches(X, Y, 4, input_map=LinearInputMap(A)).epoch())
    np.testing.assert_allclose(mapped.X, X[mapped.rows] @ A)


def test_equal_sizes_and_sorted_rows_split_the_same_draw():
    X, Y = _data()
    plain = [b.rows for b in RowMinibatches(X, Y, 5, seed=3).epoch()]
    equal = list(RowMinibatches(X, Y, 5, seed=3, dense=False, equal_sizes=True, sorted_rows=True).epoch())
    assert [len(b.rows) for b in equal] == [5, 5, 5, 4, 4]  # 23 rows in ⌈23 / 5⌉ = 5 minibatches, ± 1 row
    assert all((np.diff(b.rows) > 0).all() for b in equal)
    # the same permutation, cut at other places and sorted within each minibatch
    order = np.concatenate(plain)
    np.testing.assert_array_equal(np.concatenate([b.rows for b in equal]),
                                  np.concatenate([np.sort(order[i:j]) for i, j in [(0, 5), (5, 10), (10, 15), (15, 19),
                                                                                   (19, 23)]]))
    for b in equal:
        assert sp.issparse(b.X) and (b.X != X[b.rows]).nnz == 0 and (b.Y != Y[b.rows]).nnz == 0
    unsorted = [b.rows for b in RowMinibatches(X, Y, 5, seed=3, equal_sizes=True).epoch()]
    np.testing.assert_array_equal(np.concatenate(unsorted), order)
