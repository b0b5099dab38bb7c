"""Summary statistics of multi-label datasets (the numbers the XC repository and
Mulan publish)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..errors import ArgumentError
from .registry import Dataset, Split

__all__ = ["statistics", "statistics_table"]


def _split_stats(split: Split) -> dict:
    Y = sp.csr_matrix(split.Y)
    X = sp.csr_matrix(split.X)
    n, k = Y.shape
    row_pos = np.diff(Y.indptr)
    col_pos = np.bincount(Y.indices, minlength=k)
    return {
        "N": n,
        "D": X.shape[1],
        "K": k,
        "labels_per_point": Y.nnz / n if n else float("nan"),
        "points_per_label": Y.nnz / k if k else float("nan"),
        "rows_without_labels": int(np.sum(row_pos == 0)),
        "labels_without_points": int(np.sum(col_pos == 0)),
        "nnz_per_point": X.nnz / n if n else float("nan"),
    }


def statistics(data: Dataset | Split) -> pd.Series:
    """Summary statistics of a dataset or one split.

    For a :class:`Dataset`: ``N_train``, ``N_test``, ``D``, ``K``,
    ``labels_per_point`` and ``points_per_label`` (both over train and test
    together, the convention of the published tables), plus
    ``labels_without_train_points``. For a :class:`Split`: ``N``, ``D``, ``K``,
    ``labels_per_point``, ``points_per_label``, ``rows_without_labels``,
    ``labels_without_points`` and ``nnz_per_point``.

    Returns
    -------
    pandas.Series
        Named after the dataset (or split).
    """
    if isinstance(data, Split):
        return pd.Series(_split_stats(data), name=data.name, dtype=object)
    if not isinstance(data, Dataset):
        raise ArgumentError(f"expected a Dataset or Split, got {type(data).__name__}")
    tr, te = data.train, data.test
    n = tr.num_points + te.num_points
    pos = tr.Y.nnz + te.Y.nnz
    k = data.num_labels
    out = {
        "N_train": tr.num_points,
        "N_test": te.num_points,
        "D": data.num_features,
        "K": k,
        "labels_per_point": pos / n if n else float("nan"),
        "points_per_label": pos / k if k else float("nan"),
        "labels_without_train_points": int(
            np.sum(np.bincount(tr.Y.indices, minlength=k) == 0)),
        "nnz_per_point": (tr.X.nnz + te.X.nnz) / n if n else float("nan"),
    }
    return pd.Series(out, name=data.name, dtype=object)


def statistics_table(datasets: Iterable[Dataset | Split] | Mapping[str, Dataset | Split]
                     ) -> pd.DataFrame:
    """One row of :func:`statistics` per dataset (index: names).

    Parameters
    ----------
    datasets
        Datasets (or splits), or a mapping name -> dataset.
    """
    if isinstance(datasets, Mapping):
        rows = []
        for name, d in datasets.items():
            s = statistics(d)
            s.name = name
            rows.append(s)
    else:
        rows = [statistics(d) for d in datasets]
    df = pd.DataFrame(rows)
    return df.infer_objects()
