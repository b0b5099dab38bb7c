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
from mlgp.comparison import checks


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_worker_killed_by_a_signal_is_recorded_with_its_number(tmp_path, monkeypatch, signum) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(FOLDER), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setattr(checks, "make_estimator", lambda name, *args, **kwargs: DiesInFit(signum=int(signum)))
    out = tmp_path / "c"
    result = mlgp.compare("frequency", dataset=tiny(), out=out).results.set_index("family")
    error = result.loc["frequency", "error"]
    assert f"killed by signal {int(signum)} ({signum.name})" in error, error
    assert error.startswith("the fitting process ended without a result")
    assert json.loads((out / "runs" / "frequency.json").read_text())["row"]["error"] == error


def test_geneml_traces_its_log_posterior_per_training_point(monkeypatch) -> None:
    """The trace's ``objective`` is the fitted GenEML's log posterior over N."""
    made, make = {}, checks.make_estimator

    def keep(name, *args, **kwargs):
        made[name] = make(name, *args, **kwargs)
        return made[name]

    monkeypatch.setattr(checks, "make_estimator", keep)
    ds = tiny()
    traces = mlgp.compare("geneml", dataset=ds, settings={"geneml": {"n_components": 2, "max_iter": 3}},
                          isolate=False).traces
    fitted = made["geneml"].trace_
    assert len(fitted) == 3 and ds.train.X.shape[0] == 40
    traced = traces[traces["quantity"] == "objective"]
    np.testing.assert_array_equal(traced["step"], np.arange(1, 4))
    np.testing.assert_allclose(traced["value"], fitted["log_posterior"] / 40, rtol=1e-12)


def test_how_a_process_ended_is_worded() -> None:
    from mlgp.comparison.isolation import _ending

    assert _ending(0) == "exit status 0" and _ending(3) == "exit status 3"
    assert _ending(-9) == "killed by signal 9 (SIGKILL)"
    assert _ending(-200) == "killed by signal 200"  # no such signal: the number alone


@pytest.mark.parametrize("K, cut_offs", [(4, [1, 3]), (5, [1, 3, 5])])
def test_the_cut_offs_are_those_up_to_k(K, cut_offs) -> None:
    """P@k, nDCG@k and PSP@k for every k ≤ K among 1, 3, 5 (k = K included), measured in this
    process; ``predict_seconds`` is the seconds of the prediction (less than the whole call's)."""
    import time

    from mlgp.baselines import LabelFrequency
    from mlgp.comparison.isolation import run_one
    from mlgp.data.synthetic import mlgpf_prior

    ds = mlgpf_prior(num_train=30, num_test=12, num_features=3, num_labels=K, num_latent=2, seed=1)
    t0 = time.perf_counter()
    row, _ = run_one("frequency", LabelFrequency(), ds, ds.inverse_propensity(), False)
    seconds = time.perf_counter() - t0
    assert row["error"] == ""
    for metric in ("P", "nDCG", "PSP"):
        assert sorted(int(c.split("@")[1]) for c in row if c.startswith(f"{metric}@")) == cut_offs
    assert 0 <= row["predict_seconds"] <= seconds and 0 <= row["fit_seconds"] <= seconds


def test_the_worker_in_this_process(tmp_path, monkeypatch) -> None:
    """``worker.main``: ``trace.csv`` holds the trace's own columns (no index) and ``row.json`` the
    row; no environment variable of the parent's decides anything (the QUIET flag is gone)."""
    import pickle

    import pandas as pd

    from mlgp.comparison import isolation, worker

    trace = pd.DataFrame({"family": ["x", "x"], "step": [1, 2], "seconds": [0.5, 1.0], "quantity": ["P@1"] * 2,
                          "value": [10.0, 20.0]})
    monkeypatch.setattr(isolation, "run_one", lambda *job: ({"family": job[0], "P@1": np.float64(20.0)}, trace))
    (tmp_path / "job.pickle").write_bytes(pickle.dumps(("x", None, None, None, False)))
    assert worker.main(str(tmp_path)) == 0
    assert not hasattr(isolation, "QUIET")
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "trace.csv"), trace)
    assert json.loads((tmp_path / "row.json").read_text()) == {"family": "x", "P@1": 20.0}


@pytest.mark.parametrize("uses", [True, False])
def test_a_family_that_uses_tensorflow_has_it_brought_up_quietly(monkeypatch, uses) -> None:
    """:func:`run_one` (in this process, and so in a worker) calls :func:`mlgp.quiet.quiet_tensorflow`
    before fitting exactly when the family uses TensorFlow: the library is quiet by itself, with no
    ``quiet_tensorflow`` argument (which ``compare`` used to need)."""
    from mlgp.baselines import LabelFrequency
    from mlgp.comparison import isolation
    from mlgp.data.synthetic import mlgpf_prior

    quietened = []
    monkeypatch.setattr(isolation, "quiet_tensorflow", lambda: quietened.append(1))
    monkeypatch.setattr(isolation, "uses_tensorflow", lambda estimator: uses)
    ds = mlgpf_prior(num_train=20, num_test=6, num_features=3, num_labels=3, num_latent=2, seed=1)
    row, _ = isolation.run_one("frequency", LabelFrequency(), ds, ds.inverse_propensity(), False)
    assert row["error"] == "" and len(quietened) == int(uses)


def test_a_trace_of_at_most_500_steps_is_kept_as_it_is() -> None:
    import pandas as pd

    from mlgp.comparison import traces

    def trace(steps: int) -> pd.DataFrame:
        return pd.DataFrame({"family": "f", "step": np.arange(1, steps + 1), "seconds": np.arange(steps) * 0.1,
                             "quantity": "P@1", "value": np.arange(steps, dtype=float)})

    full = trace(traces.MAX_TRACE_STEPS)
    assert traces.thinned(full) is full
    thin = traces.thinned(trace(traces.MAX_TRACE_STEPS + 1))
    assert tuple(thin.columns) == traces.TRACE_COLUMNS and list(thin.index) == list(range(traces.MAX_TRACE_STEPS))


def test_an_empty_trace_gives_an_empty_trace_frame() -> None:
    from types import SimpleNamespace

    import pandas as pd

    from mlgp.comparison import traces

    for trace_ in (None, pd.DataFrame()):
        frame = traces.trace_of("f", SimpleNamespace(trace_=trace_))
        assert len(frame) == 0 and tuple(frame.columns) == traces.TRACE_COLUMNS
