"""Convergence diagnostics of GenEML's Gibbs chains, through ArviZ: rank-normalised split R-hat
(``arviz.rhat``, Vehtari, Gelman, Simpson, Carpenter & Bürkner 2021) and bulk and tail effective
sample sizes (``arviz.ess``, chains pooled) of draws shaped (num_results, num_chains, …) as
:func:`mlgp.geneml.gibbs.gibbs` returns them — the Rao-Blackwellised predictions for a watched set
of points, μ, and the log posterior per sweep. Nothing in mlgp computes R-hat or ESS otherwise.

A coordinate that never moves (a watched point with no features predicts 0 in every draw) has no
R-hat or ESS: it is NaN here, and the summaries are taken over the others.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

__all__ = ["CHUNK", "RHAT_LIMIT", "ConvergenceWarning", "arviz", "chain_diagnostics", "ess", "split_rhat",
           "warn_unconverged"]

#: Coordinates per ArviZ call (bounds the memory of the rank normalisation's copies).
CHUNK = 2 ** 14

#: R-hat above this on the log posterior: the chains do not agree (Vehtari et al. 2021's 1.01).
RHAT_LIMIT = 1.01


def arviz():
    """The ``arviz`` module, imported without its notice of a coming refactor (a ``FutureWarning``
    that ArviZ 0.2x prints at its first import of the day)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=FutureWarning, message=r"\s*ArviZ is undergoing")
        import arviz as az
    return az


def _by_chunks(function, draws: np.ndarray) -> np.ndarray:
    """``function`` of each (C, R, CHUNK) slice of ``draws`` (R, C, …) flattened, NaN where a
    coordinate never moves; shape (…). Fewer than 4 draws: all NaN."""
    draws = np.asarray(draws, dtype=np.float64)
    flat = np.moveaxis(draws.reshape(draws.shape[:2] + (-1,)), 0, 1)  # (C, R, n): ArviZ's (chain, draw, …)
    if draws.shape[0] < 4:
        return np.full(draws.shape[2:], np.nan)
    out = np.full(flat.shape[2], np.nan)
    columns = np.flatnonzero(np.ptp(flat, axis=(0, 1)) > 0)
    az = arviz()
    for s in range(0, len(columns), CHUNK):
        chosen = columns[s:s + CHUNK]
        out[chosen] = np.asarray(function(az, az.convert_to_dataset(flat[:, :, chosen]))["x"], dtype=np.float64)
    return out.reshape(draws.shape[2:])


def ess(draws: np.ndarray, method: str = "bulk") -> np.ndarray:
    """Effective sample size (``arviz.ess``, ``method`` ``"bulk"`` or ``"tail"``) of each
    coordinate of ``draws`` (R, C, …), all chains together; shape (…)."""
    return _by_chunks(lambda az, data: az.ess(data, method=method), draws)


def split_rhat(draws: np.ndarray) -> np.ndarray:
    """Rank-normalised split R-hat (``arviz.rhat``) of each coordinate of ``draws`` (R, C, …); one
    chain is split in two; NaN with fewer than 4 draws; shape (…)."""
    return _by_chunks(lambda az, data: az.rhat(data, method="rank"), draws)


def chain_diagnostics(samples: dict, trace: pd.DataFrame) -> dict[str, float]:
    """Summaries for a fit: bulk and tail ESS and R-hat of the log posterior, the median / 10 %
    quantile bulk ESS of the watched predictions and of μ, the largest R-hat of each and the share
    of its coordinates with R-hat ≤ 1.1."""
    kept = trace[trace["kept"]]
    out: dict[str, float] = {"draws": float(len(kept))}
    if "objective" in kept and kept["objective"].notna().all() and len(kept):
        objective = kept.pivot(index="sweep", columns="chain", values="objective").to_numpy()
        out["ess_log_posterior"] = float(ess(objective))
        out["ess_tail_log_posterior"] = float(ess(objective, "tail"))
        out["rhat_log_posterior"] = float(split_rhat(objective))
    for name in ("watched", "mu"):
        if name in samples:
            draws = samples[name].reshape(samples[name].shape[:2] + (-1,))
            values, rhat = ess(draws), split_rhat(draws)
            with warnings.catch_warnings():  # every coordinate still (or too few draws): NaN, said as NaN
                warnings.simplefilter("ignore", RuntimeWarning)
                out[f"ess_{name}_median"] = float(np.nanmedian(values))
                out[f"ess_{name}_q10"] = float(np.nanquantile(values, 0.1))
                out[f"rhat_{name}_max"] = float(np.nanmax(rhat))
                out[f"rhat_{name}_share_1.1"] = float(np.mean(rhat[np.isfinite(rhat)] <= 1.1))
    return out


class ConvergenceWarning(UserWarning):
    """The Gibbs chains do not agree: their draws are not yet draws of one posterior."""


def warn_unconverged(diagnostics: dict[str, float], num_chains: int) -> dict[str, float]:
    """Warn (:class:`ConvergenceWarning`, at the user's call) when the split R-hat of the log
    posterior in ``diagnostics`` (:func:`chain_diagnostics`) is above :data:`RHAT_LIMIT`, naming
    it, the share of watched predictions at R-hat ≤ 1.1 and the log posterior's bulk ESS; with one
    chain, that R-hat compares its two halves only. Returns ``diagnostics``."""
    from ..errors import warn

    rhat = diagnostics.get("rhat_log_posterior", np.nan)
    if np.isfinite(rhat) and rhat > RHAT_LIMIT:
        chains = ("one chain: R-hat compares its two halves; run several chains (num_chains) to compare chains"
                  if num_chains == 1 else f"{num_chains} chains")
        share = diagnostics.get("rhat_watched_share_1.1", np.nan)
        warn(f"GenEML's Gibbs chains have not converged: split R-hat of the log posterior {rhat:.3f} > {RHAT_LIMIT} "
             f"({chains}; {100 * share:.0f} % of the watched predictions at R-hat <= 1.1, bulk ESS of the log "
             f"posterior {diagnostics.get('ess_log_posterior', np.nan):.0f} of {diagnostics['draws']:.0f} draws); "
             "draw more (num_results, num_burnin_steps) or read the draws as such (inference_data())",
             ConvergenceWarning)
    return diagnostics
