"""MLGPF.from_data / mlgp.training.fit: input checks, the training loop, checkpoints, divergence, and
MirroredStrategy (in a subprocess with two logical CPUs)."""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import gpflow
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from mlgp.data import mlgpf_prior
from mlgp.errors import ArgumentError, MLGPError, ShapeError, TrainingDivergedError
from mlgp.models import MLGPF
from mlgp.training import fit

REPO = Path(__file__).resolve().parents[3]
fit_module = importlib.import_module("mlgp.training.fit")  # `mlgp.training.fit` the attribute is the function


@pytest.fixture(scope="module")
def problem():
    ds = mlgpf_prior(num_train=60, num_test=20, num_features=5, num_labels=8, num_latent=2, lengthscale=2.0, seed=0)
    return ds


def build(ds, seed=0, **kw):
    kw = dict(dict(kernel="se", num_latent_gps=2, num_inducing=5), **kw)
    return MLGPF.from_data(ds.train.X, ds.train.Y, seed=seed, **kw)


def values(model):
    return [v.numpy().copy() for v in model.trainable_variables]


def full_elbo(model, ds):
    return float(model.elbo((ds.train.X.toarray(), ds.train.Y.toarray().astype(np.float64))).numpy())


# ----------------------------------------------------------------------------- 9. bad input
def _bad_inputs(rng):
    N, D, K = 12, 3, 5
    X = rng.normal(size=(N, D))
    Y = (rng.random((N, K)) < 0.4).astype(np.float64)
    Xnan, Xinf = X.copy(), X.copy()
    Xnan[4, 1] = np.nan
    Xinf[7, 0] = np.inf
    Y2, Ypm, Yhalf = Y.copy(), 2 * Y - 1, Y.copy()
    Y2[3, 2] = 2.0
    Yhalf[0, 0] = 0.5
    return {
        "row mismatch": (X, Y[:-1], {}, r"Y has 11 rows but the features have 12: labels/features shape mismatch"),
        "row mismatch sparse": (sp.csr_matrix(X[:-2]), sp.csr_matrix(Y), {},
                                r"Y has 12 rows but the features have 10: labels/features shape mismatch"),
        "empty": (np.zeros((0, D)), np.zeros((0, K)), {}, r"X has no rows \(empty data\)"),
        "no features": (np.zeros((N, 0)), Y, {}, r"X has no columns \(D = 0\)"),
        "features 1-D": (X[:, 0], Y, {}, r"X must be 2-D \(N, D\), got shape \(12,\)"),
        "labels 3-D": (X, Y[:, :, None], {}, r"Y must be 2-D \(N, K\), got shape \(12, 5, 1\)"),
        "labels not numeric": (X, np.full((N, K), "a"), {}, r"Y must be a numeric \(N, K\) 0/1 array or sparse matrix: "),
        "P = 0": (X, Y, dict(num_latent_gps=0), r"num_latent_gps P must be in \[1, K=5\], got 0"),
        "P > K": (X, Y, dict(num_latent_gps=K + 1), r"num_latent_gps P must be in \[1, K=5\], got 6"),
        "M > N": (X, Y, dict(num_inducing=N + 1), r"num_inducing M must be in \[1, N=12\], got 13"),
        "M = 0": (X, Y, dict(num_inducing=0), r"num_inducing M must be in \[1, N=12\], got 0"),
        "P = 1.5": (X, Y, dict(num_latent_gps=1.5), r"num_latent_gps P must be a whole number, got 1\.5"),
        "M = None-like string": (X, Y, dict(num_inducing="3"), r"num_inducing M must be a whole number, got '3'"),
        "NaN features": (Xnan, Y, {}, r"X contains NaN or inf \(first in row 4\)"),
        "inf features sparse": (sp.csr_matrix(Xinf), Y, {}, r"X contains NaN or inf \(first in row 7\)"),
        "label 2": (X, Y2, {}, r"Y must hold 0/1 labels; found values \[2\.\]"),
        "labels ±1": (X, Ypm, {}, r"Y must hold 0/1 labels; found values \[-1\.\]"),
        "label 0.5 sparse": (X, sp.csr_matrix(Yhalf), {}, r"Y must hold 0/1 labels; found values \[0\.5\]"),
    }


BAD = list(_bad_inputs(np.random.default_rng(0)))


