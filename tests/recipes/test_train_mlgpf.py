"""The training recipe and the experiment scripts' shared training options: bias initialisation,
batch growth, per-epoch validation, one check of every argument and the deprecated ``whiten``."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest
import scipy.sparse as sp
from _rounding import FLOAT64

from mlgp.data import mlgpf_prior
from mlgp.errors import ArgumentError, MLGPError, ShapeError
from mlgp.experiment import PAPER_BATCH_GROWTH, add_training_args, run_checkpoint_dir, training_options
from mlgp.likelihoods import MultiLabelBernoulli
from mlgp.models import MLGPF, mlgpf_from_data
from mlgp.models import label_log_odds
from mlgp.recipes import PAPER_BATCH_GROWTH as RECIPE_BATCH_GROWTH
from mlgp.recipes import batch_growth, train_mlgpf


@pytest.fixture(scope="module")
def problem():
    return mlgpf_prior(num_train=80, num_test=30, num_features=4, num_labels=7, num_latent=2, seed=3)


def test_label_log_odds_matches_a_direct_count():
    Y = np.array([[1, 0, 0], [1, 0, 1], [0, 0, 1], [1, 0, 1]], dtype=float)
    f = (np.array([3, 0, 3]) + 0.5) / 5.0
    expected = np.log(f / (1 - f))
    # log(f) − log1p(−f) against log(f / (1 − f)): other roundings, and numpy's log and log1p take
    # other SIMD code with and without AVX-512: equal to rounding
    np.testing.assert_allclose(label_log_odds(Y), expected, **FLOAT64)
    np.testing.assert_allclose(label_log_odds(sp.csr_matrix(Y)), expected, **FLOAT64)
    assert np.all(np.isfinite(label_log_odds(np.zeros((5, 2)))))  # a label never seen stays finite


def test_from_data_bias_initialisation(problem):
    X, Y = problem.train.X, problem.train.Y
    kw = dict(kernel="se", num_latent_gps=2, num_inducing=6, seed=5)
    odds = mlgpf_from_data(X, Y, **kw)
    np.testing.assert_allclose(odds.likelihood.bias.numpy(), label_log_odds(Y), rtol=1e-15)
    assert odds.spec["bias_init"] == "log-odds"
    rand = mlgpf_from_data(X, Y, bias_init="random", **kw)
    # the authors' N(0, 1/P) draw, the same one MultiLabelBernoulli makes with that seed
    reference = MultiLabelBernoulli(Y.shape[1], 2, seed=5)
    np.testing.assert_array_equal(rand.likelihood.bias.numpy(), reference.bias.numpy())
    np.testing.assert_array_equal(rand.likelihood.loadings.numpy(), odds.likelihood.loadings.numpy())
    with pytest.raises(ArgumentError, match="bias_init must be one of 'log-odds', 'random'; got 'zeros'"):
        mlgpf_from_data(X, Y, bias_init="zeros", **kw)


def test_log_odds_start_fits_the_label_marginals_better(problem):
    """At initialisation the data term with log-odds biases beats the random biases (labels ~27% on)."""
    X, Y = problem.train.X, problem.train.Y
    data = (X.toarray() if sp.issparse(X) else X, (Y.toarray() if sp.issparse(Y) else Y).astype(np.float64))
    terms = {}
    for init in ("log-odds", "random"):
        model = mlgpf_from_data(X, Y, kernel="se", num_latent_gps=2, num_inducing=6, bias_init=init, q_mu_init=0.0, seed=1)
        terms[init] = float(np.sum(model.expected_log_likelihood(data).numpy()))
    assert terms["log-odds"] > terms["random"]


def _parse(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    add_training_args(parser)
    return parser.parse_args(argv)


def test_training_options_parse_batch_growth_bias_and_validation(capsys):
    opts = training_options(_parse(["--batch-growth", "paper", "--validate", "--bias-init", "random", "--q-family", "whitened"]))
    assert opts["batch_growth"] == PAPER_BATCH_GROWTH == (10, 20)
    assert opts["validate"] is True and opts["bias_init"] == "random" and opts["q_family"] == "whitened"
    opts = training_options(_parse(["--batch-growth", "5,50"]))
    assert opts["batch_growth"] == (5, 50) and opts["validate"] is False and opts["bias_init"] == "log-odds"
    assert training_options(_parse([]))["batch_growth"] is None
    for bad in ("5", "a,b", "0,20", "5,-1", "1,2,3"):
        with pytest.raises(SystemExit, match="^2$"):  # argparse's usage error
            _parse(["--batch-growth", bad])
        assert "--batch-growth" in capsys.readouterr().err


@pytest.mark.slow
def test_train_mlgpf_grows_the_batch_and_validates(problem):
    run = train_mlgpf(problem, kernel="se", num_latent_gps=2, num_inducing=6, epochs=5, batch_size=20,
                      batch_growth=(2, 15), validate=True, progress=False)
    assert run.trace["batch_size"].tolist() == [20, 20, 35, 35, 50]
    assert {"P@1", "P@3", "P@5"} <= set(run.trace.columns)
    # the last epoch's validation P@1 is the test P@1 of the returned metric table
    assert run.trace["P@1"].iloc[-1] == pytest.approx(run.metrics.loc["P"].iloc[0], abs=1e-9)
    assert run.settings["batch_growth"] == (2, 15) and run.settings["bias_init"] == "log-odds"


@pytest.mark.slow
def test_checkpointed_run_extends_to_the_uninterrupted_result(problem, tmp_path):
    kw = dict(kernel="se", num_latent_gps=2, num_inducing=6, batch_size=20, batch_growth=(2, 15), validate=True, progress=False,
              jit_compile=False, dtype="float64")
    whole = train_mlgpf(problem, epochs=4, **kw)
    ckpt = tmp_path / "run"
    first = train_mlgpf(problem, epochs=2, checkpoint_dir=ckpt, **kw)
    # the manifest is the folder's one record of the settings (no settings.json beside it)
    assert len(first.trace) == 2 and not (ckpt / "settings.json").exists()
    assert json.loads((ckpt / "manifest.json").read_text())["recipe"]["batch_growth"] == [2, 15]
    extended = train_mlgpf(problem, epochs=4, checkpoint_dir=ckpt, **kw)
    # two restored epochs plus two new ones: the same trace and predictions as one 4-epoch run
    np.testing.assert_allclose(extended.trace["elbo"], whole.trace["elbo"], rtol=1e-9)
    assert extended.trace["batch_size"].tolist() == [20, 20, 35, 35]
    np.testing.assert_allclose(extended.metrics.to_numpy(), whole.metrics.to_numpy(), rtol=1e-9)
    # the restored epochs' seconds count in the run's training time
    assert extended.seconds["epochs"] == pytest.approx(extended.trace["seconds"].sum())
    assert extended.seconds["epochs"] > first.trace["seconds"].sum() > 0
    with pytest.raises(MLGPError, match="at epoch 4, past epochs=3"):
        train_mlgpf(problem, epochs=3, checkpoint_dir=ckpt, **kw)


def test_checkpoint_folder_refuses_other_settings(problem, tmp_path):
    kw = dict(kernel="se", num_latent_gps=2, num_inducing=6, batch_size=20, progress=False, jit_compile=False, checkpoint_dir=tmp_path)
    train_mlgpf(problem, epochs=1, **kw)
    with pytest.raises(MLGPError, match="learning_rate: checkpoint 0.005, now 0.01"):
        train_mlgpf(problem, epochs=2, learning_rate=0.01, **kw)
    with pytest.raises(MLGPError, match="num_latent_gps"):
        train_mlgpf(problem, epochs=2, **dict(kw, num_latent_gps=3))


@pytest.mark.slow
def test_the_recipe_trains_with_its_kl_weight_and_a_checkpoint_keeps_it(problem, tmp_path):
    """kl_weight reaches fit (its manifest records it, in fit's settings and the recipe's); resuming
    with another weight is refused, and an older record without it resumes at 1."""
    kw = dict(kernel="se", num_latent_gps=2, num_inducing=6, batch_size=20, progress=False, jit_compile=False)
    half = train_mlgpf(problem, epochs=1, kl_weight=0.5, checkpoint_dir=tmp_path / "half", **kw)
    manifest = json.loads((tmp_path / "half" / "manifest.json").read_text())
    assert manifest["settings"]["kl_weight"] == manifest["recipe"]["kl_weight"] == 0.5
    assert half.settings["kl_weight"] == 0.5
    full = train_mlgpf(problem, epochs=1, **kw)
    assert not np.allclose(half.trace["elbo"], full.trace["elbo"])
    with pytest.raises(MLGPError, match="kl_weight: checkpoint 0.5, now 1.0"):
        train_mlgpf(problem, epochs=2, checkpoint_dir=tmp_path / "half", **kw)
    train_mlgpf(problem, epochs=1, checkpoint_dir=tmp_path / "old", **kw)
    manifest = json.loads((tmp_path / "old" / "manifest.json").read_text())
    del manifest["recipe"]["kl_weight"]  # as written before the setting existed
    (tmp_path / "old" / "manifest.json").write_text(json.dumps(manifest))
    assert list(train_mlgpf(problem, epochs=2, checkpoint_dir=tmp_path / "old", **kw).trace["epoch"]) == [1, 2]


def test_run_checkpoint_dir_names_each_run(tmp_path):
    assert run_checkpoint_dir(_parse([]), "bibtex", "SE", "seed0") is None
    args = _parse(["--checkpoint-dir", str(tmp_path)])
    assert run_checkpoint_dir(args, "bibtex", "se+linear", "seed0") == tmp_path / "bibtex_se+linear_seed0"
    assert run_checkpoint_dir(args, "a b", "x/y") == tmp_path / "a_b_x_y"


@pytest.mark.slow
@pytest.mark.parametrize("whiten", [False, True])
def test_train_mlgpf_compiles_with_xla_only_for_whitened_models(problem, whiten, monkeypatch):
    """Whitened: XLA for all but chol(K_ZZ) by default; non-whitened: no XLA; an explicit choice is kept.
    (The spy records the choice and trains without XLA: what XLA computes is tests/gp/training/test_steps.py's.)"""
    import mlgp.training

    seen = {}
    real_fit = mlgp.training.fit

    def spy(*args, **kwargs):
        seen["jit_compile"] = kwargs["jit_compile"]
        return real_fit(*args, **{**kwargs, "jit_compile": False})

    monkeypatch.setattr(mlgp.training, "fit", spy)
    family = "whitened" if whiten else "cholesky"
    run = train_mlgpf(problem, kernel="se", num_latent_gps=2, num_inducing=6, epochs=1, batch_size=40,
                      q_family=family, progress=False)
    expected = "except-cholesky" if whiten else False
    assert seen["jit_compile"] == expected and run.settings["jit_compile"] == expected
    assert run.settings["whiten"] is whiten
    # an explicit choice is kept
    run = train_mlgpf(problem, kernel="se", num_latent_gps=2, num_inducing=6, epochs=1, batch_size=40,
                      q_family=family, jit_compile=not whiten, progress=False)
    assert seen["jit_compile"] is (not whiten)


def test_batch_growth_accepts_what_the_cli_accepts():
    assert RECIPE_BATCH_GROWTH is PAPER_BATCH_GROWTH  # one source
    assert batch_growth("paper") == batch_growth("PAPER ") == (10, 20)
    assert batch_growth("5,50") == batch_growth((5, 50)) == batch_growth([5, 50]) == (5, 50)
    assert batch_growth(None) is None
    for bad in ("5", "a,b", "0,20", "5,-1", "1,2,3", (1.5, 2), (True, 2), 7):
        with pytest.raises(ArgumentError, match="batch_growth"):
            batch_growth(bad)


@pytest.mark.slow
def test_train_mlgpf_takes_the_named_schedule(problem):
    run = train_mlgpf(problem, kernel="se", num_latent_gps=2, num_inducing=6, epochs=1, batch_size=20,
                      batch_growth="paper", progress=False)
    assert run.settings["batch_growth"] == (10, 20) and len(run.trace) == 1


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(batch_growth="fast"), ArgumentError, "batch_growth must be"),
        (dict(kernel="matern"), ArgumentError, "kernel must be one of 'linear', 'se', 'se\\+linear', 'se\\+linear-shared'"),
        (dict(epochs=0), ArgumentError, "epochs must be a positive integer, got 0"),
        (dict(batch_size=2.5), ArgumentError, "batch_size must be a positive integer, got 2.5"),
        (dict(num_latent_gps=99), ShapeError, "num_latent_gps must be at most the number of labels K=7"),
        (dict(num_inducing=-1), ArgumentError, "num_inducing must be a positive integer or None, got -1"),
        (dict(negatives=7), ShapeError, "negatives=7 sampled negative labels per point needs more than K=7"),
        (dict(learning_rate=0.0), ArgumentError, "learning_rate must be a positive finite number, got 0.0"),
        (dict(bias_init="zeros"), ArgumentError, "bias_init must be one of 'log-odds', 'random'; got 'zeros'"),
        (dict(seed=-1), ArgumentError, r"seed must be an integer from 0 to 2147483647, got -1"),
        (dict(max_train=0), ArgumentError, "max_train must be a positive integer or None, got 0"),
        (dict(q_family="full"), ArgumentError, "q_family must be one of 'cholesky', 'whitened', 'preconditioned'; got 'full'"),
        (dict(dtype="float16"), ArgumentError, "dtype must be one of 'float64', 'float32'; got 'float16'"),
        (dict(optimizer="sgd"), ArgumentError, "optimizer must be one of 'adam', 'natgrad'; got 'sgd'"),
        (dict(optimizer="natgrad", q_family="preconditioned"), ArgumentError, "natgrad' needs a Cholesky q\\(u\\) family"),
        (dict(natgrad_gamma=(0.1, 0.2)), ArgumentError, "natgrad_gamma must be"),
        # the classifier's parameters, checked by the classifier (the recipe does not check them again)
        (dict(jit_compile="xla"), ArgumentError, "The 'jit_compile' parameter of MLGPFClassifier must be"),
        (dict(max_seconds=0), ArgumentError, r"The 'max_seconds' parameter of MLGPFClassifier must be a float in the "
                                             r"range \(0.0, inf\) or None. Got 0"),
        (dict(num_latent=2), ArgumentError, "unknown argument\\(s\\) 'num_latent'"),
        (dict(settings="se"), ArgumentError, "settings must be an MLGPFSettings"),
    ],
)
def test_train_mlgpf_checks_every_argument_before_any_work(problem, monkeypatch, kwargs, error, match):
    import mlgp.models.builders
    import mlgp.training

    def forbidden(*args, **kw):
        raise AssertionError("work started before the arguments were checked")

    monkeypatch.setattr(mlgp.models.builders, "mlgpf_from_data", forbidden)  # k-means and the model are built there
    monkeypatch.setattr(mlgp.training, "fit", forbidden)
    kw = dict(kernel="se", num_latent_gps=2, num_inducing=6, epochs=1, batch_size=20, progress=False)
    with pytest.raises(error, match=match):
        train_mlgpf(problem, **{**kw, **kwargs})


