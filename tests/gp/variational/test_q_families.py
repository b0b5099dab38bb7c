"""The q(u) families against independent computations: dense Gaussian KLs, GPflow's ``conditional``,
finite differences, conversions between families, and a singular K_ZZ."""

from __future__ import annotations

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from gpflow.conditionals import conditional

from mlgp.errors import ArgumentError, ShapeError
from mlgp.kernels import make_kernel
from mlgp.likelihoods import MultiLabelBernoulli
from mlgp.models import MLGPF
from mlgp.variational import CholeskyQ, PreconditionedQ, WhitenedQ, make_q, to_cholesky

N, D, K, P, M = 13, 6, 5, 3, 4


def dense_kl(m: np.ndarray, S: np.ndarray, Kzz: np.ndarray) -> float:
    """KL[N(m, S) ‖ N(0, K)] summed over the P columns of m (M, P) and S (P, M, M), in NumPy."""
    Kinv = np.linalg.inv(Kzz)
    total = 0.0
    for p in range(m.shape[1]):
        total += 0.5 * (np.trace(Kinv @ S[p]) + m[:, p] @ Kinv @ m[:, p] - len(Kzz)
                        + np.linalg.slogdet(Kzz)[1] - np.linalg.slogdet(S[p])[1])
    return total


def preconditioned(rng, jitter=None) -> PreconditionedQ:
    return PreconditionedQ(M, P, q_mu=rng.normal(size=(M, P)), q_sigma=rng.uniform(0.05, 2.0, (P, M)), jitter=jitter)


def model_with(q, rng, Z=None, kname="se+linear") -> MLGPF:
    kern = make_kernel(kname, D)
    lik = MultiLabelBernoulli(K, P, seed=1)
    Z = rng.normal(size=(M, D)) if Z is None else Z
    return MLGPF(kern, lik, Z, num_data=N, q=q)


@pytest.fixture
def data():
    rng = np.random.default_rng(3)
    return rng.normal(size=(N, D)), (rng.random((N, K)) < 0.3).astype(np.float64)


