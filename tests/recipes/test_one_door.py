"""One door to MLGPF training: :func:`mlgp.recipes.train_mlgpf` is :class:`MLGPFClassifier` with the
paper's schedule (the same model for the same parameters, one trace), checkpointing is a parameter
of the classifier whose manifest is the one record of the run's settings (older folders with a
``settings.json`` resume or are refused by name), and the number of inducing points meets the
number of training rows in one check."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from mlgp.data import mlgpf_prior
from mlgp.errors import CheckpointMismatchError, ShapeError
from mlgp.estimator import ParameterError
from mlgp.recipes import MLGPFClassifier, train_mlgpf
from mlgp.recipes.wrapped import epoch_rows
from mlgp.validation import check_num_inducing

SMALL = dict(kernel="se", num_latent_gps=2, num_inducing=6, batch_size=20, jit_compile=False, progress=False, seed=1)


@pytest.fixture(scope="module")
def problem():
    return mlgpf_prior(num_train=60, num_test=20, num_features=4, num_labels=5, num_latent=2, seed=3)


class _Built(Exception):
    """Stops a fit where the model is built, carrying the builder's keyword arguments."""


def _stop_at_the_build(monkeypatch) -> None:
    import mlgp.models.builders

    def spy(X, Y, **kwargs):
        raise _Built(kwargs)

    monkeypatch.setattr(mlgp.models.builders, "mlgpf_from_data", spy)


# ------------------------------------------------------------------------ the recipe is the classifier
def test_train_mlgpf_is_the_classifier_with_the_papers_parameters(problem) -> None:
    """The recipe's estimator has exactly the parameters one would pass by hand for the paper's
    schedule, and trains the same model with the same trace as that classifier."""
    run = train_mlgpf(problem, epochs=2, warm_start=False, **SMALL)
    by_hand = MLGPFClassifier(**SMALL, epochs=2, warm_start=False, preprocessing="rows", validation_fraction=0,
                              early_stopping=False, refit=False).fit(problem.train.X, problem.train.Y)
    assert run.estimator.get_params() == by_hand.get_params()
    for ours, theirs in zip(run.model.trainable_variables, by_hand.model_.trainable_variables):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    np.testing.assert_array_equal(run.trace["elbo"], epoch_rows(by_hand.trace_)["elbo"])


def test_the_runs_trace_is_the_estimators_one_trace(problem) -> None:
    """``run.trace`` is the estimator's ``trace_`` without its set-up row: fit's columns (kl, the
    batch, the test P@k with ``validate``) and the estimator's (step, elapsed, objective)."""
    run = train_mlgpf(problem, epochs=2, validate=True, **SMALL)
    trace_ = run.estimator.trace_
    assert trace_["step"].iloc[0] == 0 and np.isnan(trace_["elbo"].iloc[0])  # the set-up row
    pd.testing.assert_frame_equal(run.trace, trace_.iloc[1:].reset_index(drop=True))
    assert {"step", "elapsed", "objective", "epoch", "elbo", "kl", "batch_size", "seconds", "P@1"} <= set(run.trace)
    assert list(run.trace["epoch"]) == [1, 2] and run.seconds["epochs"] == pytest.approx(run.trace["seconds"].sum())
    assert run.trace["P@1"].iloc[-1] == pytest.approx(run.metrics.loc["P", 1])


# ------------------------------------------------------------------------ checkpoints of the classifier
def test_the_classifiers_checkpoint_dir_resumes_and_refuses_other_settings(problem, tmp_path, monkeypatch) -> None:
    kw = dict(SMALL, validation_fraction=0, dtype="float64")
    X, Y = problem.train.X, problem.train.Y
    whole = MLGPFClassifier(epochs=3, **kw).fit(X, Y)
    MLGPFClassifier(epochs=2, checkpoint_dir=tmp_path, **kw).fit(X, Y)
    recipe = json.loads((tmp_path / "manifest.json").read_text())["recipe"]  # the one record of the settings
    assert (recipe["learning_rate"], recipe["seed"], recipe["kernel"]) == (0.005, 1, "se") and "epochs" not in recipe
    assert not (tmp_path / "settings.json").exists()
    resumed = MLGPFClassifier(epochs=3, checkpoint_dir=tmp_path, **kw).fit(X, Y)  # two restored epochs, one more
    np.testing.assert_allclose(epoch_rows(resumed.trace_)["elbo"], epoch_rows(whole.trace_)["elbo"], rtol=1e-9)
    _stop_at_the_build(monkeypatch)  # refused before anything is built
    with pytest.raises(CheckpointMismatchError, match=r"holds a run with other settings \(learning_rate: checkpoint "
                                                      r"0\.005, now 0\.01, seed: checkpoint 1, now 2\); use another"):
        MLGPFClassifier(epochs=4, checkpoint_dir=tmp_path, **dict(kw, learning_rate=0.01, seed=2)).fit(X, Y)


