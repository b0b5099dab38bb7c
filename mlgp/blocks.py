"""Row blocks of CSR or dense features, with an optional *input map* applied before any densifying.

Every place that walks over the rows of a feature matrix — scoring in batches, minibatches for
training, a model's ``predict_f``, the warm start, k-means initialisation, FastXML's scoring — takes
its blocks from here, so a model that declares an input map (e.g. a projection of D = 10⁶ sparse
features onto R = 50 directions) receives mapped (B, R) blocks and no (B, D) dense block is ever
formed.

Contract: an input map is a callable from a CSR block (B, D) — or a dense one, when the features
are dense — to a dense (B, R) array, with the attributes ``num_features`` (D) and ``num_outputs``
(R); :class:`InputMap` is that protocol. ``None`` is the identity map: CSR blocks are densified
(``dense=True``) or passed on as CSR (``dense=False``). A map may also give a CSR (B, R) block
(:class:`RowNormalised` with no inner map keeps the rows sparse); :func:`take_rows` treats it as it
treats a raw CSR block, so a normalised model densifies exactly where an unnormalised one did.
:class:`RowNormalised` L2-normalises each raw row and then applies an inner map, so that a model
carries its own row normalisation and scores raw rows; :class:`ColumnStandardised` standardises
each raw column the same way (before the row normalisation, for dense or signed features). The functions here trust their input: it
has been checked once, at the public boundary (:mod:`mlgp.validation`).
"""

from __future__ import annotations

from typing import Iterator, Protocol, runtime_checkable

import numpy as np
import scipy.sparse as sp

from .errors import ArgumentError, ShapeError

__all__ = ["INPUT_MAPS", "ColumnStandardised", "InputMap", "LinearInputMap", "RowNormalised", "input_width", "register_input_map",
           "row_blocks", "take_rows"]


@runtime_checkable
class InputMap(Protocol):
    """A map from a block of D raw features to R model inputs, applied a block of rows at a time."""

    num_features: int
    num_outputs: int

    def __call__(self, block: sp.csr_matrix | np.ndarray) -> np.ndarray:
        """(B, D) CSR or dense → (B, R) dense (or CSR: see the module's contract)."""


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


@register_input_map
class RowNormalised:
    """x ↦ inner(x / ‖x‖₂): each raw row L2-normalised (a row of zeros stays zero), then ``inner``.

    The normalisation is :meth:`rows` of the block, which is also
    :func:`mlgp.data.preprocessing.normalise_rows` (one implementation), and works row by row: the
    results are bit for bit those of normalising the whole matrix by hand and mapping its rows.

    Parameters
    ----------
    inner
        The input map applied to the normalised rows (a subspace projection, say, which is
        a :class:`~mlgp.data.subspace.SubspaceProjection`, or a :class:`LinearInputMap`);
        ``None``: none, and the normalised block is returned as CSR (B, D) for :func:`take_rows` to
        densify or pass on as it would the raw block.
    num_features
        D; required without ``inner``, else ``inner.num_features`` (and must equal it if given).
    """

    def __init__(self, inner: InputMap | None = None, num_features: int | None = None) -> None:
        if inner is not None and not isinstance(inner, InputMap):
            raise ArgumentError(f"inner must be an input map (mlgp.blocks.InputMap), got {type(inner).__name__}")
        if inner is None and num_features is None:
            raise ArgumentError("RowNormalised without an inner map needs num_features (D)")
        width = int(inner.num_features) if inner is not None else int(num_features)
        if width < 1 or (num_features is not None and int(num_features) != width):
            raise ShapeError(f"num_features must be the inner map's {width} (≥ 1); got {num_features}")
        self.inner = inner
        self.num_features = width
        self.num_outputs = width if inner is None else int(inner.num_outputs)

    @staticmethod
    def rows(X: sp.spmatrix | np.ndarray) -> sp.csr_matrix:
        """Each row of ``X`` (N, D), CSR or dense, over its L2 norm (rows of zeros stay zero), by
        scikit-learn's ``normalize`` on CSR: float64 CSR (N, D)."""
        from sklearn.preprocessing import normalize

        return sp.csr_matrix(normalize(sp.csr_matrix(X, dtype=np.float64), norm="l2", axis=1))

    def __call__(self, block: sp.csr_matrix | np.ndarray) -> sp.csr_matrix | np.ndarray:
        """(B, D) CSR or dense → ``inner`` of the normalised (B, D) CSR block, or that block."""
        rows = self.rows(block)
        return rows if self.inner is None else self.inner(rows)


@register_input_map
class ColumnStandardised:
    """x ↦ inner((x − c) / s): each raw column centred by c and divided by s (statistics of the
    training rows, :func:`mlgp.data.preprocessing.column_statistics`), then ``inner``.

    Parameters
    ----------
    centre, scale
        c and s, (D,) each, finite, s > 0. A centre of zeros keeps a CSR block sparse (its columns
        are only scaled); otherwise the block becomes dense (B, D).
    inner
        The input map applied to the standardised rows (:class:`RowNormalised`, for MLGPF's
        recipe); ``None``: none.
    """

    def __init__(self, centre, scale, inner: InputMap | None = None) -> None:
        self.centre, self.scale = (np.array(v, dtype=np.float64).ravel() for v in (centre, scale))
        width = self.centre.size
        if width < 1 or self.scale.size != width:
            raise ShapeError(f"centre and scale must be (D,) each with D ≥ 1; got {self.centre.size} and {self.scale.size}")
        if not (np.all(np.isfinite(self.centre)) and np.all(np.isfinite(self.scale)) and np.all(self.scale > 0)):
            raise ShapeError("centre must be finite and scale finite and > 0")
        if inner is not None and (not isinstance(inner, InputMap) or int(inner.num_features) != width):
            raise ArgumentError(f"inner must be an input map of {width} features, got {inner!r}")
        self.inner = inner
        self.num_features = width
        self.num_outputs = width if inner is None else int(inner.num_outputs)

    def __call__(self, block: sp.csr_matrix | np.ndarray) -> sp.csr_matrix | np.ndarray:
        """(B, D) CSR or dense → ``inner`` of the standardised block (CSR when the centre is 0 and
        the block CSR, else dense float64), or that block."""
        if not self.centre.any() and sp.issparse(block):
            out = sp.csr_matrix(block, dtype=np.float64) @ sp.diags(1.0 / self.scale)
        else:
            values = block.toarray() if sp.issparse(block) else np.asarray(block, dtype=np.float64)
            out = (values - self.centre) / self.scale
        return out if self.inner is None else self.inner(out)


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
        With no map, or a map that gives CSR: densify CSR blocks (``True``) or return them as CSR
        (``False``).

    Returns
    -------
    (B, R) dense array (with a map), (B, D) dense array, or (B, D) CSR (``dense=False``, no map or
    a map that gives CSR).
    """
    block = X[rows]
    if input_map is not None:
        block, rows_in = input_map(block), block.shape[0]
        block = block if sp.issparse(block) else np.asarray(block)
        if block.ndim != 2 or block.shape[0] != rows_in:
            raise ShapeError(f"the input map returned shape {block.shape} for a block of {rows_in} rows")
        if not sp.issparse(block):
            return block
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
