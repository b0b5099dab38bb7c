"""Tests of FastXML's parts (mlgp.baselines._fastxml): the split losses against hand values, the
closed-form rankings against a brute force over all permutations, the δ step, the alternating
minimisation of a node split (no r or δ step raises the objective, which is recomputed by brute
force; the loop ends; the returned sides are the separator's), the w step against scikit-learn's
LogisticRegression, the leaves' label distributions and the paired row products used in routing."""

from __future__ import annotations

import functools
import itertools
import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression

from mlgp.baselines._fastxml import split as split_module
from mlgp.baselines._fastxml.forest import paired_row_dots
from mlgp.baselines._fastxml.loss import split_loss
from mlgp.baselines._fastxml.split import (SplitOptions, _l1_argument, fit_separator, node_objective, rankings,
                                           side_costs, split_node, update_sides)
from mlgp.baselines._fastxml.tree import leaf_distribution

L3 = 1.0 / math.log2(3.0)  # discount of position 1 (0-based)
L5 = 1.0 / math.log2(5.0)  # discount of position 3


# --------------------------------------------------------------------------- #
# Split losses: hand values
# --------------------------------------------------------------------------- #
#: Points with 1, 2, 3 and no labels among K = 4.
Y_HAND = np.array([[1, 0, 0, 0],
                   [0, 1, 0, 1],
                   [1, 1, 1, 0],
                   [0, 0, 0, 0]])


@pytest.mark.parametrize("k, point, discount", [
    (None, [1.0, 1 / (1 + L3), 1 / (1 + L3 + 0.5), 0.0], [1.0, L3, 0.5, L5]),
    (4, [1.0, 1 / (1 + L3), 1 / (1 + L3 + 0.5), 0.0], [1.0, L3, 0.5, L5]),
    (9, [1.0, 1 / (1 + L3), 1 / (1 + L3 + 0.5), 0.0], [1.0, L3, 0.5, L5]),     # k > K: all of them
    (2, [1.0, 1 / (1 + L3), 1 / (1 + L3), 0.0], [1.0, L3, 0.0, 0.0]),
    (1, [1.0, 1.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.0]),
])
def test_ndcg_loss_hand_values(k, point, discount) -> None:
    G, d = split_loss(sp.csr_matrix(Y_HAND), "ndcg", k)
    assert sp.isspmatrix_csr(G) and G.dtype == np.float64 and d.dtype == np.float64
    np.testing.assert_allclose(d, discount, rtol=1e-15, atol=0)
    np.testing.assert_allclose(G.toarray(), np.array(point)[:, None] * Y_HAND, rtol=1e-15, atol=0)


@pytest.mark.parametrize("k, discount", [(None, [1.0, L3, 0.5, L5]), (3, [1.0, L3, 0.5, 0.0])])
def test_dcg_loss_has_unit_point_weights(k, discount) -> None:
    G, d = split_loss(sp.csr_matrix(Y_HAND), "dcg", k)
    np.testing.assert_allclose(d, discount, rtol=1e-15, atol=0)
    np.testing.assert_array_equal(G.toarray(), Y_HAND)


@pytest.mark.parametrize("k, kk", [(None, 4), (2, 2), (1, 1)])
def test_precision_loss(k, kk) -> None:
    G, d = split_loss(sp.csr_matrix(Y_HAND), "precision", k)
    np.testing.assert_array_equal(d, [1.0] * kk + [0.0] * (4 - kk))
    np.testing.assert_allclose(G.toarray(), Y_HAND / kk, rtol=1e-15, atol=0)


@pytest.mark.parametrize("loss", ["ndcg", "dcg", "precision"])
def test_label_weights_scale_the_columns(loss) -> None:
    a = np.array([2.0, 0.5, 1.0, 3.0])
    plain, d0 = split_loss(sp.csr_matrix(Y_HAND), loss)
    G, d = split_loss(sp.csr_matrix(Y_HAND), loss, None, a)
    np.testing.assert_array_equal(d, d0)
    np.testing.assert_allclose(G.toarray(), plain.toarray() * a[None, :], rtol=1e-15, atol=0)
    if loss == "ndcg":  # the point weights do not depend on the label weights
        np.testing.assert_allclose(G.toarray()[1], [0, 0.5 / (1 + L3), 0, 3 / (1 + L3)], rtol=1e-15)


