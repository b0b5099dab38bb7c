"""An :class:`mlgp.recipes.MLGPFClassifier` around an MLGPF trained elsewhere, and the classifier's
trace form.

:func:`wrapped_classifier` is the body of :meth:`MLGPFClassifier.from_model` (checks, parameters
from the settings, the fitted attributes); :func:`classifier_trace` gives a training run's per-epoch
trace the form every ``trace_`` has (:func:`mlgp.estimator.recorder.common_trace`, then
``elbo_per_point`` and the classifier's columns, in order), led by a set-up row (:data:`SETUP_EPOCH`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import ArgumentError
from ..estimator.recorder import TRACE_COLUMNS, common_trace
from .settings import MLGPFSettings

__all__ = ["SETUP_EPOCH", "classifier_trace", "epoch_rows", "wrapped_classifier"]

#: The ``epoch`` (and ``step``) of ``trace_``'s first row: the set-up before the first optimiser step.
SETUP_EPOCH = 0

_TRACE_COLUMNS = (*TRACE_COLUMNS, "epoch", "elbo", "elbo_std", "kl", "expected_log_lik", "elbo_per_point", "seconds",
                  "batch_size", "held-out lpd", "P@1", "P@3", "P@5")
#: Settings that are not estimator parameters (the caller chooses the rows).
_NOT_PARAMETERS = ("max_train",)


def classifier_trace(trace: pd.DataFrame | None, num_train: int, begun: float = 0.0) -> pd.DataFrame:
    """The per-epoch ``trace`` of :func:`mlgp.training.fit` over ``num_train`` rows in the classifier's
    form (no rows for None or no epochs), led by the set-up row: ``epoch`` and ``step``
    :data:`SETUP_EPOCH`, ``elapsed`` the seconds at the first step (the first epoch's ``elapsed``
    less its ``seconds``), ``seconds`` those since the run began (``begun``: the fit's seconds when
    this run's set-up began, after the candidate kernels before it), and no bound (NaN)."""
    if trace is None or len(trace) == 0:
        return pd.DataFrame({c: [] for c in TRACE_COLUMNS}, dtype=float)
    out = common_trace(trace, num_train, step="step", total="elbo")
    out["elbo_per_point"] = out["objective"]
    out = out[[c for c in _TRACE_COLUMNS if c in out.columns]]
    first_step = max(float(out["elapsed"].iloc[0] - out["seconds"].iloc[0]), 0.0)
    setup = pd.DataFrame({c: [np.nan] for c in out.columns})
    setup[["step", "epoch", "elapsed", "seconds"]] = [SETUP_EPOCH, SETUP_EPOCH, first_step, max(first_step - begun, 0.0)]
    return pd.concat([setup.astype({"step": int}), out], ignore_index=True)


def epoch_rows(trace: pd.DataFrame) -> pd.DataFrame:
    """The rows of a classifier's ``trace_`` that are epochs (the set-up row left out)."""
    return trace[trace["step"] > SETUP_EPOCH] if "step" in trace else trace


def wrapped_classifier(cls, model, trace, settings):
    """A fitted ``cls`` (MLGPFClassifier) around ``model``: see :meth:`MLGPFClassifier.from_model`."""
    from ..models import MLGPF

    if not isinstance(model, MLGPF):
        raise ArgumentError(f"from_model needs an mlgp.models.MLGPF, got {type(model).__name__}")
    if model.num_data is None:
        raise ArgumentError("from_model needs the model's num_data (N, its training points); set model.num_data")
    if settings is not None and not isinstance(settings, MLGPFSettings):
        raise ArgumentError(f"settings must be an MLGPFSettings or None, got {type(settings).__name__}")
    est = cls()
    if settings is not None:
        est.set_params(validation_fraction=0, **{name: value for name, value in settings.as_dict().items()
                                                 if name not in _NOT_PARAMETERS})
    N = int(model.num_data)
    est.model_, est.settings_, est.bias_only_, est.best_epoch_, est.refitted_ = model, settings, False, None, False
    est.proba_map_ = est.kernel_choice_ = None
    est.trace_ = classifier_trace(trace, N)
    est.n_iter_ = len(epoch_rows(est.trace_))
    est._set_fitted_shape(N, model.num_features, model.num_labels)
    return est
