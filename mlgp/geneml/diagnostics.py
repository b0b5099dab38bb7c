"""Convergence diagnostics of GenEML's Gibbs chains, through ``tfp.mcmc``: effective sample sizes
(``tfp.mcmc.effective_sample_size``, chains pooled) and split R-hat
(``tfp.mcmc.potential_scale_reduction`` with ``split_chains=True``) of draws shaped
(num_results, num_chains, …) — the Rao-Blackwellised predictions for a watched set of points, μ, and
the log posterior per sweep."""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["CHUNK", "chain_diagnostics", "ess", "split_rhat"]

#: Coordinates per ``tfp.mcmc`` call (its FFT pads each series to a power of two, in complex128).
CHUNK = 2 ** 14


def _by_chunks(function, draws: np.ndarray) -> np.ndarray:
    """``function`` applied to (R, C, CHUNK) slices of ``draws`` (R, C, …) flattened; shape (…)."""
    flat = draws.reshape(draws.shape[:2] + (-1,))
    parts = [np.asarray(function(flat[:, :, s:s + CHUNK])) for s in range(0, max(flat.shape[2], 1), CHUNK)]
    return np.concatenate(parts, axis=-1).reshape(draws.shape[2:])


def ess(draws: np.ndarray) -> np.ndarray:
    """Effective sample size of each coordinate of ``draws`` (R, C, …), summed over the chains
    (Geyer's initial-positive-sequence truncation); shape (…)."""
    from ..quiet import quiet_tensorflow

    quiet_tensorflow()
    import tensorflow_probability as tfp

    draws = np.asarray(draws, dtype=np.float64)
    if draws.shape[0] < 4:
        return np.full(draws.shape[2:], np.nan)
    return _by_chunks(lambda d: np.asarray(tfp.mcmc.effective_sample_size(d, filter_beyond_positive_pairs=True))
                      .sum(axis=0), draws)


def split_rhat(draws: np.ndarray) -> np.ndarray:
    """Split R-hat of each coordinate of ``draws`` (R, C, …) (each chain halved; NaN with fewer
    than 4 draws); shape (…)."""
    from ..quiet import quiet_tensorflow

    quiet_tensorflow()
    import tensorflow_probability as tfp

    draws = np.asarray(draws, dtype=np.float64)
    if draws.shape[0] < 4:
        return np.full(draws.shape[2:], np.nan)
    return _by_chunks(lambda d: tfp.mcmc.potential_scale_reduction(d, independent_chain_ndims=1, split_chains=True),
                      draws)


def chain_diagnostics(samples: dict, trace: pd.DataFrame) -> dict[str, float]:
    """Summaries for a fit: ESS of the log posterior and the median / 10 % quantile ESS of the
    watched predictions and of μ, and the largest split R-hat of each (R-hat only with ≥ 2 chains,
    or 1 chain split in two)."""
    kept = trace[trace["kept"]]
    out: dict[str, float] = {"draws": float(len(kept))}
    if "objective" in kept and kept["objective"].notna().all() and len(kept):
        objective = kept.pivot(index="sweep", columns="chain", values="objective").to_numpy()
        out["ess_log_posterior"] = float(ess(objective))
        out["rhat_log_posterior"] = float(split_rhat(objective))
    for name in ("watched", "mu"):
        if name in samples:
            draws = samples[name].reshape(samples[name].shape[:2] + (-1,))
            values, rhat = ess(draws), split_rhat(draws)
            # a coordinate that never moves (a point with no features) has no ESS or R-hat: left out
            out[f"ess_{name}_median"] = float(np.nanmedian(values))
            out[f"ess_{name}_q10"] = float(np.nanquantile(values, 0.1))
            out[f"rhat_{name}_max"] = float(np.nanmax(rhat))
    return out