@pytest.fixture
def no_model_building(monkeypatch):
    """Make every step after input checking fail loudly, so a ShapeError proves checks came first."""
    import mlgp.kernels
    import mlgp.models.builders as builders
    import mlgp.models.initialisation as init

    def boom(*a, **k):
        raise AssertionError("reached model construction / TensorFlow before the input was checked")

    monkeypatch.setattr(mlgp.kernels, "make_kernel", boom)
    monkeypatch.setattr(init, "kmeans_inducing", boom)
    monkeypatch.setattr(init, "random_inducing", boom)
    monkeypatch.setattr(builders, "MultiLabelBernoulli", boom)


@pytest.mark.parametrize("case", BAD)
def test_from_data_rejects_bad_input_before_building(rng, case, no_model_building):
    X, Y, kw, match = _bad_inputs(rng)[case]
    kw = dict(dict(kernel="se", num_latent_gps=2, num_inducing=3), **kw)
    with pytest.raises(ShapeError, match=match) as info:
        MLGPF.from_data(X, Y, **kw)
    assert isinstance(info.value, MLGPError) and isinstance(info.value, ValueError)


@pytest.fixture(scope="module")
def small_model():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(12, 3))
    Y = (rng.random((12, 5)) < 0.4).astype(np.float64)
    return MLGPF.from_data(X, Y, kernel="se", num_latent_gps=2, num_inducing=3), X, Y


def _fit_cases(X, Y):
    d = _bad_inputs(np.random.default_rng(0))
    cases = {k: (v[0], v[1], {}, v[3]) for k, v in d.items() if not v[2] and k not in ("no features", "features 1-D")}
    rng = np.random.default_rng(2)
    cases.update({
        "K differs from the model": (X, np.hstack([Y, Y[:, :1]]), {},
                                     r"the labels have K = 6 columns but the model has 5 labels"),
        "D differs from the model": (np.hstack([X, X[:, :1]]), Y, {},
                                     r"the features have D = 4 columns but the model expects 3"),
        "N differs from num_data": (X[:10], Y[:10], {}, r"model\.num_data = 12 but the training data has N = 10 points"),
        "batch_size 0": (X, Y, dict(batch_size=0), r"batch_size must be >= 1, got 0"),
        "negatives 0": (X, Y, dict(negatives=0), r"negatives must be >= 1, got 0"),
        "validation features": (X, Y, dict(validation=(rng.normal(size=(4, 2)), Y[:4])),
                                r"validation X has 2 features but the model expects D = 3"),
        "validation labels": (X, Y, dict(validation=(X[:4], Y[:3])),
                              r"validation Y has 3 rows but the features have 4: labels/features shape mismatch"),
        "validation K": (X, Y, dict(validation=(X[:4], Y[:4, :3])), r"validation Y has 3 labels but the model expects K = 5"),
    })
    return cases


FIT_BAD = list(_fit_cases(np.zeros((12, 3)), np.zeros((12, 5))))


@pytest.mark.parametrize("case", FIT_BAD)
def test_fit_rejects_bad_input_before_tracing(small_model, case, monkeypatch):
    model, X, Y = small_model
    Xb, Yb, kw, match = _fit_cases(X, Y)[case]

    def boom(*a, **k):
        raise AssertionError("reached the training step before the input was checked")

    monkeypatch.setattr(fit_module, "make_step", boom)
    monkeypatch.setattr(fit_module, "_build_optimizer", boom)
    before = values(model)
    with pytest.raises(ShapeError, match=match):
        fit(model, (Xb, Yb), epochs=1, batch_size=kw.pop("batch_size", 4), progress=False, **kw)
    for a, b in zip(before, values(model)):
        assert np.array_equal(a, b)


def test_fit_rejects_a_model_with_nothing_to_train(small_model):
    model, X, Y = small_model
    gpflow.utilities.set_trainable(model, False)
    try:
        with pytest.raises(MLGPError, match=r"^the model has no trainable variables$"):
            fit(model, (X, Y), epochs=1, batch_size=4, progress=False)
    finally:
        gpflow.utilities.set_trainable(model, True)


# ----------------------------------------------------------------------------- 10. the training loop
def _precision_at(model, X, Y, k):
    """P@k (in %) from dense scores with numpy only."""
    s = model.predict_scores(X)
    Yd = Y.toarray()
    top = np.argsort(-s, axis=1, kind="stable")[:, :k]
    return 100.0 * np.mean(np.take_along_axis(Yd, top, axis=1).sum(axis=1) / k)