@pytest.mark.parametrize("params, refused", [
    ({}, "early stopping's best epoch"),  # the defaults hold rows out and stop early
    (dict(early_stopping=True), "early stopping's best epoch"),
    (dict(early_stopping=False), "the candidates of kernel='auto' on held-out rows"),
    (dict(validation_fraction=0, average_from=2), "the running mean of average_from"),
    (dict(validation_fraction=0), None),  # kernel="auto" without held-out rows: one kernel
    (dict(early_stopping=False, kernel="se"), None),  # one run on the kept rows, the bias guard after it
])
def test_checkpoint_dir_is_refused_with_what_no_checkpoint_keeps(tmp_path, monkeypatch, params, refused) -> None:
    clf = MLGPFClassifier(checkpoint_dir=str(tmp_path), epochs=1, **params)
    if refused is None:
        _stop_at_the_build(monkeypatch)
        with pytest.raises(_Built, match="'num_inducing'"):  # reached the build: nothing refused
            clf.fit(np.eye(12, 4), np.eye(12, 3))
        return
    with pytest.raises(ParameterError, match=f"checkpoint_dir checkpoints one training run .* no checkpoint keeps {refused}"):
        clf.fit(np.eye(12, 4), np.eye(12, 3))
    assert not any(tmp_path.iterdir())  # nothing written


def _as_before_the_manifest_held_the_settings(folder, problem, drop=()) -> None:
    """Make ``folder`` as the recipe wrote it before its manifest carried the settings: the manifest
    without them, and ``settings.json`` as the recipe wrote it (with the keys it had then, and
    without the settings in ``drop``, added since)."""
    manifest = json.loads((folder / "manifest.json").read_text())
    recipe = manifest.pop("recipe")
    (folder / "manifest.json").write_text(json.dumps(manifest))
    old = {k: v for k, v in recipe.items() if k not in drop}
    old.update(dataset=problem.name, epochs=1, whiten=recipe["q_family"] == "whitened", jit_compile=False,
               num_train=problem.train.num_points, kernel="SE")  # an alias, as older records kept the name given
    (folder / "settings.json").write_text(json.dumps(old))


def test_an_older_checkpoint_folder_resumes_or_is_refused_by_name(problem, tmp_path) -> None:
    kw = dict(SMALL, dtype="float64", unit_sphere_inducing=False)
    train_mlgpf(problem, epochs=1, checkpoint_dir=tmp_path / "old", **kw)
    _as_before_the_manifest_held_the_settings(tmp_path / "old", problem, drop=("kl_weight",))  # 1.0 implied
    run = train_mlgpf(problem, epochs=2, checkpoint_dir=tmp_path / "old", **kw)
    assert list(run.trace["epoch"]) == [1, 2]
    assert json.loads((tmp_path / "old" / "manifest.json").read_text())["recipe"]["kl_weight"] == 1.0
    assert not (tmp_path / "old" / "settings.json").exists()  # the manifest is the one record now

    train_mlgpf(problem, epochs=1, checkpoint_dir=tmp_path / "older", **kw)
    _as_before_the_manifest_held_the_settings(tmp_path / "older", problem, drop=("unit_sphere_inducing",))
    with pytest.raises(CheckpointMismatchError, match=r"checkpoint folder .*older holds a run with other settings "
                                                      r"\(unit_sphere_inducing: checkpoint False, now True\)"):
        train_mlgpf(problem, epochs=2, checkpoint_dir=tmp_path / "older", **dict(kw, unit_sphere_inducing=True))
    assert (tmp_path / "older" / "settings.json").is_file()  # a refused folder is left as it was


