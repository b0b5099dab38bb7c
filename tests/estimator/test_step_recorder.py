"""The one step recorder of every training loop (:mod:`mlgp.estimator.recorder`): the budget looked
at once per step, the row in the loop's column order with ``elapsed`` the budget's, the validation
``P@k``, the one callback signature, and the three reasons to stop — on the fake clock of
:mod:`tests._clock` (one second per reading)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from _clock import fake_clock

from mlgp.errors import ArgumentError, ShapeError
from mlgp.estimator.recorder import (HeldOutPair, StepRecorder, checked_validation, converged,
                                     validation_precision)
from mlgp.estimator.budget import Budget
from mlgp.scores import topk

COLUMNS = ("iteration", "elapsed", "objective", "seconds")


def _run(recorder: StepRecorder, objectives, looks_per_step: int = 0) -> list[dict]:
    """Steps of a loop with ``objectives``: ``looks_per_step`` inner looks (a minibatch loop), then
    ``end_step``; stops when the recorder says so."""
    for it, value in enumerate(objectives, 1):
        recorder.begin_step()
        for _ in range(looks_per_step):
            if recorder.look():
                break
        recorder.end_step()
        row = recorder.record(None, {"iteration": it, "objective": value})
        if recorder.stop(None, row):
            break
    return recorder.rows


def test_it_stops_after_the_step_that_spends_the_budget_and_traces_the_budgets_seconds(monkeypatch) -> None:
    """A 3.5 s budget on a clock of 1 s per reading: the 4th step's look reads 4 s, so it is the
    last; each row's ``elapsed`` is the budget's at that step's look, and the clock was read once
    per step (plus once when the budget was made)."""
    clock = fake_clock(monkeypatch)
    budget = Budget(3.5)
    recorder = StepRecorder(budget, COLUMNS)
    rows = _run(recorder, [-10.0, -9.0, -8.0, -7.0, -6.0, -5.0])
    assert [r["elapsed"] for r in rows] == [1.0, 2.0, 3.0, 4.0] and rows[-1]["elapsed"] == budget.elapsed
    assert recorder.stopped_by == "budget" and recorder.spent and clock.readings == 5
    assert all(r["seconds"] >= 0 for r in rows) and list(rows[0]) == list(COLUMNS)


def test_a_step_that_looked_inside_is_not_looked_at_again(monkeypatch) -> None:
    """Minibatch loops look after every minibatch: ``end_step`` then reads no clock, and the row's
    ``elapsed`` is the last minibatch's look."""
    clock = fake_clock(monkeypatch)
    recorder = StepRecorder(Budget(None), COLUMNS)
    rows = _run(recorder, [-3.0, -2.0], looks_per_step=3)
    assert clock.readings == 1 + 2 * 3 and [r["elapsed"] for r in rows] == [3.0, 6.0]


def test_without_a_budget_no_clock_is_read_and_elapsed_is_nan(monkeypatch) -> None:
    clock = fake_clock(monkeypatch)
    rows = _run(StepRecorder(None, COLUMNS), [-3.0, -2.0, -1.0])
    assert clock.readings == 0 and len(rows) == 3 and all(math.isnan(r["elapsed"]) for r in rows)


def test_the_tolerance_stops_after_the_first_small_change() -> None:
    recorder = StepRecorder(Budget(None), COLUMNS, tol=0.01)
    rows = _run(recorder, [-100.0, -50.0, -49.9, -49.8])
    assert len(rows) == 3 and recorder.stopped_by == "tolerance"
    assert converged([-100.0, -99.0], 0.0102) and not converged([-100.0, -99.0], 0.0100)


def test_the_callback_gets_step_state_and_the_traced_row_adds_columns_and_stops() -> None:
    """``callback(step, state, row)``: the step column's value, the loop's state, the row as traced
    (``elapsed`` set); a column it adds is in the trace; a true return stops."""
    seen = []

    def callback(step, state, row):
        seen.append((step, state, dict(row)))
        row["extra"] = 10 * step
        return step == 2

    recorder = StepRecorder(Budget(None), ("chain", "sweep", "objective", "seconds", "elapsed"), step_column="sweep",
                            callback=callback)
    for sweep in (1, 2, 3):
        recorder.begin_step()
        recorder.end_step()
        row = recorder.record("the state", {"chain": 0, "sweep": sweep, "objective": -1.0})
        if recorder.stop("the state", row):
            break
    assert [(s, st) for s, st, _ in seen] == [(1, "the state"), (2, "the state")]
    assert set(seen[0][2]) == {"chain", "sweep", "objective", "seconds", "elapsed"}
    assert recorder.stopped_by == "callback" and recorder.trace()["extra"].tolist() == [10, 20]


