"""GenEML's Gibbs sampler: Geweke joint-distribution tests (alternating data draws and sweeps keeps
the parameters at their prior) with fixed precisions and with the Gamma hyperprior, the slice
sampler behind the scale move, draws shaped as tfp.mcmc's, the Rao-Blackwellised coef, the same
draws for any joblib backend, and a non-finite draw stopping with the draws so far."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from joblib import parallel_backend

import mlgp.geneml.gibbs as gibbs_module
from mlgp.geneml.draws import slice_sample
from mlgp.geneml.em import EMState, Priors
from mlgp.geneml.gibbs import GibbsDivergedError, GibbsOptions, gibbs
from _geweke import draw_labels  # noqa: E402 (tests/geneml is on the path)



@pytest.mark.slow
def test_geweke_successive_conditionals_keep_the_prior():
    """θ ~ p(θ); repeat: Y ~ p(Y | θ), θ ← one sweep (the scale move included) given Y. If every
    conditional is right, θ's marginal stays p(θ): μ ~ Beta(2, 3), V ~ N(0, 1/λ_v), W ~ N(0, 1/λ_w),
    U − XW ~ N(0, 1/λ_u). The scale move alone keeps E[‖V‖²] right only if its Jacobian is."""
    N, D, K, k = 6, 3, 4, 2
    p = Priors(lambda_u=2.0, lambda_v=1.5, lambda_w=3.0, alpha=2.0, beta=3.0)
    rng = np.random.default_rng(1)
    X = sp.csr_matrix(rng.standard_normal((N, D)))
    W = rng.standard_normal((D, k)) / np.sqrt(p.lambda_w)
    state = EMState(W, np.asarray(X @ W) + rng.standard_normal((N, k)) / np.sqrt(p.lambda_u),
                    rng.standard_normal((K, k)) / np.sqrt(p.lambda_v), rng.beta(p.alpha, p.beta, K))
    mu, V, Wd, R, tau = [], [], [], [], []
    for it in range(500):
        _, trace, state = gibbs(X, draw_labels(state, rng), state, p, GibbsOptions(1, block_rows=4), seed=it)
        mu.append(state.mu), V.append(state.V), Wd.append(state.W), R.append(state.U - X @ state.W)
        tau.append(trace["tau"].iloc[0])
    mu = np.array(mu)
    assert abs(mu.mean() - 0.4) < 0.03 and abs(mu.var() / 0.04 - 1) < 0.25
    assert abs(np.var(V) * p.lambda_v - 1) < 0.15
    assert abs(np.var(Wd) * p.lambda_w - 1) < 0.2
    assert abs(np.var(R) * p.lambda_u - 1) < 0.1
    assert np.std(tau) > 0.05  # the move moves


@pytest.mark.slow
def test_geweke_with_the_precisions_hyperprior():
    """(λ, θ) ~ p(λ) p(θ | λ); repeat: Y ~ p(Y | θ), one sweep with ``precision_prior=(a, b)``
    continuing from the drawn λ. λ_u, λ_w and each λ_vj stay Gamma(a, b): mean a/b, variance a/b²."""
    N, D, K, k = 5, 3, 4, 2
    a, b = 6.0, 3.0
    rng = np.random.default_rng(2)
    X = sp.csr_matrix(rng.standard_normal((N, D)))
    lam_u, lam_w, lam_v = rng.gamma(a, 1 / b), rng.gamma(a, 1 / b), rng.gamma(a, 1 / b, k)
    W = rng.standard_normal((D, k)) / np.sqrt(lam_w)
    state = EMState(W, np.asarray(X @ W) + rng.standard_normal((N, k)) / np.sqrt(lam_u),
                    rng.standard_normal((K, k)) / np.sqrt(lam_v), rng.beta(2.0, 3.0, K))
    draws = []
    for it in range(1000):
        p = Priors(lambda_u=lam_u, lambda_v=lam_v, lambda_w=lam_w, alpha=2.0, beta=3.0)
        samples, _, state = gibbs(X, draw_labels(state, rng), state, p, GibbsOptions(1, precision_prior=(a, b)), seed=it)
        lam_u, lam_w, lam_v = samples["precisions"][0, 0, 0], samples["precisions"][0, 0, 1], samples["precisions"][0, 0, 2:]
        draws.append(samples["precisions"][0, 0])
    draws = np.array(draws)
    np.testing.assert_allclose(draws.mean(axis=0), a / b, rtol=0.1)
    np.testing.assert_allclose(draws.var(axis=0), a / b ** 2, rtol=0.35)


def test_the_slice_sampler_draws_from_its_density():
    """5,000 steps on a Gamma(3, 1) log density (shifted, in log space: τ = log x has density
    ∝ x³ e^{−x}) give E[e^τ] = 3 and Var[e^τ] = 3."""
    rng = np.random.default_rng(0)
    tau, draws = 0.0, []
    for _ in range(5000):
        tau, _ = slice_sample(lambda t: 3 * t - np.exp(t), tau, rng)
        draws.append(np.exp(tau))
    draws = np.array(draws)
    assert abs(draws.mean() - 3) < 0.15 and abs(draws.var() - 3) < 0.45


@pytest.fixture
def small():
    rng = np.random.default_rng(0)
    N, D, K, k = 30, 5, 6, 2
    X = sp.csr_matrix(rng.standard_normal((N, D)))
    Y = sp.csr_matrix((rng.random((N, K)) < 0.3).astype(float))
    start = EMState(np.zeros((D, k)), 0.1 * rng.standard_normal((N, k)), 0.1 * rng.standard_normal((K, k)), np.full(K, 0.9))
    return X, Y, start


def test_draws_have_a_chain_dimension_and_the_trace_a_row_per_sweep(small):
    X, Y, start = small
    D, K, k = X.shape[1], Y.shape[1], start.V.shape[1]
    samples, trace, _ = gibbs(X, Y, start, Priors(), GibbsOptions(4, 3, block_rows=7), num_chains=2, seed=5, watch=X)
    assert samples["V"].shape == (4, 2, K, k) and samples["mu"].shape == (4, 2, K)
    assert samples["coef"].shape == (2, D, K) and samples["watched"].shape == (4, 2, X.shape[0], K)
    # coef is the mean of the Rao-Blackwellised E[W | U] Vᵀ whose predictions were watched
    np.testing.assert_allclose(np.asarray(X @ samples["coef"][1]), samples["watched"][:, 1].mean(axis=0), rtol=1e-10,
                               atol=1e-12)
    assert len(trace) == 14 and trace["kept"].sum() == 8 and np.isfinite(trace["objective"]).all()
    again, _, _ = gibbs(X, Y, start, Priors(), GibbsOptions(4, 3, block_rows=7), num_chains=2, seed=5)
    np.testing.assert_array_equal(again["V"], samples["V"])  # the same seed, the same draws
    # chains on workers draw the same values, to rounding: concurrent BLAS calls may split their work
    # differently, so this is not asserted bit for bit
    with parallel_backend("threading", n_jobs=2):
        threaded, _, _ = gibbs(X, Y, start, Priors(), GibbsOptions(4, 3, block_rows=7), num_chains=2, seed=5, n_jobs=2)
    np.testing.assert_allclose(threaded["V"], samples["V"], rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(start.U, small[2].U)  # the start is not changed


def test_the_scale_move_draws_the_same_with_psi_held_or_formed_per_evaluation(small, monkeypatch):
    """The scale move's likelihood holds ψ = U Vᵀ whole up to ``PSI_CACHE_BYTES``; forming its blocks
    at every evaluation instead is the same computation, so the draws are the same bit for bit."""
    X, Y, start = small
    held, _, _ = gibbs(X, Y, start, Priors(), GibbsOptions(3, 2, block_rows=7), seed=3)
    monkeypatch.setattr(gibbs_module, "PSI_CACHE_BYTES", 0)
    formed, trace, _ = gibbs(X, Y, start, Priors(), GibbsOptions(3, 2, block_rows=7), seed=3)
    assert (trace["tau"] != 0).all()  # the move ran, and moved
    for name in ("V", "mu", "coef"):
        np.testing.assert_array_equal(formed[name], held[name])


def test_a_non_finite_draw_stops_with_the_draws_so_far(small, monkeypatch):
    X, Y, start = small
    real, calls = gibbs_module._pg_draws, []

    def poisoned(psi, rng):
        calls.append(1)
        omega = real(psi, rng)
        return omega * np.nan if len(calls) == 8 else omega  # sweep 3, second block (3 blocks of 10 rows)

    monkeypatch.setattr(gibbs_module, "_pg_draws", poisoned)
    with pytest.raises(GibbsDivergedError, match=r"chain 0, sweep 3, rows 10–19: a draw of u_n is not finite") as err:
        gibbs(X, Y, start, Priors(), GibbsOptions(5, 0, block_rows=10), seed=1)
    assert err.value.samples["V"].shape[0] == 2 and len(err.value.trace) == 2


@pytest.mark.parametrize("which, prior", [("draw_precisions", dict(precision_prior=(1.0, 1.0))),
                                          ("draw_relevance", None)])
def test_precision_draws_that_overflow_stop_with_the_draws_so_far(small, monkeypatch, which, prior):
    """A Gamma draw of the precisions (or the relevances) that overflows to inf, or underflows to
    0, in sweep 3 stops the chain with an error naming the sweep; the 2 draws before are kept."""
    X, Y, start = small
    real, calls = getattr(gibbs_module, which), []

    def overflowing(*args):
        calls.append(1)
        out = real(*args)
        if len(calls) < 3:
            return out
        return (np.inf, out[1], out[2]) if which == "draw_precisions" else np.zeros_like(out)

    monkeypatch.setattr(gibbs_module, which, overflowing)
    options = GibbsOptions(5, 0, block_rows=10, **(prior or {}))
    priors = Priors() if prior else Priors(relevance=(1.0, 1.0))
    name = "the precisions" if which == "draw_precisions" else "the relevances"
    with pytest.raises(GibbsDivergedError, match=f"chain 0, sweep 3, the global draws: a draw of {name} is not "
                                                 "finite and positive") as err:
        gibbs(X, Y, start, priors, options, seed=1)
    assert err.value.samples["V"].shape[0] == 2 and len(err.value.trace) == 2


def test_the_exposure_coefficients_conditional_is_the_dense_one():
    """β | ξ, ω' is N(Λ⁻¹ Σ (ξ − ½) c, Λ⁻¹) with Λ = Σ ω' c cᵀ + λ_β I: 4,000 draws of
    draw_coefficients against that Gaussian computed from the explicit (N, K, C) covariates
    c_nl = (f_l, g_n)."""
    from mlgp.geneml.exposure import CovariateExposure, draw_coefficients

    rng = np.random.default_rng(3)
    N, K = 7, 5
    F, G = np.column_stack([np.ones(K), rng.standard_normal(K)]), rng.standard_normal((N, 1))
    cov = CovariateExposure(F, G, np.zeros(3), lambda_coef=2.0)
    xi = (rng.random((N, K)) < 0.6).astype(float)
    omega = rng.gamma(2.0, 0.1, (N, K))
    c = np.concatenate([np.broadcast_to(F[None], (N, K, 2)), np.broadcast_to(G[:, None], (N, K, 1))], axis=2)
    c = c.reshape(N * K, 3)
    precision = (c * omega.reshape(-1, 1)).T @ c + 2.0 * np.eye(3)
    mean = np.linalg.solve(precision, c.T @ (xi.reshape(-1) - 0.5))
    draws = np.array([draw_coefficients(cov, xi, omega, rng).coef for _ in range(4000)])
    covariance = np.linalg.inv(precision)
    assert np.all(np.abs(draws.mean(axis=0) - mean) < 4 * np.sqrt(np.diag(covariance) / 4000))
    np.testing.assert_allclose(np.cov(draws.T), covariance, atol=0.1 * np.abs(covariance).max())
