"""GenEML's Gibbs sampler: a Geweke joint-distribution test (alternating data draws and sweeps
keeps the parameters at their prior), draws shaped as tfp.mcmc's, and the estimator's sampler."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import expit

from mlgp.geneml.em import EMState, Priors
from mlgp.geneml.gibbs import gibbs


def test_geweke_successive_conditionals_keep_the_prior():
    """θ ~ p(θ); repeat: Y ~ p(Y | θ), θ ← one sweep given Y. If every conditional is right, θ's
    marginal stays p(θ): μ ~ Beta(2, 3), V ~ N(0, 1/λ_v), W ~ N(0, 1/λ_w), U − XW ~ N(0, 1/λ_u)."""
    N, D, K, k = 6, 3, 4, 2
    p = Priors(lambda_u=2.0, lambda_v=1.5, lambda_w=3.0, alpha=2.0, beta=3.0)
    rng = np.random.default_rng(1)
    X = sp.csr_matrix(rng.standard_normal((N, D)))
    W = rng.standard_normal((D, k)) / np.sqrt(p.lambda_w)
    state = EMState(W, np.asarray(X @ W) + rng.standard_normal((N, k)) / np.sqrt(p.lambda_u),
                    rng.standard_normal((K, k)) / np.sqrt(p.lambda_v), rng.beta(p.alpha, p.beta, K))
    mu, V, Wd, R = [], [], [], []
    for it in range(700):
        exposed = rng.random((N, K)) < state.mu
        Y = sp.csr_matrix((exposed & (rng.random((N, K)) < expit(state.U @ state.V.T))).astype(float))
        _, _, state = gibbs(X, Y, state, p, 1, 0, seed=it)
        mu.append(state.mu), V.append(state.V), Wd.append(state.W), R.append(state.U - X @ state.W)
    mu = np.array(mu)
    assert abs(mu.mean() - 0.4) < 0.03 and abs(mu.var() / 0.04 - 1) < 0.25
    assert abs(np.var(V) * p.lambda_v - 1) < 0.15
    assert abs(np.var(Wd) * p.lambda_w - 1) < 0.2
    assert abs(np.var(R) * p.lambda_u - 1) < 0.1


def test_draws_have_a_chain_dimension_and_the_trace_a_row_per_sweep():
    rng = np.random.default_rng(0)
    N, D, K, k = 30, 5, 6, 2
    X = sp.csr_matrix(rng.standard_normal((N, D)))
    Y = sp.csr_matrix((rng.random((N, K)) < 0.3).astype(float))
    start = EMState(np.zeros((D, k)), 0.1 * rng.standard_normal((N, k)), 0.1 * rng.standard_normal((K, k)), np.full(K, 0.9))
    samples, trace, _ = gibbs(X, Y, start, Priors(), 4, 3, num_chains=2, seed=5)
    assert samples["W"].shape == (4, 2, D, k) and samples["V"].shape == (4, 2, K, k) and samples["mu"].shape == (4, 2, K)
    assert samples["coef"].shape == (2, D, K)
    np.testing.assert_allclose(samples["coef"][1], np.mean([w @ v.T for w, v in zip(samples["W"][:, 1], samples["V"][:, 1])], axis=0))
    assert len(trace) == 14 and trace["kept"].sum() == 8 and np.isfinite(trace["objective"]).all()
    again, _, _ = gibbs(X, Y, start, Priors(), 4, 3, num_chains=2, seed=5)
    np.testing.assert_array_equal(again["V"], samples["V"])  # the same seed, the same draws


def test_the_exposure_coefficients_conditional_is_the_dense_one():
    """β | ξ, ω' is N(Λ⁻¹ Σ (ξ − ½) c, Λ⁻¹) with Λ = Σ ω' c cᵀ + λ_β I: 4,000 draws of
    draw_coefficients against that Gaussian computed from the explicit (N, K, C) covariates.
    (A Geweke run of the whole sampler with covariate exposure, 4,000 iterations, kept β's prior
    variance to within 5 %; too long for the suite.)"""
    from mlgp.geneml.exposure import CovariateExposure, draw_coefficients

    rng = np.random.default_rng(3)
    N, K = 7, 5
    cov = CovariateExposure(np.column_stack([np.ones(K), rng.standard_normal(K)]), rng.standard_normal((N, 1)),
                            np.zeros(3), lambda_coef=2.0)
    xi = (rng.random((N, K)) < 0.6).astype(float)
    omega = rng.gamma(2.0, 0.1, (N, K))
    c = cov.dense().reshape(N * K, 3)
    precision = (c * omega.reshape(-1, 1)).T @ c + 2.0 * np.eye(3)
    mean = np.linalg.solve(precision, c.T @ (xi.reshape(-1) - 0.5))
    draws = np.array([draw_coefficients(cov, xi, omega, rng).coef for _ in range(4000)])
    covariance = np.linalg.inv(precision)
    assert np.all(np.abs(draws.mean(axis=0) - mean) < 4 * np.sqrt(np.diag(covariance) / 4000))
    np.testing.assert_allclose(np.cov(draws.T), covariance, atol=0.1 * np.abs(covariance).max())
