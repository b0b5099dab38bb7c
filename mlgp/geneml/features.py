"""GenEML's feature preprocessing, chosen from the training features or named.

``preprocessing`` is one of

- ``"rows"``: every row L2-normalised (:func:`mlgp.data.preprocessing.normalise_rows`): the
  preprocessing of Jain et al. for non-negative sparse counts or TF-IDF;
- ``"columns"``: every column standardised with the training rows' statistics: centred and divided
  by its standard deviation when X is dense (at least :data:`DENSE_FROM` of its entries stored),
  only divided by its root mean square when X is sparse (centring would fill it in). A column whose
  spread is 0 (constant, or all zero) is only centred: it carries nothing, and dividing would not
  be defined. Dense standardised columns are then shifted by +1 (``centre`` is the mean minus the
  scale): GenEML has no per-label bias, so with centred features an average row has u = W x ≈ 0 and
  σ(uᵀ v_l) ≈ ½ for every label, whatever its frequency; the shift gives u the constant direction
  W·1, through which the labels' frequencies are learnt (foodtruck, at the defaults: test P@1 31.85
  centred against the label prior's 72.59);
- ``None``: the features as given;
- ``"auto"``: ``"rows"`` for non-negative sparse features (fewer than :data:`DENSE_FROM` of the
  entries stored, none negative), ``"columns"`` otherwise (dense or signed features, where row
  normalisation mixes the scales of unrelated columns: emotions' features span −99 to 237).

:class:`FeatureMap` holds the choice and its statistics; it is fitted once on the training rows and
applied, unchanged, to every block of rows that is scored.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..data.preprocessing import DENSE_FROM, column_statistics, wants_columns
from ..errors import ArgumentError

__all__ = ["DENSE_FROM", "PREPROCESSING", "FeatureMap"]

#: The preprocessings by name (``"auto"`` resolves to one of the others).
PREPROCESSING = ("auto", "rows", "columns", None)


@dataclass(frozen=True)
class FeatureMap:
    """A fitted preprocessing: ``kind`` ``"rows"``, ``"columns"`` or None; for ``"columns"`` the
    columns' ``centre`` (D,) (zeros for sparse features) and ``scale`` (D,) (> 0)."""

    kind: str | None
    centre: np.ndarray | None = None
    scale: np.ndarray | None = None

    @classmethod
    def fit(cls, X: sp.csr_matrix, preprocessing: str | None) -> "FeatureMap":
        """The map ``preprocessing`` names (``"auto"``: by the module's rule) fitted on CSR X (N, D)."""
        if preprocessing not in PREPROCESSING:
            raise ArgumentError(f"preprocessing must be one of {PREPROCESSING}; got {preprocessing!r}")
        if preprocessing == "auto":
            preprocessing = "columns" if wants_columns(X) else "rows"
        if preprocessing != "columns":
            return cls(preprocessing)
        centre, scale = column_statistics(X)
        if centre.any():  # dense: centred columns, shifted by +1 (the module's note on the offset)
            centre = centre - scale
        return cls("columns", centre, scale)

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
            return cls("rows" if normalize_rows else None)
        kind = state.scalar("preprocessing_", str, choices={"rows", "columns", "None"})
        if kind != "columns":
            return cls(None if kind == "None" else kind)
        return cls("columns", state.array("feature_centre_", (num_features,)),
                   state.array("feature_scale_", (num_features,), low=np.finfo(np.float64).tiny))

    def __call__(self, X) -> sp.csr_matrix:
        """``X`` (B, D), CSR or dense, preprocessed as a new CSR matrix (``X`` as given when
        ``kind`` is None)."""
        if self.kind is None:
            return X
        if self.kind == "rows":
            from ..data.preprocessing import normalise_rows

            return normalise_rows(X)
        if not self.centre.any():  # sparse features: only scaled, the zeros stay zeros
            return sp.csr_matrix(sp.csr_matrix(X, dtype=np.float64) @ sp.diags(1.0 / self.scale))
        values = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
        return sp.csr_matrix((values - self.centre) / self.scale)
