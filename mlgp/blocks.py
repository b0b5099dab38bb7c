"""Row blocks of CSR or dense features, with an optional *input map* applied before any densifying.

Every place that walks over the rows of a feature matrix — scoring in batches, minibatches for
training, a model's ``predict_f``, the warm start, k-means initialisation, FastXML's scoring — takes
its blocks from here, so a model that declares an input map (e.g. a projection of D = 10⁶ sparse
features onto R = 50 directions) receives mapped (B, R) blocks and no (B, D) dense block is ever
formed.

Contract: an input map is a callable from a CSR block (B, D) — or a dense one, when the features
are dense — to a dense (B, R) array, with the attributes ``num_features`` (D) and ``num_outputs``
(R); :class:`InputMap` is that protocol. ``None`` is the identity map: CSR blocks are densified
(``dense=True``) or passed on as CSR (``dense=False``). The functions here trust their input: it
has been checked once, at the public boundary (:mod:`mlgp.validation`).
"""

from __future__ import annotations

from typing import Iterator, Protocol, runtime_checkable

import numpy as np
import scipy.sparse as sp

from .errors import ShapeError

__all__ = ["INPUT_MAPS", "InputMap", "LinearInputMap", "input_width", "register_input_map", "row_blocks", "take_rows"]


@runtime_checkable
class InputMap(Protocol):
    """A map from a block of D raw features to R model inputs, applied a block of rows at a time."""

    num_features: int
    num_outputs: int

    def __call__(self, block: sp.csr_matrix | np.ndarray) -> np.ndarray:
        """(B, D) CSR or dense → (B, R) dense."""


#: The input-map classes a saved model may name (a closed list: loading builds nothing else).
INPUT_MAPS: dict[str, type] = {}


def register_input_map(cls: type) -> type:
    """Class decorator: add ``cls`` to :data:`INPUT_MAPS` under ``module:qualname``."""
    INPUT_MAPS[f"{cls.__module__}:{cls.__qualname__}"] = cls
    return cls


@register_input_map
class LinearInputMap:
    """x ↦ x A: a block of D features times a fixed (D, R) matrix A, computed sparse-aware.

    Parameters
    ----------
    matrix
        A (D, R), dense or CSR (copied; a CSR matrix keeps the cost of a block at
        O(nnz(block) · R) without any dense (B, D) array), finite.

    The map takes D = ``num_features`` columns and gives R = ``num_outputs``.
    """

    def __init__(self, matrix) -> None:
        self.matrix = sp.csr_matrix(matrix, dtype=np.float64, copy=True) if sp.issparse(matrix) \
            else np.array(matrix, dtype=np.float64)
        if self.matrix.ndim != 2 or min(self.matrix.shape) < 1:
            raise ShapeError(f"the map's matrix must be (D, R) with D, R ≥ 1; got shape {self.matrix.shape}")
        values = self.matrix.data if sp.issparse(self.matrix) else self.matrix
        if not np.all(np.isfinite(values)):
            raise ShapeError("the map's matrix contains NaN or inf")
        self.num_features, self.num_outputs = (int(n) for n in self.matrix.shape)

    def __call__(self, block: sp.csr_matrix | np.ndarray) -> np.ndarray:
        """(B, D) CSR or dense → (B, R) dense float64."""
        out = block @ self.matrix
        return out.toarray() if sp.issparse(out) else np.asarray(out, dtype=np.float64)


def input_width(num_features: int, input_map: InputMap | None) -> int:
    """The width of the blocks a model sees: R for a map, else D."""
    return int(num_features) if input_map is None else int(input_map.num_outputs)


def take_rows(X: sp.csr_matrix | np.ndarray, rows, *, input_map: InputMap | None = None,
              dense: bool = True) -> sp.csr_matrix | np.ndarray:
    """``X[rows]`` through ``input_map``; CSR is densified only after the map, and only when
    ``dense`` (and no map) asks for it.

    Parameters
    ----------
    X
        (N, D) checked features, CSR or dense.
    rows
        A slice or an integer index array.
    input_map
        Applied to the (B, D) block before anything densifies it; ``None``: identity.
    dense
        With no map: densify CSR blocks (``True``) or return them as CSR (``False``).

    Returns
    -------
    (B, R) dense array (with a map), (B, D) dense array, or (B, D) CSR (``dense=False``).
    """
    block = X[rows]
    if input_map is not None:
        out = np.asarray(input_map(block))
        if out.ndim != 2 or out.shape[0] != block.shape[0]:
            raise ShapeError(f"the input map returned shape {out.shape} for a block of {block.shape[0]} rows")
        return out
    if dense and sp.issparse(block):
        return block.toarray()
    return block


def row_blocks(X: sp.csr_matrix | np.ndarray, batch_size: int, *, input_map: InputMap | None = None,
               dense: bool = True, order: np.ndarray | None = None) -> Iterator[tuple[slice | np.ndarray, object]]:
    """Consecutive blocks of ``batch_size`` rows (the last may be smaller): ``(rows, block)``.

    Parameters
    ----------
    X
        (N, D) checked features, CSR or dense.
    batch_size
        Rows per block (≥ 1).
    input_map, dense
        As in :func:`take_rows`.
    order
        Visit the rows in this order (an index array, e.g. a shuffle); ``rows`` are then index
        arrays into ``X``. Default: slices in the natural order.

    Yields
    ------
    rows, block
        ``rows`` a slice (or index array with ``order``), ``block`` as :func:`take_rows` returns it.
    """
    N = X.shape[0]
    for start in range(0, N, int(batch_size)):
        rows = slice(start, min(N, start + int(batch_size))) if order is None else order[start:start + int(batch_size)]
        yield rows, take_rows(X, rows, input_map=input_map, dense=dense)
