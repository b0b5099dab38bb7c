"""GenEML's joint distribution: its log joint against a NumPy/SciPy computation of the same
densities, draws that respect the model (no positive label without exposure; P(y = 1) = μ σ(uᵀv)),
and bad arguments."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import tensorflow as tf
from scipy import stats
from scipy.special import expit

from mlgp.errors import ArgumentError, ShapeError
from mlgp.geneml.model import NAMES, geneml_joint

N, D, K, k = 40, 12, 6, 3
PRIORS = dict(lambda_u=2.0, lambda_v=0.5, lambda_w=3.0, alpha=2.0, beta=5.0, lambda_coef=4.0)


@pytest.fixture(scope="module")
def X():
    return sp.random(N, D, density=0.3, random_state=1, format="csr")


def _reference_log_joint(X, values, exposure, covariates=None):
    W, U, V, Y = (np.asarray(values[n]) for n in ("W", "U", "V", "Y"))
    lp = stats.norm.logpdf(W, 0, 1 / np.sqrt(PRIORS["lambda_w"])).sum()
    lp += stats.norm.logpdf(U, X @ W, 1 / np.sqrt(PRIORS["lambda_u"])).sum()
    lp += stats.norm.logpdf(V, 0, 1 / np.sqrt(PRIORS["lambda_v"])).sum()
    s = expit(U @ V.T)
    if exposure is None:
        return lp + stats.bernoulli.logpmf(Y, s).sum()
    xi = np.asarray(values["xi"])
    if exposure == "global":
        mu = np.asarray(values["mu"])
        lp += stats.beta.logpdf(mu, PRIORS["alpha"], PRIORS["beta"]).sum()
        lp += stats.bernoulli.logpmf(xi, np.broadcast_to(mu, (N, K))).sum()
    else:
        coef = np.asarray(values["coef"])
        lp += stats.norm.logpdf(coef, 0, 1 / np.sqrt(PRIORS["lambda_coef"])).sum()
        lp += stats.bernoulli.logpmf(xi, expit(covariates @ coef)).sum()
    return lp + stats.bernoulli.logpmf(Y, xi * s).sum()


@pytest.mark.parametrize("exposure", ["global", "covariates", None])
def test_the_log_joint_is_the_sum_of_the_model_densities(X, exposure):
    cov = np.random.default_rng(2).standard_normal((N, K, 2)) if exposure == "covariates" else None
    joint = geneml_joint(X, K, k, exposure=exposure, covariates=cov, **PRIORS)
    values = joint.sample(seed=(3, 4))
    assert set(values) == set(NAMES[exposure])
    assert values["W"].shape == (D, k) and values["U"].shape == (N, k) and values["Y"].shape == (N, K)
    np.testing.assert_allclose(joint.log_prob(values).numpy(), _reference_log_joint(X, values, exposure, cov),
                               rtol=1e-10)
    # dense features give the same joint
    dense = geneml_joint(X.toarray(), K, k, exposure=exposure, covariates=cov, **PRIORS)
    np.testing.assert_allclose(dense.log_prob(values).numpy(), joint.log_prob(values).numpy(), rtol=1e-12)


def test_no_label_without_exposure_and_the_positive_rate_is_mu_times_sigma(X):
    """Fix U, V, mu; draw ξ and Y 4,000 times: Y ≤ ξ always, and the rate of y = 1 per entry is
    μ_l σ(u_nᵀ v_l) (within 4.5 binomial standard errors everywhere)."""
    joint = geneml_joint(X, K, k, exposure="global", **PRIORS)
    fixed = joint.sample(seed=(5, 6))
    draws = 4000
    xi_dist, y_dist = joint.sample_distributions(seed=(7, 8), value=fixed)[0]["xi"], None
    xi = xi_dist.sample(draws, seed=(9, 10))
    y_model = joint.model["Y"](U=fixed["U"], V=fixed["V"], xi=xi)
    y = y_model.sample(seed=(11, 12)).numpy()
    assert np.all(y <= xi.numpy())
    p = np.asarray(fixed["mu"])[None, :] * expit(np.asarray(fixed["U"]) @ np.asarray(fixed["V"]).T)
    se = np.sqrt(p * (1 - p) / draws)
    assert np.all(np.abs(y.mean(axis=0) - p) < 4.5 * se + 1e-12)


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(exposure="sometimes"), ArgumentError, "exposure must be one of"),
    (dict(exposure="covariates"), ArgumentError, r"needs covariates \(N, K, C\)"),
    (dict(exposure="global", covariates=np.zeros((N, K, 1))), ArgumentError, "covariates are used only with"),
    (dict(exposure="covariates", covariates=np.zeros((N, K))), ShapeError, r"covariates must be finite with shape"),
    (dict(lambda_u=0.0), ArgumentError, "lambda_u"),
    (dict(alpha=-1.0), ArgumentError, "alpha"),
])
def test_bad_arguments_are_refused(X, kwargs, error, message):
    with pytest.raises(error, match=message):
        geneml_joint(X, K, k, **kwargs)


def test_bad_features_are_refused():
    X = np.ones((N, D))
    X[3, 4] = np.nan
    with pytest.raises(ShapeError, match="finite"):
        geneml_joint(X, K, k)
    with pytest.raises(ArgumentError, match="n_components"):
        geneml_joint(np.ones((N, D)), K, 0)


def test_a_large_preference_keeps_a_finite_log_probability(X):
    """log p(y = 0 | ξ = 1, ψ) = −softplus(ψ), finite even where σ(ψ) rounds to 1."""
    joint = geneml_joint(X, K, k, exposure="global", **PRIORS)
    values = dict(joint.sample(seed=(1, 1)))
    values["V"] = values["V"] * 0 + 30.0  # ψ of order 10³
    values["xi"] = tf.ones_like(values["xi"])
    values["Y"] = tf.zeros_like(values["Y"])
    assert np.isfinite(joint.log_prob(values).numpy())
