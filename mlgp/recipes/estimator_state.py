"""How :class:`mlgp.recipes.MLGPFClassifier`'s fitted state is written to and read from the floor's
single-file format (:mod:`mlgp.estimator.persistence`): the model's parameters and structure
(:func:`mlgp.models.persistence.describe_mlgpf`), the trace, the settings and the fitted scalars.
A file saved before the model carried its normalisation (its classifier normalised the rows itself;
such files lack ``model_takes_raw_rows``) loads with the model's map wrapped in ``RowNormalised``:
it scores as it did. A file from before ``refit`` loads with ``refitted_`` False."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import ArgumentError
from ..estimator import SavedState
from .settings import MLGPFSettings

__all__ = ["SavedClassifierState"]


class SavedClassifierState:
    """The persistence hooks of :class:`mlgp.recipes.MLGPFClassifier` (a mixin before
    :class:`~mlgp.estimator.MultiLabelEstimator`)."""

    def _described_model(self):
        """The model as a save describes it (:func:`mlgp.models.persistence.describe_mlgpf`)."""
        from ..models.persistence import describe_mlgpf

        return describe_mlgpf(self.model_, Path(f"{type(self).__name__}.model_"))

    def _fitted_scalars(self) -> dict:
        meta, _, constants = self._described_model()
        settings = {} if self.settings_ is None else self.settings_.as_json()
        return {**super()._fitted_scalars(), "n_iter_": self.n_iter_, "bias_only_": bool(self.bias_only_),
                "refitted_": bool(self.refitted_),
                "settings_": settings, "model_takes_raw_rows": True, "model_": meta,
                "model_constants": sorted(constants or {}), "trace_columns": list(self.trace_.columns),
                **({} if self.best_epoch_ is None else {"best_epoch_": int(self.best_epoch_)})}

    def _fitted_arrays(self) -> dict:
        _, values, constants = self._described_model()
        arrays = {**super()._fitted_arrays(), **{f"model_.param:{name}": v for name, v in values.items()}}
        arrays.update({f"model_.const:{name}": v for name, v in (constants or {}).items()})
        arrays.update({f"trace_:{c}": self.trace_[c].to_numpy(dtype=np.float64) for c in self.trace_.columns})
        return arrays

    def _restore_fitted(self, state: SavedState) -> None:
        from ..models import MLGPF
        from ..models.persistence import rebuild_mlgpf
        from ..models.save_folder import Saved

        super()._restore_fitted(state)
        self.kernel_choice_ = None  # not saved
        self.n_iter_ = state.scalar("n_iter_", int, low=0)
        self.bias_only_ = state.scalar("bias_only_", bool)
        self.refitted_ = state.scalar("refitted_", bool) if state.has_scalar("refitted_") else False
        self.best_epoch_ = state.scalar("best_epoch_", int, low=0) if state.has_scalar("best_epoch_") else None
        meta = state.scalar("model_", dict)
        names = meta.get("parameters")
        if not isinstance(names, dict):
            raise state.error("the model's header lacks its parameters")
        values = {name: state.array(f"model_.param:{name}") for name in names}
        constant_names = state.scalar("model_constants", list)
        constants = {str(n): state.array(f"model_.const:{n}", kinds="biuf", finite=False) for n in constant_names}
        self.model_ = rebuild_mlgpf(Saved(meta, values, constants or None), state.path, MLGPF)
        if not (state.has_scalar("model_takes_raw_rows") and state.scalar("model_takes_raw_rows", bool)):
            self.model_ = _normalising(self.model_)  # a file from before the model normalised its rows
        if self.model_.num_labels != self.n_labels_ or self.model_.num_features != self.n_features_in_:
            raise state.error(f"the model scores {self.model_.num_labels} labels from {self.model_.num_features} "
                              f"features, the header says {self.n_labels_} and {self.n_features_in_}")
        columns = state.scalar("trace_columns", list)
        self.trace_ = pd.DataFrame({str(c): state.array(f"trace_:{c}", (None,), finite=False) for c in columns})
        settings = state.scalar("settings_", dict)
        try:
            # {}: a wrapped model's none; a file from before the preprocessing setting: "rows", the default
            self.settings_ = MLGPFSettings(**settings) if settings else None
        except (ArgumentError, TypeError) as err:
            raise state.error(f"the saved settings do not hold: {err}") from None


def _normalising(model):
    """``model`` with :class:`~mlgp.blocks.RowNormalised` as the outside of its input map: a model
    saved before it carried its row normalisation (the classifier normalised each block) gets it."""
    from ..blocks import RowNormalised

    if not isinstance(model.input_map, RowNormalised):
        model.input_map = RowNormalised(model.input_map, num_features=model.num_features)
    return model

