"""Properties of FastXML's compiled node solver as a whole
(:mod:`mlgp.baselines._fastxml.l1_logistic`, on the node layout of
:mod:`mlgp.baselines._fastxml.l1_layout`), each checked against a computation that does not use the
solver: with a bias feature of value ≠ 1 it reaches the optimum of the objective (the optimality
conditions in NumPy, scikit-learn's liblinear); the seed picks the coordinate orders only, not the
optimum; the node layout is SciPy's, and :func:`solve_node` on it is fit_level's solver. The
independent computations here serve the tests of the solver's steps too
(``test_fastxml_solver_steps``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression

from mlgp.baselines._fastxml import l1_logistic as L
from mlgp.baselines._fastxml.l1_layout import NodeData, _gather_columns
from mlgp.baselines._fastxml.split import _l1_argument

_C_POS, _C_NEG = 1.5, 0.7


# --------------------------------------------------------------------------- #
# Independent computations
# --------------------------------------------------------------------------- #
def _problem(seed: int, n: int = 150, d: int = 10) -> tuple[sp.csr_matrix, np.ndarray]:
    """A CSR (n, d) of positive values and sides δ (n,) int8 ±1, about 2/3 of them +1: the
    intercept matters (a fit without one, or with another bias value, is worse)."""
    rng = np.random.default_rng(seed)
    A = sp.random(n, d, density=0.5, random_state=seed, format="csr", data_rvs=lambda k: rng.uniform(0.2, 1.0, k))
    A.sort_indices()
    dense = A.toarray()
    side = np.where(dense[:, 0] - dense[:, 1] + 0.4 * rng.normal(size=n) > -0.25, 1, -1).astype(np.int8)
    return A, side


def _with_bias(A: sp.csr_matrix, bias: float) -> np.ndarray:
    """A dense, with a last column of value ``bias`` when bias > 0: (n, d + 1) or (n, d)."""
    dense = A.toarray()
    return np.hstack([dense, np.full((dense.shape[0], 1), bias)]) if bias > 0 else dense


def _costs(side: np.ndarray) -> np.ndarray:
    return np.where(side > 0, _C_POS, _C_NEG)


def _objective(Xb: np.ndarray, side: np.ndarray, v: np.ndarray) -> float:
    """f of the module docstring at the weights ``v`` over the columns of ``Xb`` (bias weight last)."""
    return float(np.abs(v).sum() + (_costs(side) * np.logaddexp(0.0, -side * (Xb @ v))).sum())


def _loss_gradient(Xb: np.ndarray, side: np.ndarray, v: np.ndarray) -> np.ndarray:
    y = side.astype(np.float64)
    return Xb.T @ (-_costs(side) * y / (1.0 + np.exp(y * (Xb @ v))))


def _min_norm_subgradient(g: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The minimum-norm subgradient of (a function of gradient ``g``) + ‖v‖₁, entry by entry."""
    return np.where(v > 0, np.abs(g + 1), np.where(v < 0, np.abs(g - 1), np.maximum(np.abs(g) - 1, 0)))


def _fit_level(A: sp.csr_matrix, side: np.ndarray, bias: float, tol: float = 1e-10, max_iter: int = 1000,
               seed: int = 3) -> tuple[np.ndarray, float, int, np.ndarray]:
    """(w (d,), b, Newton iterations, wᵀx + b (n,)) of one node holding every row of ``A``."""
    n = A.shape[0]
    wx, b, iters = np.zeros(n), np.zeros(1), np.zeros(1, np.int64)
    w_ptr, w_idx, w_val = L.fit_level(np.zeros(1, np.int64), np.array([0, n], np.int64), A.indptr.astype(np.int64),
                                      A.indices, A.data, 0, A.shape[1], side, np.array([seed], np.int64), _C_POS,
                                      _C_NEG, bias, tol, max_iter, wx, b, iters)
    w = np.zeros(A.shape[1])
    w[w_idx] = w_val
    return w, float(b[0]), int(iters[0]), wx


def _node(A: sp.csr_matrix, side: np.ndarray, bias: float) -> NodeData:
    """The node's layout built by SciPy, every column of ``A`` kept (m = d + 1 with a bias)."""
    A = sp.csr_matrix(A, copy=True)
    A.sort_indices()
    cols = sp.csc_matrix(sp.hstack([A, np.full((A.shape[0], 1), bias)]) if bias > 0 else A)
    cols.sort_indices()
    return NodeData(cols.indptr.astype(np.int64), cols.indices.astype(np.uint32), cols.data.astype(np.float64),
                      A.indptr.astype(np.int64), A.indices.astype(np.uint32), A.data.astype(np.float64),
                      side.astype(np.int8), float(bias))