def test_unknown_loss_is_refused() -> None:
    with pytest.raises(ValueError, match=r"split_loss must be one of \('ndcg', 'dcg', 'precision'\), got 'map'"):
        split_loss(sp.csr_matrix(Y_HAND), "map")


# --------------------------------------------------------------------------- #
# Rankings: hand case and brute force
# --------------------------------------------------------------------------- #
def test_rankings_hand_case() -> None:
    G = np.array([[0.5, 1.0, 0.0],    # +
                  [0.0, 0.5, 0.0],    # +   side sums  [0.5, 1.5, 0]  → order 1, 0, 2
                  [1.0, 0.0, 1.0],    # −
                  [0.0, 1.0, 1.0]])   # −   side sums  [1, 1, 2]      → order 2, 0, 1 (tie 0/1: 0 first)
    delta = np.array([1, 1, -1, -1], dtype=np.int8)
    disc = np.array([1.0, L3, 0.5])
    d_pos, d_neg = rankings(sp.csr_matrix(G.T), delta, disc)
    np.testing.assert_array_equal(d_pos, [L3, 1.0, 0.5])
    np.testing.assert_array_equal(d_neg, [L3, 0.5, 1.0])
    # one side empty: every label sums to 0, so the order is the label order
    d_pos, d_neg = rankings(sp.csr_matrix(G.T), np.ones(4, dtype=np.int8), disc)
    np.testing.assert_array_equal(d_neg, disc)


@functools.lru_cache(maxsize=None)
def _positions(m: int) -> np.ndarray:
    """Every ranking of m labels as the position of each label: (m!, m)."""
    return np.array([np.argsort(p) for p in itertools.permutations(range(m))])


def _best_gain(S: np.ndarray, discount: np.ndarray) -> float:
    """max over all rankings r of Σ_j S_j · discount[position of j in r], by enumeration."""
    return float((discount[_positions(S.size)] @ S).max())


@pytest.mark.parametrize("m", [1, 2, 3, 4, 5])
def test_rankings_maximise_the_gain_brute_force(rng, m) -> None:
    for trial in range(8):
        n = 7
        G = np.where(rng.random((n, m)) < 0.5, rng.integers(1, 4, size=(n, m)) / 2.0, 0.0)
        delta = np.where(rng.random(n) < 0.5, 1, -1).astype(np.int8)
        k = int(rng.integers(1, m + 1))
        disc = np.where(np.arange(m) < k, 1.0 / np.log2(np.arange(m) + 2.0), 0.0)
        d_pos, d_neg = rankings(sp.csr_matrix(G.T), delta, disc)
        for d, side in ((d_pos, 1), (d_neg, -1)):
            np.testing.assert_array_equal(np.sort(d), np.sort(disc))  # a ranking: each position once
            S = G[delta == side].sum(axis=0)
            assert S @ d == pytest.approx(_best_gain(S, disc), rel=1e-12, abs=1e-12)


