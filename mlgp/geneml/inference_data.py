"""GenEML's Gibbs draws as an ``arviz.InferenceData``: :func:`inference_data`.

Groups and variables (dimensions after ArviZ's ``chain`` and ``draw``):

- ``posterior``: ``V`` (``label``, ``latent``); ``mu`` (``label``) with global exposure; ``beta``
  (``covariate``) with covariate exposure; ``lambda_u``, ``lambda_w`` and ``lambda_v``
  (``latent``) with a hyperprior on the precisions; ``relevance`` (``latent``) with ARD;
  ``watched`` (``watched_point``, ``label``): the Rao-Blackwellised utilities
  x E[W | U] E[V | U, ω, ξ]ᵀ of the watched points, a function of the state like any other
  posterior quantity;
- ``sample_stats``: ``lp`` (the log posterior at the draw, ArviZ's name for it), ``tau`` (the scale
  move's log t) and ``seconds`` (the sweep's);
- ``warmup_sample_stats``: the same for the burn-in sweeps, when there were any.

``draw`` is the sweep number of the kept draw. ``arviz.summary``, ``arviz.rhat``, ``arviz.ess`` and
``arviz.plot_trace`` take the result as they take any sampler's.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .diagnostics import arviz

__all__ = ["inference_data"]

#: Posterior variables: (name in the samples, extra dimension names).
_POSTERIOR = {"V": ("label", "latent"), "mu": ("label",), "beta": ("covariate",), "relevance": ("latent",),
              "watched": ("watched_point", "label")}


def _chain_major(draws: np.ndarray) -> np.ndarray:
    """(R, C, …) draws, the ``tfp.mcmc`` order the sampler returns, as ArviZ's (C, R, …)."""
    return np.moveaxis(np.asarray(draws), 0, 1)


def _stats(trace: pd.DataFrame, kept: bool) -> dict[str, np.ndarray]:
    """The trace's ``lp``, ``tau`` and ``seconds`` of the kept (or burn-in) sweeps, each (C, R).
    ``lp`` is the total log posterior: the sampler's ``objective``, or ``log_posterior`` in a
    fitted GenEML's ``trace_`` (whose ``objective`` is per training point)."""
    rows = trace[trace["kept"] == kept]
    if rows.empty:
        return {}
    columns = {"lp": "log_posterior" if "log_posterior" in rows else "objective", "tau": "tau", "seconds": "seconds"}
    return {name: rows.pivot(index="chain", columns="sweep", values=column).to_numpy(dtype=np.float64)
            for name, column in columns.items() if column in rows}


def inference_data(samples: dict, trace: pd.DataFrame):
    """``samples`` and ``trace`` of :func:`mlgp.geneml.gibbs.gibbs` (or a fitted GenEML's
    ``samples_`` and ``trace_``: :meth:`mlgp.geneml.GenEML.inference_data`) as an
    ``arviz.InferenceData`` (module docstring)."""
    az = arviz()
    posterior, dims = {}, {}
    for name, extra in _POSTERIOR.items():
        if name in samples:
            posterior[name] = _chain_major(samples[name])
            dims[name] = list(extra)
    if "precisions" in samples:
        precisions = _chain_major(samples["precisions"])
        posterior.update(lambda_u=precisions[..., 0], lambda_w=precisions[..., 1], lambda_v=precisions[..., 2:])
        dims["lambda_v"] = ["latent"]
    groups = dict(posterior=posterior, sample_stats=_stats(trace, True))
    warmup = _stats(trace, False)
    if warmup:
        groups["warmup_sample_stats"] = warmup
    data = az.from_dict(**groups, dims=dims, save_warmup=bool(warmup))
    for group, kept in (("posterior", True), ("sample_stats", True), ("warmup_sample_stats", False)):
        if group in data.groups():  # the draws named by their sweeps
            sweeps = np.sort(trace.loc[trace["kept"] == kept, "sweep"].unique())
            setattr(data, group, getattr(data, group).assign_coords(draw=sweeps))
    return data
