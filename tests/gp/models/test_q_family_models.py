"""MLGPF with each q(u) family, float type and initialisation: building, training, saving, checkpoints,
TensorBoard scalars and the time limit."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from mlgp.data import mlgpf_prior
from mlgp.errors import ArgumentError, ShapeError
from mlgp.metrics import precision_at_k, topk
from mlgp.models import MLGPF, mlgpf_from_data
from mlgp.recipes import MLGPFClassifier
from mlgp.training import fit

FAMILIES = ["cholesky", "whitened", "preconditioned"]


@pytest.fixture(scope="module")
def problem():
    return mlgpf_prior(num_train=120, num_test=60, num_features=5, num_labels=7, num_latent=3, seed=2)


def build(problem, **kw):
    kw = {"num_latent_gps": 3, "num_inducing": 10, "kernel": "se", **kw}
    return mlgpf_from_data(problem.train.X, problem.train.Y, **kw)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_and_precision_trains_saves_and_loads(tmp_path, problem, family, dtype):
    model = build(problem, q_family=family, dtype=dtype)
    assert model.q_family == family and model.spec["q_family"] == family and model.spec["dtype"] == dtype
    want = np.dtype(dtype)
    assert model.float_type == want
    assert all(v.dtype.as_numpy_dtype == want for v in model.trainable_variables)
    trace = fit(model, (problem.train.X, problem.train.Y), epochs=3, batch_size=40, learning_rate=0.02, progress=False)
    assert np.all(np.isfinite(trace[["elbo", "kl", "expected_log_lik"]].to_numpy()))
    np.testing.assert_allclose(trace["expected_log_lik"] - trace["kl"], trace["elbo"], rtol=1e-6)
    assert trace["elbo"].iloc[-1] > trace["elbo"].iloc[0]
    before = MLGPFClassifier.from_model(model).decision_function(problem.test.X)
    assert before.dtype == np.float64
    loaded = MLGPF.load(model.save(tmp_path / "m"))
    assert loaded.q_family == family and loaded.float_type == want
    np.testing.assert_array_equal(MLGPFClassifier.from_model(loaded).decision_function(problem.test.X), before)


# the Cholesky families' split step is compared with the plain one, variables and all, in
# tests/gp/training/test_steps.py (test_step_with_cholesky_outside_xla_matches_the_plain_step)
@pytest.mark.slow
@pytest.mark.parametrize("family", [f for f in FAMILIES if f not in ("cholesky", "whitened")])
def test_every_family_trains_with_the_split_xla_step(problem, family):
    data = (problem.train.X, problem.train.Y)
    plain, split = build(problem, q_family=family), build(problem, q_family=family)
    a = fit(plain, data, epochs=2, batch_size=60, progress=False, jit_compile=False)
    b = fit(split, data, epochs=2, batch_size=60, progress=False, jit_compile="except-cholesky")
    np.testing.assert_allclose(b["elbo"], a["elbo"], rtol=1e-7)


@pytest.mark.slow
def test_checkpoints_resume_a_preconditioned_run(tmp_path, problem):
    data = (problem.train.X, problem.train.Y)
    whole = build(problem, q_family="preconditioned")
    t_whole = fit(whole, data, epochs=4, batch_size=40, progress=False)
    part = build(problem, q_family="preconditioned")
    fit(part, data, epochs=2, batch_size=40, progress=False, checkpoint_dir=tmp_path)
    resumed = build(problem, q_family="preconditioned")
    t_resumed = fit(resumed, data, epochs=4, batch_size=40, progress=False, checkpoint_dir=tmp_path)
    np.testing.assert_allclose(t_resumed["elbo"], t_whole["elbo"], rtol=1e-9)
    np.testing.assert_array_equal(resumed.q.q_sigma.numpy(), whole.q.q_sigma.numpy())


@pytest.mark.slow
def test_natgrad_trains_the_cholesky_families(problem):
    for family in ("cholesky", "whitened"):
        model = build(problem, q_family=family)
        trace = fit(model, (problem.train.X, problem.train.Y), epochs=4, batch_size=60, optimizer="natgrad",
                    natgrad_gamma=(0.05, 0.5, 4), learning_rate=0.02, progress=False)
        assert trace["elbo"].iloc[-1] > trace["elbo"].iloc[0]
    with pytest.raises(ArgumentError, match="optimizer must be one of 'adam', 'natgrad' or an optimizer object"):
        fit(model, (problem.train.X, problem.train.Y), epochs=1, optimizer="sgd", progress=False)
    with pytest.raises(ArgumentError, match="need 0 < gamma_start ≤ gamma ≤ 1"):
        fit(model, (problem.train.X, problem.train.Y), epochs=1, optimizer="natgrad", natgrad_gamma=1.5, progress=False)


def test_log_dir_writes_tensorboard_scalars(tmp_path, problem):
    model = build(problem)
    data = (problem.train.X, problem.train.Y)
    trace = fit(model, data, epochs=2, batch_size=60, progress=False, log_dir=tmp_path, validation=data)
    tags: dict[str, list[float]] = {}
    for file in tmp_path.glob("events.out.tfevents.*"):
        for event in tf.compat.v1.train.summary_iterator(str(file)):
            for value in event.summary.value:
                tags.setdefault(value.tag, []).append(float(tf.make_ndarray(value.tensor)))
    assert {"elbo", "kl", "expected_log_lik", "batch_size", "P@1", "P@5"} <= set(tags)
    np.testing.assert_allclose(tags["elbo"], trace["elbo"], rtol=1e-6)
    np.testing.assert_allclose(tags["P@1"], trace["P@1"], rtol=1e-6)


def test_max_seconds_stops_after_the_epoch_that_reaches_it(problem):
    model = build(problem)
    trace = fit(model, (problem.train.X, problem.train.Y), epochs=50, batch_size=60, progress=False, max_seconds=1e-9)
    assert len(trace) == 1
    with pytest.raises(ArgumentError, match="max_seconds must be a positive number"):
        fit(model, (problem.train.X, problem.train.Y), epochs=1, progress=False, max_seconds=0)


@pytest.mark.slow
def test_warm_start_ranks_better_before_training_than_the_constant_start():
    """Labels that are thresholds of linear functions of x: the linear warm start ranks them well
    before any training, and every family turns it into the same mean utilities."""
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    N, D, K = 400, 8, 20
    X = rng.normal(size=(2 * N, D))
    Y = (X @ rng.normal(size=(D, K)) > 1.5).astype(float)
    Yte = sp.csr_matrix(Y[N:])
    kw = dict(num_latent_gps=5, num_inducing=30, kernel="se+linear")
    scores = {}
    for family in FAMILIES:
        cold = mlgpf_from_data(X[:N], Y[:N], q_family=family, **kw)
        warm = mlgpf_from_data(X[:N], Y[:N], q_family=family, warm_start=True, **kw)
        assert warm.spec["warm_start"] is True
        cold, warm = MLGPFClassifier.from_model(cold), MLGPFClassifier.from_model(warm)
        p_cold, p_warm = (precision_at_k(Yte, topk(m.predict_topk(X[N:], 1), 1), 1) for m in (cold, warm))
        assert p_warm > 0.9 and p_warm > p_cold + 0.3, (family, p_cold, p_warm)
        scores[family] = warm.decision_function(X[N:])
    for family in FAMILIES[1:]:
        np.testing.assert_allclose(scores[family], scores["cholesky"], rtol=1e-4, atol=1e-4)


def test_bad_choices_are_refused_before_any_work(problem):
    with pytest.raises(ArgumentError, match="dtype must be one of 'float64', 'float32'; got 'float16'"):
        build(problem, dtype="float16")
    with pytest.raises(ArgumentError, match="bias_init must be one of 'log-odds', 'random'; got 'zero'"):
        build(problem, bias_init="zero")
    with pytest.raises(ArgumentError, match="q_family must be one of"):
        build(problem, q_family="full")
    with pytest.warns(FutureWarning, match="q_family='whitened'"), \
            pytest.raises(ArgumentError, match="whiten=True asks for the whitened family"):
        build(problem, whiten=True, q_family="preconditioned")