# --------------------------------------------------------------------------- #
# A bias feature of value ≠ 1
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("bias", [0.5, 3.0])
@pytest.mark.parametrize("seed", [0, 1])
def test_bias_other_than_one_reaches_liblinears_optimum(bias, seed) -> None:
    """With bias feature value 0.5 or 3 (its weight w_b penalised, b = w_b · bias), the compiled
    solver's (w, b) at tolerance 1e-10 meets the optimality conditions of f computed densely here
    (minimum-norm subgradient < 1e-6; measured: below 1e-8) and is liblinear's answer through
    scikit-learn's ``LogisticRegression(penalty='l1', intercept_scaling=bias)``, which minimises the
    same f: weights and bias within 1e-6 (measured: within 3e-9), objective within relative 1e-9.
    The answer for bias 1 misses this optimum by more than relative 1e-4 (measured: 5.6e-4 to 2.2e-3),
    so a solver that used bias 1 anywhere fails."""
    A, side = _problem(seed)
    Xb = _with_bias(A, bias)
    w, b, iters, wx = _fit_level(A, side, bias)
    assert 1 <= iters < 1000
    np.testing.assert_allclose(wx, A @ w + b, rtol=1e-12, atol=1e-12)
    v = np.append(w, b / bias)
    assert _min_norm_subgradient(_loss_gradient(Xb, side, v), v).max() < 1e-6
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = LogisticRegression(**_l1_argument(), solver="liblinear", C=1.0, class_weight={1: _C_POS, -1: _C_NEG},
                                 intercept_scaling=bias, tol=1e-12, max_iter=10000, random_state=0).fit(A, side)
    np.testing.assert_allclose(w, clf.coef_.ravel(), atol=1e-6)
    assert b == pytest.approx(float(clf.intercept_[0]), abs=1e-6)
    best = _objective(Xb, side, np.append(clf.coef_.ravel(), clf.intercept_[0] / bias))
    assert _objective(Xb, side, v) == pytest.approx(best, rel=1e-9)
    assert abs(b) > 0.5  # the bias matters here
    w1, b1, _, _ = _fit_level(A, side, 1.0)
    assert _objective(Xb, side, np.append(w1, b1 / bias)) > best * (1 + 1e-4)


def test_node_objective_reads_the_bias_weight_as_b_over_bias() -> None:
    """:func:`node_objective` at (w, b) is f at (w, w_b = b / bias) computed densely, for bias 0.5,
    1 and 3, and without a bias feature."""
    A, side = _problem(2)
    rng = np.random.default_rng(2)
    w = rng.normal(size=A.shape[1]) * (rng.random(A.shape[1]) < 0.6)
    for bias in (0.5, 1.0, 3.0):
        got = L.node_objective(A, side, _C_POS, _C_NEG, bias, w, 0.8)
        assert got == pytest.approx(_objective(_with_bias(A, bias), side, np.append(w, 0.8 / bias)), rel=1e-13)
    assert L.node_objective(A, side, _C_POS, _C_NEG, 0.0, w, 0.0) == pytest.approx(
        _objective(A.toarray(), side, w), rel=1e-13)


# --------------------------------------------------------------------------- #
# The seed
# --------------------------------------------------------------------------- #
def test_the_optimum_does_not_depend_on_the_seed() -> None:
    """The seed picks the coordinate orders only: the same seed gives the same bits, other seeds
    the same optimum (objective within relative 1e-9 at tolerance 1e-10)."""
    A, side = _problem(4)
    Xb = _with_bias(A, 2.0)
    a = _fit_level(A, side, 2.0, seed=1)
    for x, y in zip(a, _fit_level(A, side, 2.0, seed=1)):
        np.testing.assert_array_equal(x, y)
    f = [_objective(Xb, side, np.append(w, b / 2.0)) for w, b, _, _ in (_fit_level(A, side, 2.0, seed=s)
                                                                       for s in (1, 2, 99))]
    assert max(f) == pytest.approx(min(f), rel=1e-9)


