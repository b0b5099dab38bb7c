"""Sampled negative labels at large K: the rejection path of ``sample_labels`` (few negatives and
positives against K) draws each row's negatives uniformly without replacement, like the key path."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from mlgp.training import sample_labels
from mlgp.training import sampler as sampler_module


def _labels(B: int, K: int, rng) -> sp.csr_matrix:
    """Rows with 0 to 9 positives among the first 30 labels (so the low labels are often positive)."""
    rows = [np.sort(rng.choice(30, rng.integers(0, 10), replace=False)) for _ in range(B)]
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])])
    return sp.csr_matrix((np.ones(indptr[-1]), np.concatenate(rows).astype(np.int64), indptr), shape=(B, K))


def _check_structure(Y: sp.csr_matrix, n: int, idx, sgn, w) -> None:
    K = Y.shape[1]
    for i in range(Y.shape[0]):
        pos = set(Y.indices[Y.indptr[i]:Y.indptr[i + 1]])
        live = w[i] > 0
        assert set(idx[i, live & (sgn[i] > 0)]) == pos
        neg = idx[i, live & (sgn[i] < 0)]
        assert len(neg) == len(set(neg)) == min(n, K - len(pos)) and not set(neg) & pos
        np.testing.assert_allclose(w[i, live & (sgn[i] < 0)], (K - len(pos)) / len(neg))


@pytest.mark.parametrize("width", ["default", "too-short"])
def test_the_rejection_path_gives_distinct_negatives_with_their_weights(width, monkeypatch):
    rng = np.random.default_rng(0)
    Y, n = _labels(200, 1000, rng), 20
    if width == "too-short":  # every row's candidates run short: all rows fall back to the key path
        monkeypatch.setattr(sampler_module, "_rejection_width", lambda n, p: n)
    idx, sgn, w = sample_labels(Y, n, rng)
    _check_structure(Y, n, idx, sgn, w)


def test_each_negative_is_equally_likely():
    """Over 3,000 draws of n = 5 from K = 200 (rejection path), each label's inclusion count for a
    row with positives {0, …, 8} is Binomial(3000, 5/191): a chi-square test over the 191 labels."""
    from scipy import stats

    rng = np.random.default_rng(1)
    K, n, draws = 200, 5, 3000
    Y = sp.csr_matrix((np.ones(9), np.arange(9), [0, 9]), shape=(1, K))
    assert 4 * (n + 9) <= K  # the rejection path
    counts = np.zeros(K)
    for _ in range(draws):
        idx, sgn, w = sample_labels(Y, n, rng)
        np.add.at(counts, idx[0][(sgn[0] < 0) & (w[0] > 0)], 1)
    assert counts[:9].sum() == 0 and counts.sum() == draws * n
    expected = draws * n / (K - 9)
    chi2 = ((counts[9:] - expected) ** 2 / expected).sum()
    assert stats.chi2.sf(chi2, K - 10) > 1e-3, f"chi-square {chi2:.1f} on {K - 10} degrees of freedom"


def test_the_rejection_path_does_not_draw_a_key_per_label():
    """At K = 13,330 the sampler no longer draws B × K random keys (the former cost of a step)."""
    rng = np.random.default_rng(2)
    Y = _labels(500, 13_330, rng)

    class Counting:
        def __init__(self, rng):
            self.rng, self.drawn = rng, 0

        def random(self, size):
            self.drawn += int(np.prod(size))
            return self.rng.random(size)

        def integers(self, low, high, size):
            self.drawn += int(np.prod(size))
            return self.rng.integers(low, high, size)

    counting = Counting(rng)
    idx, sgn, w = sample_labels(Y, 100, counting)
    _check_structure(Y, 100, idx, sgn, w)
    assert counting.drawn < 500 * 300
