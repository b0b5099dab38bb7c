"""The compiled training steps (mlgp.training.steps) as fit runs them: a MirroredStrategy step equal
to the single-device one, the XLA step and the step with chol(K_ZZ) outside XLA equal to the plain
one, the bound given its factorisation, jit_compile's values, and divergence under XLA."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import gpflow
import numpy as np
import pytest
from _training_problem import build, full_elbo, small_problem, values

from mlgp.errors import ArgumentError, TrainingDivergedError
from mlgp.training import fit

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def problem():
    return small_problem()


# ----------------------------------------------------------------------------- 11. MirroredStrategy
MIRRORED = r"""
import json, sys
import numpy as np
import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

from gpflow.keras import tf_keras
from mlgp.data import mlgpf_prior
from mlgp.models import mlgpf_from_data
from mlgp.training import fit

ds = mlgpf_prior(num_train=30, num_test=5, num_features=4, num_labels=6, num_latent=2, lengthscale=2.0, seed=3)
X, Y = ds.train.X, ds.train.Y
build = lambda: mlgpf_from_data(X, Y, kernel="se+linear", num_latent_gps=2, num_inducing=4, seed=0)

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
# negatives (the same seed draws the same LabelBatches for both), the KL term weighted by ½
td = fit(dist, (X, Y), epochs=2, batch_size=15, negatives=2, optimizer=opt_d, strategy=strategy, progress=False, seed=2,
         kl_weight=0.5)
ts = fit(single, (X, Y), epochs=2, batch_size=15, negatives=2, optimizer=opt_s, progress=False, seed=2, kl_weight=0.5)
out["epoch_diff"] = diffs()
out["epoch_elbo"] = [td["elbo"].tolist(), ts["elbo"].tolist()]
print("RESULT " + json.dumps(out))
"""


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.parametrize("whiten, negatives", [(True, None), (False, 3)],
                         ids=["whitened-exact labels", "cholesky-sampled labels"])
@pytest.mark.slow
def test_step_with_cholesky_outside_xla_matches_the_plain_step(problem, whiten, negatives):
    """jit_compile="except-cholesky": the chain-rule term through chol(K_ZZ), added outside XLA,
    makes the trajectory that of the plain step (kernel and Z trained); each q(u) form and each
    kind of label batch once (every pairing costs two more compilations, ~3 s)."""
    data = (problem.train.X, problem.train.Y)
    kw_model = dict(kernel="se+linear", unit_sphere_inducing=True, q_family="whitened" if whiten else "cholesky")
    kw = dict(epochs=3, batch_size=20, negatives=negatives, learning_rate=0.02, seed=2, progress=False)  # equal batches: one XLA compilation
    plain, split = build(problem, **kw_model), build(problem, **kw_model)
    start = values(plain)
    t_plain = fit(plain, data, **kw)
    t_split = fit(split, data, jit_compile="except-cholesky", **kw)
    # XLA reorders sums: equal to 1e-9, not bit for bit
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


@pytest.mark.slow
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


@pytest.mark.slow
@pytest.mark.parametrize("negatives", [None, 3], ids=["every label", "sampled labels"])
def test_the_plain_step_is_traced_once_for_every_batch_size(problem, negatives) -> None:
    """An epoch's last minibatch is smaller (here 60 rows in batches of 25: 25, 25, 10): the step
    is traced on its first call for any batch size, not again for the 10 rows, and the steps still
    train (the bound rises)."""
    from gpflow.keras import tf_keras

    from mlgp.training import MinibatchSampler, make_step

    model = build(problem)
    sampler = MinibatchSampler(problem.train.X, problem.train.Y, batch_size=25, negatives=negatives, seed=0,
                               float_type=model.float_type)
    step = make_step(model, tf_keras.optimizers.Adam(0.01), None, 60, False)
    before, sizes, counts = full_elbo(model, problem), [], []
    with model.float_context():
        for _ in range(3):
            for xb, yb in sampler.epoch():
                step(xb, yb)
                sizes.append(int(xb.shape[0]))
                counts.append(step.tracing_count())
    # the first call may trace twice (the optimizer's slots are created in the first trace)
    assert sizes == [25, 25, 10] * 3 and counts == [counts[0]] * 9
    assert full_elbo(model, problem) > before
