"""The compiled inner loop of a FastXML split: the r± and δ steps of Prabhu & Varma's Algorithm 2
for one node after another, with numba.

Contract: :func:`alternate` runs, for each node k of ``nodes``, the alternation of
:func:`~.split.split_node` (rankings r± from the summed weights of each side, ties to the lower
label; then each point to its cheaper side, a tie keeping its side) until δ stops changing or the
node's alternation count reaches ``max_alternations``; it changes ``delta``, ``alternations`` and
``continued`` in place. Every sum is taken in the order the NumPy/SciPy code takes it (points in
increasing order, a point's labels in increasing order) and each cost is formed by the same
operations, so δ is bit for bit what :func:`~.split.split_node` computes. The logistic terms come
in precomputed (``loss_pos[i] = log(1 + exp(−wᵀx_i − b))`` and ``loss_neg``) so that they are
NumPy's values.
"""

from __future__ import annotations

from ._jit import compiled
import numpy as np

__all__ = ["alternate", "compact_columns", "label_pairs", "pair_dots", "route", "row_dots"]


@compiled
def alternate(nodes, row_ptr, nz_ptr, nz_label, nz_val, pair_ptr, delta, loss_pos, loss_neg, discount,
              c_pos, c_neg, c_rank, max_alternations, alternations, continued):  # pragma: no cover - compiled
    """Alternate r± and δ for each node of ``nodes`` (int64) until δ is stable.

    Node k owns rows ``row_ptr[k]:row_ptr[k + 1]``; row i's non-zeros of G are
    ``nz_ptr[i]:nz_ptr[i + 1]`` with values ``nz_val`` and node-local labels ``nz_label`` (0-based,
    numbered in increasing label order), and the node has ``pair_ptr[k + 1] − pair_ptr[k]`` labels.
    ``continued[k]`` is set when at least one alternation changed δ and the loop went on (the
    caller's ``just_updated`` flag is cleared by it)."""
    width = 1
    for k in nodes:
        width = max(width, pair_ptr[k + 1] - pair_ptr[k])
    s_pos = np.empty(width)
    s_neg = np.empty(width)
    d_pos = np.empty(width)
    d_neg = np.empty(width)
    for k in nodes:
        lo, hi, m = row_ptr[k], row_ptr[k + 1], pair_ptr[k + 1] - pair_ptr[k]
        went_on = False
        while True:
            alternations[k] += 1
            s_pos[:m] = 0.0
            s_neg[:m] = 0.0
            for i in range(lo, hi):
                if delta[i] == 1:
                    for z in range(nz_ptr[i], nz_ptr[i + 1]):
                        s_pos[nz_label[z]] += nz_val[z]
                elif delta[i] == -1:
                    for z in range(nz_ptr[i], nz_ptr[i + 1]):
                        s_neg[nz_label[z]] += nz_val[z]
            order = np.argsort(-s_pos[:m], kind="mergesort")
            for p in range(m):
                d_pos[order[p]] = discount[p]
            order = np.argsort(-s_neg[:m], kind="mergesort")
            for p in range(m):
                d_neg[order[p]] = discount[p]
            changed = False
            for i in range(lo, hi):
                g_pos = 0.0
                g_neg = 0.0
                for z in range(nz_ptr[i], nz_ptr[i + 1]):
                    g_pos += nz_val[z] * d_pos[nz_label[z]]
                    g_neg += nz_val[z] * d_neg[nz_label[z]]
                v_pos = c_pos * loss_pos[i] - c_rank * g_pos
                v_neg = c_neg * loss_neg[i] - c_rank * g_neg
                new = delta[i]
                if v_pos < v_neg:
                    new = 1
                elif v_neg < v_pos:
                    new = -1
                if new != delta[i]:
                    changed = True
                    delta[i] = new
            if changed and alternations[k] < max_alternations:
                went_on = True
                continue
            break
        continued[k] = went_on


@compiled
def route(x_ptr, x_idx, x_val, w_ptr, w_idx, w_val, bias, children, leaf, roots, num_features, capacity,
          out):  # pragma: no cover - compiled
    """The leaf each point reaches in each tree: ``out[i, t]`` for CSR points (``x_ptr``, ``x_idx``,
    ``x_val``) and trees rooted at ``roots``.

    A tree is walked once per block: a node's separator (CSR row ``w_ptr[node]:w_ptr[node + 1]``)
    is scattered into a dense scratch vector, each of the node's points takes wᵀx + b (summed over
    the point's non-zeros in column order, as the training split sums it, so a training point
    follows its training path exactly) and goes to the positive child when it is > 0; the
    points are partitioned in place and the children visited depth first (``capacity``, at least
    the deepest depth + 2, bounds the stack). ``x_idx`` must lie in [0, ``num_features``): nothing
    here checks it."""
    B, T = x_ptr.size - 1, roots.size
    dense = np.zeros(num_features)
    perm = np.empty(B, np.int64)
    spare = np.empty(B, np.int64)
    side = np.empty(B, np.bool_)
    stack_node = np.empty(capacity, np.int64)
    stack_lo = np.empty(capacity, np.int64)
    stack_hi = np.empty(capacity, np.int64)
    for t in range(T):
        for i in range(B):
            perm[i] = i
        top = 1
        stack_node[0], stack_lo[0], stack_hi[0] = roots[t], 0, B
        while top > 0:
            top -= 1
            node, lo, hi = stack_node[top], stack_lo[top], stack_hi[top]
            if lo == hi:
                continue
            if leaf[node] >= 0:
                for q in range(lo, hi):
                    out[perm[q], t] = leaf[node]
                continue
            for p in range(w_ptr[node], w_ptr[node + 1]):
                dense[w_idx[p]] = w_val[p]
            for q in range(lo, hi):
                i = perm[q]
                s = 0.0
                for z in range(x_ptr[i], x_ptr[i + 1]):
                    s += x_val[z] * dense[x_idx[z]]
                s += bias[node]
                side[q] = s > 0
            for p in range(w_ptr[node], w_ptr[node + 1]):
                dense[w_idx[p]] = 0.0
            mid = lo
            for q in range(lo, hi):
                if side[q]:
                    spare[mid] = perm[q]
                    mid += 1
            rest = mid
            for q in range(lo, hi):
                if not side[q]:
                    spare[rest] = perm[q]
                    rest += 1
            for q in range(lo, hi):
                perm[q] = spare[q]
            stack_node[top], stack_lo[top], stack_hi[top] = children[node, 1], mid, hi
            stack_node[top + 1], stack_lo[top + 1], stack_hi[top + 1] = children[node, 0], lo, mid
            top += 2


