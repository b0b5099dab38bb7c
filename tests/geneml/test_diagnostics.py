"""The Gibbs chains' diagnostics: effective sample sizes and split R-hat from ArviZ, against
AR(1) chains whose integrated autocorrelation time is known, computed in chunks of coordinates."""

from __future__ import annotations

import numpy as np
import pandas as pd

import mlgp.geneml.diagnostics as diagnostics
from mlgp.geneml.diagnostics import chain_diagnostics, ess, split_rhat


def _ar1(R: int, C: int, P: int, phi: float, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = np.empty((R, C, P))
    x[0] = rng.standard_normal((C, P))
    for t in range(1, R):
        x[t] = phi * x[t - 1] + np.sqrt(1 - phi ** 2) * rng.standard_normal((C, P))
    return x


def test_ess_and_rhat_of_ar1_chains():
    """AR(1) with coefficient φ has ESS = R (1 − φ)/(1 + φ) per chain; chains of one distribution have
    R-hat near 1, chains shifted apart far above it."""
    x = _ar1(3000, 4, 6, 0.8)
    expected = 4 * 3000 * 0.2 / 1.8
    assert np.all(np.abs(ess(x) / expected - 1) < 0.2), ess(x)
    assert np.all(split_rhat(x) < 1.02)
    shifted = x.copy()
    shifted[:, 0] += 3.0
    assert np.all(split_rhat(shifted) > 1.3)  # ranks bound it: one chain 3 sd apart of four gives ≈ 1.48


def _classic_split_rhat(x: np.ndarray) -> float:
    """BDA3's split R-hat of draws (R, C), written out: a reference for Gaussian chains, where the
    rank normalisation changes little."""
    R = x.shape[0] // 2
    halves = np.concatenate([x[:R], x[R:2 * R]], axis=1)
    within = halves.var(axis=0, ddof=1).mean()
    between = R * halves.mean(axis=0).var(ddof=1)
    return float(np.sqrt(((R - 1) / R * within + between / R) / within))


def test_rhat_is_the_split_rhat_of_gaussian_chains():
    x = _ar1(2000, 4, 3, 0.3, seed=4)
    x[:, 1] += 0.3  # a little apart: R-hat clearly above 1
    ours = split_rhat(x)
    reference = np.array([_classic_split_rhat(x[:, :, j]) for j in range(3)])
    assert np.all(reference > 1.003)
    np.testing.assert_allclose(ours, reference, atol=2e-3)


def test_tail_ess_reads_the_tails():
    """Chains that agree in the bulk but one of which has heavier tails: tail ESS falls below bulk."""
    x = _ar1(1000, 4, 1, 0.0, seed=5)
    x[:, 0] *= 3.0
    assert ess(x, "tail")[0] < 0.8 * ess(x, "bulk")[0]


def test_chunks_give_the_same_values(monkeypatch):
    x = _ar1(50, 2, 7, 0.5, seed=1)
    whole_ess, whole_rhat = ess(x), split_rhat(x)
    monkeypatch.setattr(diagnostics, "CHUNK", 3)
    np.testing.assert_allclose(ess(x), whole_ess, rtol=1e-12)
    np.testing.assert_allclose(split_rhat(x), whole_rhat, rtol=1e-12)


def test_a_fit_summary_reads_the_kept_sweeps():
    x = _ar1(40, 2, 3, 0.5, seed=2)
    trace = pd.DataFrame([dict(chain=c, sweep=s + 1, kept=s >= 5, objective=float(s < 5) * 100 + x[max(s - 5, 0), c, 0])
                          for c in range(2) for s in range(45)])
    out = chain_diagnostics({"watched": x[:, :, None], "mu": x}, trace)
    assert out["draws"] == 80 and np.isfinite(out["ess_log_posterior"])
    assert out["rhat_log_posterior"] < 1.2  # the burn-in's jump (+100) is left out
    assert out["ess_watched_median"] == np.median(ess(x))


def test_a_coordinate_that_never_moves_is_left_out_of_the_summary():
    """A watched point with no features predicts 0 in every draw: it has no ESS or R-hat, and the
    summary is taken over the others."""
    x = _ar1(40, 2, 3, 0.5, seed=3)
    watched = np.concatenate([x, np.zeros((40, 2, 1))], axis=2)
    trace = pd.DataFrame([dict(chain=c, sweep=s + 1, kept=True, objective=x[s, c, 0]) for c in range(2) for s in range(40)])
    out = chain_diagnostics({"watched": watched}, trace)
    assert np.isfinite([out["ess_watched_median"], out["ess_watched_q10"], out["rhat_watched_max"]]).all()
    assert out["ess_watched_median"] == np.median(ess(x))
