"""Growing one FastXML tree (Algorithm 1 of Prabhu & Varma, 2014) into compact arrays.

Contract: :func:`grow_tree` splits nodes a depth level at a time with :func:`~.level.split_level`
(the tree :func:`~.split.split_node` would grow node by node, breadth first, from the same seed)
until a node holds at most ``max_leaf`` points, has no labels, or cannot be split; it returns a
:class:`Tree` whose separators are one sparse CSR row per node and whose leaves keep only their
``top_k`` labels, each with the fraction of the leaf's points that carry it (ties to the lower
label index). A tree depends only on its data, options and ``seed``, so trees grown in any process
and in any order are identical.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .level import LevelSplit, split_level
from .split import _INT_MAX, SplitOptions

__all__ = ["Tree", "grow_tree", "leaf_distribution"]


@dataclass
class Tree:
    """One tree as arrays; node 0 is the root.

    Attributes
    ----------
    children : np.ndarray (n_nodes, 2), int64
        (positive child, negative child), -1 for a leaf; ``wᵀx + b > 0`` goes to the positive one.
    depth : np.ndarray (n_nodes,), int32
        The root has depth 0.
    leaf : np.ndarray (n_nodes,), int64
        Leaf number (row of ``leaf_labels``), -1 for an internal node.
    bias : np.ndarray (n_nodes,), float64
        Separator bias (0 at leaves).
    n_iter : np.ndarray (n_nodes,), int32
        The solver's Newton iterations for the node's separator (0 at leaves).
    W : CSR (n_nodes, D), float64
        Separators, one row per node (empty at leaves).
    leaf_labels : CSR (n_leaves, K), float64
        Each leaf's top-k label distribution.
    leaf_size, leaf_label_count : np.ndarray (n_leaves,), int64
        Training points in the leaf; distinct labels they carry (before the top-k cut).
    """

    children: np.ndarray
    depth: np.ndarray
    leaf: np.ndarray
    bias: np.ndarray
    n_iter: np.ndarray
    W: sp.csr_matrix
    leaf_labels: sp.csr_matrix
    leaf_size: np.ndarray
    leaf_label_count: np.ndarray


def leaf_distribution(Y: sp.csr_matrix, top_k: int) -> tuple[np.ndarray, np.ndarray, int]:
    """The ``top_k`` most frequent labels of the rows of ``Y`` (n, K) and their frequencies
    (count / n), most frequent first, ties to the lower label index; and the number of distinct
    labels (:func:`_leaf_distributions` of one leaf)."""
    leaf, distinct = _leaf_distributions(Y, np.array([0, Y.shape[0]]), top_k)
    return leaf.indices, leaf.data, int(distinct[0])


def _leaf_distributions(Y: sp.csr_matrix, ptr: np.ndarray, top_k: int) -> tuple[sp.csr_matrix, np.ndarray]:
    """:func:`leaf_distribution` of each leaf at once: leaf j holds rows ``ptr[j]:ptr[j + 1]`` of
    ``Y`` (R, K). Returns the (n_leaves, K) CSR of top-k frequencies (labels most frequent first)
    and the distinct label counts (n_leaves,)."""
    n_leaves, K = ptr.size - 1, Y.shape[1]
    row_leaf = np.repeat(np.arange(n_leaves), np.diff(ptr))
    key = row_leaf[np.repeat(np.arange(Y.shape[0]), np.diff(Y.indptr))].astype(np.int64) * K + Y.indices
    pair, counts = np.unique(key, return_counts=True)
    pair_leaf, labels = pair // K, (pair % K).astype(Y.indices.dtype)
    order = np.lexsort((-counts, pair_leaf))  # stable: pairs are sorted by (leaf, label)
    first = np.searchsorted(pair_leaf, np.arange(n_leaves))
    rank = np.arange(pair.size) - first[pair_leaf]
    keep = order[rank < top_k]
    kept_leaf = pair_leaf[keep]
    sizes = np.maximum(np.diff(ptr), 1)
    distinct = np.bincount(pair_leaf, minlength=n_leaves).astype(np.int64)
    lengths = np.bincount(kept_leaf, minlength=n_leaves)
    freq = counts[keep] / sizes[kept_leaf]
    leaf_labels = sp.csr_matrix((freq, labels[keep].astype(np.int64), np.concatenate([[0], np.cumsum(lengths)])),
                                shape=(n_leaves, K))
    return leaf_labels, distinct


def grow_tree(X: sp.csr_matrix, Y: sp.csr_matrix, G: sp.csr_matrix, discount: np.ndarray,
              opts: SplitOptions, max_leaf: int, top_k: int, seed: int, node_features: bool = False) -> Tree:
    """Grow one tree, a depth level at a time (:func:`~.level.split_level` splits a level's nodes
    together).

    Parameters
    ----------
    X : CSR (N, D)
        Training features (canonical, int32 indices).
    Y : CSR (N, K)
        0/1 labels (leaf distributions).
    G : CSR (N, K)
        Weighted labels of the split loss (see :mod:`.split`).
    discount : np.ndarray (K,)
        Gain of each ranking position.
    max_leaf, top_k : int
        A node with at most ``max_leaf`` points is a leaf; a leaf keeps ``top_k`` labels.
    seed : int
        Seeds the tree's random state (δ starts and the solver's coordinate orders).
    node_features : bool
        Fit each separator on its node's feature columns only (:mod:`.level`).
    """
    rng = np.random.RandomState(seed)
    N, K = Y.shape
    g_count = np.diff(G.indptr)
    node_depth: list = [0]
    children: list = [[-1, -1]]
    w_parts: list = [None]
    bias, n_iter = [0.0], [0]
    leaf_nodes: list = []  # leaf nodes, in leaf order
    leaf_rows: list = []  # their training rows
    level_nodes, rows, ptr = np.array([0]), np.arange(N), np.array([0, N])
    d = 0
    while level_nodes.size:
        sizes = np.diff(ptr)
        label_count = np.add.reduceat(g_count[rows], ptr[:-1]) if rows.size else np.zeros(sizes.size, np.int64)
        eligible = (sizes > max_leaf) & (label_count > 0)
        # the random draws in breadth-first order: each node's δ start, then its solver seed
        e_nodes = np.flatnonzero(eligible)
        starts, seeds = [], np.zeros(e_nodes.size, np.int64)
        for j, k in enumerate(e_nodes):
            starts.append(np.where(rng.randint(0, 2, size=int(sizes[k])) == 1, 1, -1).astype(np.int8))
            seeds[j] = rng.randint(0, _INT_MAX)
        e_row = np.repeat(eligible, sizes)
        e_rows = rows[e_row]
        e_ptr = np.concatenate([[0], np.cumsum(sizes[e_nodes])])
        did_split = np.zeros(sizes.size, bool)
        if e_nodes.size:
            res = _split_in_chunks(X, G, e_rows, e_ptr, np.concatenate(starts), seeds, discount, opts, node_features,
                                   d == 0 and e_rows.size == N)
            did_split[e_nodes] = res.split
        # children (positive, then negative) numbered in level order; the rest become leaves
        child_key = np.full(rows.size, -1, np.int64)
        if e_nodes.size:
            split_rank = np.cumsum(did_split) - 1
            e_row_node = np.repeat(e_nodes, sizes[e_nodes])
            on = did_split[e_row_node]
            child_key[np.flatnonzero(e_row)[on]] = 2 * split_rank[e_row_node[on]] + (~res.positive[on])
        for k in np.flatnonzero(~did_split):
            leaf_nodes.append(int(level_nodes[k]))
            leaf_rows.append(rows[ptr[k]:ptr[k + 1]].copy())  # a view would keep the level's rows alive
        for j, k in enumerate(e_nodes):
            if not did_split[k]:
                continue
            node = int(level_nodes[k])
            w_parts[node] = (res.w_indices[j], res.w_data[j])
            bias[node], n_iter[node] = float(res.bias[j]), int(res.n_iter[j])
            for slot in range(2):
                children[node][slot] = len(node_depth)
                node_depth.append(d + 1)
                children.append([-1, -1])
                w_parts.append(None)
                bias.append(0.0)
                n_iter.append(0)
        n_children = 2 * int(did_split.sum())
        level_nodes = np.arange(len(node_depth) - n_children, len(node_depth))
        take = np.flatnonzero(child_key >= 0)
        take = take[np.argsort(child_key[take], kind="stable")]
        rows = rows[take]
        ptr = np.concatenate([[0], np.cumsum(np.bincount(child_key[take], minlength=n_children))])
        d += 1
    return _assemble(X.shape[1], K, node_depth, children, w_parts, bias, n_iter, leaf_nodes, leaf_rows, Y, top_k)


#: Non-zeros of X a level is split with at a time (a node with more gets a call of its own): bounds
#: the level's copy of X's rows, which the node solvers read as contiguous slices.
CHUNK_NNZ = 1 << 24


def _split_in_chunks(X: sp.csr_matrix, G: sp.csr_matrix, rows: np.ndarray, ptr: np.ndarray, delta: np.ndarray,
                     seeds: np.ndarray, discount: np.ndarray, opts: SplitOptions, node_features: bool,
                     every_row: bool) -> LevelSplit:
    """:func:`~.level.split_level` of a level's nodes (``rows`` of X and G, node k's at
    ``ptr[k]:ptr[k + 1]``) in runs of consecutive nodes holding at most :data:`CHUNK_NNZ` non-zeros
    of X each (nodes are split independently, so the result is the same); ``every_row`` (the root
    with all N rows, in order) splits X itself, not a copy."""
    if every_row:
        return split_level(X, G, ptr, delta, seeds, discount, opts, node_features)
    node_nnz = np.add.reduceat(np.diff(X.indptr)[rows], ptr[:-1])
    bounds, total = [0], 0
    for k, n in enumerate(node_nnz.tolist()):
        if total and total + n > CHUNK_NNZ:
            bounds.append(k)
            total = 0
        total += n
    bounds.append(node_nnz.size)
    parts = []
    for c0, c1 in zip(bounds[:-1], bounds[1:]):
        r0, r1 = int(ptr[c0]), int(ptr[c1])
        parts.append(split_level(X[rows[r0:r1]], G[rows[r0:r1]], ptr[c0:c1 + 1] - r0, delta[r0:r1], seeds[c0:c1],
                                 discount, opts, node_features))
    if len(parts) == 1:
        return parts[0]
    return LevelSplit(np.concatenate([p.split for p in parts]), np.concatenate([p.positive for p in parts]),
                      [w for p in parts for w in p.w_indices], [w for p in parts for w in p.w_data],
                      np.concatenate([p.bias for p in parts]), np.concatenate([p.n_iter for p in parts]))


def _assemble(D: int, K: int, node_depth: list, children: list, w_parts: list, bias: list, n_iter: list,
              leaf_nodes: list, leaf_rows: list, Y: sp.csr_matrix, top_k: int) -> Tree:
    """The :class:`Tree` of the grown nodes (leaf numbers in breadth-first order)."""
    n_nodes = len(node_depth)
    empty = (np.zeros(0, np.int64), np.zeros(0))
    w_rows = [empty if p is None else p for p in w_parts]
    lengths = np.array([r[0].size for r in w_rows], dtype=np.int64)
    W = sp.csr_matrix((np.concatenate([r[1] for r in w_rows]), np.concatenate([r[0] for r in w_rows]),
                       np.concatenate([[0], np.cumsum(lengths)])), shape=(n_nodes, D))
    order = np.argsort(np.asarray(leaf_nodes), kind="stable")  # leaves numbered in node (BFS) order
    leaf = np.full(n_nodes, -1, np.int64)
    leaf[np.asarray(leaf_nodes, dtype=np.int64)[order]] = np.arange(order.size)
    rows_in_order = [leaf_rows[i] for i in order]
    leaf_size = np.array([r.size for r in rows_in_order], dtype=np.int64)
    ptr = np.concatenate([[0], np.cumsum(leaf_size)])
    all_rows = np.concatenate(rows_in_order) if rows_in_order else np.zeros(0, np.int64)
    leaf_labels, distinct = _leaf_distributions(Y[all_rows], ptr, top_k)
    return Tree(children=np.asarray(children, dtype=np.int64).reshape(-1, 2),
                depth=np.asarray(node_depth, dtype=np.int32), leaf=leaf,
                bias=np.asarray(bias, dtype=np.float64), n_iter=np.asarray(n_iter, dtype=np.int32), W=W,
                leaf_labels=leaf_labels, leaf_size=leaf_size, leaf_label_count=distinct)
