"""fit(kl_weight=w): each step follows the gradient of the expected log-likelihood minus w × KL
(checked against a gradient taken here from the model's parts), the trace still reports the ELBO,
the manifest records w, and bad weights are refused before any work."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
from _training_problem import build, small_problem
from gpflow.keras import tf_keras

from mlgp import arguments
from mlgp.errors import ArgumentError, CheckpointMismatchError
from mlgp.training import fit, make_step


@pytest.fixture(scope="module")
def problem():
    return small_problem()


def _dense(problem):
    return problem.train.X.toarray(), problem.train.Y.toarray().astype(np.float64)


def _reference_gradients(model, data, w):
    """∂/∂θ of −(Σ_i E log p(y_i | f_i) − w KL + log prior) on the whole training set (N/B = 1), from
    the model's expected log-likelihood, KL and parameter priors separately."""
    variables = model.trainable_variables
    with tf.GradientTape() as tape:
        objective = (tf.reduce_sum(model.expected_log_likelihood(data)) - w * model.prior_kl()
                     + model.log_prior_density())
        loss = -objective
    return [g.numpy() for g in tape.gradient(loss, variables)]


@pytest.mark.parametrize("w", [1.0, 0.5])
@pytest.mark.parametrize("jit_compile", [False, "except-cholesky"])
def test_a_step_descends_the_weighted_objective_and_returns_the_elbo(problem, jit_compile, w):
    data = _dense(problem)
    model = build(problem, q_family="cholesky")
    start = [v.numpy().copy() for v in model.trainable_variables]
    expected_grads = _reference_gradients(model, data, w)
    elbo_before, kl_before = float(model.elbo(data)), float(model.prior_kl())
    lr = 1e-3
    step = make_step(model, tf_keras.optimizers.SGD(lr), jit_compile=jit_compile, kl_weight=w)
    elbo, kl = step(tf.constant(data[0]), tf.constant(data[1]))
    assert float(elbo) == pytest.approx(elbo_before, rel=1e-9)  # the bound, not the weighted objective
    assert float(kl) == pytest.approx(kl_before, rel=1e-9)
    for v, s, g in zip(model.trainable_variables, start, expected_grads):
        np.testing.assert_allclose(v.numpy(), s - lr * g, rtol=1e-6, atol=1e-9, err_msg=v.name)


def test_a_weighted_step_keeps_the_parameters_priors(problem):
    """With a prior on a parameter the step is MAP for it: the log prior stays in the weighted
    objective, added (a prior near the kernel variance's value: its log density is small and
    positive, its gradient large)."""
    import tensorflow_probability as tfp

    data = _dense(problem)
    model = build(problem, q_family="cholesky")
    variance = model.kernel.kernel.variance
    v0 = float(variance.numpy())
    variance.prior = tfp.distributions.Normal(np.float64(v0 - 0.1), np.float64(0.05))
    assert 0 < float(model.log_prior_density()) < 0.1 * float(model.prior_kl())
    start = [v.numpy().copy() for v in model.trainable_variables]
    expected_grads = _reference_gradients(model, data, 0.5)
    make_step(model, tf_keras.optimizers.SGD(1e-3), kl_weight=0.5)(tf.constant(data[0]), tf.constant(data[1]))
    for v, s, g in zip(model.trainable_variables, start, expected_grads):
        np.testing.assert_allclose(v.numpy(), s - 1e-3 * g, rtol=1e-6, atol=1e-9, err_msg=v.name)


def test_the_weight_moves_the_parameters_elsewhere(problem):
    """A step that ignored w would move ½ and 1 alike."""
    data = _dense(problem)
    moved = []
    for w in (1.0, 0.5):
        model = build(problem, q_family="cholesky")
        make_step(model, tf_keras.optimizers.SGD(1e-2), kl_weight=w)(tf.constant(data[0]), tf.constant(data[1]))
        moved.append(np.concatenate([v.numpy().ravel() for v in model.trainable_variables]))
    assert np.abs(moved[0] - moved[1]).max() > 1e-6


@pytest.mark.slow
def test_fit_trains_with_the_weight_and_records_it_in_the_manifest(problem, tmp_path):
    import json

    X, Y = problem.train.X, problem.train.Y
    traces = {}
    for w in (1.0, 0.5):
        model = build(problem)
        traces[w] = fit(model, (X, Y), epochs=2, batch_size=30, progress=False, kl_weight=w,
                        checkpoint_dir=tmp_path / str(w))
    # the first epoch's bounds are the same ELBO before the weight changes anything; later ones differ
    assert not np.allclose(traces[1.0]["elbo"].to_numpy(), traces[0.5]["elbo"].to_numpy())
    manifest = json.loads((tmp_path / "0.5" / "manifest.json").read_text())
    assert manifest["settings"]["kl_weight"] == 0.5
    assert "kl_weight" not in json.loads((tmp_path / "1.0" / "manifest.json").read_text())["settings"]
    with pytest.raises(CheckpointMismatchError, match="kl_weight"):
        fit(build(problem), (X, Y), epochs=3, batch_size=30, progress=False, checkpoint_dir=tmp_path / "0.5")
    resumed = fit(build(problem), (X, Y), epochs=3, batch_size=30, progress=False, checkpoint_dir=tmp_path / "1.0")
    assert list(resumed["epoch"]) == [1, 2, 3]


@pytest.mark.parametrize("bad", [0, 0.0, -0.5, 1.5, float("nan"), float("inf"), True, "0.5", None])
def test_bad_weights_are_refused_before_any_work(problem, bad):
    model = build(problem)
    start = [v.numpy().copy() for v in model.trainable_variables]
    with pytest.raises(ArgumentError, match=r"kl_weight must be a number in \(0, 1\]"):
        fit(model, (problem.train.X, problem.train.Y), epochs=1, batch_size=30, progress=False, kl_weight=bad)
    assert all(np.array_equal(v.numpy(), s) for v, s in zip(model.trainable_variables, start))


@pytest.mark.parametrize("good", [1, 1.0, 0.5, np.float32(0.25), 1e-9])
def test_weights_in_the_unit_interval_pass_as_floats(good):
    value = arguments.kl_weight(good)
    assert type(value) is float and value == float(good)