def test_fit_trace_improves_and_reports_validation(problem):
    model = build(problem)
    before = full_elbo(model, problem)
    trace = fit(model, (problem.train.X, problem.train.Y), epochs=10, batch_size=20, negatives=3,
                learning_rate=0.03, validation=(problem.test.X, problem.test.Y), progress=False, seed=1)
    assert isinstance(trace, pd.DataFrame)
    assert list(trace.columns) == ["epoch", "elbo", "elbo_std", "kl", "expected_log_lik", "seconds", "batch_size", "P@1", "P@3", "P@5"]
    assert trace["epoch"].tolist() == list(range(1, 11))
    assert trace["batch_size"].tolist() == [20] * 10
    assert np.all(np.isfinite(trace["elbo"])) and np.all(trace["elbo_std"] > 0) and np.all(trace["seconds"] > 0)
    after = full_elbo(model, problem)
    assert after > before + 10.0, (before, after)
    assert trace["elbo"].iloc[-3:].mean() > trace["elbo"].iloc[:3].mean()
    for k in (1, 3, 5):
        assert 0.0 <= trace[f"P@{k}"].iloc[-1] <= 100.0
        assert trace[f"P@{k}"].iloc[-1] == pytest.approx(_precision_at(model, problem.test.X, problem.test.Y, k), abs=1e-9)


def test_batch_growth_schedule(problem):
    model = build(problem)
    trace = fit(model, (problem.train.X, problem.train.Y), epochs=4, batch_size=10, batch_growth=(1, 25),
                progress=False)
    assert trace["batch_size"].tolist() == [10, 35, 60, 60]  # capped at N = 60
    assert "P@1" not in trace.columns
    # a batch of all N points is one step per epoch: one estimate, no spread
    assert trace["elbo_std"].tolist()[2:] == [0.0, 0.0] and trace["elbo_std"].iloc[0] > 0


def test_seed_reproducibility_and_checkpoint_resume(problem, tmp_path):
    data = (problem.train.X, problem.train.Y)
    kw = dict(batch_size=16, negatives=3, learning_rate=0.02, seed=4, progress=False)

    ref = build(problem)
    t_ref = fit(ref, data, epochs=4, **kw)
    twin = build(problem)
    t_twin = fit(twin, data, epochs=4, **kw)
    assert np.array_equal(t_ref["elbo"].to_numpy(), t_twin["elbo"].to_numpy())
    for a, b in zip(values(ref), values(twin)):
        assert np.array_equal(a, b)

    other = build(problem)
    t_other = fit(other, data, epochs=1, **dict(kw, seed=5))
    assert t_other["elbo"].iloc[0] != t_ref["elbo"].iloc[0]

    ckpt = tmp_path / "ckpt"
    first = build(problem)
    t_first = fit(first, data, epochs=2, checkpoint_dir=ckpt, **kw)
    assert len(t_first) == 2 and (ckpt / "trace.csv").exists()
    np.testing.assert_allclose(t_first["elbo"], t_ref["elbo"].iloc[:2], rtol=1e-12)

    resumed = build(problem)  # a fresh, identically built model
    seen = []
    t_res = fit(resumed, data, epochs=4, checkpoint_dir=ckpt, callback=lambda e, m, row: seen.append(e), **kw)
    assert seen == [3, 4]  # only the missing epochs ran
    assert t_res["epoch"].tolist() == [1, 2, 3, 4]
    np.testing.assert_allclose(t_res["elbo"], t_ref["elbo"], rtol=1e-10)
    for a, b in zip(values(ref), values(resumed)):
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12)
    # a finished run resumes to nothing
    t_again = fit(build(problem), data, epochs=4, checkpoint_dir=ckpt, **kw)
    assert t_again["epoch"].tolist() == [1, 2, 3, 4]


def test_divergence_restores_last_good_state(problem):
    model = build(problem)
    opt = gpflow.keras.tf_keras.optimizers.Adam(0.01)
    saved = {}

    def inject_nan(epoch, m, row):
        if epoch == 2:
            saved["values"] = values(m)
            saved["opt"] = [v.numpy().copy() for v in opt.variables()]
            q = m.q_mu.unconstrained_variable
            bad = q.numpy().copy()
            bad[0, 0] = np.nan
            q.assign(bad)

    with pytest.raises(TrainingDivergedError, match=r"^the ELBO became nan at epoch 3, step 1; the model was restored to "
                       r"the end of epoch 2\. Try a smaller learning rate\.$") as info:
        fit(model, (problem.train.X, problem.train.Y), epochs=5, batch_size=30, optimizer=opt,
            callback=inject_nan, progress=False)
    assert isinstance(info.value, MLGPError)
    for a, b in zip(saved["values"], values(model)):
        assert np.array_equal(a, b)
    for a, v in zip(saved["opt"], opt.variables()):
        assert np.array_equal(a, v.numpy())
    assert np.isfinite(full_elbo(model, problem))


