"""The shared latent marginals against GPflow's own ``conditional`` (values and gradients), and the
model's fallback to it for full covariances."""

from __future__ import annotations

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from gpflow.conditionals import conditional
from gpflow.inducing_variables import InducingPoints, SharedIndependentInducingVariables
from gpflow.kernels import SharedIndependent

from mlgp.kernels import make_kernel
from mlgp.likelihoods import MultiLabelBernoulli
from mlgp.models import MLGPF
from mlgp.variational import shared_marginals


def _problem(rng, kname, N=11, D=6, P=3, M=5):  # M ≤ D: a well-conditioned linear K_ZZ
    kern = make_kernel(kname, D)
    for v in kern.trainable_variables:
        v.assign(v + rng.uniform(0.1, 0.4, v.shape))
    shared = SharedIndependent(kern, output_dim=P)
    Z = SharedIndependentInducingVariables(InducingPoints(rng.normal(size=(M, D))))
    q_mu = tf.Variable(rng.normal(size=(M, P)))
    L = np.tril(0.3 * rng.normal(size=(P, M, M)), -1) + np.stack([np.diag(rng.uniform(0.2, 1.0, M)) for _ in range(P)])
    q_sqrt = tf.Variable(L)
    X = rng.normal(size=(N, D))
    return X, Z, shared, q_mu, q_sqrt


@pytest.mark.parametrize("white", [False, True])
@pytest.mark.parametrize("kname", ["linear", "se", "se+linear"])
def test_shared_marginals_equal_gpflow_conditional(kname, white):
    rng = np.random.default_rng(7)
    X, Z, kern, q_mu, q_sqrt = _problem(rng, kname)
    variables = [q_mu, q_sqrt, Z.inducing_variable.Z.unconstrained_variable, *kern.trainable_variables]

    def loss(route):
        if route == "mlgp":
            mean, var = shared_marginals(X, Z, kern, q_mu, q_sqrt, white=white)
        else:
            mean, var = conditional(X, Z, kern, q_mu, q_sqrt=q_sqrt, white=white)
        # a nonlinear function of both outputs, so the gradients test every entry
        return mean, var, tf.reduce_sum(tf.sin(mean) * tf.math.log(var))

    results = {}
    for route in ("mlgp", "gpflow"):
        with tf.GradientTape() as tape:
            mean, var, value = loss(route)
        results[route] = (mean.numpy(), var.numpy(), [g.numpy() for g in tape.gradient(value, variables)])
    (m1, v1, g1), (m2, v2, g2) = results["mlgp"], results["gpflow"]
    assert m1.shape == v1.shape == (X.shape[0], q_mu.shape[1])
    assert np.all(v1 > 0)
    np.testing.assert_allclose(m1, m2, rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(v1, v2, rtol=1e-11, atol=1e-13)
    # q_sqrt's strict upper triangle is not part of the model (its transform zeroes it and its
    # gradient); GPflow masks it once more, shared_marginals does not, so compare the lower triangle
    g1[1], g2[1] = np.tril(g1[1]), np.tril(g2[1])
    for a, b in zip(g1, g2):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("white", [False, True])
def test_model_full_covariances_fall_back_to_gpflow(white):
    rng = np.random.default_rng(3)
    X, Z, kern, q_mu, q_sqrt = _problem(rng, "se+linear")
    P = q_mu.shape[1]
    model = MLGPF(kern, MultiLabelBernoulli(6, P), Z, num_data=20, q_mu=q_mu.numpy(), q_sqrt=q_sqrt.numpy(), q_family="whitened" if white else "cholesky")
    mean, cov = model.predict_f(X, full_cov=True)
    ref_mean, ref_cov = conditional(X, Z, kern, q_mu, q_sqrt=q_sqrt, white=white, full_cov=True)
    assert cov.shape == (P, X.shape[0], X.shape[0])
    np.testing.assert_allclose(mean.numpy(), ref_mean.numpy(), rtol=1e-12)
    np.testing.assert_allclose(cov.numpy(), ref_cov.numpy(), rtol=1e-11, atol=1e-13)
    _, var = model.predict_f(X)
    np.testing.assert_allclose(var.numpy(), np.diagonal(cov.numpy(), axis1=1, axis2=2).T, rtol=1e-11)


def test_shared_marginals_under_xla_equal_the_plain_graph():
    rng = np.random.default_rng(11)
    X, Z, kern, q_mu, q_sqrt = _problem(rng, "se+linear")
    f = lambda: shared_marginals(X, Z, kern, q_mu, q_sqrt, white=False)  # noqa: E731
    plain = [t.numpy() for t in tf.function(f)()]
    xla = [t.numpy() for t in tf.function(f, jit_compile=True)()]
    for a, b in zip(plain, xla):
        np.testing.assert_allclose(a, b, rtol=1e-10)
