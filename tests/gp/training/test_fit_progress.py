"""What ``fit`` shows and traces of its progress: its lines off a terminal (a fake clock and a
captured standard error), nothing with ``progress=False``, and the epoch's ``elbo`` as the
|B|-weighted mean of its step estimates."""

from __future__ import annotations

import importlib
import re

import numpy as np
import pytest
from _clock import fake_clock
from _training_problem import build, small_problem

from mlgp.estimator import progress as progress_module
from mlgp.training import fit

fit_module = importlib.import_module("mlgp.training.fit")


@pytest.fixture(scope="module")
def problem():
    return small_problem()


def test_off_a_terminal_fit_prints_a_line_every_interval(problem, monkeypatch, capsys):
    """60 rows in minibatches of 20: 3 steps an epoch, 1 s a step on the fake clock; with lines due
    every 5 s: the start, epoch 1, then a line at the step or epoch end where 5 s have passed (an
    epoch's last step is left to its epoch's line), and the last epoch."""
    fake_clock(monkeypatch)
    monkeypatch.setattr(progress_module, "LINE_SECONDS", 5.0)
    fit(build(problem), (problem.train.X, problem.train.Y), epochs=10, batch_size=20, negatives=3, progress=True,
        progress_name="MLGPF refit on all rows")
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "MLGPF refit on all rows: started, 10 epochs"
    assert re.fullmatch(r"MLGPF refit on all rows: epoch 1/10 \(first step at [\d.]+ s\), 3\.0 s, elbo -[\d.e+]+", lines[1])
    shown = [re.sub(r", elbo -[\d.e+]+$", ", elbo …", line.split(": ", 1)[1]) for line in lines[2:]]
    assert shown == ["epoch 3/10, step 2/3, 8.0 s", "epoch 5/10, step 1/3, 13.0 s", "epoch 6/10, 18.0 s, elbo …",
                     "epoch 8/10, step 2/3, 23.0 s", "epoch 10/10, step 1/3, 28.0 s", "epoch 10/10, 30.0 s, elbo …"]


def test_the_held_out_density_and_an_early_stop_are_in_the_lines(problem, capsys):
    def stop_at_two(epoch, model, row):
        row["held-out lpd"] = -1.25 * epoch
        return epoch == 2

    trace = fit(build(problem), (problem.train.X, problem.train.Y), epochs=50, batch_size=30, callback=stop_at_two)
    lines = capsys.readouterr().err.splitlines()
    assert len(trace) == 2 and lines[0] == "MLGPF fit: started, 50 epochs"
    assert lines[1].endswith("held-out lpd -1.25") and lines[-1].startswith("MLGPF fit: epoch 2/50, ")
    assert lines[-1].endswith("held-out lpd -2.5")


def test_progress_off_prints_nothing(problem, monkeypatch, capsys):
    fake_clock(monkeypatch, tick=100.0)  # every step would make a line due
    fit(build(problem), (problem.train.X, problem.train.Y), epochs=3, batch_size=20, progress=False)
    assert capsys.readouterr().err == ""


def test_a_terminal_gets_a_bar_named_for_the_run(problem, monkeypatch, capsys):
    monkeypatch.setattr(progress_module, "draws_bars", lambda stream: True)
    fit(build(problem), (problem.train.X, problem.train.Y), epochs=2, batch_size=30, progress_name="MLGPF kernel se (3 of 3)")
    err = capsys.readouterr().err
    assert "MLGPF kernel se (3 of 3): 100%" in err and "started" not in err


def test_the_epoch_elbo_weighs_each_minibatch_by_its_rows(problem, monkeypatch):
    """60 rows in minibatches of 25: 25, 25 and 10 rows. The last estimate is scaled by N/10; the
    epoch's ``elbo`` (and ``kl``) average the step estimates with weights |B|, so every row counts once."""
    seen = []
    real = fit_module.make_step

    def recording(*args, **kwargs):
        step = real(*args, **kwargs)

        def call(xb, yb):
            elbo, kl = step(xb, yb)
            seen.append((float(elbo), float(kl), int(xb.shape[0])))
            return elbo, kl

        return call

    monkeypatch.setattr(fit_module, "make_step", recording)
    trace = fit(build(problem), (problem.train.X, problem.train.Y), epochs=2, batch_size=25, negatives=3,
                progress=False)
    elbo, kl, rows = (np.array(v) for v in zip(*seen))
    assert rows.tolist() == [25, 25, 10] * 2
    for e in range(2):
        part = slice(3 * e, 3 * e + 3)
        assert trace["elbo"].iloc[e] == pytest.approx(np.average(elbo[part], weights=rows[part]), rel=1e-12)
        assert trace["kl"].iloc[e] == pytest.approx(np.average(kl[part], weights=rows[part]), rel=1e-12)
        assert trace["elbo"].iloc[e] != pytest.approx(np.mean(elbo[part]), rel=1e-9)
        assert trace["elbo_std"].iloc[e] == pytest.approx(np.std(elbo[part]), rel=1e-12)
    np.testing.assert_allclose(trace["expected_log_lik"] - trace["kl"], trace["elbo"], rtol=1e-12)