class _Built(Exception):
    """Stops :func:`train_mlgpf` where it builds the model, carrying what it was built with."""


def _build_arguments(problem, monkeypatch, **kwargs) -> dict:
    """The keyword arguments :func:`train_mlgpf` gives :func:`mlgp.models.builders.mlgpf_from_data`
    (nothing is trained), the model class aside."""
    import mlgp.models.builders

    def spy(X, Y, *, model_class, **kw):
        assert model_class is MLGPF
        raise _Built(kw)

    monkeypatch.setattr(mlgp.models.builders, "mlgpf_from_data", spy)
    with pytest.raises(_Built, match="q_family") as caught:
        train_mlgpf(problem, num_latent_gps=2, num_inducing=6, progress=False, **kwargs)
    return caught.value.args[0]


def test_whiten_is_a_deprecated_spelling_of_the_whitened_family(problem, monkeypatch):
    with pytest.warns(FutureWarning, match="use q_family='whitened'"):
        old = _build_arguments(problem, monkeypatch, whiten=True, q_family=None)
    assert old == _build_arguments(problem, monkeypatch, q_family="whitened")
    with pytest.warns(FutureWarning, match="use q_family='whitened'"):
        old = _build_arguments(problem, monkeypatch, whiten=False)
    assert old == _build_arguments(problem, monkeypatch, q_family="cholesky")
    with pytest.warns(FutureWarning, match="deprecated"), pytest.raises(ArgumentError, match="whiten=True asks for the whitened family"):
        train_mlgpf(problem, whiten=True, q_family="cholesky")


