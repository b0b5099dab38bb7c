"""ARD on GenEML's latent dimensions (:mod:`mlgp.geneml.relevance`): the TFP joint with relevances
against SciPy's densities, the inferences' log posterior as that joint, the EM update as the
conditional's mode, batch EM's monotone objective, the effective rank against a dense SVD, online
EM's final passes as batch EM's iterations, a Geweke test of the Gibbs draws, and the relevance
prior's bad input."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import tensorflow as tf
from scipy import stats
from scipy.special import expit

from mlgp.errors import ArgumentError
from mlgp.geneml.em import EMState, Priors, batch_em, global_log_prior, log_posterior
from mlgp.geneml.model import geneml_joint
from mlgp.geneml.relevance import effective_rank, relevance_mode

N, D, K, k = 12, 5, 7, 3
LAMBDAS = dict(lambda_u=2.0, lambda_v=0.5, lambda_w=3.0)
HYPER = (3.0, 2.0)
PRIORS = Priors(**LAMBDAS, alpha=2.0, beta=5.0, relevance=HYPER)


def _drawn(exposure=None, seed: int = 0):
    """X (N, D) CSR, the ARD joint, and a draw of it."""
    X = sp.csr_matrix(np.random.default_rng(seed).standard_normal((N, D)))
    joint = geneml_joint(X, K, k, exposure=exposure, relevance_prior=HYPER, alpha=2.0, beta=5.0, **LAMBDAS)
    return X, joint, {name: value.numpy() for name, value in joint.sample(seed=(seed, 3)).items()}


def _state(values) -> EMState:
    return EMState(values["W"], values["U"], values["V"], values.get("mu"), None, values["relevance"])


def test_the_joint_with_relevances_is_the_sum_of_scipys_densities():
    """log p = Σ log Gamma(r_j; a, b) + Σ log N(W_dj; 0, 1/λ_w) + Σ log N(U_nj; (XW)_nj, 1/λ_u)
    + Σ log N(V_lj; 0, 1/(λ_v r_j)) + Σ log Bernoulli(y; σ(ψ)), to float64 rounding."""
    X, joint, values = _drawn()
    r, W, U, V, Y = (values[name] for name in ("relevance", "W", "U", "V", "Y"))
    expected = stats.gamma.logpdf(r, HYPER[0], scale=1 / HYPER[1]).sum()
    expected += stats.norm.logpdf(W, 0, 1 / np.sqrt(LAMBDAS["lambda_w"])).sum()
    expected += stats.norm.logpdf(U, X @ W, 1 / np.sqrt(LAMBDAS["lambda_u"])).sum()
    expected += stats.norm.logpdf(V, 0, 1 / np.sqrt(LAMBDAS["lambda_v"] * r)).sum()
    expected += stats.bernoulli.logpmf(Y, expit(U @ V.T)).sum()
    np.testing.assert_allclose(joint.log_prob(values).numpy(), expected, rtol=1e-12)
    assert list(joint.log_prob_parts(values))[0] == "relevance"


def test_the_log_posterior_with_relevances_is_the_joint():
    """Without exposure the inferences' objective is the joint's log_prob; with global exposure its
    shared prior part is the joint's W, V, μ and relevance parts."""
    X, joint, values = _drawn()
    Y = sp.csr_matrix(values["Y"].astype(np.float64))
    expected = joint.log_prob({name: tf.constant(value) for name, value in values.items()}).numpy()
    np.testing.assert_allclose(log_posterior(X, Y, _state(values), PRIORS, block_rows=5), expected, rtol=1e-12)
    _, joint, values = _drawn("global", seed=1)
    parts = {name: part.numpy() for name, part in joint.log_prob_parts(values).items()}
    np.testing.assert_allclose(global_log_prior(_state(values), PRIORS),
                               sum(parts[name] for name in ("relevance", "W", "V", "mu")), rtol=1e-12)


