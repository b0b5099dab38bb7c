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

Only the node's own columns enter (renumbered in increasing order): a column no point of the node
uses has zero gradient and keeps weight 0, so the solution does not depend on D. The node's
non-zeros are gathered column by column into scratch arrays sized by the node (liblinear's
transposed copy, per node, not per X). Coordinate orders are drawn from the node's seed by a
splitmix64 generator, so a level's result depends only on its data, δ and seeds — not on threads,
processes or timing. Positions in X are int64: more than 2³¹ non-zeros index correctly.
"""

from __future__ import annotations

import numpy as np

from ._jit import compiled

__all__ = ["fit_level", "node_objective", "solve_node"]

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
    """Fisher–Yates shuffle of ``index[:size]``; returns the generator's new state."""
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


@compiled
def solve_node(col_ptr, col_row, col_val, row_ptr, row_col, row_val, bias, n, m, side, c_pos, c_neg, eps, max_newton,
               seed, w):  # pragma: no cover - compiled
    """Minimise f (module docstring) over ``w`` (m,), which must hold zeros on entry, for n points
    given column by column — column j's points ``col_row[col_ptr[j]:col_ptr[j + 1]]`` (increasing)
    and values ``col_val`` — and row by row (row i's columns ``row_col[row_ptr[i]:row_ptr[i + 1]]``
    and values ``row_val``, the bias column left out); ``side`` (n,) ±1. With ``bias`` > 0 the last
    of the m columns is the bias feature. The gradient and curvature of every column are summed row
    by row (one pass over the non-zeros, no work per column); the coordinate steps go column by
    column. Stops at ``eps`` times the initial subgradient norm or after ``max_newton`` Newton
    iterations; returns the iterations done."""
    C = np.empty(n)
    exp_wx = np.ones(n)
    exp_new = np.empty(n)
    tau = np.empty(n)
    D = np.empty(n)
    xd = np.empty(n)
    dxd = np.empty(n)  # D ∘ xd, kept beside xd: the coordinate gradient then reads one array
    grad = np.empty(m)
    hdiag = np.empty(m)
    wpd = w.copy()
    neg_sum = np.zeros(m)
    index = np.arange(m)
    for i in range(n):
        C[i] = c_pos if side[i] > 0 else c_neg
    for j in range(m):
        for p in range(np.uint64(col_ptr[j]), np.uint64(col_ptr[j + 1])):
            if side[col_row[p]] < 0:
                neg_sum[j] += C[col_row[p]] * col_val[p]
    state = np.uint64(seed)
    gmax_old = np.inf
    gnorm_init = 0.0
    inner_eps = 1.0
    w_norm = 0.0
    newton = 0
    qp_idle = 0  # Newton iterations in a row whose quadratic model moved no coordinate
    while newton < max_newton:
        for i in range(n):
            e = exp_wx[i]
            tau[i] = C[i] / (1.0 + e)
            D[i] = C[i] * e / ((1.0 + e) * (1.0 + e))
        gmax_new = 0.0
        gnorm = 0.0
        active = 0  # the columns not shrunk this Newton iteration, listed in increasing order
        shrink = gmax_old / n
        hdiag[:] = _NU
        grad[:] = 0.0
        for i in range(n):  # Σ_i x_ij τ_i and Σ_i x_ij² D_i for every column, row by row
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
            g = neg_sum[j] - grad[j]
            grad[j] = g
            viol, inside = _violation(g, w[j], shrink)
            if inside:  # stays at zero: left out of this iteration
                continue
            index[active] = j
            active += 1
            gmax_new = max(gmax_new, viol)
            gnorm += viol
        if newton == 0:
            gnorm_init = gnorm
        if gnorm <= eps * gnorm_init or qp_idle >= 10:
            break
        qp_idle += 1
        # the quadratic model, by coordinate descent over the active columns
        xd[:] = 0.0
        dxd[:] = 0.0
        wpd[:] = w
        qp_active = active
        qp_gmax_old = np.inf
        inner = 0
        while inner < _MAX_INNER:
            qp_gmax_new = 0.0
            qp_gnorm = 0.0
            state = _shuffle(index, qp_active, state)
            s = 0
            while s < qp_active:
                j = index[s]
                h = hdiag[j]
                g = grad[j] + (wpd[j] - w[j]) * _NU
                for p in range(np.uint64(col_ptr[j]), np.uint64(col_ptr[j + 1])):
                    g += col_val[p] * dxd[col_row[p]]
                viol, inside = _violation(g, wpd[j], qp_gmax_old / n)
                if inside:
                    qp_active -= 1
                    index[s], index[qp_active] = index[qp_active], index[s]
                    continue
                gp, gn = g + 1.0, g - 1.0
                # the minimiser of g z + h z² / 2 + |wpd_j + z|
                if gp <= h * wpd[j]:
                    z = -gp / h
                elif gn >= h * wpd[j]:
                    z = -gn / h
                else:
                    z = -wpd[j]
                s += 1
                if abs(z) < 1e-12:
                    continue
                qp_idle = 0
                qp_gmax_new = max(qp_gmax_new, viol)  # violations of the coordinates that moved
                qp_gnorm += viol
                z = min(max(z, -_STEP_CAP), _STEP_CAP)
                wpd[j] += z
                for p in range(np.uint64(col_ptr[j]), np.uint64(col_ptr[j + 1])):
                    i = col_row[p]
                    xd[i] += col_val[p] * z
                    dxd[i] += D[i] * col_val[p] * z
            inner += 1
            if qp_gnorm <= inner_eps * gnorm_init:
                if qp_active == active:
                    break
                qp_active = active  # check the shrunk coordinates once more
                qp_gmax_old = np.inf
                continue
            qp_gmax_old = qp_gmax_new
        # backtracking line search along d = wpd − w
        decrease = 0.0
        w_norm_new = 0.0
        for j in range(m):
            decrease += grad[j] * (wpd[j] - w[j])
            w_norm_new += abs(wpd[j])
        decrease += w_norm_new - w_norm
        neg_xd = 0.0
        for i in range(n):
            if side[i] < 0:
                neg_xd += C[i] * xd[i]
        accepted = False
        for _ in range(_MAX_LINE_SEARCH):
            cond = w_norm_new - w_norm + neg_xd - _SIGMA * decrease
            for i in range(n):
                e = np.exp(xd[i])
                exp_new[i] = exp_wx[i] * e
                cond += C[i] * np.log((1.0 + exp_new[i]) / (e + exp_new[i]))
            if cond <= 0.0:
                w_norm = w_norm_new
                w[:] = wpd
                exp_wx[:] = exp_new
                accepted = True
                break
            w_norm_new = 0.0
            for j in range(m):
                wpd[j] = 0.5 * (w[j] + wpd[j])
                w_norm_new += abs(wpd[j])
            decrease *= 0.5
            neg_xd *= 0.5
            for i in range(n):
                xd[i] *= 0.5
        if not accepted:  # w is unchanged: rebuild exp(wᵀx) from it, free of accumulated rounding
            wx = np.zeros(n)
            for j in range(m):
                if w[j] != 0.0:
                    for p in range(np.uint64(col_ptr[j]), np.uint64(col_ptr[j + 1])):
                        wx[col_row[p]] += col_val[p] * w[j]
            for i in range(n):
                exp_wx[i] = np.exp(wx[i])
        if inner == 1:
            inner_eps *= 0.25
        newton += 1
        gmax_old = gmax_new
    return newton


