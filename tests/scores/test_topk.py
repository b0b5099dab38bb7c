"""topk: the ranking every model's scores go through (ties to the lower label index, sparse
missing entries as −inf, a TopK taken in its order), against a brute-force Python ranking."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from mlgp.errors import ArgumentError, ShapeError
from mlgp.scores import TopK, topk


def ref_rank(row_scores):
    """One row's full ranking: higher score first, ties to the lower label index."""
    return sorted(range(len(row_scores)), key=lambda label: (-row_scores[label], label))


def ref_rankings(S):
    """The full rankings (lists of label ids) of a dense score matrix, row by row."""
    return [ref_rank(list(map(float, S[i]))) for i in range(S.shape[0])]


@pytest.mark.parametrize("kind", ["random", "round1", "int03", "const"])
@pytest.mark.parametrize("k", [1, 3, 7, 12])
def test_topk_dense_matches_reference(kind, k):
    rng = np.random.default_rng(0)
    S = rng.random((30, 12))
    if kind == "round1":
        S = np.round(S, 1)
    elif kind == "int03":
        S = rng.integers(0, 4, size=(30, 12)).astype(float)
    elif kind == "const":
        S = np.ones((30, 12))
    t = topk(S, k)
    ref = ref_rankings(S)
    assert t.indices.shape == (30, k) and t.indices.dtype == np.int64
    for i in range(30):
        assert list(t.indices[i]) == ref[i][:k]
        assert np.array_equal(t.scores[i], S[i, ref[i][:k]])


def test_topk_dense_small_chunks(monkeypatch):
    import mlgp.scores._topk as m

    monkeypatch.setattr(m, "_CHUNK_ELEMENTS", 20)
    rng = np.random.default_rng(1)
    S = rng.integers(0, 3, size=(17, 9)).astype(np.float32)
    t = topk(S, 4)
    ref = ref_rankings(S)
    assert [list(r) for r in t.indices] == [r[:4] for r in ref]


def test_topk_dense_fast_path_edge_rows():
    """Wide rows (block-maximum filter active) mixing easy and heavily tied rows."""
    rng = np.random.default_rng(7)
    K, k = 2000, 5  # 125 strided groups of 16 columns
    rows = [
        rng.random(K),  # easy
        np.ones(K),  # all tied
        rng.integers(0, 3, size=K).astype(float),  # many ties at the top value
        np.round(rng.random(K), 1),
    ]
    adv = np.zeros(K)
    adv[rng.choice(K, 400, replace=False)] = 2.0
    adv[np.arange(10) * 125] = 3.0  # ten 3s all in group 0: the bound (2) is loose
    rows.append(adv)
    few = np.zeros(K)
    few[[1999, 3, 1000]] = [1.0, 1.0, 0.5]  # fewer distinct than k; rest tied at 0
    rows.append(few)
    S = np.array(rows)
    for kk in (1, k, 40):
        t = topk(S, kk)
        ref = ref_rankings(S)
        for i in range(S.shape[0]):
            assert list(t.indices[i]) == ref[i][:kk], (i, kk)
            assert np.array_equal(t.scores[i], S[i, ref[i][:kk]])


def test_topk_integer_and_bool_scores():
    S = np.array([[0, 2, 2, 1], [True, False, True, True]], dtype=np.int64)
    assert topk(S, 3).indices.tolist() == [[1, 2, 3], [0, 2, 3]]
    B = np.array([[False, True, True, False]])
    assert topk(B, 2).indices.tolist() == [[1, 2]]


def test_topk_sparse_missing_is_minus_inf():
    rng = np.random.default_rng(2)
    D = rng.integers(-3, 4, size=(25, 10)).astype(float)
    D[rng.random(D.shape) < 0.6] = 0.0
    D[3] = 0.0  # an all-missing row
    S = sp.csr_matrix(D)  # zeros are not stored
    dense_equiv = np.where(D != 0, D, -np.inf)
    for k in (1, 4, 10):
        t = topk(S, k)
        for i in range(25):
            assert list(t.indices[i]) == ref_rank(list(dense_equiv[i]))[:k]
            assert np.array_equal(t.scores[i], dense_equiv[i, t.indices[i]])


def test_topk_sparse_explicit_zero_is_stored():
    S = sp.csr_matrix((np.array([0.0, -1.0]), np.array([3, 1]), np.array([0, 2])), shape=(1, 5))
    # stored: label 3 (0.0), label 1 (-1.0); then missing 0, 2, 4 in index order
    assert topk(S, 5).indices.tolist() == [[3, 1, 0, 2, 4]]


def test_topk_of_topk_truncates_in_given_order():
    t = TopK(np.array([[3, 0, 2]]), np.array([[0.1, 0.9, 0.5]]))  # deliberately unsorted
    t2 = topk(t, 2)
    assert t2.indices.tolist() == [[3, 0]]
    assert t2.scores.tolist() == [[0.1, 0.9]]
    assert topk(t, 3) is t
    with pytest.raises(ShapeError, match=r"TopK has only 3 columns, fewer than k=4"):
        topk(t, 4)


def test_topk_validation():
    with pytest.raises(ArgumentError, match=r"k must be a positive integer, got 0"):
        topk(np.zeros((2, 3)), 0)
    with pytest.raises(ArgumentError, match=r"k must be a positive integer, got 1\.5"):
        topk(np.zeros((2, 3)), 1.5)
    with pytest.raises(ShapeError, match=r"k=4 exceeds the number of labels K=3"):
        topk(np.zeros((2, 3)), 4)
    with pytest.raises(ShapeError, match=r"scores contain non-finite values \(NaN or inf\), first in row 0"):
        topk(np.array([[0.0, np.nan, 1.0]]), 1)
    with pytest.raises(ShapeError, match=r"sparse scores contain non-finite stored values"):
        topk(sp.csr_matrix(np.array([[0.0, np.inf, 1.0]])), 1)
    with pytest.raises(ShapeError, match=r"scores must be 2-D \(N, K\), got shape \(3,\)"):
        topk(np.zeros(3), 1)
    with pytest.raises(ShapeError, match=r"TopK indices shape \(2, 3\) does not match scores shape \(2, 2\)"):
        TopK(np.zeros((2, 3), dtype=int), np.zeros((2, 2)))
    with pytest.raises(ShapeError, match=r"TopK indices must be integers, got dtype float64"):
        TopK(np.zeros((2, 2)), np.zeros((2, 2)))
    with pytest.raises(ShapeError, match=r"TopK indices must be non-negative label indices"):
        TopK(np.array([[-1, 0]]), np.zeros((1, 2)))
