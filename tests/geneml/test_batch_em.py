"""GenEML's batch EM: the log posterior never decreases, the likelihood is the exposure mixture's
(from CSR label blocks), the labels are never densified, the fit is the same for any n_jobs and on
a Dask cluster, and it recovers the exposures of data drawn from the model."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import expit
from threadpoolctl import threadpool_limits

from mlgp.geneml.em import EMState, Priors, batch_em, log_posterior
from mlgp.geneml.model import geneml_joint
from mlgp.geneml.updates import centred_weights, exposure_posterior, log_likelihood, mean_omega

N, D, K, k = 400, 30, 20, 3
PRIORS = Priors(lambda_u=1.0, lambda_v=0.3, lambda_w=0.2, alpha=2.0, beta=2.0)


@pytest.fixture(scope="module")
def data():
    X = sp.random(N, D, density=0.25, random_state=0, format="csr")
    X = sp.csr_matrix(X.multiply(1 / np.sqrt(np.asarray(X.multiply(X).sum(axis=1)) + 1e-12)))
    joint = geneml_joint(X, K, k, exposure="global", lambda_u=1.0, lambda_v=0.3, lambda_w=0.2, alpha=2.0, beta=2.0)
    truth = joint.sample(seed=(1, 2))
    return X, sp.csr_matrix(truth["Y"].numpy().astype(np.float64)), truth


def _start(exposure: bool = True) -> EMState:
    rng = np.random.default_rng(0)
    return EMState(np.zeros((D, k)), 0.1 * rng.standard_normal((N, k)), 0.1 * rng.standard_normal((K, k)),
                   np.full(K, 0.9) if exposure else None)


@pytest.mark.parametrize("exposure", [True, False])
def test_the_log_posterior_never_decreases(data, exposure):
    X, Y, _ = data
    start = _start(exposure)
    state, trace = batch_em(X, Y, start, PRIORS, 25, block_rows=128)
    objective = np.concatenate([[log_posterior(X, Y, start, PRIORS)], trace["objective"]])
    assert np.all(np.diff(objective) >= -1e-8 * np.abs(objective[1:])), np.diff(objective).min()
    assert objective[-1] > objective[0] + 100  # and it moves
    assert list(trace.columns) == ["iteration", "elapsed", "objective", "seconds"] and len(trace) == 25


@pytest.mark.parametrize("exposure", [True, False])
def test_the_likelihood_sums_the_exposure_out(exposure):
    """From a CSR label block (and, alike, a dense one): the mixture likelihood, γ by Bayes' rule,
    b = γ (y − ½)."""
    rng = np.random.default_rng(3)
    psi, Y, mu = rng.standard_normal((5, 4)) * 3, (rng.random((5, 4)) < 0.4).astype(float), rng.random(4)
    mu = mu if exposure else None
    p_one = (1.0 if mu is None else mu) * expit(psi)  # p(y = 1) = p(ξ = 1) p(y = 1 | ξ = 1)
    expected = np.sum(np.where(Y > 0, np.log(p_one), np.log(1 - p_one)))
    for block in (sp.csr_matrix(Y), Y):
        np.testing.assert_allclose(log_likelihood(psi, block, mu), expected, rtol=1e-12)
        gamma = exposure_posterior(psi, block, mu)
        if mu is None:
            assert np.all(gamma == 1)
        else:  # E[ξ | y = 0] by Bayes' rule
            np.testing.assert_allclose(gamma[Y == 0], (mu * (1 - expit(psi)) / (1 - p_one))[Y == 0], rtol=1e-10)
            assert np.all(gamma[Y > 0] == 1)
        np.testing.assert_array_equal(centred_weights(gamma, block), gamma * (Y - 0.5))
    # E[ω] = tanh(ψ/2)/(2ψ) and its limit at 0
    np.testing.assert_allclose(mean_omega(np.array([0.0, 1e-6, 2.0])), [0.25, 0.25, np.tanh(1.0) / 4], rtol=1e-10)


def test_the_exposure_likelihood_near_mu_0_and_1():
    """log p(y = 0) = log((1 − μ) + μ σ(−ψ)), a sum of two positive terms (so no cancellation),
    matches the likelihood's rearranged form at μ near 0 and 1 and steep ψ; μ = 1 takes the
    other branch and gives log σ(−ψ)."""
    psi = np.array([[40.0, -40.0, 0.0, 3.0], [700.0, -5.0, 1e-3, 30.0]])
    mu = np.array([1 - 1e-12, 1e-12, 0.5, 1 - 1e-6])
    zeros = sp.csr_matrix(psi.shape)
    expected = sum(np.log((1 - m) + m * expit(-x)) for row in psi for x, m in zip(row, mu))
    np.testing.assert_allclose(log_likelihood(psi, zeros, mu), expected, rtol=1e-13)
    Y = sp.csr_matrix(np.array([[1.0, 0, 0, 1], [0, 1, 0, 0]]))
    ones = Y.toarray() > 0
    p_one = mu * expit(psi)
    expected = np.sum(np.where(ones, np.log(p_one), np.log((1 - mu) + mu * expit(-psi))))
    np.testing.assert_allclose(log_likelihood(psi, Y, mu), expected, rtol=1e-13)
    unit = np.ones(4)
    from scipy.special import log_expit
    np.testing.assert_allclose(log_likelihood(psi, zeros, unit), np.sum(log_expit(-psi)), rtol=1e-13)
    np.testing.assert_allclose(log_likelihood(psi, Y, unit), np.sum(np.where(ones, log_expit(psi), log_expit(-psi))),
                               rtol=1e-13)


def test_the_mean_of_omega_at_every_scale():
    """E[ω] = tanh(ψ/2)/(2ψ) from Python's own tanh (its series ¼ − ψ²/48 + ψ⁴/480 near 0), at
    0, the smallest subnormal, tiny, moderate, huge and infinite ψ, and in a 2-D block; the input
    is left alone."""
    import math

    values = np.array([0.0, 5e-324, -1e-200, 3e-9, -1e-5, 0.3, -2.0, 40.0, -700.0, 1e300, -np.inf])

    def reference(x):
        if abs(x) < 1e-3:
            return 0.25 - x * x / 48 + x ** 4 / 480
        return 0.0 if math.isinf(x) else math.tanh(x / 2) / (2 * x)

    before = values.copy()
    np.testing.assert_allclose(mean_omega(values), [reference(x) for x in values], rtol=1e-14, atol=0)
    np.testing.assert_array_equal(values, before)
    block = values[:10].reshape(2, 5)
    np.testing.assert_allclose(mean_omega(block), np.vectorize(reference)(block), rtol=1e-14, atol=0)


@pytest.mark.parametrize("exposure", [True, False])
def test_the_labels_stay_sparse(data, monkeypatch, exposure):
    """Batch EM, online EM and their objectives work on CSR label blocks: no densifying of Y."""
    from mlgp.geneml.online_em import online_em

    X, Y, _ = data

    def refuse(*args, **kwargs):
        raise AssertionError("a CSR matrix was densified")

    monkeypatch.setattr(sp.csr_matrix, "toarray", refuse)
    monkeypatch.setattr(sp.csr_matrix, "todense", refuse)
    batch_em(X, Y, _start(exposure), PRIORS, 1, block_rows=128)
    online_em(X, Y, _start(exposure), PRIORS, 1, 150)


@pytest.mark.slow
def test_n_jobs_and_a_dask_cluster_give_the_same_fit(data):
    """The same blocks, reduced in block order, whoever computes them: bit for bit. BLAS runs with
    one thread in this process and in joblib's workers alike, so that each block is the very same
    computation (another thread count may take other BLAS kernels, equal only to rounding)."""
    import joblib

    X, Y, _ = data
    with threadpool_limits(limits=1), joblib.parallel_config(backend="loky", inner_max_num_threads=1):
        one, _ = batch_em(X, Y, _start(), PRIORS, 3, block_rows=100, n_jobs=1)
        two, _ = batch_em(X, Y, _start(), PRIORS, 3, block_rows=100, n_jobs=2)
    for name in ("W", "U", "V", "mu"):
        np.testing.assert_array_equal(getattr(one, name), getattr(two, name))
    distributed = pytest.importorskip("distributed")

    with threadpool_limits(limits=1), distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                                               dashboard_address=None) as cluster, \
            distributed.Client(cluster), joblib.parallel_backend("dask"):
        dask, _ = batch_em(X, Y, _start(), PRIORS, 3, block_rows=100, n_jobs=-1)
    for name in ("W", "U", "V", "mu"):
        np.testing.assert_array_equal(getattr(one, name), getattr(dask, name))


def test_it_recovers_the_exposures_of_data_drawn_from_the_model(data):
    X, Y, truth = data
    state, _ = batch_em(X, Y, _start(), PRIORS, 40, block_rows=200)
    assert np.corrcoef(state.mu, truth["mu"].numpy())[0, 1] > 0.5
    # the frequency of a label alone mixes exposure and preference; the inferred μ is closer to the truth
    assert np.all((state.mu > 0) & (state.mu < 1))


def test_online_em_step_sizes_and_its_memory_bound(data):
    """ρ_t = (t + τ)^−κ; online EM keeps no U (the u_n are local to each minibatch) and its
    streamed objective equals the batch log posterior at the same u_n."""
    from mlgp.errors import ArgumentError
    from mlgp.geneml.online_em import _local_step, check_step_schedule, online_em, step_size, streamed_objective

    assert step_size(1, 0.7, 0.0) == 1.0 and step_size(3, 1.0, 1.0) == 0.25
    with pytest.raises(ArgumentError, match=r"kappa must lie in \(0.5, 1\]"):
        check_step_schedule(0.5, 1.0)
    X, Y, _ = data
    state, trace = online_em(X, Y, _start(), PRIORS, 2, 100)
    assert state.U is None and len(trace) == 2 and trace["steps"].tolist() == [4, 8]
    U = _local_step(X, Y, state, PRIORS, slice(None))[0]
    full = EMState(state.W, U, state.V, state.mu)
    np.testing.assert_allclose(streamed_objective(X, Y, state, PRIORS, block_rows=N), log_posterior(X, Y, full, PRIORS),
                               rtol=1e-12)


def test_online_em_splits_each_epoch_into_minibatches_of_equal_size(data, monkeypatch):
    """An epoch of N = 400 rows at ``batch_size`` 150 is three minibatches of 134, 133 and 133 rows,
    not 150, 150 and a remainder of 100 whose statistics, scaled by N / 100, would weigh as much as
    a full one's; every row is visited once per epoch."""
    from mlgp.geneml import online_em as module

    X, Y, _ = data
    seen = []
    original = module._local_step
    monkeypatch.setattr(module, "_local_step", lambda X_b, Y_b, state, priors, rows, iterations=2, start=None: (
        seen.append(np.asarray(rows)), original(X_b, Y_b, state, priors, rows, iterations, start))[1])
    _, trace = module.online_em(X, Y, _start(), PRIORS, 2, 150)
    assert trace["steps"].tolist() == [3, 6]
    assert [len(rows) for rows in seen[:3]] == [134, 133, 133]
    np.testing.assert_array_equal(np.sort(np.concatenate(seen[:3])), np.arange(N))


