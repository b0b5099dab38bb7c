"""``fit``'s checkpoint folders (mlgp.training.checkpoints) and its divergence diagnosis.

A folder's manifest names the run that wrote it (model structure, training data, settings); a resume
from another run is refused before any restore, a damaged checkpoint falls back to an older one, and
existing checkpoints are never trained over from epoch 1. A diverged run says whether the bound was
already non-finite where training started (inputs, initialisation) or a step made it so (learning rate).
"""

from __future__ import annotations

import importlib
import json
import shutil
import warnings

import numpy as np
import pytest
import tensorflow as tf
from _training_problem import build, small_problem, values

from mlgp.errors import ArgumentError, CheckpointMismatchError, FileAccessError, MLGPError, TrainingDivergedError
from mlgp.models import mlgpf_from_data
from mlgp.training import fit

fit_module = importlib.import_module("mlgp.training.fit")

KW = dict(batch_size=20, learning_rate=0.01, seed=3, progress=False)


@pytest.fixture(scope="module")
def problem():
    return small_problem()


@pytest.fixture(scope="module")
def base(problem, tmp_path_factory):
    """A 3-epoch run's checkpoint folder (ckpt-1 … ckpt-3) and its trace."""
    folder = tmp_path_factory.mktemp("base") / "ckpt"
    trace = fit(build(problem), (problem.train.X, problem.train.Y), epochs=3, checkpoint_dir=folder, **KW)
    return folder, trace


@pytest.fixture
def folder(base, tmp_path):
    """A private copy of the base run's folder."""
    copy = tmp_path / "ckpt"
    shutil.copytree(base[0], copy)
    return copy


def _data(problem):
    return problem.train.X, problem.train.Y