# --------------------------------------------------------------------------- #
# The node layout and solve_node
# --------------------------------------------------------------------------- #
def test_gather_columns_is_the_scipy_layout_and_solve_node_is_fit_levels_solver() -> None:
    """``_gather_columns`` on rows 10:70 of a matrix with columns those rows do not use gives the
    layout SciPy gives of those rows over their own columns (renumbered increasingly, the bias
    column last); :func:`solve_node` on it, called directly, gives fit_level's separator bit for
    bit, and meets the optimality conditions."""
    A, side = _problem(10, n=100, d=30)
    A = sp.csr_matrix(A.multiply(np.arange(30) % 4 != 2))  # columns 2, 6, … unused
    A.eliminate_zeros()
    lo, hi, bias = 10, 70, 0.5
    colmap, used = np.full(30, -1, np.int64), np.empty(30, np.int64)
    col_ptr, col_row, col_val, row_ptr, row_col, row_val, m, width = _gather_columns(
        A.indptr.astype(np.int64), A.indices, A.data, 0, lo, hi, bias, colmap, used)
    own = np.unique(A[lo:hi].indices)
    assert m == own.size and width == m + 1
    np.testing.assert_array_equal(used[:m], own)
    expected = _node(sp.csr_matrix(A[lo:hi][:, own]), side[lo:hi], bias)
    for name, got in zip(NodeData._fields, (col_ptr, col_row, col_val, row_ptr, row_col, row_val)):
        np.testing.assert_array_equal(got, getattr(expected, name), err_msg=name)
        assert got.dtype == getattr(expected, name).dtype, name
    n_pos = int(np.sum(side[lo:hi] > 0))
    eps = 1e-10 * max(min(n_pos, hi - lo - n_pos), 1) / (hi - lo)  # fit_level's stopping rule for tol 1e-10
    w = np.zeros(width)
    iters = L.solve_node(NodeData(col_ptr, col_row, col_val, row_ptr, row_col, row_val, side[lo:hi], bias),
                         L.SolverSettings(_C_POS, _C_NEG, eps, 1000, 3), w)
    sub = sp.csr_matrix(A[lo:hi])
    ref_w, ref_b, ref_iters, _ = _fit_level(sub, side[lo:hi], bias)
    assert iters == ref_iters
    np.testing.assert_array_equal(w[:m], ref_w[own])
    assert w[m] * bias == ref_b
    Xb = _with_bias(sp.csr_matrix(A[lo:hi][:, own]), bias)
    assert _min_norm_subgradient(_loss_gradient(Xb, side[lo:hi], w), w).max() < 1e-6


def test_solve_node_counts_its_newton_iterations() -> None:
    """:func:`solve_node` does at most ``max_newton`` iterations (0: w stays 0), and stops at once
    where w = 0 is optimal (every gradient inside [−1, 1])."""
    A, side = _problem(11, n=60, d=6)
    node = _node(A, side, 2.0)
    for cap in (0, 1, 2):
        w = np.zeros(7)
        assert L.solve_node(node, L.SolverSettings(_C_POS, _C_NEG, 1e-12, cap, 5), w) == cap
        assert (cap == 0) == (not w.any())
    tiny = _node(sp.csr_matrix(A * 1e-3), side, 1e-3)  # gradients of size ~1e-3 · n
    w = np.zeros(7)
    assert L.solve_node(tiny, L.SolverSettings(0.1, 0.1, 1e-12, 50, 5), w) == 0
    assert not w.any()


@pytest.mark.parametrize("tol", [1e-1, 1e-2, 1e-3])
def test_fit_levels_stopping_rule_scales_tol_by_the_smaller_class(tol) -> None:
    """fit_level stops a node at ε = tol · max(min(n₊, n − n₊), 1) / n (liblinear's rule):
    :func:`solve_node` called with that ε gives its separator and iteration count, on a node with
    more positive than negative rows (150 rows, about 100 positive), at tolerances loose enough
    for the rule to bind."""
    A, side = _problem(4)
    n, n_pos = A.shape[0], int(np.sum(side > 0))
    assert n_pos > n / 2
    ref_w, ref_b, ref_iters, _ = _fit_level(A, side, 1.0, tol=tol)
    w = np.zeros(A.shape[1] + 1)
    eps = tol * max(min(n_pos, n - n_pos), 1) / n
    iters = L.solve_node(_node(A, side, 1.0), L.SolverSettings(_C_POS, _C_NEG, eps, 1000, 3), w)
    assert iters == ref_iters
    np.testing.assert_array_equal(w[:-1], ref_w)
    assert w[-1] == ref_b