def test_online_em_carries_each_rows_u_n_between_visits(data, monkeypatch):
    """With ``carry`` a row's local steps start where its previous visit left its u_n (x_n W at the
    first visit); without it, at x_n W every time."""
    from mlgp.geneml import online_em as module

    X, Y, _ = data
    visits = []
    original = module._local_step

    def recording(X_b, Y_b, state, priors, rows, iterations=2, start=None):
        result = original(X_b, Y_b, state, priors, rows, iterations, start)
        if isinstance(rows, slice):  # the objective's blocks, from x_n W
            return result
        visits.append((np.asarray(rows), None if start is None else start.copy(), result[0].copy(),
                       np.asarray(X_b @ state.W)))
        return result

    monkeypatch.setattr(module, "_local_step", recording)
    for carry in (True, False):
        visits.clear()
        module.online_em(X, Y, _start(), PRIORS, 2, 150, carry=carry)
        first = {int(r): u for rows, _, U_b, _ in visits[:3] for r, u in zip(rows, U_b)}
        for rows, start, _, prior_mean in visits[3:]:
            if carry:
                np.testing.assert_array_equal(start, np.stack([first[int(r)] for r in rows]))
            else:
                assert start is None  # _local_step starts at x_n W
        if carry:  # first visits: NaN rows, which start at x_n W
            assert all(np.isnan(start).all() for _, start, _, _ in visits[:3])
        else:
            assert all(start is None for _, start, _, _ in visits[:3])


