"""GenEML's joint distribution: its log joint against a NumPy/SciPy computation of the same
densities, draws that respect the model (no positive label without exposure; P(y = 1) = μ σ(uᵀv)),
bad arguments, and the inferences' log posterior (:mod:`mlgp.geneml.em`) as the joint with ξ summed
out, exactly (one model definition)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import tensorflow as tf
from scipy import stats
from scipy.special import expit, logsumexp

from mlgp.errors import ArgumentError, ShapeError
from mlgp.geneml.em import EMState, Priors, global_log_prior, log_posterior
from mlgp.geneml.exposure import CovariateExposure
from mlgp.geneml.model import NAMES, geneml_joint

N, D, K, k = 40, 12, 6, 3
PRIORS = dict(lambda_u=2.0, lambda_v=0.5, lambda_w=3.0, alpha=2.0, beta=5.0, lambda_coef=4.0)


@pytest.fixture(scope="module")
def X():
    return sp.random(N, D, density=0.3, random_state=1, format="csr")


def _covariates(seed: int, N: int, K: int) -> tuple[np.ndarray, np.ndarray]:
    """(F, G): F (K, 2) and G (N, 1)."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal((K, 2)), rng.standard_normal((N, 1))


def _dense(covariates) -> np.ndarray:
    """(F, G) as the (N, K, C_F + C_G) array c_nl = (f_l, g_n) (test sizes only)."""
    F, G = covariates
    N, K = G.shape[0], F.shape[0]
    return np.concatenate([np.broadcast_to(F[None], (N, K, F.shape[1])), np.broadcast_to(G[:, None], (N, K, G.shape[1]))],
                          axis=2)


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
        lp += stats.bernoulli.logpmf(xi, expit(_dense(covariates) @ coef)).sum()
    return lp + stats.bernoulli.logpmf(Y, xi * s).sum()


@pytest.mark.parametrize("exposure", ["global", "covariates", None])
def test_the_log_joint_is_the_sum_of_the_model_densities(X, exposure):
    cov = _covariates(2, N, K) if exposure == "covariates" else None
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
    (dict(exposure="covariates"), ArgumentError, r"needs covariates \(F, G\)"),
    (dict(exposure="global", covariates=(np.zeros((K, 1)), np.zeros((N, 1)))), ArgumentError,
     "covariates are used only with"),
    (dict(exposure="covariates", covariates=np.zeros((N, K, 1))), ShapeError, r"must be a pair \(F, G\)"),
    (dict(exposure="covariates", covariates=(np.zeros((N, 1)), np.zeros((N, 1)))), ShapeError,
     r"covariates \(F, G\) must be finite with shapes"),
    (dict(exposure="covariates", covariates=(np.zeros((K, 1)), np.zeros((K, 1)))), ShapeError,
     r"covariates \(F, G\) must be finite with shapes"),
    (dict(exposure="covariates", covariates=(np.zeros((K, 0)), np.zeros((N, 0)))), ShapeError,
     r"C_F \+ C_G ≥ 1"),
    (dict(exposure="covariates", covariates=(np.full((K, 1), np.nan), np.zeros((N, 1)))), ShapeError,
     r"covariates \(F, G\) must be finite"),
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


# One model definition: the NumPy log posterior is the joint with ξ summed out, constants included.

TINY_N, TINY_D, TINY_K, TINY_k = 2, 3, 3, 2
TINY_Y = np.array([[1, 0, 1], [0, 0, 1]])  # positives and zeros in every row
EM_PRIORS = Priors(lambda_u=PRIORS["lambda_u"], lambda_v=PRIORS["lambda_v"], lambda_w=PRIORS["lambda_w"],
                   alpha=PRIORS["alpha"], beta=PRIORS["beta"])


def _tiny(exposure, seed: int = 0):
    """A tiny joint, a draw of its parameters with Y = ``TINY_Y``, and the same point as an EMState."""
    X = sp.csr_matrix(np.random.default_rng(seed).standard_normal((TINY_N, TINY_D)))
    cov = _covariates(seed + 1, TINY_N, TINY_K) if exposure == "covariates" else None
    joint = geneml_joint(X, TINY_K, TINY_k, exposure=exposure, covariates=cov, **PRIORS)
    values = dict(joint.sample(seed=(seed, 7)))
    values["Y"] = tf.constant(TINY_Y, tf.int32)
    W, U, V = (values[name].numpy() for name in ("W", "U", "V"))
    mu = values["mu"].numpy() if exposure == "global" else None
    covariates = CovariateExposure(*cov, values["coef"].numpy(), PRIORS["lambda_coef"]) if cov is not None else None
    return X, joint, values, EMState(W, U, V, mu, covariates)


def _xi_marginal(joint, values) -> float:
    """log Σ_ξ p(W, U, V, μ or β, ξ, Y) over all 2^(N K) exposure configurations."""
    bits = (np.arange(2 ** (TINY_N * TINY_K))[:, None] >> np.arange(TINY_N * TINY_K)) & 1
    configs = bits.reshape(-1, TINY_N, TINY_K).astype(np.int32)
    log_probs = np.array([joint.log_prob({**values, "xi": tf.constant(xi)}).numpy() for xi in configs])
    impossible = np.any(configs < TINY_Y, axis=(1, 2))  # y = 1 without exposure
    assert np.all(log_probs[impossible] < -1e29) and np.all(np.isfinite(log_probs[~impossible]))
    return float(logsumexp(log_probs[~impossible]))


@pytest.mark.slow
@pytest.mark.parametrize("exposure", ["global", "covariates"])
@pytest.mark.parametrize("seed", [0, 1])
def test_the_log_posterior_is_the_joint_with_the_exposures_summed_out(exposure, seed):
    """log_posterior(X, Y, state) = log Σ_ξ p(W, U, V, μ or β, ξ, Y), every constant included."""
    X, joint, values, state = _tiny(exposure, seed)
    expected = _xi_marginal(joint, values)
    Y = sp.csr_matrix(TINY_Y.astype(np.float64))
    np.testing.assert_allclose(log_posterior(X, Y, state, EM_PRIORS), expected, rtol=1e-10)
    np.testing.assert_allclose(log_posterior(X, Y, state, EM_PRIORS, block_rows=1), expected, rtol=1e-10)


@pytest.mark.parametrize("seed", [0, 1])
def test_without_exposure_the_log_posterior_is_the_log_joint(seed):
    X, joint, values, state = _tiny(None, seed)
    Y = sp.csr_matrix(TINY_Y.astype(np.float64))
    np.testing.assert_allclose(log_posterior(X, Y, state, EM_PRIORS, block_rows=1), joint.log_prob(values).numpy(),
                               rtol=1e-10)


@pytest.mark.parametrize("exposure", ["global", "covariates", None])
def test_the_global_log_prior_is_the_joints_w_v_and_exposure_parts(exposure):
    """The objective's prior part shared by every row: log p(W) + log p(V) + log p(μ) (or log p(β))."""
    _, joint, values, state = _tiny(exposure)
    parts = {name: part.numpy() for name, part in joint.log_prob_parts(values).items()}
    shared = [name for name in ("W", "V", "mu", "coef") if name in parts]
    assert len(shared) == (2 if exposure is None else 3)
    np.testing.assert_allclose(global_log_prior(state, EM_PRIORS), sum(parts[name] for name in shared), rtol=1e-12)