def test_an_empty_trace_has_the_loops_columns() -> None:
    assert list(StepRecorder(None, COLUMNS).trace().columns) == list(COLUMNS)


def _labels(rng, N, K):
    return sp.csr_matrix((rng.random((N, K)) < 0.4).astype(np.float64))


def test_validation_precision_is_the_mean_share_of_true_labels_in_the_top_k() -> None:
    """Against a loop over the rows: 100 × mean_i |top-k(i) ∩ y_i| / k."""
    rng = np.random.default_rng(0)
    scores, Y = rng.normal(size=(30, 7)), _labels(rng, 30, 7)
    dense = Y.toarray()
    expected = {f"P@{k}": 100 * np.mean([dense[i, np.argsort(-scores[i])[:k]].sum() / k for i in range(30)])
                for k in (1, 3, 5)}
    got = validation_precision(Y, topk(scores, 5), (1, 3, 5))
    assert list(got) == ["P@1", "P@3", "P@5"]
    np.testing.assert_allclose([got[k] for k in expected], list(expected.values()), rtol=1e-12)


def test_the_recorder_adds_the_pairs_precision_at_the_states_ranking() -> None:
    rng = np.random.default_rng(1)
    X, Y = rng.normal(size=(20, 4)), _labels(rng, 20, 6)
    W = rng.normal(size=(4, 6))
    pair = checked_validation((X, Y), num_features=4, num_labels=6)
    recorder = StepRecorder(None, COLUMNS, validation=pair, rank=lambda state, Xv, k: topk(Xv @ state, k))
    recorder.begin_step()
    recorder.end_step()
    row = recorder.record(W, {"iteration": 1, "objective": 0.0})
    assert row == {**row, **validation_precision(Y, topk(X @ W, 5), (1, 3, 5))} and "P@5" in row


@pytest.mark.parametrize("K, ks", [(8, (1, 3, 5)), (4, (1, 3)), (2, (1,))])
def test_the_default_cut_offs_are_1_3_5_up_to_k(K, ks) -> None:
    rng = np.random.default_rng(2)
    pair = checked_validation((rng.normal(size=(5, 3)), _labels(rng, 5, K)), num_features=3, num_labels=K)
    assert pair.ks == ks and checked_validation(pair, num_features=99, num_labels=99) is pair
    assert checked_validation(None, num_features=3, num_labels=K) is None


def test_the_pair_is_checked_and_preprocessed_once() -> None:
    rng = np.random.default_rng(3)
    X, Y = rng.normal(size=(5, 3)), _labels(rng, 5, 4)
    pair = checked_validation([X, Y], num_features=3, num_labels=4, ks=(2,), preprocess=lambda A: 2 * A)
    assert isinstance(pair, HeldOutPair) and pair.ks == (2,) and sp.issparse(pair.Y)
    np.testing.assert_array_equal(pair.X, 2 * X)


@pytest.mark.parametrize("validation, error, message", [
    ("not a pair", ArgumentError, r"validation must be a pair \(X_val, Y_val\), got str"),
    ((1, 2, 3), ArgumentError, r"validation must be a pair \(X_val, Y_val\), got tuple of length 3"),
    ("wrong D", ShapeError, r"validation X"),
    ("wrong K", ShapeError, r"validation Y has 5 labels but the model expects K = 4"),
    ("wrong N", ShapeError, r"validation Y has 4 rows but the features have 5"),
    ("nan", ShapeError, r"validation X"),
])
def test_a_bad_pair_is_refused(validation, error, message) -> None:
    rng = np.random.default_rng(4)
    X, Y = rng.normal(size=(5, 3)), _labels(rng, 5, 4)
    bad_x = X.copy()
    bad_x[1, 1] = np.nan
    pairs = {"wrong D": (X[:, :2], Y), "wrong K": (X, _labels(rng, 5, 5)), "wrong N": (X, Y[:4]), "nan": (bad_x, Y)}
    with pytest.raises(error, match=message):
        checked_validation(pairs.get(validation, validation), num_features=3, num_labels=4)


@pytest.mark.parametrize("ks, message", [((1, 5), "each at most K = 4"), ((), "at least one cut-off"),
                                         ((0,), "each k of validation_ks must be")])
def test_bad_cut_offs_are_refused_before_any_work(ks, message) -> None:
    rng = np.random.default_rng(5)
    with pytest.raises((ArgumentError, ShapeError), match=message):
        checked_validation((rng.normal(size=(5, 3)), _labels(rng, 5, 4)), num_features=3, num_labels=4, ks=ks)
