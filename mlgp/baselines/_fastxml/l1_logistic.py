"""FastXML's w step compiled: L1-regularised logistic regression for every node of a tree level in
one call, reading the level's CSR arrays in place.

Contract: for node k (rows ``lo:hi`` of the level's CSR ``X``, sides δ ∈ {−1, +1}) :func:`fit_level`
minimises

    f(w, w_b) = ‖w‖₁ + |w_b| + Σ_i C_{δ_i} log(1 + exp(−δ_i (wᵀx_i + w_b · bias)))

(C₊ = ``c_pos``, C₋ = ``c_neg``; the bias feature's weight is penalised with w, as liblinear's
``-B bias`` does; ``bias = 0`` fits none) — the objective scikit-learn's liblinear solver 6
minimises for a FastXML node — by newGLMNET (Yuan, Ho & Lin, 2012): each outer (Newton) iteration
minimises a quadratic model of the loss plus the L1 term by cyclic coordinate descent in a random
order, with shrinking of coordinates that sit at zero inside their subgradient's bounds, then takes
a backtracking line search (sufficient decrease σ = 0.01, halving, at most 20 halvings). It stops
when the 1-norm of the minimum-norm subgradient falls to ``tol · max(min(n₊, n₋), 1) / n`` of its
value at w = 0 (liblinear's rule for this solver), or after ``max_iter`` outer iterations.

:func:`solve_node` solves one node, given as :class:`~.l1_layout.NodeData` (its points column by
column and row by row, over its own columns: :mod:`.l1_layout`) with :class:`SolverSettings` (C±,
the stopping rule, the seed), by chaining the compiled steps of :mod:`.l1_newton`: the loss's
derivatives, the choice of active columns, coordinate descent on the quadratic model, the line
search. :func:`fit_level` lays out each node of a level, solves it and gathers the separators.

Only the node's own columns enter, so the solution does not depend on D. Coordinate orders are
drawn from the node's seed by a splitmix64 generator, so a level's result depends only on its data,
δ and seeds — not on threads, processes or timing. Positions in X are int64: more than 2³¹
non-zeros index correctly.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._jit import compiled
from .l1_layout import NodeData, _gather_columns
from .l1_newton import _active_columns, _exp_margins, _line_search, _loss_derivatives, _minimise_quadratic, _scratch

__all__ = ["SolverSettings", "fit_level", "node_objective", "solve_node"]


class SolverSettings(NamedTuple):
    """How :func:`solve_node` solves a node: the class costs C₊ = ``c_pos`` and C₋ = ``c_neg``; it
    stops when the subgradient's 1-norm falls to ``eps`` times its value at w = 0, or after
    ``max_newton`` Newton iterations; ``seed`` (int64) seeds the coordinate orders."""

    c_pos: float
    c_neg: float
    eps: float
    max_newton: int
    seed: int


@compiled
def solve_node(node: NodeData, settings: SolverSettings, w: np.ndarray) -> int:  # pragma: no cover - compiled
    """Minimise f (module docstring) over the node's weights by newGLMNET.

    Parameters
    ----------
    node : NodeData
        The node's n points over its m columns (the bias feature last when ``node.bias`` > 0).
    settings : SolverSettings
        C±, the stopping rule and the seed of the coordinate orders.
    w : np.ndarray, shape (m,), float64
        Zeros on entry; the minimiser on return (the bias feature's weight last).

    Returns
    -------
    int
        The Newton iterations done (at most ``settings.max_newton``).
    """
    n = node.side.shape[0]
    work = _scratch(node, settings.c_pos, settings.c_neg, w)
    state = np.uint64(settings.seed)
    gmax_old = np.inf
    gnorm_init = 0.0
    inner_eps = 1.0
    w_norm = 0.0
    newton = 0
    qp_idle = 0  # Newton iterations in a row whose quadratic model moved no coordinate
    while newton < settings.max_newton:
        _loss_derivatives(node, work)
        active, gmax_new, gnorm = _active_columns(work.grad, w, gmax_old / n, work.index)
        if newton == 0:
            gnorm_init = gnorm
        if gnorm <= settings.eps * gnorm_init or qp_idle >= 10:
            break
        inner, moved, state = _minimise_quadratic(node, work, w, active, inner_eps * gnorm_init, state)
        qp_idle = 0 if moved else qp_idle + 1
        accepted, w_norm = _line_search(node, work, w, w_norm)
        if not accepted:  # w is unchanged: rebuild exp(wᵀx) from it, free of accumulated rounding
            _exp_margins(node, w, work.exp_wx)
        if inner == 1:
            inner_eps *= 0.25
        newton += 1
        gmax_old = gmax_new
    return newton


@compiled
def fit_level(nodes, ptr, x_indptr, x_indices, x_data, x_offset, num_features, delta, seeds, c_pos, c_neg, bias,
              tol, max_iter, wx, b_out, n_iter_out):  # pragma: no cover - compiled
    """Fit the separator of each node of ``nodes`` (int64, level numbering: node k holds rows
    ``ptr[k]:ptr[k + 1]`` of the CSR ``x_*`` arrays, δ in ``delta``, seed ``seeds[k]``).
    ``x_indices`` and ``x_data`` hold the matrix's non-zeros from position ``x_offset`` on (0: all
    of them; a window of a larger matrix's arrays otherwise).

    Writes each fitted node's bias into ``b_out[k]``, its Newton iterations into ``n_iter_out[k]``
    and wᵀx_i + b of its rows into ``wx`` (each row summed over its non-zeros in order, then the
    bias added). Returns ``(w_ptr, w_idx, w_val)``: the separators' non-zeros, node ``nodes[t]``'s
    at ``w_ptr[t]:w_ptr[t + 1]`` with increasing column numbers."""
    colmap = np.full(num_features, -1, np.int64)
    used = np.empty(num_features, np.int64)
    w_ptr = np.zeros(nodes.size + 1, np.int64)
    cap = 1024
    w_idx = np.empty(cap, np.int64)
    w_val = np.empty(cap)
    for t in range(nodes.size):
        k = nodes[t]
        lo, hi = ptr[k], ptr[k + 1]
        n = hi - lo
        col_ptr, col_row, col_val, row_ptr, row_col, row_val, m, width = _gather_columns(
            x_indptr, x_indices, x_data, x_offset, lo, hi, bias, colmap, used)
        n_pos = 0
        for i in range(lo, hi):
            if delta[i] > 0:
                n_pos += 1
        eps = tol * max(min(n_pos, n - n_pos), 1) / n
        w = np.zeros(width)
        node = NodeData(col_ptr, col_row, col_val, row_ptr, row_col, row_val, delta[lo:hi], bias)
        n_iter_out[k] = solve_node(node, SolverSettings(c_pos, c_neg, eps, max_iter, seeds[k]), w)
        b = w[m] * bias if bias > 0 else 0.0
        b_out[k] = b
        for i in range(lo, hi):
            s = 0.0
            for p in range(x_indptr[i] - x_offset, x_indptr[i + 1] - x_offset):
                s += x_data[p] * w[colmap[x_indices[p]]]
            wx[i] = s + b
        nnz = 0
        for q in range(m):
            if w[q] != 0.0:
                nnz += 1
        while w_ptr[t] + nnz > cap:
            cap *= 2
            bigger_idx = np.empty(cap, np.int64)
            bigger_val = np.empty(cap)
            bigger_idx[:w_ptr[t]] = w_idx[:w_ptr[t]]
            bigger_val[:w_ptr[t]] = w_val[:w_ptr[t]]
            w_idx, w_val = bigger_idx, bigger_val
        at = w_ptr[t]
        for q in range(m):
            if w[q] != 0.0:
                w_idx[at] = used[q]
                w_val[at] = w[q]
                at += 1
        w_ptr[t + 1] = at
        for q in range(m):
            colmap[used[q]] = -1
    return w_ptr, w_idx[:w_ptr[nodes.size]].copy(), w_val[:w_ptr[nodes.size]].copy()


def node_objective(X, side, c_pos: float, c_neg: float, bias: float, w, b: float) -> float:
    """f of the module docstring at a separator (``w`` (D,) dense, bias ``b``) on CSR ``X`` (n, D) with
    sides ``side`` (n,) ±1: for comparing solvers."""
    z = np.asarray(X @ np.asarray(w, dtype=np.float64)).ravel() + b
    margin = np.where(np.asarray(side) > 0, z, -z)
    C = np.where(np.asarray(side) > 0, c_pos, c_neg)
    penalty = np.abs(w).sum() + (abs(b) / bias if bias > 0 else 0.0)
    return float(penalty + (C * np.logaddexp(0.0, -margin)).sum())