def _files(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _recording_callback():
    seen = []
    return seen, lambda epoch, model, row: seen.append(epoch)


def _no_steps(monkeypatch):
    """Make every training step fail the test: the error must come before any step."""
    def make_step(*args, **kwargs):
        def step(xb, yb):
            raise AssertionError("a training step ran")
        return step
    monkeypatch.setattr(fit_module, "make_step", make_step)


# ----------------------------------------------------------------------------- 1. another model
def test_a_model_of_other_shapes_is_refused_naming_the_variable(problem, folder):
    before = _files(folder)
    with pytest.raises(CheckpointMismatchError, match=r"ckpt: the checkpoints were written for another model") as info:
        fit(build(problem, num_latent_gps=3), _data(problem), epochs=4, checkpoint_dir=folder, **KW)
    message = str(info.value)
    assert str(folder) in message and ".likelihood.loadings" in message
    assert "(8, 2)" in message and "(8, 3)" in message and "use another checkpoint_dir or delete it" in message
    assert isinstance(info.value, ValueError) and _files(folder) == before


def test_a_model_with_another_kernel_is_refused(problem, folder):
    with pytest.raises(CheckpointMismatchError, match=r"another model") as info:
        fit(build(problem, kernel="se+linear"), _data(problem), epochs=4, checkpoint_dir=folder, **KW)
    message = str(info.value)
    assert ".kernel.kernel.lengthscales" in message and "kernel: 'se' there, 'se+linear' now" in message
    assert "q_mu" not in message


# ----------------------------------------------------------------------------- 2. damaged checkpoints
def test_a_truncated_checkpoint_falls_back_to_the_older_one(problem, base, folder):
    _truncate(folder / "ckpt-3.data-00000-of-00001")
    seen, callback = _recording_callback()
    with pytest.warns(RuntimeWarning, match=r"ckpt-3: skipped, it cannot be restored \(.*\); trying ckpt-2"):
        trace = fit(build(problem), _data(problem), epochs=4, checkpoint_dir=folder, callback=callback, **KW)
    assert seen == [3, 4]  # resumed from the end of epoch 2
    assert trace["epoch"].tolist() == [1, 2, 3, 4]
    np.testing.assert_allclose(trace["elbo"].iloc[:3], base[1]["elbo"], rtol=1e-10)  # epoch 3 retrained alike
    assert tf.train.latest_checkpoint(str(folder)).endswith("ckpt-4")
    # the next resume finds the rewritten ckpt-3 intact: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = fit(build(problem), _data(problem), epochs=4, checkpoint_dir=folder, **KW)
    assert again["epoch"].tolist() == [1, 2, 3, 4]


def test_all_checkpoints_truncated_refuses_and_leaves_the_folder_alone(problem, folder):
    for path in folder.glob("ckpt-*.data-*"):
        _truncate(path)
    before = _files(folder)
    model = build(problem)
    start = values(model)
    with pytest.warns(RuntimeWarning) as record:
        with pytest.raises(MLGPError, match=r"ckpt: none of the checkpoints here can be restored "
                                            r"\(ckpt-3, ckpt-2, ckpt-1\)") as info:
            fit(model, _data(problem), epochs=4, checkpoint_dir=folder, **KW)
    assert isinstance(info.value, ValueError)
    assert [str(w.message).split(": skipped")[0][-6:] for w in record] == ["ckpt-3", "ckpt-2", "ckpt-1"]
    assert str(record[-1].message).endswith("no older checkpoint is left")
    assert _files(folder) == before
    for a, b in zip(start, values(model)):  # a half-done restore is undone
        assert np.array_equal(a, b)


def test_a_corrupt_state_file_resumes_from_the_newest_checkpoint(problem, base, folder):
    (folder / "checkpoint").write_text("model_checkpoint_path: \x00garbage{{{")
    kept = {name: data for name, data in _files(folder).items() if name.startswith(("ckpt-2", "ckpt-3"))}
    seen, callback = _recording_callback()
    trace = fit(build(problem), _data(problem), epochs=4, checkpoint_dir=folder, callback=callback, **KW)
    assert seen == [4]
    assert trace["epoch"].tolist() == [1, 2, 3, 4]
    np.testing.assert_allclose(trace["elbo"].iloc[:3], base[1]["elbo"], rtol=1e-12)
    after = _files(folder)
    assert all(after[name] == data for name, data in kept.items())  # not trained over
    assert sorted(p.name for p in folder.glob("ckpt-*.index")) == ["ckpt-2.index", "ckpt-3.index", "ckpt-4.index"]
    assert tf.train.latest_checkpoint(str(folder)).endswith("ckpt-4")  # the state file is whole again


# ----------------------------------------------------------------------------- 3./4. another run
def test_the_same_model_on_other_data_is_refused(problem, folder):
    X, Y = _data(problem)
    other = X.copy()
    other.data = other.data * 1.5
    with pytest.raises(CheckpointMismatchError,
                       match=r"ckpt: the checkpoints were written for other training data \(N=60 D=5 K=8, fingerprint "
                             r"[0-9a-f]{12}; this run: N=60 D=5 K=8, fingerprint [0-9a-f]{12}\); use another "
                             r"checkpoint_dir or delete it"):
        fit(build(problem), (other, Y), epochs=4, checkpoint_dir=folder, **KW)


def test_the_same_data_dense_or_sparse_matches(problem, folder):
    X, Y = _data(problem)
    seen, callback = _recording_callback()
    fit(build(problem), (X.toarray(), Y.toarray()), epochs=4, checkpoint_dir=folder, callback=callback, **KW)
    assert seen == [4]


@pytest.mark.parametrize("change, text", [
    (dict(batch_size=30), "batch_size: 20 there, 30 now"),
    (dict(learning_rate=0.02), "learning_rate: 0.01 there, 0.02 now"),
    (dict(seed=4), "seed: 3 there, 4 now"),
    (dict(negatives=3), "negatives: None there, 3 now"),
    (dict(batch_growth=(1, 5)), r"batch_growth: None there, \[1, 5\] now"),
])
def test_changed_training_settings_are_refused(problem, folder, change, text):
    with pytest.raises(CheckpointMismatchError, match=r"ckpt: the checkpoints were written with other training "
                                                      rf"settings \({text}\)"):
        fit(build(problem), _data(problem), epochs=4, checkpoint_dir=folder, **dict(KW, **change))


def test_the_manifest_records_the_run_and_epochs_may_grow(problem, base, folder):
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["format"] == "mlgp.checkpoint/1"
    assert manifest["model"]["class"] == "mlgp.models.mlgpf.MLGPF"
    assert {"name": ".q.q_sqrt", "shape": [2, 5, 5], "dtype": "float64"} in manifest["model"]["variables"]
    assert manifest["model"]["spec"]["kernel"] == "se"
    assert {k: manifest["data"][k] for k in ("N", "D", "K")} == dict(N=60, D=5, K=8)
    assert manifest["settings"] == dict(batch_size=20, negatives=None, learning_rate=0.01, optimizer="adam",
                                        natgrad_gamma=None, seed=3, batch_growth=None)
    assert manifest["checkpoints"] == [dict(file="ckpt-1", epoch=1), dict(file="ckpt-2", epoch=2),
                                       dict(file="ckpt-3", epoch=3)]
    seen, callback = _recording_callback()
    trace = fit(build(problem), _data(problem), epochs=5, checkpoint_dir=folder, callback=callback, **KW)
    assert seen == [4, 5] and trace["epoch"].tolist() == [1, 2, 3, 4, 5]
    manifest = json.loads((folder / "manifest.json").read_text())
    assert [c["epoch"] for c in manifest["checkpoints"]] == [3, 4, 5]
    assert not list(folder.glob(".*.tmp"))


# ----------------------------------------------------------------------------- 5. the folder itself
def test_a_checkpoint_dir_that_is_a_file_fails_before_any_step(problem, tmp_path, monkeypatch):
    path = tmp_path / "not_a_folder"
    path.write_text("x")
    _no_steps(monkeypatch)
    with pytest.raises(ArgumentError, match=rf"checkpoint_dir {path} is a file, not a folder"):
        fit(build(problem), _data(problem), epochs=2, checkpoint_dir=path, **KW)
    assert path.read_text() == "x"


def test_a_new_folder_is_made_with_its_manifest_before_the_first_step(problem, tmp_path, monkeypatch):
    folder = tmp_path / "a" / "b" / "ckpt"
    make_step = fit_module.make_step

    def checking_make_step(*args, **kwargs):
        step = make_step(*args, **kwargs)

        def checked(xb, yb):
            assert (folder / "manifest.json").is_file()
            return step(xb, yb)
        return checked

    monkeypatch.setattr(fit_module, "make_step", checking_make_step)
    (tmp_path / "a").mkdir()
    fit(build(problem), _data(problem), epochs=1, checkpoint_dir=folder, **KW)
    assert (folder / "ckpt-1.index").is_file()


def test_an_unwritable_folder_fails_before_any_step(problem, tmp_path, monkeypatch):
    files = importlib.import_module("mlgp.files")

    def refuse(src, dst):  # the move into place is refused, as in a read-only folder
        raise PermissionError(13, "Permission denied", str(dst))

    _no_steps(monkeypatch)
    monkeypatch.setattr(files.os, "replace", refuse)
    with pytest.raises(FileAccessError, match=r"cannot write .*ckpt/manifest\.json: Permission denied"):
        fit(build(problem), _data(problem), epochs=1, checkpoint_dir=tmp_path / "ckpt", **KW)


def test_checkpoints_without_a_manifest_are_refused(problem, folder, monkeypatch):
    _no_steps(monkeypatch)
    (folder / "manifest.json").unlink()
    with pytest.raises(CheckpointMismatchError, match=r"ckpt holds checkpoints but no manifest\.json"):
        fit(build(problem), _data(problem), epochs=4, checkpoint_dir=folder, **KW)
    (folder / "manifest.json").write_text("{not json")
    with pytest.raises(CheckpointMismatchError, match=r"manifest\.json cannot be read"):
        fit(build(problem), _data(problem), epochs=4, checkpoint_dir=folder, **KW)


# ----------------------------------------------------------------------------- 5b. a recipe's settings
def test_a_recipe_block_records_its_settings_in_the_manifest_and_checks_them_first(problem, tmp_path):
    """Inside ``recipe_settings`` the manifest carries the recipe's settings (the folder's one record
    of them); entering another block with other settings is refused, naming each, before any
    training; ``fit`` resuming outside a block keeps the record; a block for another folder
    records nothing here."""
    from mlgp.training.checkpoints import recipe_settings

    folder = tmp_path / "ckpt"
    with recipe_settings(folder, {"depth": 2, "schedule": (1, 5)}):
        fit(build(problem), _data(problem), epochs=1, checkpoint_dir=folder, **KW)
    assert json.loads((folder / "manifest.json").read_text())["recipe"] == {"depth": 2, "schedule": [1, 5]}
    fit(build(problem), _data(problem), epochs=2, checkpoint_dir=folder, **KW)  # resumed without the recipe
    assert json.loads((folder / "manifest.json").read_text())["recipe"] == {"depth": 2, "schedule": [1, 5]}
    with recipe_settings(folder, {"depth": 2, "schedule": [1, 5]}, older=lambda stored: {**stored, "new": 0}):
        pass  # the same settings (a tuple is stored as a list); ``older`` fills what an older record lacks
    with pytest.raises(CheckpointMismatchError, match=r"checkpoint folder .*ckpt holds a run with other settings "
                                                      r"\(depth: checkpoint 2, now 3, new: checkpoint 0, now 1\)"):
        with recipe_settings(folder, {"depth": 3, "schedule": [1, 5], "new": 1}, older=lambda s: {**s, "new": 0}):
            raise AssertionError("the block ran")
    with recipe_settings(tmp_path / "elsewhere", {"depth": 3}):
        fit(build(problem), _data(problem), epochs=1, checkpoint_dir=tmp_path / "plain", **KW)
    assert "recipe" not in json.loads((tmp_path / "plain" / "manifest.json").read_text())


def test_a_recipe_record_from_before_the_manifest_is_read_then_removed(problem, tmp_path):
    """A folder whose recipe kept its settings in ``settings.json`` is checked against that file
    (through ``older``); the manifest written in the block then carries them and the file goes. An
    unreadable file, or a record that is not an object, is refused by name."""
    from mlgp.training.checkpoints import recipe_settings

    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "settings.json").write_text(json.dumps({"depth": 2}))
    with pytest.raises(CheckpointMismatchError, match=r"\(depth: checkpoint 2, now 3\)"):
        with recipe_settings(folder, {"depth": 3}):
            pass
    with recipe_settings(folder, {"depth": 2, "added": 1}, older=lambda stored: {"added": 1, **stored}):
        fit(build(problem), _data(problem), epochs=1, checkpoint_dir=folder, **KW)
    assert json.loads((folder / "manifest.json").read_text())["recipe"] == {"depth": 2, "added": 1}
    assert not (folder / "settings.json").exists()
    for text, message in [("{not json", "the run's settings are not readable"), ("[1, 2]", "the run's settings are not a JSON object")]:
        other = tmp_path / f"bad{len(text)}"
        other.mkdir()
        (other / "settings.json").write_text(text)
        with pytest.raises(CheckpointMismatchError, match=rf"settings\.json: {message}.*; use another checkpoint_dir"):
            with recipe_settings(other, {"depth": 2}):
                pass