# ----------------------------------------------------------------------------- 11. MirroredStrategy
MIRRORED = r"""
import json, sys
import numpy as np
import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

from gpflow.keras import tf_keras
from mlgp.data import mlgpf_prior
from mlgp.models import MLGPF
from mlgp.training import fit

ds = mlgpf_prior(num_train=30, num_test=5, num_features=4, num_labels=6, num_latent=2, lengthscale=2.0, seed=3)
X, Y = ds.train.X, ds.train.Y
build = lambda: MLGPF.from_data(X, Y, kernel="se+linear", num_latent_gps=2, num_inducing=4, seed=0)

strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
out = {"replicas": strategy.num_replicas_in_sync}
with strategy.scope():
    dist = build()
    opt_d = tf_keras.optimizers.SGD(0.01)
single = build()
opt_s = tf_keras.optimizers.SGD(0.01)
start = [v.numpy().copy() for v in single.trainable_variables]

try:
    fit(single, (X, Y), epochs=1, batch_size=30, strategy=strategy, progress=False)
    out["outside_scope_error"] = None
except Exception as err:
    out["outside_scope_error"] = [type(err).__name__, str(err)]

def diffs():
    return max(float(np.max(np.abs(a.numpy() - b.numpy()))) for a, b in zip(dist.trainable_variables, single.trainable_variables))

# one full-batch step (replicas hold 15 points each), exact labels, plain SGD
td = fit(dist, (X, Y), epochs=1, batch_size=30, optimizer=opt_d, strategy=strategy, progress=False)
ts = fit(single, (X, Y), epochs=1, batch_size=30, optimizer=opt_s, progress=False)
out["step_diff"] = diffs()
out["step_size"] = max(float(np.max(np.abs(a - b.numpy()))) for a, b in zip(start, single.trainable_variables))
out["elbo"] = [float(td["elbo"][0]), float(ts["elbo"][0])]
# two epochs of minibatches of 15 points (N/|B| scaling; replicas hold 7 and 8) with sampled
# negatives (the same seed draws the same LabelBatches for both)
td = fit(dist, (X, Y), epochs=2, batch_size=15, negatives=2, optimizer=opt_d, strategy=strategy, progress=False, seed=2)
ts = fit(single, (X, Y), epochs=2, batch_size=15, negatives=2, optimizer=opt_s, progress=False, seed=2)
out["epoch_diff"] = diffs()
out["epoch_elbo"] = [td["elbo"].tolist(), ts["elbo"].tolist()]
print("RESULT " + json.dumps(out))
"""


def test_mirrored_strategy_step_equals_single_device_step():
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(MIRRORED)], capture_output=True, text=True,
                          env=env, cwd=str(REPO), timeout=300)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-4000:]
    out = json.loads(lines[-1][len("RESULT "):])
    assert out["replicas"] == 2
    assert out["outside_scope_error"] is not None, "fit accepted a model built outside strategy.scope()"
    kind, message = out["outside_scope_error"]
    assert kind == "ArgumentError", out["outside_scope_error"]
    assert re.match(r"with a strategy, build the model inside `with strategy\.scope\(\):` \(\d+ variables were not, e\.g\. ", message), message
    assert out["step_size"] > 1e-4  # the step actually moved the parameters
    assert out["step_diff"] < 1e-8, out
    np.testing.assert_allclose(out["elbo"][0], out["elbo"][1], rtol=1e-10)
    assert out["epoch_diff"] < 1e-8, out
    assert len(out["epoch_elbo"][0]) == 2 and np.all(np.isfinite(out["epoch_elbo"][0]))
    np.testing.assert_allclose(out["epoch_elbo"][0], out["epoch_elbo"][1], rtol=1e-10)


