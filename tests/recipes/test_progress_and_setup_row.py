"""MLGPFClassifier's progress and the set-up row of its ``trace_``: each training run shows its
progress under a name that says what it does, ``progress=False`` prints nothing, and the seconds
before the first step are a row of their own, so that epoch 1's ``elapsed`` is set-up + its ``seconds``."""

from __future__ import annotations

import numpy as np
import pytest
from _clock import fake_clock, slowed

import mlgp.recipes.build as recipe
import mlgp.recipes.estimator as estimator_module
from mlgp.data.synthetic import default_problem
from mlgp.estimator import progress as progress_module
from mlgp.recipes import MLGPFClassifier

SMALL = dict(num_latent_gps=2, num_inducing=10, epochs=1)


def _names(err: str) -> list[str]:
    return [line.split(": ")[0] for line in err.splitlines() if line.endswith("started, 1 epoch")]


def test_each_run_is_named_for_what_it_does(monkeypatch, capsys) -> None:
    """kernel="auto" trains three candidates, then (made to happen here) a refit on every row."""
    monkeypatch.setattr(estimator_module, "refit_epochs", lambda *args, **kwargs: 1)
    ds = default_problem()
    clf = MLGPFClassifier(progress=True, refit=True, **SMALL).fit(ds.train.X, ds.train.Y)
    assert clf.refitted_
    assert _names(capsys.readouterr().err) == ["MLGPF kernel se+linear-shared (1 of 3)", "MLGPF kernel linear (2 of 3)",
                                              "MLGPF kernel se (3 of 3)", "MLGPF refit on all rows"]
    # the winner's set-up row: elapsed from the start of fit, seconds from when its own run began
    setup, chosen = clf.trace_.iloc[0], int(np.flatnonzero(clf.kernel_choice_["chosen"])[0])
    assert setup["step"] == 0 and 0 < setup["seconds"] <= setup["elapsed"]
    assert setup["elapsed"] - setup["seconds"] >= clf.kernel_choice_["seconds"].iloc[:chosen].sum() - 1e-9


def test_one_kernel_is_the_fit_and_a_terminal_gets_bars_of_those_names(monkeypatch, capsys) -> None:
    monkeypatch.setattr(progress_module, "draws_bars", lambda stream: True)
    ds = default_problem()
    MLGPFClassifier(progress=True, kernel="linear", validation_fraction=0, **SMALL).fit(ds.train.X, ds.train.Y)
    err = capsys.readouterr().err
    assert "MLGPF fit: 100%" in err and "MLGPF: " not in err and "started" not in err


def test_progress_off_prints_nothing(capsys) -> None:
    ds = default_problem()
    MLGPFClassifier(kernel="linear", validation_fraction=0, **SMALL).fit(ds.train.X, ds.train.Y)
    assert capsys.readouterr().err == ""


def test_the_set_up_is_a_row_of_its_own(monkeypatch) -> None:
    """A build that takes 1000 s of the fake clock: the first row (epoch and step 0) holds the
    seconds before the first step, with no bound, and epoch 1's elapsed is its elapsed plus epoch 1's seconds."""
    clock = fake_clock(monkeypatch)
    slowed(monkeypatch, clock, recipe, "_build", seconds=1000.0)
    ds = default_problem()
    clf = MLGPFClassifier(kernel="linear", num_latent_gps=2, num_inducing=10, epochs=2, validation_fraction=0,
                          calibration=None).fit(ds.train.X, ds.train.Y)
    trace = clf.trace_
    assert list(trace["epoch"]) == [0, 1, 2] and list(trace["step"]) == [0, 2, 4] and clf.n_iter_ == 2
    setup = trace.iloc[0]
    assert np.isnan(setup["objective"]) and np.isnan(setup["elbo"])
    assert 990.0 < setup["elapsed"] < 1002.0 and setup["seconds"] == setup["elapsed"]
    assert trace["elapsed"].iloc[1] == pytest.approx(setup["elapsed"] + trace["seconds"].iloc[1], abs=1e-9)
    assert np.isfinite(trace["objective"].iloc[1:]).all()

