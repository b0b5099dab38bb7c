"""The steps of FastXML's compiled node solver (:mod:`mlgp.baselines._fastxml.l1_newton`), each
checked against a computation that does not use the solver: the coordinate shuffle draws every
permutation equally often from a splitmix64 stream that matches the reference algorithm; and each
piece of :func:`~mlgp.baselines._fastxml.l1_logistic.solve_node` (class costs, loss derivatives,
shrinking, the coordinate step, the quadratic model, the line search, exp(wᵀx)) computes what its
docstring states."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from mlgp.baselines._fastxml import l1_newton as N
from mlgp.baselines._fastxml.l1_layout import NodeData

from test_fastxml_solver_properties import (_C_NEG, _C_POS, _costs, _loss_gradient, _min_norm_subgradient, _node,
                                            _objective, _problem, _with_bias)

_MASK64 = (1 << 64) - 1


def _splitmix64(state: int, count: int) -> list[int]:
    """``count`` draws of splitmix64 (Vigna's reference algorithm) from ``state``, in Python integers."""
    out = []
    for _ in range(count):
        state = (state + 0x9E3779B97F4A7C15) & _MASK64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        out.append(z ^ (z >> 31))
    return out


# --------------------------------------------------------------------------- #
# The coordinate order
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("size", [3, 4])
def test_shuffle_draws_every_permutation_equally_often(size) -> None:
    """2000 · size! shuffles of 0..size−1, chained from one fixed seed: every permutation occurs
    (Sattolo's algorithm, which draws below the position instead of up to it, gives only the
    (size − 1)! cycles, never a fixed point), the counts pass a chi-square test of uniformity at
    the 1e-4 level, and the share of shuffles with a fixed point is the uniform one within 0.02."""
    perms = list(itertools.permutations(range(size)))
    draws = 2000 * len(perms)
    counts = dict.fromkeys(perms, 0)
    state = np.uint64(20261123)
    index = np.empty(size, np.int64)
    for _ in range(draws):
        index[:] = np.arange(size)
        state = np.uint64(N._shuffle(index, size, state))
        counts[tuple(index.tolist())] += 1
    observed = np.array([counts[p] for p in perms])
    assert observed.min() > 0, {p: c for p, c in counts.items() if c == 0}
    assert stats.chisquare(observed).pvalue > 1e-4, observed
    with_fixed_point = sum(c for p, c in counts.items() if any(p[i] == i for i in range(size)))
    uniform = sum(1 for p in perms if any(p[i] == i for i in range(size))) / len(perms)
    assert with_fixed_point / draws == pytest.approx(uniform, abs=0.02)


def test_shuffle_permutes_the_prefix_only_and_follows_its_seed() -> None:
    """``_shuffle(index, size, state)`` permutes ``index[:size]`` and leaves the rest; it uses
    size − 1 draws of the generator (none for size ≤ 1) and returns the state after them; the same
    state gives the same order, and another state another one."""
    for size in (0, 1, 2, 7, 10):
        index = np.arange(10, dtype=np.int64) * 3 + 1
        state = np.uint64(987654321)
        again = index.copy()
        new_state = N._shuffle(index, size, state)
        assert N._shuffle(again, size, state) == new_state
        np.testing.assert_array_equal(index, again)
        np.testing.assert_array_equal(np.sort(index[:size]), np.arange(size) * 3 + 1)
        np.testing.assert_array_equal(index[size:], np.arange(size, 10) * 3 + 1)
        assert new_state == (987654321 + max(size - 1, 0) * 0x9E3779B97F4A7C15) & _MASK64
    one, other = np.arange(10, dtype=np.int64), np.arange(10, dtype=np.int64)
    N._shuffle(one, 10, np.uint64(1))
    N._shuffle(other, 10, np.uint64(2))
    assert not np.array_equal(one, other)


def test_splitmix64_is_the_reference_generator() -> None:
    """``_next`` is splitmix64: its first draw from 0 is the published 0xE220A8397B1DCDAF, and its
    first 50 draws from 0 and from 2⁶³ + 5 (the state wraps past 2⁶⁴) equal Python's reference."""
    assert _splitmix64(0, 1) == [0xE220A8397B1DCDAF]
    for start in (0, 2**63 + 5):
        state = np.uint64(start)
        got = []
        for _ in range(50):
            state, draw = N._next(state)
            state = np.uint64(state)
            got.append(int(draw))
        assert got == _splitmix64(start, 50)


# --------------------------------------------------------------------------- #
# The pieces of solve_node
# --------------------------------------------------------------------------- #
def test_violation_is_the_minimum_norm_subgradient() -> None:
    """``_violation(g, x, limit)`` is the minimum-norm subgradient of g·x + |x| in x, and says that a
    coordinate may be shrunk exactly where x = 0 and |g| < 1 − limit."""
    for g in np.linspace(-3.0, 3.0, 61):
        for x in (-0.5, 0.0, 0.5):
            for limit in (0.0, 0.25):
                viol, inside = N._violation(g, x, limit)
                assert viol == pytest.approx(_min_norm_subgradient(np.array([g]), np.array([x]))[0], abs=1e-15)
                assert inside == (x == 0.0 and g + 1.0 > limit and g - 1.0 < -limit)


def test_coordinate_step_minimises_the_one_dimensional_model() -> None:
    """``_coordinate_step(g, h, x)`` minimises q(z) = g z + h z² / 2 + |x + z|: 0 is in q's
    subdifferential at z, and q is no lower 1e-6 to either side, on draws that reach all three
    cases (x + z > 0, < 0 and = 0)."""
    rng = np.random.default_rng(0)
    cases = set()
    for _ in range(2000):
        g, h, x = rng.normal(scale=2.0), rng.uniform(0.05, 5.0), rng.choice([0.0, rng.normal()])
        z = N._coordinate_step(g, h, x)
        y = x + z
        if y == 0.0:
            assert abs(g + h * z) <= 1.0 + 1e-12
        else:
            assert g + h * z + np.sign(y) == pytest.approx(0.0, abs=1e-12 * (1 + abs(g) + abs(h * x)))
        q = lambda t: g * t + h * t * t / 2 + abs(x + t)  # noqa: E731
        assert q(z) <= min(q(z - 1e-6), q(z + 1e-6)) + 1e-15
        cases.add(int(np.sign(y)))
    assert cases == {-1, 0, 1}


@pytest.mark.parametrize("bias", [0.0, 0.5, 3.0])
def test_scratch_and_loss_derivatives_are_the_dense_ones(bias) -> None:
    """``_scratch`` holds C_{δ_i} (n,) and Σ_{δ_i<0} C_i x_ij (m,), exp(wᵀx) = 1, a copy of w, the
    order 0..m−1; ``_loss_derivatives`` at a w with zeros (``exp_wx`` = exp(Xw)) gives the loss's
    gradient and its curvature Σ_i x_ij² C_i σ(z_i)(1 − σ(z_i)) (+ ν) of the dense computation,
    the bias column included, within relative 1e-12."""
    A, side = _problem(5, n=60, d=7)
    node, Xb = _node(A, side, bias), _with_bias(A, bias)
    m = Xb.shape[1]
    w = np.zeros(m)
    work = N._scratch(node, _C_POS, _C_NEG, w)
    np.testing.assert_array_equal(work.C, _costs(side))
    np.testing.assert_allclose(work.neg_sum, Xb.T @ np.where(side < 0, _C_NEG, 0.0), rtol=1e-14)
    np.testing.assert_array_equal(work.exp_wx, np.ones(A.shape[0]))
    np.testing.assert_array_equal(work.wpd, w)
    assert not np.shares_memory(work.wpd, w)
    np.testing.assert_array_equal(work.index, np.arange(m))
    v = np.random.default_rng(5).normal(size=m) * (np.arange(m) % 3 != 1)
    z = Xb @ v
    work.exp_wx[:] = np.exp(z)
    N._loss_derivatives(node, work)
    np.testing.assert_allclose(work.grad, _loss_gradient(Xb, side, v), rtol=1e-12, atol=1e-13)
    s = 1.0 / (1.0 + np.exp(-z))
    np.testing.assert_allclose(work.hdiag, N._NU + (Xb ** 2).T @ (_costs(side) * s * (1 - s)), rtol=1e-12)


def test_active_columns_lists_the_unshrunk_columns_in_increasing_order() -> None:
    """``_active_columns`` lists the columns not at zero well inside their bounds (|g| < 1 − shrink
    where w = 0), increasing, and returns the largest and summed violation over them."""
    rng = np.random.default_rng(6)
    grad = rng.uniform(-2.0, 2.0, 40)
    w = np.where(rng.random(40) < 0.6, 0.0, rng.normal(size=40))
    for shrink in (0.0, 0.3, np.inf):
        index = np.full(40, -1, np.int64)
        active, gmax, gnorm = N._active_columns(grad, w, shrink, index)
        keep = ~((w == 0) & (grad + 1 > shrink) & (grad - 1 < -shrink))
        np.testing.assert_array_equal(index[:active], np.flatnonzero(keep))
        viol = _min_norm_subgradient(grad, w)[keep]
        assert gmax == (viol.max() if viol.size else 0.0)
        assert gnorm == pytest.approx(viol.sum(), rel=1e-14)
    assert N._active_columns(grad, w, np.inf, index)[0] == 40


def _newton_direction(node: NodeData, Xb: np.ndarray, w: np.ndarray):
    """(work, passes, moved): the quadratic model at ``w`` (m,) minimised over every column to 1e-14
    times its initial violation; ``Xb`` (n, m) is the node's matrix, dense."""
    work = N._scratch(node, _C_POS, _C_NEG, np.zeros_like(w))
    work.exp_wx[:] = np.exp(Xb @ w)
    N._loss_derivatives(node, work)
    active, _, gnorm = N._active_columns(work.grad, w, np.inf, work.index)
    passes, moved, _ = N._minimise_quadratic(node, work, w, active, 1e-14 * gnorm, np.uint64(11))
    return work, passes, moved


@pytest.mark.parametrize("n, d, bias", [(80, 8, 0.0), (80, 8, 3.0), (60, 30, 0.0), (200, 40, 0.0)])
def test_minimise_quadratic_solves_the_quadratic_model(n, d, bias) -> None:
    """From a w with zeros, ``_minimise_quadratic`` leaves in ``wpd`` the minimiser of
    gᵀd + dᵀ(XᵀDX + νI)d / 2 + ‖w + d‖₁ (its minimum-norm subgradient, computed densely, below
    1e-8) and dᵀx_i in ``xd``. With 30 and 40 columns, coordinates shrunk in early passes leave
    their bounds as the others move: only the final pass over every column finds them."""
    A, side = _problem(7, n=n, d=d)
    node, Xb = _node(A, side, bias), _with_bias(A, bias)
    w = np.random.default_rng(7).normal(size=Xb.shape[1]) * (np.arange(Xb.shape[1]) % 2 == 0)
    work, passes, moved = _newton_direction(node, Xb, w)
    assert moved and 1 <= passes < 1000
    d = work.wpd - w
    z = Xb @ w
    s = 1.0 / (1.0 + np.exp(-z))
    H = Xb.T @ (Xb * (_costs(side) * s * (1 - s))[:, None]) + N._NU * np.eye(Xb.shape[1])
    assert _min_norm_subgradient(_loss_gradient(Xb, side, w) + H @ d, work.wpd).max() < 1e-8
    np.testing.assert_allclose(work.xd, Xb @ d, rtol=1e-10, atol=1e-12)


def test_line_search_takes_a_sufficient_decrease_and_refuses_an_ascent() -> None:
    """Along the Newton direction from w = 0, ``_line_search`` accepts w = 2⁻ᵏ d with
    f(w) − f(0) ≤ σ 2⁻ᵏ (gᵀd + ‖d‖₁), returns ‖w‖₁ and moves exp(wᵀx) there; along an ascent
    direction it refuses after its halvings and leaves w and exp(wᵀx) as they were."""
    A, side = _problem(8, n=80, d=8)
    node, Xb = _node(A, side, 3.0), _with_bias(A, 3.0)
    w = np.zeros(Xb.shape[1])
    work, _, _ = _newton_direction(node, Xb, w)
    d = work.wpd.copy()
    g = work.grad.copy()
    accepted, norm = N._line_search(node, work, w, 0.0)
    assert accepted and norm == pytest.approx(np.abs(w).sum(), rel=1e-15)
    alpha = w[np.argmax(np.abs(d))] / d[np.argmax(np.abs(d))]
    assert math.log2(alpha) == int(math.log2(alpha)) and 0 < alpha <= 1
    np.testing.assert_array_equal(w, alpha * d)
    assert _objective(Xb, side, w) - _objective(Xb, side, 0 * w) <= N._SIGMA * alpha * (g @ d + np.abs(d).sum()) + 1e-12
    np.testing.assert_allclose(work.exp_wx, np.exp(Xb @ w), rtol=1e-12)
    w = np.zeros(Xb.shape[1])
    work, _, _ = _newton_direction(node, Xb, w)
    up = work.grad + np.sign(work.grad)  # f'(0; up) = Σ (|g_j| + 1)² > 0: f rises along it
    work.wpd[:] = up
    work.xd[:] = Xb @ up
    accepted, norm = N._line_search(node, work, w, 0.0)
    assert not accepted and norm == 0.0
    np.testing.assert_array_equal(w, 0.0)
    np.testing.assert_array_equal(work.exp_wx, 1.0)
    np.testing.assert_array_equal(work.wpd, up * 2.0 ** -N._MAX_LINE_SEARCH)  # halved each time


def test_exp_margins_is_the_dense_product() -> None:
    """``_exp_margins`` writes exp(wᵀx_i) of every point (the bias column included) for a w with
    zeros, within relative 1e-13."""
    A, side = _problem(9, n=50, d=6)
    node, Xb = _node(A, side, 0.5), _with_bias(A, 0.5)
    w = np.array([0.3, 0.0, -1.2, 0.0, 0.0, 2.0, -0.7])
    out = np.full(A.shape[0], np.nan)
    N._exp_margins(node, w, out)
    np.testing.assert_allclose(out, np.exp(Xb @ w), rtol=1e-13)
