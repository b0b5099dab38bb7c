"""mlgp.data.extreme_like: synthetic extreme-classification data straight into CSR arrays."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from mlgp.data import AMAZONCAT_13K, extreme_like
from mlgp.errors import ArgumentError

SHAPE = dict(num_train=3000, num_test=500, num_features=1_000_000, num_labels=2000, nnz_per_row=40,
             labels_per_point=4.0)


@pytest.fixture(scope="module")
def data():
    return extreme_like(**SHAPE, chunk_rows=700, seed=3)


def test_the_shape_and_canonical_csr(data):
    for split, n in (("train", 3000), ("test", 500)):
        X, Y = getattr(data, split).X, getattr(data, split).Y
        assert X.shape == (n, SHAPE["num_features"]) and Y.shape == (n, SHAPE["num_labels"])
        assert X.has_canonical_format and Y.has_canonical_format and X.dtype == np.float64 and Y.dtype == np.int8
        np.testing.assert_allclose(np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel()), 1.0, rtol=1e-12)
        assert set(np.unique(Y.data)) == {1} and Y.getnnz(axis=1).min() >= 1
        assert 30 <= X.nnz / n <= 40  # 40 draws, a few merged
    assert 3.5 <= data.train.Y.nnz / 3000 <= 4.5


def test_chunks_and_seed_do_not_change_the_data_but_another_seed_does(data):
    again = extreme_like(**SHAPE, chunk_rows=5000, seed=3)
    # one chunk instead of five: the random stream is the same only chunk by chunk, so compare shapes
    # and the same call's repeat exactly
    same = extreme_like(**SHAPE, chunk_rows=700, seed=3)
    for a, b in ((data.train.X, same.train.X), (data.test.Y, same.test.Y)):
        np.testing.assert_array_equal(a.indptr, b.indptr)
        np.testing.assert_array_equal(a.indices, b.indices)
        np.testing.assert_array_equal(a.data, b.data)
    assert again.train.X.shape == data.train.X.shape
    other = extreme_like(**SHAPE, chunk_rows=700, seed=4)
    assert (other.train.X != data.train.X).nnz > 0


def test_label_frequencies_follow_the_power_law(data):
    counts = np.asarray(data.train.Y.sum(axis=0)).ravel()
    assert counts[:10].sum() > 10 * counts[-1000:].sum() / 100  # the head is far more frequent than the tail
    assert np.corrcoef(np.log(counts[:50] + 1), np.log(np.arange(1, 51)))[0, 1] < -0.8


def test_features_carry_the_labels(data):
    """Two points sharing a label share rare feature columns (ids ≥ 10⁴: the label's topic; the
    background words are mostly common, low ids) far more often than two points that share none."""
    X, Y = data.train.X, data.train.Y
    same, other = [], []
    rng = np.random.default_rng(0)
    for _ in range(400):
        i, j = rng.integers(0, X.shape[0], 2)
        shared = Y[i].multiply(Y[j]).nnz > 0
        both = X[i].multiply(X[j])
        overlap = int(np.sum(both.indices >= 10_000))
        (same if shared else other).append(overlap)
    assert len(same) > 20 and np.mean(same) > 1.0 and np.mean(same) > 5 * np.mean(other)


def test_no_allocation_of_the_dense_index_space():
    """3,500 × 10⁶ would be 28 GB dense (23 GB of index space for scipy.sparse.random); the generator
    holds only the CSR arrays and one chunk's temporaries."""
    tracemalloc.start()
    extreme_like(**SHAPE, chunk_rows=1000, seed=0)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 60e6, f"peak {peak / 1e6:.0f} MB"


def test_amazoncat_shape_is_recorded():
    assert AMAZONCAT_13K["num_features"] == 203_882 and AMAZONCAT_13K["num_labels"] == 13_330


@pytest.mark.parametrize("change, message", [
    (dict(num_labels=0), "num_labels"), (dict(labels_per_point=0.5), "labels_per_point ≥ 1"),
    (dict(signal=1.5), "0 ≤ signal ≤ 1"), (dict(nnz_per_row=-1), "nnz_per_row"), (dict(seed=-1), "seed"),
])
def test_bad_arguments_are_refused(change, message):
    with pytest.raises(ArgumentError, match=message):
        extreme_like(**{**SHAPE, **change})
