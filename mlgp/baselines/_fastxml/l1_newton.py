"""The steps of one newGLMNET Newton iteration on a FastXML node, compiled: the loss's derivatives,
the choice of active columns (shrinking), cyclic coordinate descent on the quadratic model in a
random order, the backtracking line search; and the splitmix64 stream that draws the coordinate
orders.

Each step reads a node's :class:`~.l1_layout.NodeData` and updates the work arrays of
:class:`_Scratch`, for the objective f of :mod:`.l1_logistic`, whose
:func:`~.l1_logistic.solve_node` chains them. With g the loss's gradient at w and D_i its second
derivative in wᵀx_i, the quadratic model of a step d is gᵀd + dᵀ(XᵀDX + νI)d / 2 + ‖w + d‖₁ (ν a
tiny ridge), minimised one coordinate at a time. The generator's state is passed in and returned,
never shared, so a result depends only on the node's data and seed.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._jit import compiled
from .l1_layout import NodeData

__all__: list[str] = []  # each step is private to :func:`.l1_logistic.solve_node`

_NU = 1e-12  # the quadratic model's ridge, so that a column of zeros has a positive curvature
_SIGMA = 0.01  # sufficient decrease of the line search
_MAX_LINE_SEARCH = 20
_MAX_INNER = 1000  # coordinate-descent passes per quadratic model
_STEP_CAP = 10.0  # a coordinate moves at most this far in one step


@compiled
def _next(state):  # pragma: no cover - compiled
    """splitmix64: (new state, a 64-bit draw), as uint64."""
    state = state + np.uint64(0x9E3779B97F4A7C15)
    z = state
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return state, z ^ (z >> np.uint64(31))


@compiled
def _shuffle(index, size, state):  # pragma: no cover - compiled
    """Fisher–Yates shuffle of ``index[:size]`` (``index`` (m,) int64, size ≤ m; the rest is left):
    position s = size − 1, …, 1 swaps with t drawn from [0, s] (Lemire's multiply-shift of a draw's
    high 32 bits, uniform to within (s + 1) / 2³²), so every permutation is equally likely. Uses
    size − 1 draws; returns the generator's new state."""
    for s in range(size - 1, 0, -1):
        state, draw = _next(state)
        t = np.int64(((draw >> np.uint64(32)) * np.uint64(s + 1)) >> np.uint64(32))  # in [0, s] (Lemire)
        index[s], index[t] = index[t], index[s]
    return state


@compiled
def _violation(g, x, limit):  # pragma: no cover - compiled
    """(size of the minimum-norm subgradient of loss + |x| at coordinate value ``x`` with loss
    gradient ``g``, whether x = 0 sits inside the L1 term's bounds by more than ``limit``, so that
    the coordinate may be left out)."""
    gp, gn = g + 1.0, g - 1.0
    if x > 0.0:
        return abs(gp), False
    if x < 0.0:
        return abs(gn), False
    if gp < 0.0:
        return -gp, False
    if gn > 0.0:
        return gn, False
    return 0.0, gp > limit and gn < -limit


class _Scratch(NamedTuple):
    """:func:`~.l1_logistic.solve_node`'s work arrays for a node of n points over m columns.

    ``C`` (n,): C_{δ_i}; ``neg_sum`` (m,): Σ_{i: δ_i < 0} C_i x_ij; ``exp_wx`` (n,): exp(wᵀx_i) at
    the current w; ``exp_new`` (n,): the same at a line-search trial point; ``tau`` (n,) and ``D``
    (n,): the loss's first and second derivatives in wᵀx_i, up to sign; ``xd`` (n,): dᵀx_i of the
    step d = ``wpd`` − w; ``dxd`` (n,): D ∘ xd (kept beside xd: a coordinate's gradient then reads
    one array); ``grad`` (m,) and ``hdiag`` (m,): the loss's gradient and curvature (plus ν) at w;
    ``wpd`` (m,): w + d; ``index`` (m,) int64: the columns in coordinate order.
    """

    C: np.ndarray
    neg_sum: np.ndarray
    exp_wx: np.ndarray
    exp_new: np.ndarray
    tau: np.ndarray
    D: np.ndarray
    xd: np.ndarray
    dxd: np.ndarray
    grad: np.ndarray
    hdiag: np.ndarray
    wpd: np.ndarray
    index: np.ndarray


