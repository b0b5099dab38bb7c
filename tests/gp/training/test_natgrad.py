"""NatGradAdam: natural-gradient steps on q(u) and Adam on every other variable, the γ ramp."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from mlgp.data import mlgpf_prior
from mlgp.models import mlgpf_from_data
from mlgp.training import NatGradAdam, fit


@pytest.fixture(scope="module")
def problem():
    return mlgpf_prior(num_train=80, num_test=10, num_features=4, num_labels=6, num_latent=2, seed=3)


@pytest.mark.slow
@pytest.mark.parametrize("family", ["cholesky", "whitened"])
def test_natgrad_moves_the_kernel_z_loadings_and_bias(problem, family):
    """Adam's half of the step must run: after natgrad steps every non-q(u) variable has moved."""
    model = mlgpf_from_data(problem.train.X, problem.train.Y, kernel="se", num_latent_gps=2, num_inducing=8,
                            q_family=family)
    q_refs = {v.ref() for v in model.q.trainable_variables}
    others = [v for v in model.trainable_variables if v.ref() not in q_refs]
    assert others, "the model should have kernel, Z, Φ and b variables"
    before = [v.numpy().copy() for v in others]
    q_before = [v.numpy().copy() for v in model.q.trainable_variables]
    fit(model, (problem.train.X, problem.train.Y), epochs=1, batch_size=40, optimizer="natgrad",
        natgrad_gamma=0.1, learning_rate=0.01, progress=False)
    for v, b in zip(others, before):
        assert not np.allclose(v.numpy(), b), f"{v.name} did not move under optimizer='natgrad'"
    assert any(not np.allclose(v.numpy(), b) for v, b in zip(model.q.trainable_variables, q_before))


def test_apply_gradients_takes_a_one_pass_iterator(problem):
    """``apply_gradients(zip(...))``: a zip can be read once, as tf-keras optimizers accept it."""
    model = mlgpf_from_data(problem.train.X, problem.train.Y, kernel="se", num_latent_gps=2, num_inducing=8,
                            q_family="whitened")
    opt = NatGradAdam(model, gamma=0.1, gamma_start=0.1, ramp_steps=0, learning_rate=0.01)
    variables = model.trainable_variables
    opt.build(variables)
    bias = model.likelihood.bias.numpy().copy()
    X = tf.constant(problem.train.X[:20].toarray())
    Y = tf.constant(problem.train.Y[:20].toarray())
    with tf.GradientTape() as tape:
        loss = model.training_loss((X, Y))
    opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
    assert not np.allclose(model.likelihood.bias.numpy(), bias)
    assert int(opt.iterations.numpy()) == 1


def test_gamma_ramps_log_linearly_from_gamma_start_to_gamma(problem):
    model = mlgpf_from_data(problem.train.X, problem.train.Y, kernel="se", num_latent_gps=2, num_inducing=8,
                            q_family="whitened")
    opt = NatGradAdam(model, gamma=0.1, gamma_start=0.001, ramp_steps=4)
    seen = []
    for step in range(7):
        opt.iterations.assign(step)
        seen.append(float(opt.current_gamma()))
    expected = [0.001, 10 ** -2.5, 0.01, 10 ** -1.5, 0.1, 0.1, 0.1]
    np.testing.assert_allclose(seen, expected, rtol=1e-12)
    assert all(a <= b for a, b in zip(seen, seen[1:])), "γ must not decrease along the ramp"
