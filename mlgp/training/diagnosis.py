"""When training diverges: the last good state :func:`mlgp.training.fit` keeps (:func:`snapshot`,
:func:`restore`), the first non-finite parameter (:func:`first_non_finite`), and the one
:class:`~mlgp.errors.TrainingDivergedError` it raises after restoring that state (:func:`diverged`),
with the sentence saying why (:func:`diagnosis`), judged from the bound at the restored parameters on
the failing minibatch (a step too large, or parameters or inputs already broken)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import tensorflow as tf

from ..errors import TrainingDivergedError
from .checkpoints import variable_names

__all__ = ["diagnosis", "diverged", "first_non_finite", "restore", "snapshot"]


def snapshot(variables) -> list[tf.Tensor]:
    """The variables' values now, as tensors: each shares its variable's buffer until the variable
    is next written, which then copies it (TensorFlow's copy-on-write), so a snapshot is not a copy
    of the P·M² factors and their optimizer slots every epoch."""
    return [tf.identity(v) for v in variables]


def restore(variables, values) -> None:
    """Assign a :func:`snapshot`'s ``values`` back to ``variables``."""
    for v, x in zip(variables, values):
        v.assign(x)


def first_non_finite(model, variables) -> str | None:
    """The name of the first of ``variables`` (the model's trainable ones) holding NaN or inf, or None."""
    return next((name for name, v in zip(variable_names(model), variables) if not np.all(np.isfinite(v.numpy()))), None)


def diverged(what: str, *, state: list, good: list, model, batch, X, epoch: int, start: int, opt, learning_rate,
             latest: str | None) -> TrainingDivergedError:
    """Restore ``state`` (model and optimizer variables) to ``good``, the end of ``epoch``, and return
    the error to raise: ``what`` happened, where the model was restored to (and the last checkpoint,
    ``latest``), and why (:func:`diagnosis` on the failing minibatch ``batch``)."""
    restore(state, good)
    restored = f"the model was restored to the end of epoch {epoch}" + (f"; last checkpoint: {latest}" if latest else "")
    return TrainingDivergedError(f"{what}; {restored}.{diagnosis(model, batch, X, epoch, start, opt, learning_rate)}")


def diagnosis(model, batch, X, epoch: int, start: int, opt, learning_rate) -> str:
    """Why the bound or the parameters became non-finite, judged from the bound at the restored
    parameters (the end of ``epoch``) on the failing minibatch ``batch``: a sentence or two."""
    try:
        finite = bool(np.isfinite(float(model.elbo_and_kl(batch)[0])))
    except tf.errors.InvalidArgumentError:  # a failed Cholesky there too
        finite = False
    except Exception:  # noqa: BLE001 - the bound cannot be evaluated outside the step: no diagnosis
        return " Try a smaller learning rate."
    if finite:
        try:  # an optimizer's own step size (a variable, mirrored too), else fit's argument
            rate = f"{float(np.asarray(getattr(opt, 'learning_rate', learning_rate))):g}"
        except (TypeError, ValueError):
            rate = repr(learning_rate)
        gamma = f", natural-gradient γ={opt.gamma:g}" if isinstance(getattr(opt, "gamma", None), float) else ""
        return (" Try a smaller learning rate. The bound is finite at those parameters on the same minibatch, so "
                f"the steps from them made it non-finite (learning_rate={rate}{gamma}).")
    where = "the parameters training started from" if epoch == start else f"the last good parameters (end of epoch {epoch})"
    data = X.data if sp.issparse(X) else np.asarray(X)
    largest = float(np.abs(data).max()) if data.size else 0.0
    causes = [f"the inputs' scale (the largest |feature value| is {largest:.3g}; rescale the features)"] if largest > 1e6 else []
    causes.append("the initialisation (e.g. q_sqrt_init=0 makes q(u) singular)")
    return (f" The bound is already non-finite at {where} on the same minibatch, so the learning rate is not the "
            f"cause; likely {' or '.join(causes)}.")