# --------------------------------------------------------------------------- #
# The δ step and the objective
# --------------------------------------------------------------------------- #
def test_update_sides_moves_to_the_cheaper_side_and_keeps_ties() -> None:
    delta = np.array([1, -1, 1, -1, 1, -1], dtype=np.int8)
    v_pos = np.array([0.0, 0.0, 2.0, 2.0, 1.0, 1.0])
    v_neg = np.array([1.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    new = update_sides(delta, v_pos, v_neg)
    assert new.dtype == np.int8
    np.testing.assert_array_equal(new, [1, 1, -1, -1, 1, -1])
    np.testing.assert_array_equal(delta, [1, -1, 1, -1, 1, -1])  # input untouched


def _brute_objective(X, G, discount, w, b, delta, opts) -> float:
    """‖w‖₁ + |b| + Σ_i C_δ(δ_i) log(1 + exp(−δ_i (wᵀx_i + b))) − C_r Σ_side best gain (enumerated)."""
    z = X.toarray() @ w + b
    c = np.where(delta > 0, opts.c_pos, opts.c_neg)
    logistic = float(np.sum(c * np.log1p(np.exp(-delta * z))))
    Gd = G.toarray()
    gain = sum(_best_gain(Gd[delta == s].sum(axis=0), discount) for s in (1, -1))
    return float(np.abs(w).sum() + abs(b) + logistic - opts.c_rank * gain)


def test_node_objective_and_side_costs_by_hand(rng) -> None:
    n, m = 9, 4
    G = sp.csr_matrix(np.where(rng.random((n, m)) < 0.5, 1.0, 0.0))
    wx = rng.normal(size=n)
    delta = np.where(rng.random(n) < 0.5, 1, -1).astype(np.int8)
    opts = SplitOptions(c_pos=2.0, c_neg=0.5, c_rank=3.0)
    disc = np.array([1.0, L3, 0.5, L5])
    d_pos, d_neg = rng.permutation(disc), rng.permutation(disc)
    v_pos, v_neg = side_costs(G, wx, d_pos, d_neg, opts)
    Gd = G.toarray()
    np.testing.assert_allclose(v_pos, 2.0 * np.log(1 + np.exp(-wx)) - 3.0 * Gd @ d_pos, rtol=1e-12)
    np.testing.assert_allclose(v_neg, 0.5 * np.log(1 + np.exp(wx)) - 3.0 * Gd @ d_neg, rtol=1e-12)
    expected = 1.25 + sum(v_pos[i] if delta[i] > 0 else v_neg[i] for i in range(n))
    assert node_objective(G, wx, 1.25, delta, d_pos, d_neg, opts) == pytest.approx(expected, rel=1e-12)


def _node(seed: int, n: int = 60, D: int = 15, K: int = 8, loss: str = "ndcg"):
    r = np.random.default_rng(seed)
    X = sp.random(n, D, density=0.3, random_state=seed, format="csr")
    Y = sp.csr_matrix((r.random((n, K)) < 0.3).astype(np.float64))
    G, discount = split_loss(Y, loss)
    return X, G, discount


TIGHT = dict(n_w_updates=3, tol=1e-8, max_iter=1000)


@pytest.mark.parametrize("costs, loss", [
    ({}, "ndcg"),
    ({"c_pos": 1.5, "c_neg": 0.7, "c_rank": 3.0}, "ndcg"),
    ({"c_rank": 0.5}, "precision"),
    ({"c_pos": 0.7}, "dcg"),
])
def test_split_steps_never_increase_the_objective(monkeypatch, costs, loss) -> None:
    opts = SplitOptions(**costs, **TIGHT)
    fitted_on = []
    original = split_module.fit_separator

    def recording(X, delta, opts, seed):
        fitted_on.append(delta.copy())
        return original(X, delta, opts, seed)

    monkeypatch.setattr(split_module, "fit_separator", recording)
    checked = 0
    for seed in range(8):
        X, G, discount = _node(seed, loss=loss)
        fitted_on.clear()
        res = split_node(X, G, discount, opts, np.random.RandomState(seed), trace=True)
        if res is None:
            continue
        steps = [s for s, _ in res.trace]
        assert set(steps) <= {"r", "delta", "w"} and steps[0] == "r"
        assert steps.count("w") == res.w_updates == len(fitted_on)
        for (_, before), (step, after) in zip(res.trace, res.trace[1:]):
            assert after <= before + 1e-9, (seed, step, before, after)
        # it stops when δ does not move after a w-update: no separator is fitted twice on the same δ,
        # and fewer than n_w_updates fits means the last δ was stable
        for a, b in zip(fitted_on, fitted_on[1:]):
            assert not np.array_equal(a, b)
        if res.w_updates < opts.n_w_updates:
            assert steps[-3:] == ["w", "r", "delta"] and res.trace[-1][1] == pytest.approx(res.trace[-3][1])
        # the final state: the last separator, the sides it was fitted on, the best rankings
        ref = _brute_objective(X, G, discount, res.w.toarray().ravel(), res.b, fitted_on[-1], opts)
        assert res.trace[-1][1] == pytest.approx(ref, rel=1e-9, abs=1e-9)
        checked += 1
    assert checked >= 3  # (a split whose sides collapse returns None and has no trace)


@pytest.mark.parametrize("n_w_updates", [1, 2, 4])
def test_split_terminates_and_sides_follow_the_separator(n_w_updates) -> None:
    opts = SplitOptions(n_w_updates=n_w_updates)
    splits = 0
    for seed in range(15):
        X, G, discount = _node(100 + seed, n=30 + 3 * seed, D=10, K=6)
        res = split_node(X, G, discount, opts, np.random.RandomState(seed))
        if res is None:
            continue
        splits += 1
        assert 1 <= res.alternations < opts.max_alternations
        assert 1 <= res.w_updates <= n_w_updates
        assert res.trace == []  # trace=False records nothing
        assert res.w.shape == (1, X.shape[1])
        # a dense BLAS product here, a sparse one in split_node: equal to rounding, so the sides agree
        # exactly where z is clear of 0, or is b itself (no feature of the point in w's support)
        z = X.toarray() @ res.w.toarray().ravel() + res.b
        untouched = np.asarray((abs(X) @ abs(res.w).T).toarray()).ravel() == 0
        clear = untouched | (np.abs(z) > 1e-12 * (1.0 + abs(res.b) + abs(X).max() * abs(res.w).sum()))
        assert clear.mean() > 0.9, np.sort(np.abs(z))[:5]
        np.testing.assert_array_equal(res.positive[clear], z[clear] > 0)
        assert res.positive.any() and not res.positive.all()
    assert splits >= 10


def test_alternation_cap_is_respected() -> None:
    X, G, discount = _node(3)
    res = split_node(X, G, discount, SplitOptions(max_alternations=1), np.random.RandomState(0))
    assert res is None or (res.alternations == 1 and res.w_updates == 1)


def test_one_point_cannot_be_split() -> None:
    X, G, discount = _node(0, n=1)
    assert split_node(X, G, discount, SplitOptions(), np.random.RandomState(0)) is None


# --------------------------------------------------------------------------- #
# The w step against scikit-learn
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("c_pos, c_neg, bias", [(1.0, 1.0, 1.0), (2.0, 0.5, 1.0), (0.8, 3.0, 2.5), (1.0, 1.0, 0.0)])
def test_fit_separator_is_liblinear_l1_logistic_regression(rng, c_pos, c_neg, bias) -> None:
    X = sp.random(80, 12, density=0.4, random_state=7, format="csr")
    delta = np.where(X.toarray()[:, 0] - X.toarray()[:, 1] + 0.3 * rng.normal(size=80) > 0, 1, -1).astype(np.int8)
    opts = SplitOptions(c_pos=c_pos, c_neg=c_neg, bias=bias, tol=1e-10, max_iter=1000)
    w, b, n_iter = fit_separator(X, delta, opts, seed=5)
    assert 1 <= n_iter <= opts.max_iter
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = LogisticRegression(**_l1_argument(), solver="liblinear", C=1.0, class_weight={1: c_pos, -1: c_neg},
                                 fit_intercept=bias > 0, intercept_scaling=bias if bias > 0 else 1.0,
                                 tol=1e-10, max_iter=1000, random_state=0).fit(X, delta)
    assert sp.isspmatrix_csr(w) and w.shape == (1, 12)
    assert np.all(w.data != 0)  # zeros removed
    np.testing.assert_allclose(w.toarray().ravel(), clf.coef_.ravel(), atol=1e-6)
    assert b == pytest.approx(float(clf.intercept_[0]) if bias > 0 else 0.0, abs=1e-6)
    assert 0 < w.nnz < 12  # L1 sparsity, and a real fit


# --------------------------------------------------------------------------- #
# Leaves and routing products
# --------------------------------------------------------------------------- #
#: counts: label 0 → 1, 2 → 3, 3 → 2, 5 → 1 over 5 points (one without labels)
Y_LEAF = sp.csr_matrix(np.array([[1, 0, 1, 0, 0, 0],
                                 [0, 0, 1, 1, 0, 0],
                                 [0, 0, 0, 1, 0, 1],
                                 [0, 0, 1, 0, 0, 0],
                                 [0, 0, 0, 0, 0, 0]], dtype=np.float64))


@pytest.mark.parametrize("top_k, labels, freq", [
    (1, [2], [0.6]),
    (3, [2, 3, 0], [0.6, 0.4, 0.2]),          # 0 and 5 tie: the lower label first
    (10, [2, 3, 0, 5], [0.6, 0.4, 0.2, 0.2]),
])
def test_leaf_distribution_hand_case(top_k, labels, freq) -> None:
    got_labels, got_freq, count = leaf_distribution(Y_LEAF, top_k)
    np.testing.assert_array_equal(got_labels, labels)
    np.testing.assert_allclose(got_freq, freq, rtol=1e-15)
    assert count == 4  # distinct labels, before the cut


def test_leaf_distribution_of_no_points() -> None:
    labels, freq, count = leaf_distribution(Y_LEAF[:0], 3)
    assert labels.size == 0 and freq.size == 0 and count == 0


def test_paired_row_dots_equals_the_dense_products(rng) -> None:
    A = sp.random(50, 30, density=0.2, random_state=1, format="csr")
    B = sp.random(12, 30, density=0.5, random_state=2, format="csr")
    # column 3 is paired 250 times, 7 is paired 130 times, the rest at most a few times
    cols = np.concatenate([np.full(250, 3), np.full(130, 7), np.arange(12), [0, 0, 11]])
    cols = rng.permutation(cols)
    rows = rng.integers(0, 50, size=cols.size)
    got = paired_row_dots(A, rows, B, cols)
    expected = (A.toarray()[rows] * B.toarray()[cols]).sum(axis=1)
    assert got.shape == (cols.size,)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)
    assert paired_row_dots(A, np.zeros(0, np.int64), B, np.zeros(0, np.int64)).shape == (0,)
    # a B with unsorted and duplicate column indices (built from its arrays) is read as its sum
    messy = sp.csr_matrix((np.array([1.0, 2.0, 3.0, 4.0]), np.array([5, 2, 5, 0]), np.array([0, 3, 4])), shape=(2, 30))
    want = A.toarray()[rows[:7]] @ messy.toarray()[[0, 1, 0, 1, 0, 1, 0]].T
    got = paired_row_dots(A, rows[:7], messy, np.array([0, 1, 0, 1, 0, 1, 0]))
    np.testing.assert_allclose(got, np.diag(want), rtol=1e-12, atol=1e-14)
    assert not messy.has_canonical_format  # the caller's matrix is left as it was


def _brute_objective_with_bias(X, G, discount, w, b, delta, opts) -> float:
    """As :func:`_brute_objective`, but with liblinear's bias penalty: the bias feature has value
    ``opts.bias`` and weight b / bias, so the L1 term is ‖w‖₁ + |b| / bias."""
    z = X.toarray() @ w + b
    c = np.where(delta > 0, opts.c_pos, opts.c_neg)
    logistic = float(np.sum(c * np.logaddexp(0.0, -delta * z)))
    Gd = G.toarray()
    gain = sum(_best_gain(Gd[delta == s].sum(axis=0), discount) for s in (1, -1))
    return float(np.abs(w).sum() + abs(b) / opts.bias + logistic - opts.c_rank * gain)


@pytest.mark.parametrize("bias", [0.3, 2.5])
def test_traced_objective_penalises_the_bias_as_liblinear_does(monkeypatch, bias) -> None:
    """With a bias feature value other than 1, every traced w-step objective (and the final one)
    equals a brute-force objective whose L1 term is ‖w‖₁ + |b| / bias (not |b| · bias)."""
    opts = SplitOptions(bias=bias, **TIGHT)
    fits = []
    original = split_module.fit_separator

    def recording(X, delta, opts, seed):
        w, b, n_iter = original(X, delta, opts, seed)
        fits.append((delta.copy(), w.toarray().ravel(), b))
        return w, b, n_iter

    monkeypatch.setattr(split_module, "fit_separator", recording)
    checked, biggest_b = 0, 0.0
    for seed in range(6):
        X, G, discount = _node(seed, n=40, K=6)
        fits.clear()
        res = split_node(X, G, discount, opts, np.random.RandomState(seed), trace=True)
        if res is None:
            continue
        w_steps = [value for step, value in res.trace if step == "w"]
        assert len(w_steps) == len(fits) == res.w_updates
        for value, (delta, w, b) in zip(w_steps, fits):
            ref = _brute_objective_with_bias(X, G, discount, w, b, delta, opts)
            assert value == pytest.approx(ref, rel=1e-10, abs=1e-10), (seed, value, ref)
            biggest_b = max(biggest_b, abs(b))
        delta, w, b = fits[-1]
        ref = _brute_objective_with_bias(X, G, discount, w, b, delta, opts)
        assert res.trace[-1][1] == pytest.approx(ref, rel=1e-10, abs=1e-10)
        checked += 1
    assert checked >= 3
    # the bias term must matter: |b| / bias and |b| · bias differ by more than the tolerance
    assert biggest_b * abs(1.0 / bias - bias) > 1e-3
