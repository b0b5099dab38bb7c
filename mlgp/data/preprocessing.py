"""Feature preprocessing shared by every model family: row normalisation, and the choice between it
and column standardisation.

:func:`normalise_rows` takes (N, D) CSR or dense features and returns CSR; it never densifies the
whole matrix. A model carries the same normalisation as an input map,
:class:`mlgp.blocks.RowNormalised` (this function applied a block of rows at a time, bit for bit),
so its callers pass raw rows.

:func:`chosen_preprocessing` is the one ``preprocessing="auto"`` rule of every family that chooses its
preprocessing from the training rows (GenEML's :class:`~mlgp.geneml.features.FeatureMap`, MLGPF's
recipe): ``"columns"`` where :func:`wants_columns` says so — dense features (at least
:data:`DENSE_FROM` of the entries stored) or signed ones, where row normalisation alone mixes the
scales of unrelated columns (emotions' features span −99 to 237) — else ``"rows"``: row
normalisation suits non-negative sparse counts or TF-IDF. :func:`column_statistics` gives the
columns' centre and scale from the training rows (:class:`mlgp.blocks.ColumnStandardised` applies
them). What ``"rows"`` and ``"columns"`` then build is each family's own composition of the input
maps of :mod:`mlgp.blocks`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..blocks import RowNormalised
from ..errors import ArgumentError

__all__ = ["DENSE_FROM", "PREPROCESSINGS", "chosen_preprocessing", "column_statistics", "normalise_rows",
           "wants_columns"]

#: Share of stored entries from which features count as dense.
DENSE_FROM = 0.5
#: The preprocessings by name: ``"auto"`` (:func:`chosen_preprocessing` picks one of the next two),
#: ``"rows"``, ``"columns"``, and ``None`` (the features as given; not every family offers it).
PREPROCESSINGS = ("auto", "rows", "columns", None)


def normalise_rows(X: sp.spmatrix | np.ndarray) -> sp.csr_matrix:
    """L2-normalise each row of ``X`` (N, D); rows of zeros stay zero. Returns float64 CSR (N, D)
    (:meth:`mlgp.blocks.RowNormalised.rows`, the arithmetic of the model's input map)."""
    return RowNormalised.rows(X)


def is_dense(X: sp.csr_matrix) -> bool:
    """Whether CSR ``X`` (N, D) stores at least :data:`DENSE_FROM` of its entries."""
    return X.nnz >= DENSE_FROM * X.shape[0] * X.shape[1]


def wants_columns(X: sp.csr_matrix) -> bool:
    """The module's rule for CSR ``X`` (N, D): standardise columns (dense or signed features) rather
    than normalise rows (non-negative sparse ones); never for one row, which its own centre would
    turn into zeros."""
    return X.shape[0] > 1 and (is_dense(X) or bool(X.nnz and X.data.min() < 0))


def chosen_preprocessing(preprocessing: str | None, X) -> str | None:
    """``preprocessing`` (one of :data:`PREPROCESSINGS`) with ``"auto"`` chosen for the training rows
    ``X`` (N, D), CSR or dense: ``"columns"`` when :func:`wants_columns`, else ``"rows"``; any other
    name as given. An unknown name is an :class:`~mlgp.errors.ArgumentError`."""
    if preprocessing not in PREPROCESSINGS:
        raise ArgumentError(f"preprocessing must be one of {PREPROCESSINGS}; got {preprocessing!r}")
    if preprocessing != "auto":
        return preprocessing
    return "columns" if wants_columns(X if sp.issparse(X) and X.format == "csr" else sp.csr_matrix(X)) else "rows"


def column_statistics(X: sp.spmatrix | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The training rows' column centre (D,) and scale (D,) (> 0) of ``X`` (N, D), CSR or dense: the mean and
    standard deviation when X is dense (:func:`is_dense`), else 0 and the root mean square (centring
    would fill it in). A column whose spread is 0 (constant, or all zero) gets scale 1: it is only
    centred."""
    X = sp.csr_matrix(X, dtype=np.float64)
    if is_dense(X):  # X is mostly stored: its dense copy costs about what it does
        values = X.toarray()
        centre, spread = values.mean(axis=0), values.std(axis=0)
    else:
        centre, spread = np.zeros(X.shape[1]), np.sqrt(np.asarray(X.multiply(X).mean(axis=0)).ravel())
    return centre, np.where(spread > 1e-12 * np.maximum(1.0, np.abs(centre)), spread, 1.0)
