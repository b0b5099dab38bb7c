"""The authors' SE+LR kernel (one ARD scale vector shared by both parts) against GPflow's stock kernels."""

from __future__ import annotations

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from gpflow.kernels import Linear, SquaredExponential, Sum

from mlgp.data import mlgpf_prior
from mlgp.errors import ArgumentError, ShapeError
from mlgp.kernels import SharedScaleSEPlusLinear, make_kernel
from mlgp.likelihoods import MultiLabelBernoulli
from mlgp.models import MLGPF, mlgpf_from_data
from mlgp.recipes import MLGPFClassifier


def _random_kernel(rng, D):
    k = SharedScaleSEPlusLinear(D)
    k.scales.assign(rng.uniform(0.3, 2.0, D))
    k.se_weight.assign(rng.uniform(0.2, 2.0))
    k.linear_weight.assign(rng.uniform(0.2, 2.0))
    return k


def _stock_equivalent(k):
    """GPflow's SE + Linear with the ARD vectors tied to k's scales and variances w, 1 − w."""
    lam = k.scales.numpy()
    w = float(k.se_weight.numpy() / (k.se_weight.numpy() + k.linear_weight.numpy()))
    return Sum([SquaredExponential(variance=w, lengthscales=1.0 / (np.sqrt(2.0) * lam)), Linear(variance=(1.0 - w) * lam**2)])


def test_equals_tied_gpflow_se_plus_linear_and_a_numpy_formula():
    rng = np.random.default_rng(0)
    D = 6
    k = _random_kernel(rng, D)
    A, B = rng.normal(size=(7, D)), rng.normal(size=(5, D))
    stock = _stock_equivalent(k)
    np.testing.assert_allclose(k.K(A, B).numpy(), stock.K(A, B).numpy(), rtol=1e-12)
    np.testing.assert_allclose(k.K(A).numpy(), stock.K(A).numpy(), rtol=1e-12)
    np.testing.assert_allclose(k.K_diag(A).numpy(), np.diag(stock.K(A).numpy()), rtol=1e-12)
    # the formula written out directly
    lam, s, l = k.scales.numpy(), float(k.se_weight.numpy()), float(k.linear_weight.numpy())
    w = s / (s + l)
    diff = (A[:, None, :] - B[None, :, :]) * lam
    expected = w * np.exp(-np.sum(diff**2, axis=-1)) + (1 - w) * (A * lam) @ (B * lam).T
    np.testing.assert_allclose(k.K(A, B).numpy(), expected, rtol=1e-12)


def test_make_kernel_builds_it_with_the_authors_initial_scales():
    k = make_kernel("SE+LR-shared", 4)
    assert isinstance(k, SharedScaleSEPlusLinear)
    np.testing.assert_allclose(k.scales.numpy(), np.ones(4))  # ℓ = 1/√2 ↔ λ = 1
    assert make_kernel("se+linear-shared", 3, lengthscale=0.5).scales.numpy() == pytest.approx(np.full(3, 1 / (0.5 * np.sqrt(2))))
    assert len(k.trainable_parameters) == 3


def test_make_kernel_rejects_unknown_names_and_sizes():
    with pytest.raises(ArgumentError, match=r"kernel must be one of 'linear', 'se', 'se\+linear', 'se\+linear-shared' \(or an alias: "):
        make_kernel("matern", 4)
    with pytest.raises(ShapeError, match=r"num_features must be ≥ 1, got 0"):
        make_kernel("se+linear-shared", 0)


def test_bound_gradient_and_save_load_in_mlgpf(tmp_path):
    rng = np.random.default_rng(1)
    ds = mlgpf_prior(num_train=30, num_test=10, num_features=4, num_labels=5, num_latent=2, seed=2)
    X, Y = ds.train.X.toarray(), ds.train.Y.toarray().astype(np.float64)
    model = mlgpf_from_data(ds.train.X, ds.train.Y, kernel="se+linear-shared", num_latent_gps=2, num_inducing=5, seed=0)
    kern = model.kernel.kernel
    kern.scales.assign(rng.uniform(0.5, 1.5, 4))
    kern.se_weight.assign(0.7)
    # the same model with GPflow's stock kernels tied to the same values gives the same bound
    twin = MLGPF(_stock_equivalent(kern), MultiLabelBernoulli(5, 2, loadings=model.likelihood.loadings.numpy(), bias=model.likelihood.bias.numpy()),
                 model.inducing_variable.inducing_variable.Z.numpy(), num_data=30, q_mu=model.q_mu.numpy(), q_sqrt=model.q_sqrt.numpy())
    np.testing.assert_allclose(model.elbo((X, Y)).numpy(), twin.elbo((X, Y)).numpy(), rtol=1e-10)
    # the gradient with respect to the shared scales against central finite differences
    with tf.GradientTape() as tape:
        e = model.elbo((X, Y))
    g = tape.gradient(e, kern.scales.unconstrained_variable).numpy()
    u0 = kern.scales.unconstrained_variable.numpy()
    fd = np.zeros_like(u0)
    for d in range(len(u0)):
        for sign in (1, -1):
            u = u0.copy()
            u[d] += sign * 1e-6
            kern.scales.unconstrained_variable.assign(u)
            fd[d] += sign * model.elbo((X, Y)).numpy() / 2e-6
    kern.scales.unconstrained_variable.assign(u0)
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6)
    # save → load keeps the kernel and the predictions
    loaded = MLGPF.load(model.save(tmp_path / "m"))
    assert isinstance(loaded.kernel.kernel, SharedScaleSEPlusLinear) and loaded.spec["kernel"] == "se+linear-shared"
    a, b = MLGPFClassifier.from_model(model), MLGPFClassifier.from_model(loaded)
    assert np.array_equal(b.decision_function(ds.test.X), a.decision_function(ds.test.X))
    gpflow.utilities.print_summary(model)  # GPflow's tooling sees its Parameters