@compiled
def label_pairs(row_ptr, nz_ptr, labels, num_labels):  # pragma: no cover - compiled
    """Each node's active labels, numbered in increasing label order: ``(pair_ptr, nz_label)``.

    Node k owns rows ``row_ptr[k]:row_ptr[k + 1]``, row i the non-zeros ``nz_ptr[i]:nz_ptr[i + 1]``
    of ``labels`` (< ``num_labels``). Node k has ``pair_ptr[k + 1] − pair_ptr[k]`` distinct labels;
    ``nz_label[z]`` is the rank of ``labels[z]`` among them (int64)."""
    M = row_ptr.size - 1
    stamp = np.full(num_labels, -1, np.int64)
    rank = np.empty(num_labels, np.int64)
    found = np.empty(num_labels, np.int64)
    pair_ptr = np.zeros(M + 1, np.int64)
    nz_label = np.empty(labels.size, np.int64)
    for k in range(M):
        a, b = nz_ptr[row_ptr[k]], nz_ptr[row_ptr[k + 1]]
        m = 0
        for z in range(a, b):
            lab = labels[z]
            if stamp[lab] != k:
                stamp[lab] = k
                found[m] = lab
                m += 1
        ordered = np.sort(found[:m])
        for p in range(m):
            rank[ordered[p]] = p
        for z in range(a, b):
            nz_label[z] = rank[labels[z]]
        pair_ptr[k + 1] = pair_ptr[k] + m
    return pair_ptr, nz_label


@compiled
def compact_columns(cols, scratch):  # pragma: no cover - compiled
    """The distinct columns of ``cols`` in increasing order (int64) and each entry's rank among
    them (int32): a node's columns renumbered 0..D_node − 1 in O(len(cols) + D_node log D_node).

    ``scratch`` (D,) int64 must hold −1 everywhere; it is used and left as it was found."""
    found = np.empty(min(cols.size, scratch.size), np.int64)
    m = 0
    for z in range(cols.size):
        c = cols[z]
        if scratch[c] < 0:
            scratch[c] = 0
            found[m] = c
            m += 1
    used = np.sort(found[:m])
    for p in range(m):
        scratch[used[p]] = p
    local = np.empty(cols.size, np.int32)
    for z in range(cols.size):
        local[z] = scratch[cols[z]]
    for p in range(m):
        scratch[used[p]] = -1
    return used, local


@compiled
def row_dots(indptr, data, columns, offset, coef, lo, hi, b, out):  # pragma: no cover - compiled
    """``out[i] = (Σ_z data[z] · coef[columns[z − offset]]) + b`` for rows i in ``lo:hi`` of a CSR
    matrix, each row summed over its non-zeros in order from 0 and the bias added last, as SciPy's
    ``X @ w + b`` does it (no array of one weight per non-zero is formed)."""
    for i in range(lo, hi):
        s = 0.0
        for z in range(indptr[i], indptr[i + 1]):
            s += data[z] * coef[columns[z - offset]]
        out[i] = s + b


@compiled
def pair_dots(a_ptr, a_idx, a_val, rows, b_ptr, b_idx, b_val, cols, out):  # pragma: no cover - compiled
    """``out[p] = A[rows[p]] · B[cols[p]]`` for CSR ``A`` and ``B`` with sorted column indices: each of
    the A row's non-zeros (in order) is looked up in the B row by binary search, so a pair costs
    O(nnz(A row) · log nnz(B row)) and no dense row is formed (a candidate label's centroid may be
    far denser than a point)."""
    for q in range(rows.size):
        i, j = rows[q], cols[q]
        lo, hi = b_ptr[j], b_ptr[j + 1]
        s = 0.0
        for z in range(a_ptr[i], a_ptr[i + 1]):
            if lo >= hi:
                break
            c = a_idx[z]
            at = lo + np.searchsorted(b_idx[lo:hi], c)
            if at < hi and b_idx[at] == c:
                s += a_val[z] * b_val[at]
                lo = at + 1
            else:
                lo = at  # the A row's columns increase: later ones lie at or after this position
        out[q] = s
