"""Inducing inputs on the unit sphere: the transform, the inducing variable, and MLGPF built with it."""

from __future__ import annotations

import argparse
import json

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from _rounding import FLOAT64
from gpflow.inducing_variables import InducingPoints

from mlgp.data import mlgpf_prior
from mlgp.errors import MLGPError, ShapeError
from mlgp.experiment import add_training_args, training_options
from mlgp.inducing import UnitRows, UnitSphereInducingPoints
from mlgp.likelihoods import MultiLabelBernoulli
from mlgp.models import MLGPF, mlgpf_from_data
from mlgp.recipes import MLGPFClassifier, train_mlgpf
from mlgp.training import fit


@pytest.fixture(scope="module")
def problem():
    return mlgpf_prior(num_train=60, num_test=20, num_features=5, num_labels=6, num_latent=2, seed=4)


def test_unit_rows_transform():
    x = np.random.default_rng(0).normal(size=(4, 3)) * np.array([[0.1], [1.0], [3.0], [50.0]])
    t = UnitRows()
    y = t.forward(x).numpy()
    # TensorFlow's x · rsqrt(Σx²) against numpy's x / ‖x‖, another computation: equal to rounding
    np.testing.assert_allclose(y, x / np.linalg.norm(x, axis=1, keepdims=True), **FLOAT64)
    np.testing.assert_allclose(t.inverse(y).numpy(), y, **FLOAT64)  # unit rows map to themselves
    # (fresh tensors: TFP caches each forward/inverse pair by object, which would hand back 5x itself)
    np.testing.assert_allclose(t.forward(tf.constant(t.inverse(5.0 * x).numpy())).numpy(), y, **FLOAT64)


def test_inducing_points_lie_on_the_sphere_and_refuse_bad_rows():
    Z = np.random.default_rng(1).normal(size=(6, 4)) * 3.0
    iv = UnitSphereInducingPoints(Z)
    assert isinstance(iv, InducingPoints) and int(iv.num_inducing) == 6
    # TensorFlow's normalisation against numpy's (as in test_unit_rows_transform): equal to rounding
    np.testing.assert_allclose(np.linalg.norm(iv.Z.numpy(), axis=1), 1.0, **FLOAT64)
    np.testing.assert_allclose(iv.Z.numpy(), Z / np.linalg.norm(Z, axis=1, keepdims=True), **FLOAT64)
    iv.Z.assign(2.0 * Z)  # assigning a point off the sphere keeps its direction
    np.testing.assert_allclose(iv.Z.numpy(), Z / np.linalg.norm(Z, axis=1, keepdims=True), **FLOAT64)
    Z[2] = 0.0
    with pytest.raises(ShapeError, match=r"inducing inputs on the unit sphere need finite non-zero rows; rows \[2\] are not"):
        UnitSphereInducingPoints(Z)
    Z[2], Z[4] = 1.0, np.inf
    with pytest.raises(ShapeError, match=r"need finite non-zero rows; rows \[4\] are not"):
        UnitSphereInducingPoints(Z)
    with pytest.raises(ShapeError, match=r"Z must be a non-empty \(M, D\) array, got shape \(4,\)"):
        UnitSphereInducingPoints(np.ones(4))
    with pytest.raises(ShapeError, match=r"Z must be a non-empty \(M, D\) array, got shape \(0, 3\)"):
        UnitSphereInducingPoints(np.ones((0, 3)))


def _pair(rng, kernel="se+linear", N=25, D=4, K=5, P=2, M=4):
    """The same MLGPF twice: with Z on the sphere, and with GPflow's plain InducingPoints at that Z."""
    X = rng.normal(size=(N, D))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    Y = (rng.random((N, K)) < 0.4).astype(np.float64)
    Z = rng.normal(size=(M, D))
    Z /= np.linalg.norm(Z, axis=1, keepdims=True)
    Phi, b = rng.normal(size=(K, P)), rng.normal(size=K)
    q_mu = 0.3 * rng.normal(size=(M, P))
    q_sqrt = np.stack([np.diag(rng.uniform(0.3, 0.9, M)) for _ in range(P)])
    from mlgp.kernels import make_kernel

    def model(iv):
        lik = MultiLabelBernoulli(K, P, loadings=Phi, bias=b)
        return MLGPF(make_kernel(kernel, D), lik, iv, num_data=N, q_mu=q_mu, q_sqrt=q_sqrt)

    return model(UnitSphereInducingPoints(3.0 * Z)), model(InducingPoints(Z)), (X, Y)