@compiled
def _scratch(node: NodeData, c_pos: float, c_neg: float, w: np.ndarray) -> _Scratch:  # pragma: no cover - compiled
    """The work arrays of :func:`~.l1_logistic.solve_node` at w = 0 (``w`` (m,) zeros): C and
    ``neg_sum`` filled, ``exp_wx`` ones, ``wpd`` a copy of ``w``, ``index`` 0, …, m − 1, the rest
    uninitialised."""
    col_ptr, col_row, col_val, side = node.col_ptr, node.col_row, node.col_val, node.side
    n, m = side.shape[0], col_ptr.shape[0] - 1
    C = np.empty(n)
    for i in range(n):
        C[i] = c_pos if side[i] > 0 else c_neg
    neg_sum = np.zeros(m)
    for j in range(m):
        for p in range(np.uint64(col_ptr[j]), np.uint64(col_ptr[j + 1])):
            if side[col_row[p]] < 0:
                neg_sum[j] += C[col_row[p]] * col_val[p]
    return _Scratch(C, neg_sum, np.ones(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n),
                    np.empty(m), np.empty(m), w.copy(), np.arange(m))


@compiled
def _loss_derivatives(node: NodeData, work: _Scratch) -> None:  # pragma: no cover - compiled
    """Fill ``work.tau``, ``work.D`` (n,) from ``work.exp_wx``, and the loss's gradient
    ``work.grad`` (m,) and curvature ``work.hdiag`` (m,) (plus ν) at the current w: Σ_i x_ij τ_i and
    Σ_i x_ij² D_i summed row by row (one pass over the non-zeros, no work per column), the gradient
    then ``neg_sum`` minus that sum."""
    row_ptr, row_col, row_val, bias = node.row_ptr, node.row_col, node.row_val, node.bias
    n, m = node.side.shape[0], node.col_ptr.shape[0] - 1
    C, tau, D, grad, hdiag = work.C, work.tau, work.D, work.grad, work.hdiag
    for i in range(n):
        e = work.exp_wx[i]
        tau[i] = C[i] / (1.0 + e)
        D[i] = C[i] * e / ((1.0 + e) * (1.0 + e))
    hdiag[:] = _NU
    grad[:] = 0.0
    for i in range(n):
        t, d = tau[i], D[i]
        for p in range(np.uint64(row_ptr[i]), np.uint64(row_ptr[i + 1])):
            q = row_col[p]
            v = row_val[p]
            hdiag[q] += v * v * d
            grad[q] += v * t
        if bias > 0:
            hdiag[m - 1] += bias * bias * d
            grad[m - 1] += bias * t
    for j in range(m):
        grad[j] = work.neg_sum[j] - grad[j]


@compiled
def _active_columns(grad: np.ndarray, w: np.ndarray, shrink: float,
                    index: np.ndarray) -> tuple[int, float, float]:  # pragma: no cover - compiled
    """List in ``index[:active]``, in increasing order, the columns of ``grad`` (m,) and ``w`` (m,)
    not shrunk (a coordinate at zero inside its bounds by more than ``shrink`` is left out of the
    Newton iteration); returns (active, largest violation, sum of violations) over them."""
    gmax = 0.0
    gnorm = 0.0
    active = 0
    for j in range(grad.shape[0]):
        viol, inside = _violation(grad[j], w[j], shrink)
        if inside:
            continue
        index[active] = j
        active += 1
        gmax = max(gmax, viol)
        gnorm += viol
    return active, gmax, gnorm


@compiled
def _coordinate_step(g: float, h: float, x: float) -> float:  # pragma: no cover - compiled
    """The minimiser z of g z + h z² / 2 + |x + z| (h > 0): one coordinate's step."""
    gp, gn = g + 1.0, g - 1.0
    if gp <= h * x:
        return -gp / h
    if gn >= h * x:
        return -gn / h
    return -x


@compiled
def _descent_pass(node: NodeData, work: _Scratch, w: np.ndarray, size: int, limit: float,
                  state: np.uint64) -> tuple[int, float, float, bool, np.uint64]:  # pragma: no cover - compiled
    """One pass of coordinate descent on the quadratic model over ``work.index[:size]``, shuffled
    from ``state`` first; a coordinate at zero inside its bounds by more than ``limit`` is shrunk
    (moved past the pass's end). Moves ``work.wpd`` (m,) and ``work.xd``, ``work.dxd`` (n,) along.
    Returns (the size left, largest and summed violation of the coordinates that moved, whether one
    moved, the generator's new state)."""
    col_ptr, col_row, col_val = node.col_ptr, node.col_row, node.col_val
    index, wpd, xd, dxd, D = work.index, work.wpd, work.xd, work.dxd, work.D
    gmax = 0.0
    gnorm = 0.0
    moved = False
    state = _shuffle(index, size, state)
    s = 0
    while s < size:
        j = index[s]
        g = work.grad[j] + (wpd[j] - w[j]) * _NU
        for p in range(np.uint64(col_ptr[j]), np.uint64(col_ptr[j + 1])):
            g += col_val[p] * dxd[col_row[p]]
        viol, inside = _violation(g, wpd[j], limit)
        if inside:
            size -= 1
            index[s], index[size] = index[size], index[s]
            continue
        z = _coordinate_step(g, work.hdiag[j], wpd[j])
        s += 1
        if abs(z) < 1e-12:
            continue
        moved = True
        gmax = max(gmax, viol)
        gnorm += viol
        z = min(max(z, -_STEP_CAP), _STEP_CAP)
        wpd[j] += z
        for p in range(np.uint64(col_ptr[j]), np.uint64(col_ptr[j + 1])):
            i = col_row[p]
            xd[i] += col_val[p] * z
            dxd[i] += D[i] * col_val[p] * z
    return size, gmax, gnorm, moved, state