def test_settings_object_and_keywords_build_the_same_model(problem, monkeypatch):
    from mlgp.recipes import MLGPFSettings

    settings = MLGPFSettings(kernel="SE+LR", q_family="preconditioned", dtype="float64", seed=4)
    by_object = _build_arguments(problem, monkeypatch, settings=settings)
    assert by_object == _build_arguments(problem, monkeypatch, kernel="se+lr", q_family="preconditioned", dtype="float64", seed=4)
    assert by_object["kernel"] == "se+linear"  # canonicalised once, at the boundary
    # keywords change a settings object's fields
    assert _build_arguments(problem, monkeypatch, settings=settings, seed=5)["seed"] == 5
    # no argument: the settings' defaults
    defaults = MLGPFSettings()
    built = _build_arguments(problem, monkeypatch)
    for name in ("kernel", "fixed_inducing", "unit_sphere_inducing", "q_family", "bias_init", "seed", "dtype", "warm_start"):
        assert built[name] == getattr(defaults, name), name


@pytest.mark.slow
def test_checkpoint_folder_refuses_another_q_family_or_precision(problem, tmp_path):
    kw = dict(kernel="se", num_latent_gps=2, num_inducing=6, epochs=1, batch_size=20, progress=False, checkpoint_dir=str(tmp_path))
    train_mlgpf(problem, q_family="preconditioned", **kw)
    with pytest.raises(MLGPError, match="q_family: checkpoint 'preconditioned', now 'whitened'"):
        train_mlgpf(problem, q_family="whitened", **kw)
    with pytest.raises(MLGPError, match="dtype: checkpoint 'float32', now 'float64'"):
        train_mlgpf(problem, q_family="preconditioned", dtype="float64", **kw)