def test_bound_and_gradient_match_plain_inducing_points_at_the_same_z():
    sphere, plain, data = _pair(np.random.default_rng(2))
    z_s = sphere.inducing_variable.inducing_variable.Z
    z_p = plain.inducing_variable.inducing_variable.Z
    with tf.GradientTape(persistent=True) as tape:
        e_s, e_p = sphere.elbo(data), plain.elbo(data)
    np.testing.assert_allclose(e_s.numpy(), e_p.numpy(), rtol=1e-12)
    g_s = tape.gradient(e_s, z_s.unconstrained_variable).numpy()
    g_p = tape.gradient(e_p, z_p.unconstrained_variable).numpy()
    # z = z̃/‖z̃‖ at ‖z̃‖ = 1: the gradient is the plain one with its radial part removed
    z = z_p.numpy()
    tangent = g_p - np.sum(g_p * z, axis=1, keepdims=True) * z
    np.testing.assert_allclose(g_s, tangent, rtol=1e-9, atol=1e-12)
    assert np.abs(g_p - tangent).max() > 1e-3  # the radial part is not trivially zero


@pytest.mark.slow
def test_from_data_keeps_z_on_the_sphere_through_training(problem):
    X, Y = problem.train.X, problem.train.Y
    model = mlgpf_from_data(X, Y, kernel="se", num_latent_gps=2, num_inducing=6, unit_sphere_inducing=True, seed=1)
    iv = model.inducing_variable.inducing_variable
    assert isinstance(iv, UnitSphereInducingPoints) and model.spec["unit_sphere_inducing"] is True
    Z0 = iv.Z.numpy()
    fit(model, (X, Y), epochs=3, batch_size=20, learning_rate=0.05, progress=False, seed=0)
    Z1 = iv.Z.numpy()
    np.testing.assert_allclose(np.linalg.norm(Z1, axis=1), 1.0, rtol=1e-12)
    assert np.abs(Z1 - Z0).max() > 1e-3  # Z is trained, not frozen
    free = mlgpf_from_data(X, Y, kernel="se", num_latent_gps=2, num_inducing=6, seed=1)
    assert type(free.inducing_variable.inducing_variable) is InducingPoints
    assert free.spec["unit_sphere_inducing"] is False


def _scores(model, X):
    return MLGPFClassifier.from_model(model).decision_function(X)


@pytest.mark.slow
def test_save_load_round_trip_keeps_the_sphere(problem, tmp_path):
    X, Y = problem.train.X, problem.train.Y
    model = mlgpf_from_data(X, Y, kernel="se+linear", num_latent_gps=2, num_inducing=5, q_family="whitened",
                            unit_sphere_inducing=True, seed=3)
    fit(model, (X, Y), epochs=2, batch_size=20, learning_rate=0.05, progress=False, seed=0)
    loaded = MLGPF.load(model.save(tmp_path / "m"))
    assert isinstance(loaded.inducing_variable.inducing_variable, UnitSphereInducingPoints)
    assert np.array_equal(_scores(loaded, problem.test.X), _scores(model, problem.test.X))
    # saves written before the option (no key in the spec) load with free Z
    free = mlgpf_from_data(X, Y, kernel="se", num_latent_gps=2, num_inducing=5, seed=3)
    path = free.save(tmp_path / "old")
    meta = json.loads((path / "model.json").read_text())
    del meta["spec"]["unit_sphere_inducing"]
    (path / "model.json").write_text(json.dumps(meta))
    old = MLGPF.load(path)
    assert type(old.inducing_variable.inducing_variable) is InducingPoints
    assert np.array_equal(_scores(old, problem.test.X), _scores(free, problem.test.X))


@pytest.mark.slow
def test_recipe_option_flag_and_checkpoints_from_before_the_option(problem, tmp_path):
    parser = add_training_args(argparse.ArgumentParser())
    parser.add_argument("--quick", action="store_true")
    assert training_options(parser.parse_args([]))["unit_sphere_inducing"] is True
    assert training_options(parser.parse_args(["--no-unit-sphere-z"]))["unit_sphere_inducing"] is False

    kw = dict(kernel="se", num_latent_gps=2, num_inducing=5, batch_size=20, progress=False, jit_compile=False)
    run = train_mlgpf(problem, epochs=1, **kw)  # the recipe's default
    assert run.settings["unit_sphere_inducing"] is True
    np.testing.assert_allclose(np.linalg.norm(run.model.inducing_variable.inducing_variable.Z.numpy(), axis=1), 1.0)

    ckpt = tmp_path / "run"
    kw["unit_sphere_inducing"] = False
    train_mlgpf(problem, epochs=1, checkpoint_dir=ckpt, **kw)
    manifest = json.loads((ckpt / "manifest.json").read_text())
    del manifest["recipe"]["unit_sphere_inducing"]  # as written before the option existed
    (ckpt / "manifest.json").write_text(json.dumps(manifest))
    assert len(train_mlgpf(problem, epochs=2, checkpoint_dir=ckpt, **kw).trace) == 2
    with pytest.raises(MLGPError, match=r"checkpoint folder .* holds a run with other settings \(unit_sphere_inducing: checkpoint False, now True\); use another folder"):
        train_mlgpf(problem, epochs=3, checkpoint_dir=ckpt, **dict(kw, unit_sphere_inducing=True))