@compiled
def _minimise_quadratic(node: NodeData, work: _Scratch, w: np.ndarray, active: int, bound: float,
                        state: np.uint64) -> tuple[int, bool, np.uint64]:  # pragma: no cover - compiled
    """Minimise the quadratic model at ``w`` (m,) plus the L1 term over the columns
    ``work.index[:active]`` by passes of :func:`_descent_pass`, from ``work.wpd`` = w, until the
    passes' summed violation falls to ``bound`` with no column shrunk, or after ``_MAX_INNER``
    passes. Leaves w + d in ``work.wpd`` and dᵀx_i in ``work.xd``. Returns (passes, whether a
    coordinate moved, the generator's new state)."""
    n = node.side.shape[0]
    work.xd[:] = 0.0
    work.dxd[:] = 0.0
    work.wpd[:] = w
    size = active
    gmax_old = np.inf
    moved = False
    inner = 0
    while inner < _MAX_INNER:
        size, gmax_new, gnorm, moved_now, state = _descent_pass(node, work, w, size, gmax_old / n, state)
        moved = moved or moved_now
        inner += 1
        if gnorm <= bound:
            if size == active:
                break
            size = active  # check the shrunk coordinates once more
            gmax_old = np.inf
            continue
        gmax_old = gmax_new
    return inner, moved, state


@compiled
def _line_search(node: NodeData, work: _Scratch, w: np.ndarray,
                 w_norm: float) -> tuple[bool, float]:  # pragma: no cover - compiled
    """Backtracking line search from ``w`` (m,), of 1-norm ``w_norm``, along d = ``work.wpd`` − w,
    halving d (and ``work.xd``) until f decreases by σ times the model's decrease, at most
    ``_MAX_LINE_SEARCH`` times. On success moves ``w`` and ``work.exp_wx`` to the accepted point.
    Returns (whether a step was accepted, the 1-norm of the new w)."""
    side, C, xd, wpd = node.side, work.C, work.xd, work.wpd
    n, m = side.shape[0], w.shape[0]
    decrease = 0.0
    w_norm_new = 0.0
    for j in range(m):
        decrease += work.grad[j] * (wpd[j] - w[j])
        w_norm_new += abs(wpd[j])
    decrease += w_norm_new - w_norm
    neg_xd = 0.0
    for i in range(n):
        if side[i] < 0:
            neg_xd += C[i] * xd[i]
    for _ in range(_MAX_LINE_SEARCH):
        cond = w_norm_new - w_norm + neg_xd - _SIGMA * decrease
        for i in range(n):
            e = np.exp(xd[i])
            work.exp_new[i] = work.exp_wx[i] * e
            cond += C[i] * np.log((1.0 + work.exp_new[i]) / (e + work.exp_new[i]))
        if cond <= 0.0:
            w[:] = wpd
            work.exp_wx[:] = work.exp_new
            return True, w_norm_new
        w_norm_new = 0.0
        for j in range(m):
            wpd[j] = 0.5 * (w[j] + wpd[j])
            w_norm_new += abs(wpd[j])
        decrease *= 0.5
        neg_xd *= 0.5
        for i in range(n):
            xd[i] *= 0.5
    return False, w_norm


@compiled
def _exp_margins(node: NodeData, w: np.ndarray, exp_wx: np.ndarray) -> None:  # pragma: no cover - compiled
    """Write exp(wᵀx_i) of the node's points into ``exp_wx`` (n,) for ``w`` (m,), summing each
    wᵀx_i column by column over the non-zero weights."""
    col_ptr, col_row, col_val = node.col_ptr, node.col_row, node.col_val
    n, m = node.side.shape[0], col_ptr.shape[0] - 1
    wx = np.zeros(n)
    for j in range(m):
        if w[j] != 0.0:
            for p in range(np.uint64(col_ptr[j]), np.uint64(col_ptr[j + 1])):
                wx[col_row[p]] += col_val[p] * w[j]
    for i in range(n):
        exp_wx[i] = np.exp(wx[i])