def test_xla_compiled_step_matches_the_plain_step(problem):
    """jit_compile=True trains to the same values (XLA may reorder sums: equal to 1e-9)."""
    data = (problem.train.X, problem.train.Y)
    for negatives in (None, 3):
        kw = dict(epochs=3, batch_size=20, negatives=negatives, learning_rate=0.02, seed=2, progress=False)  # equal batches: one XLA compilation
        plain, xla = build(problem), build(problem)
        t_plain = fit(plain, data, **kw)
        t_xla = fit(xla, data, jit_compile=True, **kw)
        np.testing.assert_allclose(t_xla["elbo"], t_plain["elbo"], rtol=1e-9)
        for a, b in zip(values(plain), values(xla)):
            np.testing.assert_allclose(b, a, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("whiten", [True, False])
def test_step_with_cholesky_outside_xla_matches_the_plain_step(problem, whiten):
    """jit_compile="except-cholesky": the chain-rule term through chol(K_ZZ), added outside XLA,
    makes the trajectory that of the plain step (kernel and Z trained, exact and sampled labels)."""
    data = (problem.train.X, problem.train.Y)
    kw_model = dict(kernel="se+linear", unit_sphere_inducing=True, q_family="whitened" if whiten else "cholesky")
    for negatives in (None, 3):
        kw = dict(epochs=3, batch_size=20, negatives=negatives, learning_rate=0.02, seed=2, progress=False)  # equal batches: one XLA compilation
        plain, split = build(problem, **kw_model), build(problem, **kw_model)
        start = values(plain)
        t_plain = fit(plain, data, **kw)
        t_split = fit(split, data, jit_compile="except-cholesky", **kw)
        np.testing.assert_allclose(t_split["elbo"], t_plain["elbo"], rtol=1e-9)
        for a, b, s0 in zip(values(plain), values(split), start):
            assert np.max(np.abs(a - s0)) > 1e-4  # every variable, kernel and Z included, moved
            np.testing.assert_allclose(b, a, rtol=1e-8, atol=1e-10)


def test_bound_given_the_factorisation_equals_the_bound(problem):
    """elbo / prior_kl with a precomputed (K_ZZ, chol(K_ZZ)) equal the self-contained computations."""
    X, Y = problem.train.X.toarray(), problem.train.Y.toarray().astype(np.float64)
    for whiten in (False, True):
        model = build(problem, kernel="se+linear", q_family="whitened" if whiten else "cholesky")
        Lm = model.kuu_cholesky()
        Kmm = gpflow.covariances.Kuu(model.inducing_variable, model.kernel, jitter=gpflow.config.default_jitter())
        np.testing.assert_allclose(Lm.numpy() @ Lm.numpy().T, Kmm.numpy(), rtol=1e-12, atol=1e-12)
        stock_kl = gpflow.kullback_leiblers.prior_kl(model.inducing_variable, model.kernel, model.q_mu, model.q_sqrt, whiten=whiten)
        Kuu = model.kuu()
        np.testing.assert_allclose(model.prior_kl((Kuu, Lm)).numpy(), stock_kl.numpy(), rtol=1e-12)
        np.testing.assert_allclose(model.elbo((X, Y), factorisation=(Kuu, Lm)).numpy(), model.elbo((X, Y)).numpy(), rtol=1e-12)
        # a different factor changes the bound: the argument is used, not recomputed
        assert abs(float(model.elbo((X, Y), factorisation=(Kuu, 2.0 * Lm))) - full_elbo(model, problem)) > 1e-3


def test_jit_compile_values_are_checked(problem):
    data = (problem.train.X, problem.train.Y)
    with pytest.raises(ArgumentError, match=r"jit_compile must be False, True or 'except-cholesky', got 'yes'"):
        fit(build(problem), data, epochs=1, jit_compile="yes", progress=False)

    class NoCholesky(gpflow.Module):
        def __init__(self, model):
            self.model = model

        def elbo(self, data):
            return self.model.elbo(data)

    # a model short of the TrainableModel protocol is named before any work, whatever the step
    with pytest.raises(ArgumentError, match=r"fit needs a model with \[.*'elbo_and_kl', 'factorisation'.*\] "
                                            r"\(mlgp.training.TrainableModel"):
        fit(NoCholesky(build(problem)), data, epochs=1, jit_compile="except-cholesky", progress=False)


@pytest.mark.parametrize("jit_compile", [True, "except-cholesky"])
def test_xla_step_stops_on_divergence(problem, jit_compile):
    """Under XLA a failed step gives a NaN bound instead of an error; fit still stops and restores."""
    model = build(problem)
    saved = {}

    def inject_nan(epoch, m, row):
        if epoch == 1:
            saved["values"] = values(m)
            q = m.q_mu.unconstrained_variable
            bad = q.numpy().copy()
            bad[0, 0] = np.nan
            q.assign(bad)

    with pytest.raises(TrainingDivergedError, match=r"the ELBO became nan at epoch 2, step 1; the model was restored to the end of epoch 1\. Try a smaller learning rate\."):
        fit(model, (problem.train.X, problem.train.Y), epochs=3, batch_size=30, jit_compile=jit_compile,
            callback=inject_nan, progress=False)
    for a, b in zip(saved["values"], values(model)):
        assert np.array_equal(a, b)
    with pytest.raises(ArgumentError, match=r"jit_compile=True cannot be combined with a tf\.distribute strategy"):
        fit(build(problem), (problem.train.X, problem.train.Y), epochs=1, jit_compile=True,
            strategy=__import__("tensorflow").distribute.get_strategy(), progress=False)