# ----------------------------------------------------------------------------- 6. divergence messages
def test_non_finite_parameters_before_training_name_the_variable(problem, monkeypatch):
    _no_steps(monkeypatch)
    model = build(problem)
    q = model.q_mu.unconstrained_variable
    bad = q.numpy().copy()
    bad[0, 0] = np.nan
    q.assign(bad)
    with pytest.raises(TrainingDivergedError, match=r"the parameters were non-finite before training \(\.q\.q_mu holds "
                                                    r"NaN or inf\).*initialisation") as info:
        fit(model, _data(problem), epochs=2, **KW)
    assert "smaller learning rate" not in str(info.value)


def test_a_singular_initial_q_names_the_initialisation(problem):
    model = mlgpf_from_data(*_data(problem), kernel="se", num_latent_gps=2, num_inducing=5, q_sqrt_init=0.0,
                            check_input=False)
    with pytest.raises(TrainingDivergedError, match=r"^the ELBO became -inf at epoch 1, step 1; the model was restored "
                                                    r"to the end of epoch 0\.") as info:
        fit(model, _data(problem), epochs=2, **KW)
    message = str(info.value)
    assert "already non-finite at the parameters training started from" in message
    assert "initialisation (e.g. q_sqrt_init=0 makes q(u) singular)" in message
    assert "smaller learning rate" not in message and "inputs' scale" not in message


