"""Why training diverged: the sentence :func:`mlgp.training.fit` adds to a
:class:`~mlgp.errors.TrainingDivergedError`, judged from the bound at the restored parameters on the
failing minibatch (a step too large, or parameters or inputs already broken)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import tensorflow as tf

__all__ = ["diagnosis"]


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
