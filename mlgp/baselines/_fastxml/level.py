"""Splitting every node of one tree level at once: :func:`~.split.split_node`'s alternating
minimisation run for all nodes together, on the level's raw CSR arrays.

Contract: :func:`split_level` takes the level's rows grouped by node (``ptr`` (M + 1,) bounds node
k's rows ``ptr[k]:ptr[k + 1]``), their features ``X`` (R, D) and weighted labels ``G`` (R, K) as
CSR, each node's random start of δ and solver seed, and returns what :func:`~.split.split_node`
returns for each node with those draws, bit for bit: the same r± (labels ranked by their summed
weight on a side within the node, ties to the lower label), δ steps (sums taken in the same order),
stopping rules, and separators. The alternation of all nodes runs in one compiled loop
(:func:`~.kernels.alternate`) over the level's (node, label) pairs and non-zeros, so the work is
Σ over nodes of alternations × size with no per-node Python overhead. With
``opts.solver == "newglmnet"`` the separators of all nodes that reach the w step are fitted in one
compiled call (:func:`~.l1_logistic.fit_level`, on the node's own columns); with ``"liblinear"``,
scikit-learn's liblinear is called once per node (as in the paper).

With ``node_features`` (liblinear only) the separator of a node is fitted on the node's own feature
columns (renumbered 0..D_node − 1) instead of all D: the same L1-logistic objective (a column with
no non-zero in the node keeps weight 0), at a cost that no longer grows with D, but liblinear's
random coordinate order then differs, so the trees are not bitwise those of the all-D call.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .kernels import alternate, label_pairs, row_dots
from .l1_logistic import fit_level
from .split import SplitOptions, _logloss, fit_separator_arrays

__all__ = ["LevelSplit", "split_level"]


@dataclass
class LevelSplit:
    """The splits of a level's M nodes.

    Attributes
    ----------
    split : np.ndarray (M,), bool
        Whether node k split (False: it becomes a leaf).
    positive : np.ndarray (R,), bool
        Each row's side (``wᵀx + b > 0``); meaningful for the rows of split nodes.
    w_indices, w_data : list of np.ndarray
        Node k's separator's non-zero columns (int64, increasing) and values: empty if no
        separator was fitted, the last one fitted if the node still did not split.
    bias : np.ndarray (M,), float64
    n_iter : np.ndarray (M,), int64
        The solver's Newton iterations summed over the node's w-updates.
    """

    split: np.ndarray
    positive: np.ndarray
    w_indices: list
    w_data: list
    bias: np.ndarray
    n_iter: np.ndarray


def _per_node(mask: np.ndarray, ptr: np.ndarray) -> np.ndarray:
    """How many rows of each node ``mask`` (R,) marks: (M,) int64."""
    return np.add.reduceat(mask.astype(np.int64), ptr[:-1]) if mask.size else np.zeros(ptr.size - 1, np.int64)


def _fit_compiled(X: sp.csr_matrix, ptr: np.ndarray, nodes: np.ndarray, delta: np.ndarray, seeds: np.ndarray,
                  opts: SplitOptions, wx: np.ndarray, bias: np.ndarray, n_iter: np.ndarray, w_indices: list,
                  w_data: list) -> None:
    """The w step of ``nodes`` in one compiled call (:func:`~.l1_logistic.fit_level`): fills their
    ``wx`` rows, ``bias``, ``w_indices`` / ``w_data`` and adds their Newton iterations to ``n_iter``."""
    if not nodes.size:
        return
    iters = np.zeros(n_iter.size, np.int64)
    w_ptr, w_idx, w_val = fit_level(nodes, ptr, X.indptr.astype(np.int64), X.indices, X.data, 0, int(X.shape[1]), delta,
                                    np.asarray(seeds, dtype=np.int64), float(opts.c_pos), float(opts.c_neg),
                                    float(opts.bias), float(opts.tol), int(opts.max_iter), wx, bias, iters)
    n_iter[nodes] += iters[nodes]
    for t, k in enumerate(nodes.tolist()):
        w_indices[k], w_data[k] = w_idx[w_ptr[t]:w_ptr[t + 1]], w_val[w_ptr[t]:w_ptr[t + 1]]


def split_level(X: sp.csr_matrix, G: sp.csr_matrix, ptr: np.ndarray, delta: np.ndarray, seeds: np.ndarray,
                discount: np.ndarray, opts: SplitOptions, node_features: bool = False) -> LevelSplit:
    """Split the level's M nodes (module docstring).

    Parameters
    ----------
    X : CSR (R, D)
        The level's rows' features, node by node.
    G : CSR (R, K)
        Their weighted labels (canonical).
    ptr : np.ndarray (M + 1,)
        Node k holds rows ``ptr[k]:ptr[k + 1]``.
    delta : np.ndarray (R,), int8
        The random ±1 start of δ (changed in place into the final δ).
    seeds : np.ndarray (M,)
        The solver's seed per node (its coordinate orders).
    """
    M, R = ptr.size - 1, int(ptr[-1])
    ptr = ptr.astype(np.int64)
    sizes = np.diff(ptr)
    wx = np.zeros(R)
    loss_pos, loss_neg = _logloss(wx), _logloss(-wx)
    alternations = np.zeros(M, np.int64)
    w_updates = np.zeros(M, np.int64)
    just_updated = np.zeros(M, bool)
    continued = np.zeros(M, bool)
    fitted = np.zeros(M, bool)
    n_iter = np.zeros(M, np.int64)
    bias = np.zeros(M)
    w_indices: list = [np.zeros(0, np.int64)] * M
    w_data: list = [np.zeros(0)] * M
    nz_ptr, nz_val = G.indptr.astype(np.int64), np.asarray(G.data, dtype=np.float64)
    pair_ptr, nz_label = label_pairs(ptr, nz_ptr, G.indices.astype(np.int64), int(G.shape[1]))
    discount = np.asarray(discount, dtype=np.float64)
    scratch = np.full(X.shape[1], -1, np.int64) if node_features else None
    nodes = np.arange(M, dtype=np.int64)
    while nodes.size:
        alternate(nodes, ptr, nz_ptr, nz_label, nz_val, pair_ptr, delta, loss_pos, loss_neg, discount,
                  float(opts.c_pos), float(opts.c_neg), float(opts.c_rank), int(opts.max_alternations),
                  alternations, continued)
        just_updated[nodes] &= ~continued[nodes]
        stop = just_updated[nodes] | (w_updates[nodes] >= opts.n_w_updates)
        n_pos = _per_node(delta == 1, ptr)[nodes]
        one_sided = ~stop & ((n_pos == 0) | (n_pos == sizes[nodes]))
        fit = ~stop & ~one_sided
        if opts.solver == "newglmnet":
            _fit_compiled(X, ptr, nodes[fit], delta, seeds, opts, wx, bias, n_iter, w_indices, w_data)
            fitted[nodes[fit]] = just_updated[nodes[fit]] = True
            w_updates[nodes[fit]] += 1
            again = nodes[fit][w_updates[nodes[fit]] < opts.n_w_updates]
            for k in again:  # these nodes alternate again, with the new logistic terms
                lo, hi = int(ptr[k]), int(ptr[k + 1])
                loss_pos[lo:hi], loss_neg[lo:hi] = _logloss(wx[lo:hi]), _logloss(-wx[lo:hi])
        for k in nodes[fit] if opts.solver == "liblinear" else ():
            lo, hi = int(ptr[k]), int(ptr[k + 1])
            sep = fit_separator_arrays(X, lo, hi, delta[lo:hi], opts, int(seeds[k]), scratch)
            row_dots(X.indptr, X.data, sep.columns, sep.offset, sep.coef, lo, hi, sep.b, wx)
            w_indices[k], w_data[k], bias[k] = sep.indices, sep.values, sep.b
            fitted[k] = just_updated[k] = True
            w_updates[k] += 1
            n_iter[k] += sep.n_iter
            if w_updates[k] < opts.n_w_updates:  # the node alternates again, with the new logistic terms
                loss_pos[lo:hi], loss_neg[lo:hi] = _logloss(wx[lo:hi]), _logloss(-wx[lo:hi])
        fitted[nodes[one_sided]] = False
        done = stop | one_sided | (fit & (w_updates[nodes] >= opts.n_w_updates))
        nodes = nodes[~done]
    positive = wx > 0
    n_pos = _per_node(positive, ptr)
    split = fitted & (n_pos > 0) & (n_pos < sizes)
    return LevelSplit(split, positive, w_indices, w_data, bias, n_iter)
