"""Growing one FastXML tree (Algorithm 1 of Prabhu & Varma, 2014) into compact arrays.

Contract: :func:`grow_tree` splits nodes breadth first with :func:`~.split.split_node` until a
node holds at most ``max_leaf`` points, has no labels, or cannot be split; it returns a
:class:`Tree` whose separators are one sparse CSR row per node and whose leaves keep only their
``top_k`` labels, each with the fraction of the leaf's points that carry it (ties to the lower
label index). A tree depends only on its data, options and ``seed``, so trees grown in any process
and in any order are identical.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .split import SplitOptions, split_node

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
        liblinear's Newton iterations for the node's separator (0 at leaves).
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
    labels."""
    labels, counts = np.unique(Y.indices, return_counts=True)
    order = np.lexsort((labels, -counts))[:top_k]
    return labels[order], counts[order] / max(Y.shape[0], 1), int(labels.size)


def _compress_labels(G: sp.csr_matrix) -> sp.csr_matrix:
    """``G`` (n, K) restricted to its active columns, in increasing label order: (n, m)."""
    active = np.unique(G.indices)
    cols = np.searchsorted(active, G.indices)
    return sp.csr_matrix((G.data, cols, G.indptr), shape=(G.shape[0], active.size))


def grow_tree(X: sp.csr_matrix, Y: sp.csr_matrix, G: sp.csr_matrix, discount: np.ndarray,
              opts: SplitOptions, max_leaf: int, top_k: int, seed: int) -> Tree:
    """Grow one tree.

    Parameters
    ----------
    X : CSR (N, D)
        Training features.
    Y : CSR (N, K)
        0/1 labels (leaf distributions).
    G : CSR (N, K)
        Weighted labels of the split loss (see :mod:`.split`).
    discount : np.ndarray (K,)
        Gain of each ranking position.
    max_leaf, top_k : int
        A node with at most ``max_leaf`` points is a leaf; a leaf keeps ``top_k`` labels.
    seed : int
        Seeds the tree's random state (δ starts and liblinear).
    """
    rng = np.random.RandomState(seed)
    N, K = Y.shape
    children: list = []
    depth: list = []
    leaf: list = []
    bias: list = []
    n_iter: list = []
    w_rows: list = []
    leaf_idx: list = []
    leaf_val: list = []
    leaf_size: list = []
    leaf_count: list = []
    empty = (np.zeros(0, np.int64), np.zeros(0))

    def new_node(d: int) -> int:
        children.append([-1, -1])
        depth.append(d)
        leaf.append(-1)
        bias.append(0.0)
        n_iter.append(0)
        w_rows.append(empty)
        return len(depth) - 1

    def make_leaf(node: int, rows: np.ndarray) -> None:
        labels, freq, count = leaf_distribution(Y[rows], top_k)
        leaf[node] = len(leaf_idx)
        leaf_idx.append(labels)
        leaf_val.append(freq)
        leaf_size.append(rows.size)
        leaf_count.append(count)

    queue = deque([(new_node(0), np.arange(N))])
    while queue:
        node, rows = queue.popleft()
        Gn = G[rows] if rows.size > max_leaf else None
        if Gn is None or Gn.nnz == 0:
            make_leaf(node, rows)
            continue
        Gc = _compress_labels(Gn)
        split = split_node(X[rows], Gc, discount[:Gc.shape[1]], opts, rng)
        if split is None:
            make_leaf(node, rows)
            continue
        w_rows[node] = (split.w.indices.astype(np.int64), split.w.data)
        bias[node] = split.b
        n_iter[node] = split.n_iter
        for slot, mask in enumerate((split.positive, ~split.positive)):
            child = new_node(depth[node] + 1)
            children[node][slot] = child
            queue.append((child, rows[mask]))

    lengths = np.array([r[0].size for r in w_rows], dtype=np.int64)
    W = sp.csr_matrix((np.concatenate([r[1] for r in w_rows]), np.concatenate([r[0] for r in w_rows]),
                       np.concatenate([[0], np.cumsum(lengths)])), shape=(len(depth), X.shape[1]))
    sizes = np.array([a.size for a in leaf_idx], dtype=np.int64)
    leaf_labels = sp.csr_matrix((np.concatenate(leaf_val), np.concatenate(leaf_idx).astype(np.int64),
                                 np.concatenate([[0], np.cumsum(sizes)])), shape=(len(leaf_idx), K))
    return Tree(children=np.asarray(children, dtype=np.int64).reshape(-1, 2),
                depth=np.asarray(depth, dtype=np.int32), leaf=np.asarray(leaf, dtype=np.int64),
                bias=np.asarray(bias, dtype=np.float64), n_iter=np.asarray(n_iter, dtype=np.int32), W=W, leaf_labels=leaf_labels,
                leaf_size=np.asarray(leaf_size, dtype=np.int64),
                leaf_label_count=np.asarray(leaf_count, dtype=np.int64))