def test_the_relevance_update_is_the_mode_of_its_conditional():
    """relevance_mode maximises the log posterior over r given (W, U, V): each r_j moved by ±1 %
    lowers it, and its derivative by central differences is 0 (relative to the K/2 / r_j size of
    its terms)."""
    X, _, values = _drawn()
    Y = sp.csr_matrix(values["Y"].astype(np.float64))
    state = _state(values)
    W, U, V = state.W, state.U, state.V
    mode = relevance_mode(V, LAMBDAS["lambda_v"], HYPER)

    def at(r):
        return log_posterior(X, Y, EMState(W, U, V, None, None, r), PRIORS)

    best = at(mode)
    for j in range(k):
        for factor in (0.99, 1.01):
            moved = mode.copy()
            moved[j] *= factor
            assert at(moved) < best
        h = 1e-5 * mode[j]
        up, down = mode.copy(), mode.copy()
        up[j] += h
        down[j] -= h
        assert abs((at(up) - at(down)) / (2 * h)) < 1e-5 * K / mode[j]


@pytest.fixture(scope="module")
def rank_two():
    """400 rows of 30 features and 40 labels drawn through a rank-2 ψ = X W Vᵀ (no exposure)."""
    rng = np.random.default_rng(0)
    X = sp.random(400, 30, density=0.3, random_state=1, format="csr")
    X = sp.csr_matrix(X.multiply(1 / np.sqrt(np.asarray(X.multiply(X).sum(axis=1)) + 1e-12)))
    W, V = 3 * rng.standard_normal((30, 2)), 2 * rng.standard_normal((40, 2))
    Y = (rng.random((400, 40)) < expit(np.asarray(X @ W) @ V.T - 1.0)).astype(np.float64)
    return X, sp.csr_matrix(Y)


def test_batch_em_with_relevances_never_decreases_its_log_joint(rank_two):
    """From k = 6, the objective (the log joint with the relevances' prior) never decreases, is the
    log posterior at the returned state, and the relevances are the mode at the returned V."""
    X, Y = rank_two
    rng = np.random.default_rng(0)
    k6 = 6
    start = EMState(np.zeros((30, k6)), 0.1 * rng.standard_normal((400, k6)), 0.1 * rng.standard_normal((40, k6)),
                    None, None, np.ones(k6))
    priors = Priors(relevance=(1.0, 1.0))
    state, trace = batch_em(X, Y, start, priors, 30, cg_iterations=20, block_rows=128)
    objective = trace["objective"].to_numpy()
    assert np.all(np.diff(objective) >= -1e-9 * np.abs(objective[:-1]))
    np.testing.assert_allclose(objective[-1], log_posterior(X, Y, state, priors), rtol=1e-12)
    np.testing.assert_allclose(state.relevance, (1.0 - 1 + 40 / 2) / (1.0 + 0.5 * np.sum(state.V ** 2, axis=0)),
                               rtol=1e-12)


def test_the_effective_rank_counts_singular_values_of_psi():
    """The rank of ψ = U Vᵀ from the k × k factors equals NumPy's SVD of the dense ψ (99 % of
    its squared norm), and a rotation of the latent space (U R, V R⁻ᵀ) leaves it unchanged."""
    rng = np.random.default_rng(3)
    U, V = rng.standard_normal((50, 5)), rng.standard_normal((30, 5))
    U[:, 3:] *= 1e-3  # two dimensions carry ~1e-6 of the norm
    R = rng.standard_normal((5, 5))
    singular = np.linalg.svd(U @ V.T, compute_uv=False)
    dense = int(np.argmax(np.cumsum(singular ** 2) >= 0.99 * np.sum(singular ** 2)) + 1)
    assert effective_rank(U, V) == dense == 3
    assert effective_rank(U @ R, V @ np.linalg.inv(R).T) == 3
    assert effective_rank(U, V, energy=1.0) == 5
    assert effective_rank(np.zeros((4, 2)), V[:, :2]) == 0


