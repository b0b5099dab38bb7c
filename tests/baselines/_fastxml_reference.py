"""A reference FastXML tree grower: one node at a time, breadth first, each node split by
:func:`~mlgp.baselines._fastxml.split.split_node` on its own scipy matrices. This is the grower the
package used before trees were grown a level at a time; the tests check that
:func:`~mlgp.baselines._fastxml.tree.grow_tree` builds the same trees, array for array."""

from __future__ import annotations

from collections import deque

import numpy as np
import scipy.sparse as sp

from mlgp.baselines._fastxml.split import SplitOptions, split_node
from mlgp.baselines._fastxml.tree import Tree


def leaf_distribution(Y: sp.csr_matrix, top_k: int) -> tuple[np.ndarray, np.ndarray, int]:
    """The ``top_k`` most frequent labels of the rows of ``Y``, their frequencies (count / n), most
    frequent first, ties to the lower label; and the number of distinct labels."""
    labels, counts = np.unique(Y.indices, return_counts=True)
    order = np.lexsort((labels, -counts))[:top_k]
    return labels[order], counts[order] / max(Y.shape[0], 1), int(labels.size)


def _compress_labels(G: sp.csr_matrix) -> sp.csr_matrix:
    """``G`` (n, K) restricted to its active columns, in increasing label order: (n, m)."""
    active = np.unique(G.indices)
    cols = np.searchsorted(active, G.indices)
    return sp.csr_matrix((G.data, cols, G.indptr), shape=(G.shape[0], active.size))


def grow_tree_reference(X: sp.csr_matrix, Y: sp.csr_matrix, G: sp.csr_matrix, discount: np.ndarray,
                        opts: SplitOptions, max_leaf: int, top_k: int, seed: int) -> Tree:
    """The tree :func:`~mlgp.baselines._fastxml.tree.grow_tree` should grow, node by node."""
    rng = np.random.RandomState(seed)
    N, K = Y.shape
    nodes: list = []  # per node: [children, depth, leaf, bias, n_iter, (w indices, w data)]
    leaves: list = []  # per leaf: (labels, freq, size, count)
    empty = (np.zeros(0, np.int64), np.zeros(0))

    def new_node(depth: int) -> int:
        nodes.append([[-1, -1], depth, -1, 0.0, 0, empty])
        return len(nodes) - 1

    def make_leaf(node: int, rows: np.ndarray) -> None:
        labels, freq, count = leaf_distribution(Y[rows], top_k)
        nodes[node][2] = len(leaves)
        leaves.append((labels, freq, rows.size, count))

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
        nodes[node][3:6] = [split.b, split.n_iter, (split.w.indices.astype(np.int64), split.w.data)]
        for slot, mask in enumerate((split.positive, ~split.positive)):
            child = new_node(nodes[node][1] + 1)
            nodes[node][0][slot] = child
            queue.append((child, rows[mask]))

    w_rows = [n[5] for n in nodes]
    lengths = np.array([r[0].size for r in w_rows], dtype=np.int64)
    W = sp.csr_matrix((np.concatenate([r[1] for r in w_rows]), np.concatenate([r[0] for r in w_rows]),
                       np.concatenate([[0], np.cumsum(lengths)])), shape=(len(nodes), X.shape[1]))
    sizes = np.array([lf[0].size for lf in leaves], dtype=np.int64)
    leaf_labels = sp.csr_matrix((np.concatenate([lf[1] for lf in leaves]),
                                 np.concatenate([lf[0] for lf in leaves]).astype(np.int64),
                                 np.concatenate([[0], np.cumsum(sizes)])), shape=(len(leaves), K))
    return Tree(children=np.asarray([n[0] for n in nodes], dtype=np.int64).reshape(-1, 2),
                depth=np.asarray([n[1] for n in nodes], dtype=np.int32),
                leaf=np.asarray([n[2] for n in nodes], dtype=np.int64),
                bias=np.asarray([n[3] for n in nodes], dtype=np.float64),
                n_iter=np.asarray([n[4] for n in nodes], dtype=np.int32), W=W, leaf_labels=leaf_labels,
                leaf_size=np.asarray([lf[2] for lf in leaves], dtype=np.int64),
                leaf_label_count=np.asarray([lf[3] for lf in leaves], dtype=np.int64))
