"""GenEML's per-row and per-label statistics against their dense definitions: the row precisions
λ_u I + Σ_l a_nl v_l v_lᵀ and shifts, and Σ_n a_nl u_n u_nᵀ, Σ_n b_nl u_n — symmetric, from the
upper triangles, over one chunk of outer products or several."""

from __future__ import annotations

import numpy as np
import pytest

from mlgp.geneml import updates
from mlgp.geneml.updates import label_statistics, row_updates

#: BLAS products chunk by chunk against numpy's einsum, another order of the same sums: the house
#: float64 rtol, and atol 1e-13 for off-diagonal sums that cancel to near 0 from terms of a few units
CHUNKED = dict(rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("chunk", [2 ** 21, 7])  # one chunk; a chunk smaller than one triangle (one vector a chunk)
@pytest.mark.parametrize("k", [1, 2, 5])
def test_row_and_label_statistics_are_their_dense_sums(monkeypatch, chunk, k):
    monkeypatch.setattr(updates, "OUTER_CHUNK", chunk)
    rng = np.random.default_rng(k)
    B, K = 9, 6
    V, U = rng.standard_normal((K, k)), rng.standard_normal((B, k))
    a, b, prior_mean = rng.random((B, K)), rng.standard_normal((B, K)), rng.standard_normal((B, k))
    precision, shift = row_updates(V, a, b, prior_mean, 0.7)
    np.testing.assert_allclose(precision, np.einsum("nl,li,lj->nij", a, V, V) + 0.7 * np.eye(k), **CHUNKED)
    np.testing.assert_allclose(shift, b @ V + 0.7 * prior_mean, **CHUNKED)
    assert np.array_equal(precision, np.swapaxes(precision, 1, 2))  # mirrored, exactly symmetric
    stat_a, stat_b = label_statistics(U, a, b)
    np.testing.assert_allclose(stat_a, np.einsum("nl,ni,nj->lij", a, U, U), **CHUNKED)
    np.testing.assert_allclose(stat_b, b.T @ U, **CHUNKED)


def test_no_rows_give_zero_statistics():
    stat_a, stat_b = label_statistics(np.zeros((0, 3)), np.zeros((0, 4)), np.zeros((0, 4)))
    assert stat_a.shape == (4, 3, 3) and not stat_a.any() and stat_b.shape == (4, 3) and not stat_b.any()
