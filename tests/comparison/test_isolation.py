"""Fitting one family of a comparison (:mod:`mlgp.comparison.isolation`): a worker process killed
by a signal is recorded with the signal's number, and the traces are what the families recorded."""

from __future__ import annotations

import json
import os
import signal

import numpy as np
import pytest
from _compare_stubs import FOLDER, DiesInFit, tiny

import mlgp
from mlgp.comparison import run


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_worker_killed_by_a_signal_is_recorded_with_its_number(tmp_path, monkeypatch, signum) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(FOLDER), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setattr(run, "make_estimator", lambda name, *args, **kwargs: DiesInFit(signum=int(signum)))
    out = tmp_path / "c"
    result = mlgp.compare("frequency", dataset=tiny(), out=out).results.set_index("family")
    error = result.loc["frequency", "error"]
    assert f"killed by signal {int(signum)} ({signum.name})" in error, error
    assert error.startswith("the fitting process ended without a result")
    assert json.loads((out / "runs" / "frequency.json").read_text())["row"]["error"] == error


def test_geneml_traces_its_log_posterior_per_training_point(monkeypatch) -> None:
    """The trace's ``objective`` is the fitted GenEML's log posterior over N."""
    made, make = {}, run.make_estimator

    def keep(name, *args, **kwargs):
        made[name] = make(name, *args, **kwargs)
        return made[name]

    monkeypatch.setattr(run, "make_estimator", keep)
    ds = tiny()
    traces = mlgp.compare("geneml", dataset=ds, settings={"geneml": {"n_components": 2, "max_iter": 3}},
                          isolate=False).traces
    fitted = made["geneml"].trace_
    assert len(fitted) == 3 and ds.train.X.shape[0] == 40
    traced = traces[traces["quantity"] == "objective"]
    np.testing.assert_array_equal(traced["step"], np.arange(1, 4))
    np.testing.assert_allclose(traced["value"], fitted["log_posterior"] / 40, rtol=1e-12)