def test_the_effective_rank_is_a_share_of_the_squared_singular_values():
    """ψ with singular values 10, 3, 1: 99 % of the squared norm (110) needs two of them (109), a
    share of the singular values themselves would need all three (13 of 14 is 93 %)."""
    rng = np.random.default_rng(5)
    left, _ = np.linalg.qr(rng.standard_normal((40, 3)))
    right, _ = np.linalg.qr(rng.standard_normal((20, 3)))
    U, V = left * np.array([10.0, 3.0, 1.0]), right
    assert effective_rank(U, V) == 2
    assert effective_rank(U, V, energy=0.9) == 1  # 100 of 110
    assert effective_rank(U, V, energy=0.995) == 3


def test_components_in_use_count_the_dimensions_whose_part_passes_the_share():
    """‖W_j‖ ‖V_j‖ against 1e-3 of the largest part: a dimension with either column at zero is
    off, one just above the share is on and one just below it is off; all zero gives 0."""
    from mlgp.geneml.relevance import IN_USE_RTOL, components_in_use

    rng = np.random.default_rng(4)
    W, V = rng.standard_normal((6, 5)), rng.standard_normal((8, 5))
    assert components_in_use(W, V) == 5
    W[:, 1] = 0.0
    V[:, 3] = 0.0
    assert components_in_use(W, V) == 3
    norms = np.linalg.norm(W, axis=0) * np.linalg.norm(V, axis=0)
    top = int(np.argmax(norms))
    other = [j for j in (0, 2, 4) if j != top][0]
    V[:, other] *= IN_USE_RTOL * norms[top] / norms[other] * (1 + 1e-9)  # just above the share
    assert components_in_use(W, V) == 3
    V[:, other] /= 1 + 1e-9
    V[:, other] *= 1 - 1e-9  # just below it
    assert components_in_use(W, V) == 2
    assert components_in_use(W, V, rtol=0.0) == 3
    V[:, other] *= 5.0  # 5e-3 of the largest part: in use at the documented share of 1e-3
    assert IN_USE_RTOL == 1e-3 and components_in_use(W, V) == 3
    assert components_in_use(np.zeros((6, 5)), V) == 0


