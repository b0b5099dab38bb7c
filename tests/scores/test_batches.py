"""score_in_batches: every row scored once, in order, for dense and CSR X, any batch size (the last
block partial), dense or sparse block scores, top-k, an input map, and the checks."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from _rounding import FLOAT64

from mlgp.blocks import LinearInputMap, row_blocks, take_rows
from mlgp.errors import ArgumentError, ShapeError
from mlgp.scores import score_in_batches


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.random((11, 6))
    X[X < 0.5] = 0.0
    W = rng.normal(size=(6, 4))
    return X, W


@pytest.mark.parametrize("batch_size", [1, 3, 4, 11, 50])
@pytest.mark.parametrize("sparse", [False, True])
def test_every_row_once_in_order_with_the_last_block_partial(data, batch_size, sparse):
    X, W = data
    seen = []

    def fn(xb):
        assert isinstance(xb, np.ndarray) and xb.shape[1] == 6  # CSR blocks are densified for fn
        seen.append(xb.shape[0])
        return xb @ W

    out = score_in_batches(fn, sp.csr_matrix(X) if sparse else X, batch_size=batch_size, num_labels=4)
    # each block's product is another BLAS call (gemv for one row) than the whole one: equal to rounding
    np.testing.assert_allclose(out, X @ W, **FLOAT64)
    assert seen == [min(batch_size, 11 - s) for s in range(0, 11, batch_size)]
    assert sum(seen) == 11 and out.dtype == np.float64


@pytest.mark.parametrize("batch_size", [2, 5, 11])
def test_top_k_equals_ranking_the_dense_scores_with_ties_to_the_lower_label(batch_size):
    scores = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0], [0.0, -1.0, 5.0, 5.0]] * 3 + [[4, 3, 2, 1.0]] * 2)
    X = np.arange(scores.shape[0], dtype=float)[:, None]
    top = score_in_batches(lambda xb: scores[xb[:, 0].astype(int)], X, batch_size=batch_size, top_k=2)
    # an independent ranking: stable sort on −score keeps the lower label first among equals
    order = np.argsort(-scores, axis=1, kind="stable")[:, :2]
    np.testing.assert_array_equal(top.indices, order)
    np.testing.assert_array_equal(top.scores, np.take_along_axis(scores, order, axis=1))


def test_sparse_block_scores_give_zeros_and_rank_after_stored_entries():
    X = sp.csr_matrix(np.eye(5))
    S = sp.csr_matrix(np.array([[0, 0.5, 0, 0.2], [0, 0, 0, 0], [0.1, 0, 0, 0], [0, 0, 0.3, 0], [0.9, 0.8, 0.7, 0.6]]))

    def fn(xb):
        assert sp.issparse(xb)  # dense=False: the CSR block as it is
        return S[xb.indices]

    dense = score_in_batches(fn, X, batch_size=2, dense=False)
    np.testing.assert_array_equal(dense, S.toarray())
    top = score_in_batches(fn, X, batch_size=2, dense=False, top_k=2)
    np.testing.assert_array_equal(top.indices, [[1, 3], [0, 1], [0, 1], [2, 0], [0, 1]])
    np.testing.assert_array_equal(top.scores, [[0.5, 0.2], [0, 0], [0.1, 0], [0.3, 0], [0.9, 0.8]])


def test_the_input_map_is_applied_to_each_csr_block_before_densifying(data):
    X, W = data
    A = sp.random(6, 3, density=0.6, random_state=1, format="csr")
    shapes = []

    def fn(xb):
        shapes.append(xb.shape)
        return xb @ np.ones((3, 2))

    out = score_in_batches(fn, sp.csr_matrix(X), batch_size=4, input_map=LinearInputMap(A), num_features=6)
    # the map's sparse product block by block against one dense product: equal to rounding
    np.testing.assert_allclose(out, (X @ A.toarray()) @ np.ones((3, 2)), **FLOAT64)
    assert shapes == [(4, 3), (4, 3), (3, 3)]


def test_bad_input_and_bad_scores_are_named(data):
    X, W = data
    with pytest.raises(ShapeError, match=r"X has 6 features but the model expects D = 5"):
        score_in_batches(lambda xb: xb @ W, X, num_features=5)
    with pytest.raises(ShapeError, match=r"returned shape \(3, 4\) for a block of 3 rows; expected \(3, 5\)"):
        score_in_batches(lambda xb: xb @ W, X, batch_size=3, num_labels=5)
    with pytest.raises(ShapeError, match=r"top_k=5 exceeds the number of labels K=4"):
        score_in_batches(lambda xb: xb @ W, X, top_k=5)
    with pytest.raises(ArgumentError, match=r"batch_size must be a positive integer, got 0"):
        score_in_batches(lambda xb: xb @ W, X, batch_size=0)
    bad = X.copy()
    bad[7, 2] = np.nan
    with pytest.raises(ShapeError, match=r"X contains NaN or inf \(first in row 7\)"):
        score_in_batches(lambda xb: xb @ W, bad)


def test_row_blocks_and_take_rows(data):
    X, _ = data
    C = sp.csr_matrix(X)
    blocks = list(row_blocks(C, 4, dense=False))
    assert [b.shape[0] for _, b in blocks] == [4, 4, 3] and all(sp.issparse(b) for _, b in blocks)
    order = np.array([10, 0, 5, 3, 9, 1, 2, 4, 6, 7, 8])
    rows = np.concatenate([r for r, _ in row_blocks(C, 3, order=order)])
    np.testing.assert_array_equal(rows, order)
    np.testing.assert_array_equal(take_rows(C, order[:3]), X[order[:3]])
    with pytest.raises(ShapeError, match=r"the input map returned shape \(2,\) for a block of 2 rows"):
        take_rows(C, slice(0, 2), input_map=_BadMap())


class _BadMap:
    num_features, num_outputs = 6, 1

    def __call__(self, block):
        return np.zeros(block.shape[0])
