"""A FastXML ensemble as one set of flat arrays: routing, leaf scores, balance statistics, and the
checks a loaded forest must pass.

Contract: :class:`Forest` concatenates :class:`~.tree.Tree` s (node and leaf numbers made global;
``tree_root[t]`` is tree t's root). :meth:`Forest.leaves` routes a CSR block of points down every
chosen tree, each tree walked once for the whole block by compiled code (``wᵀx + b > 0`` to the
positive child);
:meth:`Forest.scores` averages the reached leaves' label distributions over the chosen trees into
a CSR (n, K) matrix (Algorithm 3 / eq. 6 of Prabhu & Varma). :meth:`Forest.to_arrays` gives
every field as plain NumPy arrays (for comparing forests); :meth:`Forest.check` refuses arrays that
do not form trees (a damaged or altered file) before anything routes through them.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import scipy.sparse as sp

from .kernels import pair_dots, route
from .tree import Tree

__all__ = ["CSR_FIELDS", "Forest", "paired_row_dots"]

#: The fields held as CSR matrices: separators (n_nodes, D) and leaf distributions (n_leaves, K).
CSR_FIELDS = ("W", "leaf_labels")


def paired_row_dots(A: sp.csr_matrix, rows: np.ndarray, B: sp.csr_matrix, cols: np.ndarray) -> np.ndarray:
    """``A[rows[p]] · B[cols[p]]`` for each pair p: (P,), for CSR ``A`` (n, D) and ``B`` (m, D), in one
    compiled pass over the pairs (:func:`~.kernels.pair_dots`: each of the A row's non-zeros looked
    up in the B row; nothing dense, no sparse product per pair). A matrix that is not canonical is
    canonicalised in a copy first."""
    A, B = _sorted(sp.csr_matrix(A)), _sorted(sp.csr_matrix(B))
    out = np.empty(np.asarray(rows).size)
    pair_dots(A.indptr, A.indices, np.asarray(A.data, dtype=np.float64), np.asarray(rows, dtype=np.int64),
              B.indptr, B.indices, np.asarray(B.data, dtype=np.float64), np.asarray(cols, dtype=np.int64), out)
    return out


def _sorted(M: sp.csr_matrix) -> sp.csr_matrix:
    """``M`` with sorted column indices and no duplicates (a copy only when it has neither)."""
    if M.has_canonical_format:
        return M
    M = M.copy()
    M.sum_duplicates()
    return M


# Tree fields holding node / leaf numbers, renumbered when trees are joined or split apart.
_NODE_LINKS = ("children",)
_LEAF_LINKS = ("leaf",)
_LEAF_FIELDS = ("leaf_labels", "leaf_size", "leaf_label_count")


@dataclass
class Forest(Tree):
    """T trees as one :class:`~.tree.Tree` whose per-node and per-leaf arrays are concatenated
    (node and leaf numbers made global), plus ``tree_root`` (T,), ``node_tree`` (n_nodes,) and
    ``leaf_tree`` (n_leaves,): which tree each root, node and leaf belongs to."""

    tree_root: np.ndarray
    node_tree: np.ndarray
    leaf_tree: np.ndarray

    @classmethod
    def from_trees(cls, trees: list[Tree]) -> "Forest":
        """Concatenate trees, renumbering nodes and leaves."""
        n_nodes = np.array([t.depth.size for t in trees], dtype=np.int64)
        n_leaves = np.array([t.leaf_size.size for t in trees], dtype=np.int64)
        node_off = np.concatenate([[0], np.cumsum(n_nodes)[:-1]])
        leaf_off = np.concatenate([[0], np.cumsum(n_leaves)[:-1]])
        kw = {}
        for f in fields(Tree):
            parts = [getattr(t, f.name) for t in trees]
            if f.name in CSR_FIELDS:
                kw[f.name] = sp.vstack(parts, format="csr")
                continue
            offsets = node_off if f.name in _NODE_LINKS else leaf_off if f.name in _LEAF_LINKS else None
            if offsets is not None:
                parts = [np.where(a >= 0, a + o, -1) for a, o in zip(parts, offsets)]
            kw[f.name] = np.concatenate(parts)
        T = np.arange(len(trees))
        return cls(**kw, tree_root=node_off, node_tree=np.repeat(T, n_nodes), leaf_tree=np.repeat(T, n_leaves))

    @property
    def n_trees(self) -> int:
        return int(self.tree_root.size)

    def tree(self, t: int) -> Tree:
        """Tree ``t`` on its own (node and leaf numbers local again)."""
        nodes = np.flatnonzero(self.node_tree == t)
        leaves = np.flatnonzero(self.leaf_tree == t)
        n0 = int(nodes[0]) if nodes.size else 0
        l0 = int(leaves[0]) if leaves.size else 0
        kw = {}
        for f in fields(Tree):
            a = getattr(self, f.name)
            a = a[l0:l0 + leaves.size] if f.name in _LEAF_FIELDS else a[n0:n0 + nodes.size]
            offset = n0 if f.name in _NODE_LINKS else l0 if f.name in _LEAF_LINKS else None
            kw[f.name] = a if offset is None else np.where(a >= 0, a - offset, -1)
        return Tree(**kw)

    def subset(self, trees) -> "Forest":
        """A forest of the given trees, in the given order."""
        return Forest.from_trees([self.tree(int(t)) for t in np.asarray(trees).ravel()])

    def _trees(self, trees) -> np.ndarray:
        return np.arange(self.n_trees) if trees is None else np.asarray(trees, dtype=np.int64).ravel()

    def leaves(self, X: sp.csr_matrix, trees=None) -> np.ndarray:
        """The leaf each point of ``X`` (n, D) CSR reaches in each chosen tree: int64 (n, T').

        Compiled (:func:`~.kernels.route`): each tree is walked once for the whole block, and a
        training point reaches the leaf it was sent to while the tree grew."""
        trees = self._trees(trees)
        X = sp.csr_matrix(X)
        if X.shape[1] != self.W.shape[1]:  # the compiled walk reads a dense (D,) vector at X's columns
            raise ValueError(f"X has {X.shape[1]} features, the forest's separators {self.W.shape[1]}")
        if trees.size and (trees.min() < 0 or trees.max() >= self.n_trees):
            raise ValueError(f"tree numbers must lie in [0, {self.n_trees})")
        out = np.empty((X.shape[0], trees.size), np.int64)
        route(X.indptr, X.indices, np.asarray(X.data, dtype=np.float64), self.W.indptr, self.W.indices,
              np.asarray(self.W.data, dtype=np.float64), np.asarray(self.bias, dtype=np.float64),
              np.asarray(self.children, dtype=np.int64), np.asarray(self.leaf, dtype=np.int64),
              np.asarray(self.tree_root[trees], dtype=np.int64), int(self.W.shape[1]),
              int(self.depth.max(initial=0)) + 2, out)
        return out

    def scores(self, X: sp.csr_matrix, trees=None) -> sp.csr_matrix:
        """Leaf label distributions averaged over the chosen trees: CSR (n, K), canonical."""
        leaves = self.leaves(X, trees)
        n, T = leaves.shape
        A = sp.csr_matrix((np.full(leaves.size, 1.0 / T), leaves.ravel(), np.arange(0, n * T + 1, T)),
                          shape=(n, self.leaf_labels.shape[0]))
        S = (A @ self.leaf_labels).tocsr()
        S.eliminate_zeros()
        return S

    def balance(self, num_points: int, max_leaf: int) -> np.ndarray:
        """Paper's Table 6 per tree: mean leaf depth / log2(N / max_leaf) (1 = perfectly
        balanced); float64 (T,)."""
        leaf_depth = self.depth[self.leaf >= 0].astype(np.float64)
        mean_depth = np.bincount(self.node_tree[self.leaf >= 0], weights=leaf_depth, minlength=self.n_trees)
        mean_depth /= np.maximum(np.bincount(self.leaf_tree, minlength=self.n_trees), 1)
        return mean_depth / np.log2(max(num_points / max_leaf, 2.0))

    def check(self, num_features: int, num_labels: int) -> None:
        """Raise ``ValueError`` unless the arrays form ``n_trees`` trees over D = ``num_features``
        features and K = ``num_labels`` labels, laid out as :meth:`from_trees` lays them out:
        consistent lengths and integer dtypes; each tree's nodes and leaf rows contiguous and in tree
        order, its root its first node at depth 0; every internal node (leaf number -1) with two
        children numbered after it in its own tree, one depth below it, and every other node the
        child of exactly one node (so each tree is a tree: routing from the root ends at a leaf, no
        node is reached twice); every leaf node owning one distinct leaf row of its tree; no negative
        counts; finite separators and leaf scores in [0, 1] over labels < K (the CSR fields are
        already well-formed: :class:`~mlgp.estimator.SavedState` checks them)."""
        n, n_leaves, T = self.depth.size, self.leaf_size.size, self.tree_root.size
        per_node = {"children": (n, 2), "depth": (n,), "leaf": (n,), "bias": (n,), "n_iter": (n,), "node_tree": (n,),
                    "leaf_size": (n_leaves,), "leaf_label_count": (n_leaves,), "leaf_tree": (n_leaves,),
                    "W": (n, num_features), "leaf_labels": (n_leaves, num_labels), "tree_root": (T,)}
        for name, shape in per_node.items():
            if getattr(self, name).shape != shape:
                raise ValueError(f"forest field {name} has shape {getattr(self, name).shape}, expected {shape}")
        ints = ("children", "depth", "leaf", "n_iter", "leaf_size", "leaf_label_count", "tree_root", "node_tree",
                "leaf_tree")
        for name in ints:
            if getattr(self, name).dtype.kind not in "iu":
                raise ValueError(f"forest field {name} must hold integers, not {getattr(self, name).dtype}")
        if T == 0 or n == 0:
            raise ValueError("the forest has no trees")
        children, depth, leaf, node_tree, leaf_tree, roots = (
            getattr(self, name).astype(np.int64) for name in ("children", "depth", "leaf", "node_tree", "leaf_tree",
                                                              "tree_root"))
        self._check_layout(node_tree, leaf_tree, roots, n, n_leaves, T)
        is_leaf = leaf >= 0
        inner = np.flatnonzero(~is_leaf)
        kids = children[inner]
        if np.any(leaf[inner] != -1) or np.any(children[is_leaf] != -1) or np.any(kids <= inner[:, None]) \
                or np.any(kids >= n):
            raise ValueError("forest children out of range: a leaf has children, or a child is not numbered "
                             "after its parent within the forest")
        if np.any(node_tree[kids] != node_tree[inner][:, None]):
            raise ValueError("a forest node has a child in another tree")
        expected = np.ones(n, dtype=np.int64)
        expected[roots] = 0
        if np.any(np.bincount(kids.ravel(), minlength=n) != expected):
            raise ValueError("forest nodes must each be the child of exactly one node, and roots of none")
        if np.any(depth[roots] != 0) or np.any(depth[kids] != depth[inner][:, None] + 1):
            raise ValueError("forest depths must be 0 at the roots and grow by one from parent to child")
        if leaf.max() >= n_leaves or np.any(np.bincount(leaf[is_leaf], minlength=n_leaves) != 1):
            raise ValueError(f"forest leaf numbers must name each of the {n_leaves} leaf rows exactly once")
        if np.any(leaf_tree[leaf[is_leaf]] != node_tree[is_leaf]):
            raise ValueError("a forest leaf row is assigned to another tree than its node")
        if min(int(getattr(self, name).min(initial=0)) for name in ("n_iter", "leaf_size", "leaf_label_count")) < 0:
            raise ValueError("forest counts (n_iter, leaf_size, leaf_label_count) must be >= 0")
        for name in CSR_FIELDS:
            getattr(self, name).check_format(full_check=True)
        if not (np.all(np.isfinite(self.bias)) and np.all(np.isfinite(self.W.data))):
            raise ValueError("forest separators hold NaN or inf")
        data = self.leaf_labels.data
        if data.size and not (np.all(np.isfinite(data)) and data.min() >= 0 and data.max() <= 1):
            raise ValueError("forest leaf scores must be finite and in [0, 1]")

    @staticmethod
    def _check_layout(node_tree: np.ndarray, leaf_tree: np.ndarray, roots: np.ndarray, n: int, n_leaves: int,
                      T: int) -> None:
        """Trees numbered 0..T-1, each a contiguous run of nodes (at least its root, which comes
        first) and of leaf rows, in tree order."""
        if node_tree.min() < 0 or node_tree.max() >= T or leaf_tree.min(initial=0) < 0 \
                or leaf_tree.max(initial=0) >= T:
            raise ValueError(f"forest tree numbers must lie in [0, {T})")
        if np.any(np.diff(node_tree) < 0) or np.any(np.diff(leaf_tree) < 0):
            raise ValueError("forest trees must each hold a contiguous run of nodes and leaf rows, in tree order")
        if np.any(roots != np.searchsorted(node_tree, np.arange(T))) or np.any(roots >= n) \
                or np.any(node_tree[np.minimum(roots, n - 1)] != np.arange(T)):
            raise ValueError("forest roots out of range or in the wrong tree (a tree's root is its first node)")

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Plain arrays (CSR fields as ``<name>.data/.indices/.indptr/.shape``)."""
        out: dict[str, np.ndarray] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name in CSR_FIELDS:
                for part in ("data", "indices", "indptr", "shape"):
                    out[f"{f.name}.{part}"] = np.asarray(getattr(v, part))
            else:
                out[f.name] = np.asarray(v)
        return out