def test_online_em_final_passes_with_relevances_are_batch_em_iterations(rank_two):
    """With ARD too, carried final passes with one local update are batch EM's iterations: the
    relevances are set from the new V, as batch EM sets them."""
    from mlgp.geneml.online_em import online_em

    X, Y = rank_two
    rng = np.random.default_rng(1)
    W0, V0 = np.zeros((30, 4)), 0.1 * rng.standard_normal((40, 4))
    priors = Priors(relevance=(2.0, 1.0))
    online, online_trace = online_em(X, Y, EMState(W0, None, V0, None, None, np.ones(4)), priors, 0, 64,
                                     final_passes=3, carry=True, local_iterations=1)
    batch, batch_trace = batch_em(X, Y, EMState(W0, np.asarray(X @ W0), V0, None, None, np.ones(4)), priors, 3,
                                  cg_iterations=300, block_rows=128)
    for name in ("W", "V", "relevance"):
        np.testing.assert_allclose(getattr(online, name), getattr(batch, name), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(online_trace["objective"], batch_trace["objective"], rtol=1e-9)


@pytest.mark.slow
def test_geweke_the_relevances_and_their_columns_keep_their_prior():
    """(r, θ) ~ p(r) p(θ | r); repeat: Y ~ p(Y | θ), one Gibbs sweep (scale move included). If the
    conditionals are right, r stays Gamma(a, b) (mean a/b, variance a/b²), V scaled by √(λ_v r_j)
    stays N(0, 1), and so do W and U − XW scaled by √λ (Monte Carlo tolerances for 1,000 correlated
    sweeps)."""
    from mlgp.geneml.gibbs import GibbsOptions, gibbs

    n, d, labels, dims = 6, 3, 4, 2
    a, b = 6.0, 3.0
    priors = Priors(lambda_u=2.0, lambda_v=1.5, lambda_w=3.0, alpha=2.0, beta=3.0, relevance=(a, b))
    rng = np.random.default_rng(5)
    X = sp.csr_matrix(rng.standard_normal((n, d)))
    r = rng.gamma(a, 1 / b, dims)
    W = rng.standard_normal((d, dims)) / np.sqrt(priors.lambda_w)
    state = EMState(W, np.asarray(X @ W) + rng.standard_normal((n, dims)) / np.sqrt(priors.lambda_u),
                    rng.standard_normal((labels, dims)) / np.sqrt(priors.lambda_v * r), rng.beta(2.0, 3.0, labels),
                    None, r)
    draws, scaled = [], {"W": [], "V": [], "R": []}
    for it in range(1000):
        exposed = rng.random((n, labels)) < state.mu
        Y = sp.csr_matrix((exposed & (rng.random((n, labels)) < expit(state.U @ state.V.T))).astype(float))
        samples, _, state = gibbs(X, Y, state, priors, GibbsOptions(1), seed=it)
        r = samples["relevance"][0, 0]
        np.testing.assert_array_equal(r, state.relevance)
        draws.append(r)
        scaled["W"].append(state.W * np.sqrt(priors.lambda_w))
        scaled["V"].append(state.V * np.sqrt(priors.lambda_v * r))
        scaled["R"].append((state.U - X @ state.W) * np.sqrt(priors.lambda_u))
    draws = np.array(draws)
    np.testing.assert_allclose(draws.mean(axis=0), a / b, rtol=0.1)
    np.testing.assert_allclose(draws.var(axis=0), a / b ** 2, rtol=0.35)
    for name, values in scaled.items():
        assert abs(np.var(values) - 1) < 0.15, name


def test_the_gibbs_objective_with_relevances_is_the_log_joint_at_the_draw():
    """A sweep's trace objective is log p(W, U, V, μ, r, Y) at the sweep's draws: the last sweep's
    equals the log posterior at the returned state (relevances included)."""
    from mlgp.geneml.gibbs import GibbsOptions, gibbs

    X, _, values = _drawn("global", seed=2)
    Y = sp.csr_matrix(values["Y"].astype(np.float64))
    state = _state(values)
    samples, trace, last = gibbs(X, Y, state, PRIORS, GibbsOptions(3), seed=0)
    np.testing.assert_array_equal(samples["relevance"][-1, 0], last.relevance)
    np.testing.assert_allclose(trace["objective"].iloc[-1], log_posterior(X, Y, last, PRIORS), rtol=1e-12)
    assert not np.allclose(last.relevance, state.relevance)


@pytest.mark.parametrize("prior", [(0.0, 1.0), (-2.0, 1.0), (1.0, -1.0), (np.inf, 1.0), (1.0, np.nan), (1.0,), "ab", 3.0])
def test_bad_relevance_priors_are_refused(prior):
    X = sp.csr_matrix(np.eye(3))
    with pytest.raises(ArgumentError, match="relevance_prior"):
        geneml_joint(X, 2, 1, relevance_prior=prior)


def test_one_label_with_a_shape_at_most_one_half_has_no_relevance_mode():
    """K = 1: the conditional's shape a + ½ ≤ 1 has no positive mode; said, not returned as 0."""
    with pytest.raises(ArgumentError, match="shape a = 0.5"):
        relevance_mode(np.ones((1, 2)), 1.0, (0.5, 1.0))
    assert np.all(relevance_mode(np.ones((1, 2)), 1.0, (0.51, 1.0)) > 0)


def test_precision_and_relevance_priors_together_are_refused():
    from mlgp.geneml.gibbs import GibbsOptions, gibbs

    X, _, values = _drawn()
    with pytest.raises(ArgumentError, match="choose one"):
        gibbs(X, sp.csr_matrix(values["Y"].astype(float)), _state(values), PRIORS, GibbsOptions(1, precision_prior=(1, 1)))
