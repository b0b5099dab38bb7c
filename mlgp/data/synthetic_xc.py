"""Synthetic extreme-classification data of any shape, built straight into CSR arrays.

:func:`extreme_like` draws a data set with a chosen N, D, K, non-zeros per row and labels per
point, with power-law label frequencies and features that depend on the labels, in row chunks:
it never allocates anything of size N × D or N × K (``scipy.sparse.random`` would: about 23 GB of
index space for a 3,000 × 10⁶ shape), only the CSR arrays themselves and one chunk's temporaries.
:data:`AMAZONCAT_13K` holds the shape of AmazonCat-13K. The same ``seed`` gives the same data.

The model: label l has frequency weight ∝ (l + 1)^−``label_exponent`` and a topic of ``topic_size``
feature columns drawn uniformly from all D. Point n has 1 + Poisson(``labels_per_point`` − 1) labels drawn by those weights
(duplicates merged); of its ``nnz_per_row`` feature draws a fraction ``signal`` come from the topics
of its labels (a label, then a column of its topic) and the rest log-uniformly from all D columns
(P(j) ∝ 1/(j + 1): low column ids are common words);
values are uniform on [0.5, 1.5], duplicate columns summed, rows scaled to unit L2 norm.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import scipy.sparse as sp

from .. import arguments
from ..errors import ArgumentError
from .registry import Dataset, Split

__all__ = ["AMAZONCAT_13K", "extreme_like"]

#: AmazonCat-13K's shape (the XC repository's split): training and test points, features, labels,
#: and about 70 non-zeros and 5 labels per point.
AMAZONCAT_13K = dict(num_train=1_186_239, num_test=306_782, num_features=203_882, num_labels=13_330,
                     nnz_per_row=70, labels_per_point=5.0)


def extreme_like(num_train: int, num_test: int, num_features: int, num_labels: int, nnz_per_row: int = 70,
                 labels_per_point: float = 5.0, *, signal: float = 0.5, topic_size: int = 20,
                 label_exponent: float = 1.0, chunk_rows: int = 100_000, seed: int = 0,
                 progress: Callable | None = None, name: str = "synthetic-xc") -> Dataset:
    """A sparse multi-label data set of the given shape (module docstring for the model).

    Parameters
    ----------
    num_train, num_test
        Points in each split (N and the test size).
    num_features, num_labels
        D and K.
    nnz_per_row
        Feature draws per point (rows hold slightly fewer non-zeros after duplicates merge).
    labels_per_point
        Mean number of label draws per point (≥ 1).
    signal
        Fraction of feature draws from the point's label topics, in [0, 1].
    topic_size
        Columns per label topic.
    label_exponent
        Power-law exponent of the label frequencies (≥ 0).
    chunk_rows
        Rows generated at a time (bounds the temporaries).
    seed
        Seeds everything.
    progress
        ``progress(iterable, total=…, desc=…)`` wrapping the chunk loop (e.g. ``tqdm``).

    Returns
    -------
    Dataset
        CSR float64 X (int32 indices when D fits) and CSR int8 Y per split; ``extras`` holds
        ``label_weights`` (K,) and the generating settings.
    """
    sizes = dict(num_train=num_train, num_test=num_test, num_features=num_features, num_labels=num_labels,
                 nnz_per_row=nnz_per_row, topic_size=topic_size, chunk_rows=chunk_rows)
    sizes = {k: arguments.positive_int(v, k) for k, v in sizes.items()}
    labels_per_point = arguments.positive_real(labels_per_point, "labels_per_point")
    label_exponent = arguments.finite_real(label_exponent, "label_exponent")
    signal = arguments.finite_real(signal, "signal")
    seed = arguments.seed(seed)
    if labels_per_point < 1 or not 0 <= signal <= 1 or label_exponent < 0:
        raise ArgumentError(f"need labels_per_point ≥ 1, 0 ≤ signal ≤ 1 and label_exponent ≥ 0; got "
                            f"{labels_per_point}, {signal}, {label_exponent}")
    rng = np.random.default_rng(seed)
    D, K = sizes["num_features"], sizes["num_labels"]
    weights = (np.arange(1, K + 1, dtype=np.float64)) ** -label_exponent
    weights /= weights.sum()
    topics = rng.integers(0, D, (K, sizes["topic_size"]))
    settings = dict(nnz_per_row=sizes["nnz_per_row"], labels_per_point=labels_per_point, signal=signal,
                    topic_size=sizes["topic_size"], label_exponent=label_exponent, seed=seed)
    splits = {}
    for split in ("train", "test"):
        n = sizes[f"num_{split}"]
        starts = range(0, n, sizes["chunk_rows"])
        wrapped = progress(starts, total=len(starts), desc=f"generating {split}") if progress else starts
        parts = [_chunk(rng, min(sizes["chunk_rows"], n - s), D, weights, topics, settings) for s in wrapped]
        xs, ys = [p[0] for p in parts], [p[1] for p in parts]
        del parts
        splits[split] = Split(split, _stack(xs, D), _stack(ys, K), None)
    return Dataset(name=name, train=splits["train"], test=splits["test"],
                   extras=dict(label_weights=weights, **settings))


def _log_uniform(rng: np.random.Generator, upper: int, size) -> np.ndarray:
    """Integers in [0, upper) with P(j) falling like 1/(j + 1) (log-uniform), int64."""
    return np.minimum((upper ** rng.random(size)).astype(np.int64) - 1, upper - 1)


def _chunk(rng, n: int, D: int, weights: np.ndarray, topics: np.ndarray, s: dict) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """``n`` rows of X (CSR float64, unit rows) and Y (CSR int8)."""
    counts = 1 + rng.poisson(s["labels_per_point"] - 1, n)
    label_ptr = np.concatenate([[0], np.cumsum(counts)])
    labels = np.searchsorted(np.cumsum(weights), rng.random(label_ptr[-1]), side="right")
    labels = np.minimum(labels, len(weights) - 1)
    Y = sp.csr_matrix((np.ones(label_ptr[-1], dtype=np.int8), labels, label_ptr), shape=(n, len(weights)))
    Y.sum_duplicates()
    Y.data[:] = 1
    draws = s["nnz_per_row"]
    from_topics = int(round(draws * s["signal"]))
    cols = _log_uniform(rng, D, (n, draws))
    if from_topics:
        pick = (rng.random((n, from_topics)) * counts[:, None]).astype(np.int64) + label_ptr[:-1, None]
        chosen = labels[pick]  # one of the point's own labels for each topic draw
        cols[:, :from_topics] = topics[chosen, rng.integers(0, topics.shape[1], (n, from_topics))]
    values = rng.uniform(0.5, 1.5, (n, draws))
    X = sp.csr_matrix((values.ravel(), cols.ravel().astype(np.int32 if D < 2**31 else np.int64),
                       np.arange(0, n * draws + 1, draws)), shape=(n, D))
    X.sum_duplicates()
    norms = np.sqrt(np.add.reduceat(X.data ** 2, X.indptr[:-1]))
    X.data /= np.repeat(norms, np.diff(X.indptr))
    return X, Y


def _stack(parts: list[sp.csr_matrix], width: int) -> sp.csr_matrix:
    """Row-stack CSR chunks by concatenating their arrays (one copy of each)."""
    nnz = np.cumsum([0] + [p.nnz for p in parts])
    indptr = np.concatenate([[0]] + [p.indptr[1:].astype(np.int64) + off for p, off in zip(parts, nnz[:-1])])
    data = np.concatenate([p.data for p in parts])
    indices = np.concatenate([p.indices for p in parts])
    parts.clear()
    out = sp.csr_matrix((data, indices, indptr), shape=(len(indptr) - 1, width))
    out.has_sorted_indices = True
    return out