@pytest.mark.slow
def test_the_default_recipe_trains_on_bibtex_without_nan(data_home):
    """The recipe's defaults (the benchmark's recommendation) at Bibtex's full P and M, on 450 points
    (scored on the first 300 test points)."""
    import dataclasses

    from mlgp.data import load

    ds = load("bibtex", data_home)
    ds = dataclasses.replace(ds, test=dataclasses.replace(ds.test, X=ds.test.X[:300], Y=ds.test.Y[:300]))
    run = train_mlgpf(ds, epochs=1, max_train=450, progress=False)
    assert run.settings["num_latent_gps"] == 159 and run.settings["num_inducing"] == 400
    assert np.all(np.isfinite(run.trace[["elbo", "kl"]].to_numpy()))
    assert np.all(np.isfinite(run.metrics.to_numpy()))
    assert run.model.float_type == np.dtype(run.settings["dtype"])


def test_a_settings_json_from_before_the_newer_settings_still_resumes(problem, tmp_path, monkeypatch):
    """An older settings.json lacks the settings added since and may name the kernel by an alias."""
    old = dict(dataset=problem.name, kernel="SE", num_latent_gps=2, num_inducing=6, epochs=1, batch_size=20, negatives=None,
               learning_rate=0.005, fixed_inducing=False, whiten=False, batch_growth=None, bias_init="log-odds",
               jit_compile=False, seed=0, num_train=problem.train.num_points)
    (tmp_path / "settings.json").write_text(json.dumps(old))
    implied = dict(kernel="se", unit_sphere_inducing=False, q_family="cholesky", dtype="float64", warm_start=False,
                   covariance_warmup=0)
    built = _build_arguments(problem, monkeypatch, checkpoint_dir=tmp_path, epochs=2, batch_size=20, **implied)
    assert built["q_family"] == "cholesky"
    with pytest.raises(MLGPError, match="q_family: checkpoint 'cholesky', now 'whitened'"):
        train_mlgpf(problem, num_latent_gps=2, num_inducing=6, checkpoint_dir=tmp_path, batch_size=20,
                    **dict(implied, q_family="whitened"))


@pytest.mark.slow
def test_max_seconds_of_the_recipe_counts_from_its_start_and_looks_after_every_step(monkeypatch) -> None:
    """On a clock moving 1 s per reading the recipe's budget of 3.5 s ends training after the 4th
    optimiser step, mid-epoch (5 steps an epoch), whatever the epochs asked."""
    from _clock import fake_clock

    from mlgp.data import mlgpf_prior

    clock = fake_clock(monkeypatch)
    ds = mlgpf_prior(num_train=100, num_test=20, num_features=3, num_labels=5, num_latent=2, seed=1)
    run = train_mlgpf(ds, kernel="se", num_latent_gps=2, num_inducing=4, epochs=50, batch_size=20, progress=False,
                      max_seconds=3.5, validate=False)
    assert list(run.trace["step"]) == [4] and list(run.trace["elapsed"]) == [4.0] and clock.readings == 5
