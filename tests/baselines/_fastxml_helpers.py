"""Shared by the FastXML tests: a small sparse problem and the forest comparisons and walks that
check trees against independent computations."""

from __future__ import annotations

import numpy as np

from mlgp.baselines import FastXML


def _data(rng: np.random.Generator, N: int = 90, D: int = 12, K: int = 7):
    """Sparse non-negative features and labels that depend on them (every point has a label)."""
    X = rng.random((N, D)) * (rng.random((N, D)) < 0.4)
    X[np.arange(N), rng.integers(0, D, size=N)] += 1.0  # no empty rows
    Y = (X[:, :K] + 0.3 * rng.random((N, K)) > 0.5).astype(np.int64)
    Y[np.arange(N), np.argmax(X[:, :K], axis=1)] = 1
    return X, Y


def _assert_same_forest(a: FastXML, b: FastXML) -> None:
    A, B = a.forest_.to_arrays(), b.forest_.to_arrays()
    assert A.keys() == B.keys()
    for key in A:
        np.testing.assert_array_equal(A[key], B[key], err_msg=key)
        assert A[key].dtype == B[key].dtype, key
    np.testing.assert_array_equal(a.tree_seeds_, b.tree_seeds_)


def _tree_leaves_by_walking(forest, t: int) -> tuple[list, list]:
    """Tree t's leaves (global leaf numbers) and their depths, by walking ``children`` from the root."""
    leaves, depths, stack = [], [], [(int(forest.tree_root[t]), 0)]
    while stack:
        node, d = stack.pop()
        if forest.children[node, 0] < 0:
            assert forest.children[node, 1] < 0 and forest.leaf[node] >= 0
            leaves.append(int(forest.leaf[node]))
            depths.append(d)
        else:
            assert forest.leaf[node] < 0
            stack.extend((int(c), d + 1) for c in forest.children[node])
    return leaves, depths


def _subtree_sizes(forest, t: int) -> dict[int, int]:
    """Training points under each node of tree t (from the leaves' sizes)."""
    sizes: dict[int, int] = {}

    def size(node: int) -> int:
        if forest.leaf[node] >= 0:
            s = int(forest.leaf_size[forest.leaf[node]])
        else:
            s = sum(size(int(c)) for c in forest.children[node])
        sizes[node] = s
        return s

    size(int(forest.tree_root[t]))
    return sizes


def _ref_top(freq: np.ndarray, k: int) -> list[int]:
    """The k most frequent labels with a non-zero frequency, the lower index first among equals."""
    return sorted((j for j in range(freq.size) if freq[j] > 0), key=lambda j: (-freq[j], j))[:k]
