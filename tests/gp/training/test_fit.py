"""mlgpf_from_data / mlgp.training.fit: input checks, the training loop, checkpoints and divergence
(the compiled steps are tests/gp/training/test_steps.py's)."""

from __future__ import annotations

import importlib

import gpflow
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from _training_problem import build, full_elbo, small_problem, values

from mlgp.errors import MLGPError, ShapeError, TrainingDivergedError
from mlgp.models import mlgpf_from_data
from mlgp.training import fit

fit_module = importlib.import_module("mlgp.training.fit")  # `mlgp.training.fit` the attribute is the function


@pytest.fixture(scope="module")
def problem():
    return small_problem()


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
        "P = 0": (X, Y, dict(num_latent_gps=0), r"num_latent_gps must be a positive integer, got 0"),
        "P > K": (X, Y, dict(num_latent_gps=K + 1), r"num_latent_gps P must be in \[1, K=5\], got 6"),
        "M > N": (X, Y, dict(num_inducing=N + 1), r"num_inducing M must be in \[1, N=12\] \(the training points used\), got 13"),
        "M = 0": (X, Y, dict(num_inducing=0), r"num_inducing must be a positive integer, got 0"),
        "P = 1.5": (X, Y, dict(num_latent_gps=1.5), r"num_latent_gps must be a positive integer, got 1\.5"),
        "M = None-like string": (X, Y, dict(num_inducing="3"), r"num_inducing must be a positive integer, got '3'"),
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
    with pytest.raises(MLGPError, match=match) as info:  # ShapeError for data, ArgumentError for P and M
        mlgpf_from_data(X, Y, **kw)
    assert isinstance(info.value, MLGPError) and isinstance(info.value, ValueError)


@pytest.fixture(scope="module")
def small_model():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(12, 3))
    Y = (rng.random((12, 5)) < 0.4).astype(np.float64)
    return mlgpf_from_data(X, Y, kernel="se", num_latent_gps=2, num_inducing=3), X, Y


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
    monkeypatch.setattr(fit_module, "build_optimizer", boom)
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
    """P@k (in %) from the model's mean utilities of all rows at once, ranked with numpy only."""
    s = model.mean_utilities(model.model_inputs(X))
    Yd = Y.toarray()
    top = np.argsort(-s, axis=1, kind="stable")[:, :k]
    return 100.0 * np.mean(np.take_along_axis(Yd, top, axis=1).sum(axis=1) / k)


@pytest.mark.slow
def test_fit_trace_improves_and_reports_validation(problem):
    model = build(problem)
    before = full_elbo(model, problem)
    trace = fit(model, (problem.train.X, problem.train.Y), epochs=10, batch_size=20, negatives=3,
                learning_rate=0.03, validation=(problem.test.X, problem.test.Y), progress=False, seed=1)
    assert isinstance(trace, pd.DataFrame)
    assert list(trace.columns) == ["epoch", "step", "elapsed", "elbo", "elbo_std", "kl", "expected_log_lik", "seconds", "batch_size", "P@1", "P@3", "P@5"]
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


@pytest.mark.slow
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
                       r"the end of epoch 2\. Try a smaller learning rate\. The bound is finite at those parameters on "
                       r"the same minibatch, so the steps from them made it non-finite \(learning_rate=0\.01\)\.$") as info:
        fit(model, (problem.train.X, problem.train.Y), epochs=5, batch_size=30, optimizer=opt,
            callback=inject_nan, progress=False)
    assert isinstance(info.value, MLGPError)
    for a, b in zip(saved["values"], values(model)):
        assert np.array_equal(a, b)
    for a, v in zip(saved["opt"], opt.variables()):
        assert np.array_equal(a, v.numpy())
    assert np.isfinite(full_elbo(model, problem))