def test_online_em_final_passes_with_carried_u_n_are_batch_em_iterations(data):
    """Final passes with ``carry`` and one local update are batch EM's iterations (one E-step and
    mode update of every u_n from its carried value, then V, μ and W), the first from U = X W; the
    trace's objective is batch EM's, the log posterior at the carried u_n."""
    from mlgp.geneml.online_em import online_em

    X, Y, _ = data
    start = _start()
    online, online_trace = online_em(X, Y, EMState(start.W, None, start.V, start.mu), PRIORS, 0, 64,
                                     final_passes=3, carry=True, local_iterations=1)
    batch, batch_trace = batch_em(X, Y, EMState(start.W, np.asarray(X @ start.W), start.V, start.mu), PRIORS, 3,
                        cg_iterations=300, block_rows=128)
    for name in ("W", "V", "mu"):
        np.testing.assert_allclose(getattr(online, name), getattr(batch, name), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(online_trace["objective"], batch_trace["objective"], rtol=1e-9)


def test_online_em_with_one_batch_and_unit_step_is_a_batch_em_step(data):
    """One online-EM step over all rows with ρ_1 = 1 (τ = 0) is one batch-EM step from the u_n the
    online step's E-step starts from (their first conditional modes), W solved exactly from the
    blended Xᵀ U (batch EM's CG run to convergence)."""
    from mlgp.geneml.online_em import online_em
    from mlgp.geneml.updates import row_updates, solve_spd

    X, Y, _ = data
    start = _start()
    prior_mean = np.asarray(X @ start.W)
    psi = prior_mean @ start.V.T
    gamma = exposure_posterior(psi, Y, start.mu)
    U1 = solve_spd(*row_updates(start.V, gamma * mean_omega(psi), centred_weights(gamma, Y), prior_mean,
                                PRIORS.lambda_u))
    batch, _ = batch_em(X, Y, EMState(start.W, U1, start.V, start.mu), PRIORS, 1, cg_iterations=200, block_rows=N)
    online, trace = online_em(X, Y, EMState(start.W, None, start.V, start.mu), PRIORS, 1, N, tau=0.0, cg_iterations=3)
    assert trace["steps"].tolist() == [1]
    for name in ("W", "V", "mu"):
        np.testing.assert_allclose(getattr(online, name), getattr(batch, name), rtol=1e-8, atol=1e-10)


def test_online_em_final_passes_sum_the_statistics_of_every_minibatch(data):
    """A final pass is a batch-EM iteration streamed over minibatches: its result does not depend on
    the minibatch size (sums, not blends), and with the local steps run to convergence it is batch
    EM's iteration from the u_n at their modes."""
    from mlgp.geneml.online_em import online_em

    X, Y, _ = data
    start = _start()
    state, _ = online_em(X, Y, EMState(start.W, None, start.V, start.mu), PRIORS, 1, 100)
    passes = [online_em(X, Y, state, PRIORS, 0, size, final_passes=1)[0] for size in (N, 64)]
    for name in ("W", "V", "mu"):
        np.testing.assert_allclose(getattr(passes[0], name), getattr(passes[1], name), rtol=1e-9, atol=1e-12)
    full, trace = online_em(X, Y, state, PRIORS, 0, 64, final_passes=2)
    assert trace["final"].tolist() == [True, True] and trace["epoch"].tolist() == [1, 2]
    assert not np.allclose(full.V, passes[0].V)  # the second pass moves on