# ------------------------------------------------------------------------ what the classifier takes
def test_fit_calls_a_callback_after_early_stoppings_on_the_same_row_and_it_may_stop(problem) -> None:
    seen = []

    def callback(epoch, model, row):
        seen.append((epoch, row.get("held-out lpd")))
        return epoch == 2

    clf = MLGPFClassifier(**dict(SMALL, epochs=6, validation_fraction=0.2, refit=False)).fit(
        problem.train.X, problem.train.Y, callback=callback)
    assert [epoch for epoch, _ in seen] == [1, 2] and all(np.isfinite(lpd) for _, lpd in seen)
    assert clf.n_iter_ == 2


def test_the_refit_on_every_row_calls_the_callback_too(problem, monkeypatch) -> None:
    import mlgp.recipes.estimator as estimator_module

    monkeypatch.setattr(estimator_module, "refit_epochs", lambda *args, **kwargs: 2)
    seen = []
    clf = MLGPFClassifier(**dict(SMALL, epochs=3, validation_fraction=0.2, refit=True)).fit(
        problem.train.X, problem.train.Y, callback=lambda epoch, model, row: seen.append((epoch, len(row))))
    assert [epoch for epoch, _ in seen] == [1, 2, 3, 1, 2] and clf.refitted_


def test_chained_calls_every_callback_and_stops_when_any_asks() -> None:
    from mlgp.recipes.kernel_choice import chained

    calls = []

    def make(name, stop):
        return lambda epoch, model, row: calls.append(name) or stop

    assert chained(None, None) is None
    one = make("a", False)
    assert chained(None, one) is one
    assert chained(make("a", True), None, make("b", False))(1, None, {}) is True
    assert calls == ["a", "b"]  # the second is called after the first asked to stop
    assert chained(make("a", False), make("b", False))(1, None, {}) is False


def test_log_dir_is_a_parameter_of_the_classifier_and_the_recipe(problem, tmp_path) -> None:
    MLGPFClassifier(**dict(SMALL, epochs=1, validation_fraction=0), log_dir=str(tmp_path / "clf")).fit(
        problem.train.X, problem.train.Y)
    train_mlgpf(problem, epochs=1, log_dir=tmp_path / "recipe", **SMALL)
    for name in ("clf", "recipe"):
        assert list((tmp_path / name).glob("events.out.tfevents.*")), name


# ------------------------------------------------------------------------ M against N
def test_m_meets_n_in_one_check(problem, monkeypatch) -> None:
    """:func:`check_num_inducing` lowers a default M to N and checks a given one; the recipe lowers
    the dataset's M itself and leaves a given M to the classifier's one check."""
    import mlgp.recipes.estimator as estimator_module
    import mlgp.recipes.mlgpf as recipe_module

    assert check_num_inducing(100, 30, given=False) == 30 and check_num_inducing(20, 30, given=False) == 20
    assert check_num_inducing(30, 30) == 30
    with pytest.raises(ShapeError, match=r"^num_inducing M must be in \[1, N=30\] \(the training points used\), got 31$"):
        check_num_inducing(31, 30)
    calls = {"recipe": [], "classifier": []}
    for name, module in (("recipe", recipe_module), ("classifier", estimator_module)):
        monkeypatch.setattr(module, "check_num_inducing",
                            lambda M, N, *a, _seen=calls[name], **k: _seen.append((M, N, k)) or check_num_inducing(M, N, *a, **k))
    _stop_at_the_build(monkeypatch)
    with pytest.raises(_Built, match="'num_inducing': 40") as built:  # the dataset's M (100) on 40 rows: all of them
        train_mlgpf(problem, max_train=40, num_latent_gps=2, progress=False)
    assert built.value.args[0]["num_inducing"] == 40
    assert calls["recipe"] == [(100, 40, {"given": False})] and calls["classifier"] == [(40, 40, {"given": True})]
    calls["recipe"].clear(), calls["classifier"].clear()
    with pytest.raises(ShapeError, match=r"N=40\] \(the training points used\), got 50: 40 samples given, 40 left$"):
        train_mlgpf(problem, max_train=40, num_inducing=50, num_latent_gps=2, progress=False)
    assert calls == {"recipe": [], "classifier": [(50, 40, {"given": True})]}
