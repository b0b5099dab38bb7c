"""GenEML's feature preprocessing, chosen from the training features or named: the floor's input maps.

``preprocessing`` is one of

- ``"rows"``: every row L2-normalised (:class:`mlgp.blocks.RowNormalised`, the arithmetic of
  :func:`mlgp.data.preprocessing.normalise_rows`): the preprocessing of Jain et al. for non-negative
  sparse counts or TF-IDF;
- ``"columns"``: every column standardised with the training rows' statistics
  (:func:`mlgp.data.preprocessing.column_statistics`, applied by
  :class:`mlgp.blocks.ColumnStandardised`): centred and divided by its standard deviation when X is
  dense (at least :data:`DENSE_FROM` of its entries stored), only divided by its root mean square
  when X is sparse (centring would fill it in). A column whose spread is 0 (constant, or all zero)
  is only centred: it carries nothing, and dividing would not be defined. Dense standardised columns
  are then shifted by +1 (``centre`` is the mean minus the scale): GenEML has no per-label bias, so
  with centred features an average row has u = W x ≈ 0 and σ(uᵀ v_l) ≈ ½ for every label, whatever
  its frequency; the shift gives u the constant direction W·1, through which the labels'
  frequencies are learnt (the measured difference on foodtruck is in docs/results.md, "Eleven data
  sets, one command");
- ``None``: the features as given;
- ``"auto"``: the floor's one rule, :func:`mlgp.data.preprocessing.chosen_preprocessing`:
  ``"rows"`` for non-negative sparse features, ``"columns"`` for dense or signed ones.

:class:`FeatureMap` holds the choice and the floor's input map that carries it out; it is fitted once
on the training rows and applied, unchanged, to every block of rows that is scored. The map is the
only arithmetic: this module adds the +1 shift and GenEML's file entries (``preprocessing_``,
``feature_centre_``, ``feature_scale_``), whose form is unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..blocks import ColumnStandardised, RowNormalised
from ..data.preprocessing import DENSE_FROM, PREPROCESSINGS, chosen_preprocessing, column_statistics

__all__ = ["DENSE_FROM", "PREPROCESSING", "FeatureMap"]

#: The preprocessings by name (``"auto"`` resolves to one of the others): the floor's list.
PREPROCESSING = PREPROCESSINGS


@dataclass(frozen=True)
class FeatureMap:
    """A fitted preprocessing: ``kind`` ``"rows"``, ``"columns"`` or None, and ``input_map``, the
    floor's map that applies it (:class:`~mlgp.blocks.RowNormalised`,
    :class:`~mlgp.blocks.ColumnStandardised`, or None)."""

    kind: str | None
    input_map: RowNormalised | ColumnStandardised | None = None

    @property
    def centre(self) -> np.ndarray | None:
        """``"columns"``: the columns' centre (D,) (zeros for sparse features); else None."""
        return self.input_map.centre if self.kind == "columns" else None

    @property
    def scale(self) -> np.ndarray | None:
        """``"columns"``: the columns' scale (D,) (> 0); else None."""
        return self.input_map.scale if self.kind == "columns" else None

    @classmethod
    def fit(cls, X: sp.csr_matrix, preprocessing: str | None) -> "FeatureMap":
        """The map ``preprocessing`` names (``"auto"``: by the floor's rule) fitted on CSR X (N, D)."""
        kind = chosen_preprocessing(preprocessing, X)
        if kind != "columns":
            return cls.of(kind, X.shape[1])
        centre, scale = column_statistics(X)
        if centre.any():  # dense: centred columns, shifted by +1 (the module's note on the offset)
            centre = centre - scale
        return cls.of("columns", X.shape[1], centre, scale)

    @classmethod
    def of(cls, kind: str | None, num_features: int, centre=None, scale=None) -> "FeatureMap":
        """The map of ``kind`` over ``num_features`` columns (D), with the column ``centre`` and
        ``scale`` (D,) for ``"columns"`` (checked by :class:`~mlgp.blocks.ColumnStandardised`)."""
        if kind == "rows":
            return cls("rows", RowNormalised(num_features=num_features))
        if kind == "columns":
            return cls("columns", ColumnStandardised(centre, scale))
        return cls(None)

    def saved(self) -> tuple[dict, dict]:
        """(scalars, arrays) of an estimator file: ``preprocessing_``, and ``feature_centre_`` and
        ``feature_scale_`` for ``"columns"``."""
        arrays = {"feature_centre_": self.centre, "feature_scale_": self.scale} if self.kind == "columns" else {}
        return {"preprocessing_": str(self.kind)}, arrays

    @classmethod
    def restore(cls, state, num_features: int, normalize_rows: bool) -> "FeatureMap":
        """The map :meth:`saved` wrote into an estimator file's ``state``
        (:class:`~mlgp.estimator.SavedState`), checked; files written before it hold none: rows or
        nothing, as ``normalize_rows`` said."""
        if not state.has_scalar("preprocessing_"):
            return cls.of("rows" if normalize_rows else None, num_features)
        kind = state.scalar("preprocessing_", str, choices={"rows", "columns", "None"})
        if kind != "columns":
            return cls.of(None if kind == "None" else kind, num_features)
        return cls.of("columns", num_features, state.array("feature_centre_", (num_features,)),
                      state.array("feature_scale_", (num_features,), low=np.finfo(np.float64).tiny))

    def __call__(self, X) -> sp.csr_matrix:
        """``X`` (B, D), CSR or dense, preprocessed as a new CSR matrix (``X`` as given when
        ``kind`` is None)."""
        if self.input_map is None:
            return X
        if self.kind == "columns" and not self.input_map.centre.any():
            X = sp.csr_matrix(X, dtype=np.float64)  # sparse features: only scaled, the zeros stay zeros
        return sp.csr_matrix(self.input_map(X))