def test_huge_inputs_name_the_inputs_scale(problem):
    X = problem.train.X.toarray()
    X[3, 1] = 1e300
    model = mlgpf_from_data(X, problem.train.Y, kernel="se", num_latent_gps=2, num_inducing=5, check_input=False)
    with pytest.raises(TrainingDivergedError, match=r"already non-finite at the parameters training started from") as info:
        fit(model, (X, problem.train.Y), epochs=2, check_input=False, **KW)
    message = str(info.value)
    assert "already non-finite at the parameters training started from" in message
    assert "the inputs' scale (the largest |feature value| is 1e+300" in message
    assert "smaller learning rate" not in message


def test_a_too_large_learning_rate_still_says_so(problem):
    with pytest.raises(TrainingDivergedError, match=r"^the ELBO became nan at epoch 1, step 2; the model was restored to "
                                                    r"the end of epoch 0\. Try a smaller learning rate\.") as info:
        fit(build(problem), _data(problem), epochs=2, **dict(KW, learning_rate=1e6))
    message = str(info.value)
    assert "learning_rate=1e+06" in message and "initialisation" not in message


@pytest.mark.parametrize("optimizer", ["adam", "natgrad"])
def test_a_nan_natgrad_gamma_is_refused_up_front(problem, monkeypatch, optimizer):
    _no_steps(monkeypatch)
    with pytest.raises(ArgumentError, match=r"natgrad_gamma must be a positive finite number, got nan"):
        fit(build(problem), _data(problem), epochs=1, optimizer=optimizer, natgrad_gamma=float("nan"), **KW)