@compiled
def _gather_columns(x_indptr, x_indices, x_data, x_offset, lo, hi, bias, colmap, used):  # pragma: no cover - compiled
    """Rows ``lo:hi`` of CSR X in column form over their own columns (renumbered in increasing
    order in ``colmap``, a (D,) int64 array of −1 that is left numbering them; their original
    numbers in ``used[:m]``), the bias a last column of value ``bias`` when it is > 0; and in row
    form over the renumbered columns (the bias left out; the values are X's own, a view). Returns
    (col_ptr, col_row, col_val, row_ptr, row_col, row_val, m, number of columns)."""
    a, z = np.uint64(x_indptr[lo] - x_offset), np.uint64(x_indptr[hi] - x_offset)
    m = 0
    for p in range(a, z):  # count each column's entries (colmap: −1, then the count)
        c = np.uint64(x_indices[p])
        if colmap[c] < 0:
            colmap[c] = 1
            used[m] = c
            m += 1
        else:
            colmap[c] += 1
    used[:m].sort()
    n = hi - lo
    width = m + 1 if bias > 0 else m
    col_ptr = np.zeros(width + 1, np.int64)
    for q in range(m):
        col_ptr[q + 1] = col_ptr[q] + colmap[used[q]]
        colmap[used[q]] = q
    if bias > 0:
        col_ptr[m + 1] = col_ptr[m] + n
    fill = col_ptr[:-1].copy()
    col_row = np.empty(col_ptr[width], np.uint32)
    col_val = np.empty(col_ptr[width])
    row_ptr = np.empty(n + 1, np.int64)
    row_col = np.empty(z - a, np.uint32)
    for i in range(lo, hi):
        row = np.uint32(i - lo)
        row_ptr[i - lo] = x_indptr[i] - x_offset - a
        for p in range(np.uint64(x_indptr[i] - x_offset), np.uint64(x_indptr[i + 1] - x_offset)):
            q = np.uint64(colmap[np.uint64(x_indices[p])])
            row_col[p - a] = q
            at = np.uint64(fill[q])
            col_row[at] = row
            col_val[at] = x_data[p]
            fill[q] += 1
    row_ptr[n] = z - a
    if bias > 0:
        for i in range(n):
            col_row[fill[m] + i] = i
            col_val[fill[m] + i] = bias
    return col_ptr, col_row, col_val, row_ptr, row_col, x_data[a:z], m, width


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
        n_iter_out[k] = solve_node(col_ptr, col_row, col_val, row_ptr, row_col, row_val, bias, n, width, delta[lo:hi],
                                   c_pos, c_neg, eps, max_iter,
                                   seeds[k], w)
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