def test_preconditioned_kl_equals_the_dense_gaussian_kl():
    rng = np.random.default_rng(0)
    q = preconditioned(rng)
    model = model_with(q, rng)
    Kzz = model.kuu().numpy()
    mu, sigma = q.q_mu.numpy(), q.q_sigma.numpy()
    m = Kzz @ mu
    S = np.stack([Kzz - Kzz @ np.linalg.solve(Kzz + np.diag(s), Kzz) for s in sigma])
    np.testing.assert_allclose(float(model.prior_kl()), dense_kl(m, S, Kzz), rtol=1e-10)
    m_tf, S_tf = q.implied_gaussian(tf.constant(Kzz))
    np.testing.assert_allclose(m_tf.numpy(), m, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(S_tf.numpy(), S, rtol=1e-9, atol=1e-11)


def test_preconditioned_marginals_equal_gpflow_conditional(data):
    rng = np.random.default_rng(1)
    q = preconditioned(rng)
    model = model_with(q, rng)
    X = data[0]
    m, S = q.implied_gaussian(model.kuu())
    # GPflow's non-whitened conditional, given the implied (m, S); K_ZZ with GPflow's jitter there
    with gpflow.config.as_context(gpflow.config.Config(jitter=0.0)):
        mean_ref, var_ref = conditional(X, model.inducing_variable, model.kernel, m, q_sqrt=tf.linalg.cholesky(S), white=False)
    mean, var = model.predict_f(X)
    np.testing.assert_allclose(mean.numpy(), mean_ref.numpy(), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(var.numpy(), var_ref.numpy(), rtol=1e-8, atol=1e-10)


def test_preconditioned_gradients_match_finite_differences(data):
    rng = np.random.default_rng(2)
    model = model_with(preconditioned(rng), rng)
    variables = [model.q.q_mu.unconstrained_variable, model.q.q_sigma.unconstrained_variable,
                 model.inducing_variable.inducing_variable.Z.unconstrained_variable]
    with tf.GradientTape() as tape:
        value = model.elbo(data)
    grads = tape.gradient(value, variables)
    h = 1e-6
    for v, g in zip(variables, grads):
        base = v.numpy().copy()
        for index in [tuple(rng.integers(0, s) for s in base.shape) for _ in range(3)]:
            shifted = base.copy()
            shifted[index] += h
            v.assign(shifted)
            up = float(model.elbo(data))
            shifted[index] -= 2 * h
            v.assign(shifted)
            down = float(model.elbo(data))
            v.assign(base)
            np.testing.assert_allclose(g.numpy()[index], (up - down) / (2 * h), rtol=1e-5, atol=1e-6)


def test_preconditioned_bound_is_finite_when_kzz_is_singular(data):
    rng = np.random.default_rng(4)
    Z = rng.normal(size=(M, D))
    Z[1] = Z[0]  # duplicate inducing inputs: K_ZZ has a zero eigenvalue
    model = model_with(preconditioned(rng), rng, Z=Z, kname="se")
    assert np.linalg.eigvalsh(model.kuu().numpy()).min() < 1e-10
    with tf.GradientTape() as tape:
        value = model.elbo(data)
    grads = tape.gradient(value, model.trainable_variables)
    assert np.isfinite(float(value))
    assert all(np.all(np.isfinite(g.numpy())) for g in grads if g is not None)


@pytest.mark.parametrize("whiten", [False, True])
def test_families_representing_the_same_q_give_the_same_bound(data, whiten):
    rng = np.random.default_rng(5)
    pre = preconditioned(rng, jitter=0.0)  # jitter 0: the converted family's prior is exactly K_ZZ
    model = model_with(pre, rng)
    converted = to_cholesky(pre, model.kuu(), whiten=whiten)
    assert isinstance(converted, WhitenedQ if whiten else CholeskyQ) and converted.whiten == whiten
    twin = MLGPF(model.kernel, model.likelihood, model.inducing_variable, num_data=N, q=converted)
    np.testing.assert_allclose(float(twin.prior_kl()), float(model.prior_kl()), rtol=1e-9)
    np.testing.assert_allclose(float(twin.elbo(data)), float(model.elbo(data)), rtol=1e-9)
    for a, b in zip(twin.predict_f(data[0]), model.predict_f(data[0])):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-8, atol=1e-10)


def test_cholesky_families_match_gpflow_kl():
    rng = np.random.default_rng(6)
    for cls in (CholeskyQ, WhitenedQ):
        L = np.tril(rng.normal(size=(P, M, M)) * 0.3) + 0.5 * np.eye(M)
        q = cls(M, P, q_mu=rng.normal(size=(M, P)), q_sqrt=L)
        model = model_with(q, rng)
        ref = gpflow.kullback_leiblers.prior_kl(model.inducing_variable, model.kernel, q.q_mu, q.q_sqrt, whiten=cls.whiten)
        np.testing.assert_allclose(float(model.prior_kl()), float(ref), rtol=1e-10)


class _Conjugate(gpflow.Module):
    """One latent GP observed through y = A u + noise: E_q[log N(y | A u, s² I)] is quadratic."""

    def __init__(self, q, Kzz, A, y, s2):
        super().__init__()
        self.q, self.Kzz, self.A, self.y, self.s2 = q, tf.constant(Kzz), tf.constant(A), tf.constant(y), s2

    def loss(self):
        m, S = self.q.implied_gaussian(self.Kzz)
        resid = self.y - tf.linalg.matmul(self.A, m)[:, 0]
        ell = -0.5 * (tf.reduce_sum(resid**2) + tf.linalg.trace(self.A @ S[0] @ tf.transpose(self.A))) / self.s2
        return -(ell - self.q.kl(self.Kzz, self.q.factorise(self.Kzz)))


@pytest.mark.parametrize("family", ["cholesky", "whitened"])
def test_natural_gradient_with_gamma_one_reaches_the_conjugate_optimum_in_one_step(family):
    from mlgp.training import NatGradAdam

    rng = np.random.default_rng(7)
    B = rng.normal(size=(M, M))
    Kzz = B @ B.T + M * np.eye(M)
    A, y, s2 = rng.normal(size=(9, M)), rng.normal(size=9), 0.5
    q = make_q(family, M, 1, q_mu=rng.normal(size=(M, 1)), q_sqrt=np.eye(M)[None] * 0.7, jitter=0.0)
    problem = _Conjugate(q, Kzz, A, y, s2)
    opt = NatGradAdam(problem, gamma=1.0, gamma_start=1.0, ramp_steps=0)
    variables = problem.trainable_variables
    with tf.GradientTape() as tape:
        loss = problem.loss()
    opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
    S_opt = np.linalg.inv(np.linalg.inv(Kzz) + A.T @ A / s2)
    m_opt = S_opt @ A.T @ y / s2
    m, S = q.implied_gaussian(tf.constant(Kzz))
    np.testing.assert_allclose(m.numpy()[:, 0], m_opt, rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(S.numpy()[0], S_opt, rtol=1e-8, atol=1e-9)


def test_preconditioned_family_refuses_natural_gradients(data):
    from mlgp.training import fit

    rng = np.random.default_rng(8)
    model = model_with(preconditioned(rng), rng)
    with pytest.raises(ArgumentError, match="'preconditioned' q\\(u\\) family has no .* natural gradients"):
        fit(model, data, epochs=1, optimizer="natgrad", progress=False)


def test_bad_family_arguments_are_refused():
    with pytest.raises(ArgumentError, match="q_family must be one of 'cholesky', 'whitened', 'preconditioned'; got 'diagonal'"):
        make_q("diagonal", M, P)
    with pytest.raises(ShapeError, match=r"q_sigma must have shape \(P, M\)"):
        PreconditionedQ(M, P, q_sigma=np.ones((M, P + 1)))
    with pytest.raises(ShapeError, match="above sigma_lower"):
        PreconditionedQ(M, P, q_sigma=np.full((P, M), 1e-9))
    rng = np.random.default_rng(9)
    with pytest.raises(ShapeError, match=r"q is for \(M, P\) = \(4, 2\)"):
        model_with(PreconditionedQ(M, 2), rng)
    with pytest.raises(ArgumentError, match="either q .* or q_mu"):
        MLGPF(make_kernel("se", D), MultiLabelBernoulli(K, P), rng.normal(size=(M, D)), q=PreconditionedQ(M, P), q_family="whitened")


@pytest.mark.parametrize("family", [CholeskyQ, WhitenedQ])
def test_default_start_is_zero_means_and_identity_factors(family):
    q = family(4, 3)
    np.testing.assert_array_equal(q.q_mu.numpy(), np.zeros((4, 3)))
    np.testing.assert_array_equal(q.q_sqrt.numpy(), np.tile(np.eye(4), (3, 1, 1)))
