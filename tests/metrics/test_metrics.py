"""Tests of mlgp.metrics against an independent brute-force reference."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from mlgp.errors import ArgumentError, ShapeError
from mlgp.metrics import (
    TopK,
    evaluate,
    f1_scores,
    hamming_loss,
    inverse_propensity,
    ndcg_at_k,
    precision_at_k,
    propensity_params,
    psndcg_at_k,
    psprecision_at_k,
    topk,
)

TOL = 1e-9


# --------------------------------------------------------------------------- #
# Brute-force reference: plain Python loops over rows
# --------------------------------------------------------------------------- #
def ref_rank(row_scores):
    K = len(row_scores)
    return sorted(range(K), key=lambda l: (-row_scores[l], l))


def ref_rankings(S):
    """List of full rankings (lists of label ids) from a dense score matrix."""
    return [ref_rank(list(map(float, S[i]))) for i in range(S.shape[0])]


def ref_metrics(Y, rankings, k, w=None):
    """Y: dense 0/1 (N, K); rankings: list of per-row label lists (length >= k)."""
    N = Y.shape[0]
    p_sum = n_sum = 0.0
    psp_num = psp_den = psn_num = psn_den = 0.0
    for i in range(N):
        rel = {l for l in range(Y.shape[1]) if Y[i, l] == 1}
        r = rankings[i][:k]
        hits = [1.0 if l in rel else 0.0 for l in r]
        p_sum += sum(hits) / k
        m = min(k, len(rel))
        idcg = sum(1.0 / math.log2(j + 2) for j in range(m))
        dcg = sum(h / math.log2(j + 2) for j, h in enumerate(hits))
        if idcg > 0:
            n_sum += dcg / idcg
        if w is not None:
            wh = [w[l] * h for l, h in zip(r, hits)]
            best = sorted((w[l] for l in rel), reverse=True)[:k]
            psp_num += sum(wh) / k
            psp_den += sum(best) / k
            if idcg > 0:
                psn_num += sum(v / math.log2(j + 2) for j, v in enumerate(wh)) / idcg
                psn_den += sum(v / math.log2(j + 2) for j, v in enumerate(best)) / idcg
    out = {"P": p_sum / N, "nDCG": n_sum / N}
    if w is not None:
        # pyxclib: ratio of the means over rows (mean / mean == sum / sum)
        out["PSP"] = psp_num / psp_den if psp_den > 0 else 0.0
        out["PSnDCG"] = psn_num / psn_den if psn_den > 0 else 0.0
    return out


def lib_metrics(Y, scores, k, w=None):
    out = {
        "P": precision_at_k(Y, scores, k),
        "nDCG": ndcg_at_k(Y, scores, k),
    }
    if w is not None:
        out["PSP"] = psprecision_at_k(Y, scores, k, w)
        out["PSnDCG"] = psndcg_at_k(Y, scores, k, w)
    return out


def assert_close(a, b, tol=TOL):
    assert a.keys() == b.keys()
    for key in a:
        assert abs(a[key] - b[key]) <= tol, (key, a[key], b[key])


def make_data(rng, N=40, K=12, density=0.2, empty_rows=(0, 5)):
    Y = (rng.random((N, K)) < density).astype(np.int64)
    for i in empty_rows:
        Y[i] = 0
    Y[1] = 1  # a row with more labels than any k
    return Y


# --------------------------------------------------------------------------- #
# topk
# --------------------------------------------------------------------------- #
# --------------------------------------------------------------------------- #
# Ranking metrics against the brute-force reference
# --------------------------------------------------------------------------- #
SCORE_KINDS = ["random", "round1", "int03"]


def _scores(rng, kind, shape):
    S = rng.random(shape)
    if kind == "round1":
        return np.round(S, 1)
    if kind == "int03":
        return rng.integers(0, 4, size=shape).astype(float)
    return S


@pytest.mark.parametrize("kind", SCORE_KINDS)
@pytest.mark.parametrize("k", [1, 2, 5, 12])
@pytest.mark.parametrize("ytype", ["csr", "dense_bool", "csr_float"])
def test_metrics_dense_scores_vs_reference(kind, k, ytype):
    rng = np.random.default_rng(10 + k)
    Y = make_data(rng)
    S = _scores(rng, kind, Y.shape)
    w = inverse_propensity(sp.csr_matrix(make_data(rng, N=200)), 0.55, 1.5)
    ref = ref_metrics(Y, ref_rankings(S), k, w)
    Yin = {
        "csr": sp.csr_matrix(Y),
        "dense_bool": Y.astype(bool),
        "csr_float": sp.csr_matrix(Y.astype(np.float32)),
    }[ytype]
    assert_close(lib_metrics(Yin, S, k, w), ref)


@pytest.mark.parametrize("kind", SCORE_KINDS)
@pytest.mark.parametrize("k", [1, 3, 5])
def test_metrics_topk_input_vs_reference(kind, k):
    rng = np.random.default_rng(20 + k)
    Y = make_data(rng, N=50, K=15)
    S = _scores(rng, kind, Y.shape)
    w = rng.uniform(1.0, 5.0, size=15)
    rankings = ref_rankings(S)
    ref = ref_metrics(Y, rankings, k, w)
    Ycsr = sp.csr_matrix(Y)
    # from our topk with a larger k (truncated), from sparse scores, and hand-built
    assert_close(lib_metrics(Ycsr, topk(S, 7), k, w), ref)
    assert_close(lib_metrics(Ycsr, sp.csr_matrix(S + 1.0), k, w), ref)
    hand = TopK(
        np.array([r[:6] for r in rankings]),
        np.array([[S[i, l] for l in rankings[i][:6]] for i in range(len(rankings))]),
    )
    assert_close(lib_metrics(Ycsr, hand, k, w), ref)


def test_user_topk_order_is_respected():
    """A hand-built TopK is used in its given order, even against its scores."""
    rng = np.random.default_rng(3)
    Y = make_data(rng, N=20, K=8)
    rankings = [list(rng.permutation(8)) for _ in range(20)]
    t = TopK(np.array([r[:4] for r in rankings]), np.zeros((20, 4)))  # all scores tied
    w = rng.uniform(1.0, 3.0, size=8)
    for k in (1, 2, 4):
        assert_close(lib_metrics(sp.csr_matrix(Y), t, k, w), ref_metrics(Y, rankings, k, w))


def test_rows_without_labels_count_as_zero():
    Y = np.array([[1, 0, 0], [0, 0, 0]])
    S = np.array([[0.9, 0.1, 0.0], [0.5, 0.4, 0.3]])
    w = np.array([2.0, 1.0, 1.0])
    # row 0 perfect, row 1 has no labels but stays in the mean
    assert precision_at_k(Y, S, 1) == pytest.approx(0.5, abs=TOL)
    assert ndcg_at_k(Y, S, 1) == pytest.approx(0.5, abs=TOL)
    # PSP: ratio of means: mean([2, 0]) / mean([2, 0]) = 1
    assert psprecision_at_k(Y, S, 1, w) == pytest.approx(1.0, abs=TOL)
    assert psndcg_at_k(Y, S, 1, w) == pytest.approx(1.0, abs=TOL)


def test_no_labels_at_all():
    Y = sp.csr_matrix((3, 4))
    S = np.random.default_rng(0).random((3, 4))
    w = np.ones(4)
    assert lib_metrics(Y, S, 2, w) == {"P": 0.0, "nDCG": 0.0, "PSP": 0.0, "PSnDCG": 0.0}


def test_hand_computed_2x4():
    # Y = [[1,0,1,0],     scores = [[0.9,0.8,0.1,0.3],
    #      [0,1,0,0]]               [0.2,0.2,0.9,0.2]]
    # rankings (lower index wins ties):
    #   row0: 0 (0.9), 1 (0.8), 3 (0.3), 2 (0.1)  -> hits 1,0,0,1
    #   row1: 2 (0.9), 0 (0.2), 1 (0.2), 3 (0.2)  -> hits 0,0,1,0
    Y = sp.csr_matrix(np.array([[1, 0, 1, 0], [0, 1, 0, 0]]))
    S = np.array([[0.9, 0.8, 0.1, 0.3], [0.2, 0.2, 0.9, 0.2]])
    assert topk(S, 4).indices.tolist() == [[0, 1, 3, 2], [2, 0, 1, 3]]
    # P@1 = (1 + 0)/2 = 0.5 ; P@3 = (1/3 + 1/3)/2 = 1/3
    assert precision_at_k(Y, S, 1) == pytest.approx(0.5, abs=TOL)
    assert precision_at_k(Y, S, 3) == pytest.approx(1 / 3, abs=TOL)
    # nDCG@3: row0 DCG = 1, IDCG(min(3,2)) = 1 + 1/log2(3); row1 DCG = 1/log2(4) = 0.5, IDCG = 1
    d3 = 1 / math.log2(3)
    assert ndcg_at_k(Y, S, 3) == pytest.approx((1 / (1 + d3) + 0.5) / 2, abs=TOL)
    # nDCG@1: row0 1, row1 0
    assert ndcg_at_k(Y, S, 1) == pytest.approx(0.5, abs=TOL)
    # PSP@3 with w = [1, 4, 2, 8]:
    #   num = mean(row0: (1 + 0 + 0)/3, row1: (0 + 0 + 4)/3) = (1/3 + 4/3)/2 = 5/6
    #   den = mean(row0 best {2,1}: 3/3, row1 best {4}: 4/3) = (1 + 4/3)/2 = 7/6
    #   PSP@3 = 5/7   (the mean of per-row ratios would be (1/3 + 1)/2 = 2/3 instead)
    w = np.array([1.0, 4.0, 2.0, 8.0])
    assert psprecision_at_k(Y, S, 3, w) == pytest.approx(5 / 7, abs=TOL)
    # PSnDCG@3: row0 wDCG = 1, ideal 2 + d3, IDCG0 = 1 + d3; row1 wDCG = 4 * 0.5 = 2, ideal 4, IDCG1 = 1
    num = (1 / (1 + d3) + 2.0) / 2
    den = ((2 + d3) / (1 + d3) + 4.0) / 2
    assert psndcg_at_k(Y, S, 3, w) == pytest.approx(num / den, abs=TOL)


def test_k_larger_than_row_label_counts():
    # a single row with one label ranked first: P@3 = 1/3, nDCG@3 = 1 (IDCG uses min(k, |y|) = 1)
    Y = np.array([[0, 1, 0, 0, 0]])
    S = np.array([[0.1, 0.9, 0.3, 0.2, 0.0]])
    assert precision_at_k(Y, S, 3) == pytest.approx(1 / 3, abs=TOL)
    assert ndcg_at_k(Y, S, 3) == pytest.approx(1.0, abs=TOL)
    assert psprecision_at_k(Y, S, 5, np.full(5, 3.0)) == pytest.approx(1.0, abs=TOL)
    assert psndcg_at_k(Y, S, 5, np.full(5, 3.0)) == pytest.approx(1.0, abs=TOL)


# --------------------------------------------------------------------------- #
# evaluate
# --------------------------------------------------------------------------- #
def test_evaluate_matches_individual_metrics():
    rng = np.random.default_rng(5)
    Y = sp.csr_matrix(make_data(rng, N=60, K=20))
    S = np.round(rng.random((60, 20)), 1)
    w = inverse_propensity(Y, *propensity_params("wiki10"))
    df = evaluate(Y, S, ks=(1, 3, 5), inv_propensity=w)
    assert isinstance(df, pd.DataFrame)
    assert list(df.index) == ["P", "nDCG", "PSP", "PSnDCG"]
    assert list(df.columns) == [1, 3, 5]
    assert df.attrs == {"num_points": 60, "percent": True}
    for k in (1, 3, 5):
        m = lib_metrics(Y, S, k, w)
        for name, v in m.items():
            assert df.loc[name, k] == pytest.approx(100 * v, abs=1e-7)
    df2 = evaluate(Y, topk(S, 5), ks=[2, 4], percent=False)
    assert list(df2.index) == ["P", "nDCG"]
    assert df2.attrs["percent"] is False
    assert df2.loc["P", 2] == pytest.approx(precision_at_k(Y, S, 2), abs=TOL)
    assert df2.loc["nDCG", 4] == pytest.approx(ndcg_at_k(Y, S, 4), abs=TOL)
    with pytest.raises(ShapeError, match=r"TopK has only 3 columns, fewer than k=5"):
        evaluate(Y, topk(S, 3), ks=(1, 5))


# --------------------------------------------------------------------------- #
# Propensities
# --------------------------------------------------------------------------- #
def test_inverse_propensity_formula():
    # 4 training rows, label counts [2, 0, 1]
    Y = sp.csr_matrix(np.array([[1, 0, 1], [1, 0, 0], [0, 0, 0], [0, 0, 0]]))
    a, b = 0.55, 1.5
    C = (math.log(4) - 1) * (b + 1) ** a
    expect = [1 + C * (2 + b) ** -a, 1 + C * (0 + b) ** -a, 1 + C * (1 + b) ** -a]
    got = inverse_propensity(Y)
    assert got.shape == (3,)
    assert np.allclose(got, expect, rtol=0, atol=1e-12)
    assert np.allclose(inverse_propensity(Y.toarray()), expect, rtol=0, atol=1e-12)
    assert np.allclose(inverse_propensity(np.array([2, 0, 1]), num_points=4), expect, atol=1e-12)
    a, b = 0.6, 2.6
    C = (math.log(4) - 1) * (b + 1) ** a
    assert inverse_propensity(Y, a, b)[0] == pytest.approx(1 + C * (2 + b) ** -a, abs=1e-12)
    with pytest.raises(ShapeError, match=r"num_points is required when Y_train is a vector of label counts"):
        inverse_propensity(np.array([2, 0, 1]))
    with pytest.raises(ShapeError, match=r"num_points=5 disagrees with Y_train's 4 rows"):
        inverse_propensity(Y, num_points=5)
    with pytest.raises(ShapeError, match=r"label counts must be finite and non-negative"):
        inverse_propensity(np.array([2, -1, 1]), num_points=4)
    with pytest.raises(ShapeError, match=r"label counts must be finite and non-negative"):
        inverse_propensity(np.array([2, np.nan, 1]), num_points=4)


def test_propensity_params():
    assert propensity_params("Amazon-670K") == (0.6, 2.6)
    assert propensity_params("amazoncat-13k") == (0.6, 2.6)
    assert propensity_params("Wiki10-31K") == (0.5, 0.4)
    assert propensity_params("WikiLSHTC-325K") == (0.5, 0.4)
    assert propensity_params("eurlex-4k") == (0.55, 1.5)


# --------------------------------------------------------------------------- #
# F1 and Hamming against scikit-learn
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_f1_and_hamming_vs_sklearn(seed):
    skm = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(seed)
    T = (rng.random((30, 9)) < 0.3).astype(int)
    P = (rng.random((30, 9)) < 0.3).astype(int)
    T[0] = 0
    P[0] = 0  # row with neither: 0/0 -> 0
    T[:, 4] = 0
    P[:, 4] = 0  # label with neither: 0/0 -> 0
    P[2] = 0  # row with labels but no predictions
    for Tin, Pin in [(T, P), (sp.csr_matrix(T), sp.csr_matrix(P)), (T.astype(bool), sp.csr_matrix(P))]:
        f = f1_scores(Tin, Pin)
        assert f["micro"] == pytest.approx(skm.f1_score(T, P, average="micro", zero_division=0), abs=TOL)
        assert f["macro"] == pytest.approx(skm.f1_score(T, P, average="macro", zero_division=0), abs=TOL)
        assert f["example"] == pytest.approx(
            skm.f1_score(T, P, average="samples", zero_division=0), abs=TOL
        )
        assert hamming_loss(Tin, Pin) == pytest.approx(skm.hamming_loss(T, P), abs=TOL)


def test_f1_hand_computed():
    # T = [[1,1,0],[0,0,1]], P = [[1,0,1],[0,0,1]]
    # TP=2 FP=1 FN=1 -> micro = 4/6; labels: l0 F1=1, l1 F1=0, l2 2/(2+1)=2/3 -> macro = 5/9
    # rows: r0 2*1/(2+2) = 1/2, r1 = 1 -> example = 3/4; hamming = 2/6
    T = np.array([[1, 1, 0], [0, 0, 1]])
    P = np.array([[1, 0, 1], [0, 0, 1]])
    f = f1_scores(T, P)
    assert f["micro"] == pytest.approx(2 / 3, abs=TOL)
    assert f["macro"] == pytest.approx(5 / 9, abs=TOL)
    assert f["example"] == pytest.approx(3 / 4, abs=TOL)
    assert hamming_loss(T, P) == pytest.approx(1 / 3, abs=TOL)


# --------------------------------------------------------------------------- #
# Errors
# --------------------------------------------------------------------------- #
def test_errors():
    Y = sp.csr_matrix(np.array([[1, 0, 0], [0, 1, 0]]))
    S = np.random.default_rng(0).random((2, 3))
    w = np.ones(3)
    with pytest.raises(ShapeError, match=r"Y_true has 2 rows but scores have 1"):
        precision_at_k(Y, S[:1], 1)
    with pytest.raises(ShapeError, match=r"Y_true has 3 columns \(labels\) but scores have 2"):
        ndcg_at_k(Y, S[:, :2], 1)
    with pytest.raises(ShapeError, match=r"Y_true has 2 rows but the TopK has 4"):
        precision_at_k(Y, topk(np.vstack([S, S]), 2), 1)
    with pytest.raises(ArgumentError, match=r"k must be a positive integer, got 0"):
        precision_at_k(Y, S, 0)
    with pytest.raises(ArgumentError, match=r"k must be a positive integer, got 2\.0"):
        precision_at_k(Y, S, 2.0)
    with pytest.raises(ShapeError, match=r"k=4 exceeds the number of labels K=3"):
        precision_at_k(Y, S, 4)
    with pytest.raises(ShapeError, match=r"scores contain non-finite values \(NaN or inf\), first in row 0"):
        precision_at_k(Y, np.array([[np.nan, 0, 0], [0, 0, 0]]), 1)
    with pytest.raises(ShapeError, match=r"TopK contains label index 3 >= K=3"):
        precision_at_k(Y, TopK(np.array([[0], [3]]), np.zeros((2, 1))), 1)
    with pytest.raises(ShapeError, match=r"TopK scores contain NaN"):
        ndcg_at_k(Y, TopK(np.array([[0], [1]]), np.array([[np.nan], [0.0]])), 1)
    with pytest.raises(ShapeError, match=r"TopK rows contain duplicate label indices"):
        precision_at_k(Y, TopK(np.array([[0, 0], [1, 2]]), np.zeros((2, 2))), 2)
    with pytest.raises(ShapeError, match=r"Y_true must contain only 0/1 values"):
        precision_at_k(np.array([[2, 0, 0], [0, 1, 0]]), S, 1)
    with pytest.raises(ShapeError, match=r"Y_true must be 2-D \(N, K\), got shape \(3,\)"):
        precision_at_k(np.array([1, 0, 0]), S, 1)
    with pytest.raises(ShapeError, match=r"Y_true must be numeric or boolean, got dtype <U1"):
        precision_at_k(np.array([["1", "0", "0"], ["0", "1", "0"]]), S, 1)
    with pytest.raises(ShapeError, match=r"inv_propensity must have shape \(3,\) to match Y_true, got \(4,\)"):
        psprecision_at_k(Y, S, 1, np.ones(4))
    with pytest.raises(ShapeError, match=r"inv_propensity contains non-finite values"):
        psndcg_at_k(Y, S, 1, np.array([1.0, np.nan, 1.0]))
    with pytest.raises(ShapeError, match=r"Y_true shape \(2, 3\) does not match Y_pred shape \(2, 4\)"):
        f1_scores(Y, np.zeros((2, 4)))
    with pytest.raises(ShapeError, match=r"Y_pred must contain only 0/1 values"):
        hamming_loss(Y, np.full((2, 3), 0.5))
    with pytest.raises(ArgumentError, match=r"each k in ks must be a positive integer, got 0"):
        evaluate(Y, S, ks=(0, 1))
    with pytest.raises(ShapeError, match=r"ks must contain at least one cut-off"):
        evaluate(Y, S, ks=())


# --------------------------------------------------------------------------- #
# Properties
# --------------------------------------------------------------------------- #
@st.composite
def problems(draw):
    N = draw(st.integers(1, 8))
    K = draw(st.integers(1, 8))
    Y = np.array(draw(st.lists(st.lists(st.integers(0, 1), min_size=K, max_size=K), min_size=N, max_size=N)))
    S = np.array(
        draw(st.lists(st.lists(st.integers(0, 3), min_size=K, max_size=K), min_size=N, max_size=N)),
        dtype=float,
    )
    w = np.array(draw(st.lists(st.floats(0.5, 10.0), min_size=K, max_size=K)))
    k = draw(st.integers(1, K))
    return Y, S, w, k


@settings(max_examples=150, deadline=None)
@given(problems())
def test_property_bounds_and_reference(prob):
    Y, S, w, k = prob
    got = lib_metrics(Y, S, k, w)
    for name, v in got.items():
        assert -1e-12 <= v <= 1 + 1e-12, (name, v)
    assert_close(got, ref_metrics(Y, ref_rankings(S), k, w))


@settings(max_examples=100, deadline=None)
@given(problems())
def test_property_perfect_scores(prob):
    Y, _, w, k = prob
    # Perfect ranking for PS metrics: relevant labels first, by descending weight.
    S = Y * (100.0 + w)
    got = lib_metrics(Y, S, k, w)
    has = Y.sum(axis=1) > 0
    frac = has.mean()
    assert got["nDCG"] == pytest.approx(frac, abs=1e-12)  # 1 on every labelled row
    if has.any():
        assert got["PSP"] == pytest.approx(1.0, abs=1e-12)
        assert got["PSnDCG"] == pytest.approx(1.0, abs=1e-12)
        ideal_p = np.mean([min(k, n) / k for n in Y.sum(axis=1)])
        assert got["P"] == pytest.approx(ideal_p, abs=1e-12)
