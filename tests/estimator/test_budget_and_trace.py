"""What every family that trains in steps shares (:mod:`mlgp.estimator.budget`): the one time
budget :class:`Budget` (checked, counted from when it is made, spent at ``elapsed >= seconds``) and
the one trace form of :func:`common_trace` (:data:`TRACE_COLUMNS` first, ``objective`` per point)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from _clock import fake_clock

from mlgp.errors import ArgumentError
from mlgp.estimator.budget import Budget
from mlgp.estimator.recorder import TRACE_COLUMNS, common_trace


# ------------------------------------------------------------------------------- Budget --
@pytest.mark.parametrize("bad", [True, False, "5", float("nan"), 0, 0.0, -1, -0.5, [3], complex(1, 0), math.inf,
                                 -math.inf, 10**400])
def test_a_budget_that_is_not_a_positive_number_is_refused(bad) -> None:
    """A bool (though an int), a string, NaN, zero, a negative number, a non-real, or inf (say None
    for no bound; an int too large for a float is inf): ArgumentError (a ValueError) naming
    ``max_seconds`` and the value given."""
    with pytest.raises(ArgumentError, match=r"max_seconds must be a positive number \(finite seconds\) or None, got ") \
            as info:
        Budget(bad)
    assert repr(bad) in str(info.value)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("good, seconds", [(None, math.inf), (3, 3.0), (0.25, 0.25), (np.float64(2.5), 2.5),
                                           (np.int64(7), 7.0), (1e-9, 1e-9), (1e300, 1e300)])
def test_a_positive_number_or_none_is_taken_as_float_seconds(good, seconds) -> None:
    """``None`` means no bound, ``seconds == inf``; any finite positive real (numpy's too) is
    kept as a Python float."""
    budget = Budget(good)
    assert budget.seconds == seconds and type(budget.seconds) is float
    assert Budget().seconds == math.inf


def test_no_budget_is_never_spent(monkeypatch) -> None:
    """``None``: however long the fit, ``spent()`` is False, and the clock is still read."""
    clock = fake_clock(monkeypatch, tick=1e6)
    budget = Budget(None)
    assert not any(budget.spent() for _ in range(5))
    assert budget.elapsed == 5e6 and clock.readings == 6


def test_the_clock_starts_at_zero_when_the_budget_is_made(monkeypatch) -> None:
    """``elapsed`` counts from construction: 0 before any look, not the clock's absolute reading
    (here 100 s on), and one look later it is the one tick since."""
    clock = fake_clock(monkeypatch)
    clock.advance(100.0)
    budget = Budget(10.0)
    assert budget.started == 100.0 and budget.elapsed == 0.0 and clock.readings == 1
    assert not budget.spent()
    assert budget.elapsed == 1.0 and clock.readings == 2


def test_spent_once_elapsed_reaches_the_bound_exactly(monkeypatch) -> None:
    """A step, then a look (one reading): with a 1 s clock and ``max_seconds=4.0`` the looks read
    1, 2, 3, 4 s and the fourth (``elapsed == seconds``) ends it: exactly 4 steps, 5 readings."""
    clock = fake_clock(monkeypatch)
    budget = Budget(4.0)
    steps = 0
    while True:
        steps += 1
        if budget.spent():
            break
        assert steps < 100
    assert steps == 4 and budget.elapsed == 4.0 and clock.readings == 5
    looks = []
    budget = Budget(3.5)
    for _ in range(5):
        looks.append(budget.spent())
    assert looks == [False, False, False, True, True]


def test_each_look_reads_the_clock_once_and_updates_elapsed(monkeypatch) -> None:
    """``spent`` reads the clock once per call and stores ``elapsed`` (what the trace records)."""
    clock = fake_clock(monkeypatch, tick=0.5)
    budget = Budget(1.0)
    assert [budget.spent(), budget.elapsed, clock.readings] == [False, 0.5, 2]
    assert [budget.spent(), budget.elapsed, clock.readings] == [True, 1.0, 3]


def test_of_keeps_a_callers_budget_and_makes_one_otherwise(monkeypatch) -> None:
    """``Budget.of``: a budget is passed through (its start kept); a number or None starts a new one."""
    clock = fake_clock(monkeypatch)
    mine = Budget(9.0)
    assert Budget.of(mine) is mine and mine.started == 0.0
    new = Budget.of(2.0)
    assert isinstance(new, Budget) and new.seconds == 2.0 and new.started == 1.0 and clock.readings == 2
    assert Budget.of(None).seconds == math.inf
    with pytest.raises(ArgumentError, match=r"^max_seconds must be a positive number \(finite seconds\) or None, got -1$"):
        Budget.of(-1)


def test_repr_shows_seconds_and_elapsed(monkeypatch) -> None:
    fake_clock(monkeypatch, tick=0.123456)
    budget = Budget(4)
    budget.spent()
    assert repr(budget) == "Budget(seconds=4.0, elapsed=0.123)"


# -------------------------------------------------------------------------- common_trace --
def test_trace_columns_are_step_elapsed_objective_in_that_order() -> None:
    assert TRACE_COLUMNS == ("step", "elapsed", "objective")


def test_the_common_columns_come_first_then_the_familys_own_in_their_order() -> None:
    """The exact column list: TRACE_COLUMNS, then the family's columns as they were (``elbo`` kept)."""
    trace = pd.DataFrame({"zeta": [1.0, 2.0, 3.0], "elbo": [-30.0, -20.0, -10.0], "seconds": [1.0, 2.0, 0.5],
                          "P@1": [0.1, 0.2, 0.3], "step": [1, 2, 3]})
    out = common_trace(trace, 10, step="step", total="elbo")
    assert list(out.columns) == ["step", "elapsed", "objective", "zeta", "elbo", "seconds", "P@1"]
    np.testing.assert_array_equal(out["elbo"], [-30.0, -20.0, -10.0])
    assert list(trace.columns) == ["zeta", "elbo", "seconds", "P@1", "step"]  # the family's own is not changed


def test_without_a_step_column_the_rows_count_from_one() -> None:
    """``step=None``: steps 1..n for an odd number of rows and for one row (integers)."""
    for n in (1, 3, 5):
        trace = pd.DataFrame({"total": np.arange(n, dtype=float), "seconds": np.ones(n)})
        out = common_trace(trace, 1, step=None, total="total")
        assert out["step"].tolist() == list(range(1, n + 1))
        assert np.issubdtype(out["step"].dtype, np.integer)


def test_a_step_column_is_kept_as_integers_where_it_does_not_start_at_one() -> None:
    """``step="iteration"``: the family's count as it is (a resumed or thinned run: 5, 7, 9), made
    integer; the rows are renumbered from 0 whatever their index was."""
    trace = pd.DataFrame({"iteration": [5.0, 7.0, 9.0], "total": [1.0, 2.0, 3.0], "seconds": [1.0] * 3},
                         index=[10, 11, 12])
    out = common_trace(trace, 1, step="iteration", total="total")
    assert out["step"].tolist() == [5, 7, 9] and np.issubdtype(out["step"].dtype, np.integer)
    assert out.index.tolist() == [0, 1, 2]
    assert out["iteration"].tolist() == [5.0, 7.0, 9.0]


def test_the_objective_is_the_total_per_training_point() -> None:
    """``objective = total / num_points`` (float64, even from a column of Python numbers; no points:
    divided by 1), the total kept."""
    trace = pd.DataFrame({"elbo": [-40, -20, 4], "seconds": [1.0, 1.0, 1.0]})
    out = common_trace(trace, 8, step=None, total="elbo")
    np.testing.assert_array_equal(out["objective"], [-5.0, -2.5, 0.5])
    assert out["objective"].dtype == np.float64
    np.testing.assert_array_equal(out["elbo"], [-40, -20, 4])
    np.testing.assert_array_equal(common_trace(trace, 0, step=None, total="elbo")["objective"], [-40.0, -20.0, 4.0])
    np.testing.assert_array_equal(common_trace(trace, 1, step=None, total="elbo")["objective"], [-40.0, -20.0, 4.0])
    boxed = common_trace(trace.astype({"elbo": object}), 8, step=None, total="elbo")  # Python numbers
    assert boxed["objective"].dtype == np.float64 and boxed["objective"].tolist() == [-5.0, -2.5, 0.5]


def test_a_total_called_objective_is_kept_as_log_posterior() -> None:
    """EM's total is its ``objective`` column: it becomes ``log_posterior`` (the sum) and
    ``objective`` the per-point value, each once."""
    trace = pd.DataFrame({"iteration": [1, 2, 3], "objective": [-90.0, -60.0, -30.0], "seconds": [1.0] * 3})
    out = common_trace(trace, 3, step="iteration", total="objective")
    assert list(out.columns) == ["step", "elapsed", "objective", "iteration", "log_posterior", "seconds"]
    np.testing.assert_array_equal(out["log_posterior"], [-90.0, -60.0, -30.0])
    np.testing.assert_array_equal(out["objective"], [-30.0, -20.0, -10.0])
    other = common_trace(trace.rename(columns={"objective": "elbo"}), 3, step="iteration", total="elbo")
    assert "log_posterior" not in other


def test_elapsed_is_kept_where_recorded_else_the_running_sum_of_seconds() -> None:
    """``elapsed`` from the budget is kept (even partly missing); absent, or missing in every row,
    it is the cumulative ``seconds``."""
    base = {"total": [1.0, 2.0, 3.0], "seconds": [0.5, 1.0, 2.0]}
    out = common_trace(pd.DataFrame(base), 1, step=None, total="total")
    np.testing.assert_array_equal(out["elapsed"], [0.5, 1.5, 3.5])
    recorded = common_trace(pd.DataFrame({**base, "elapsed": [10.0, 20.0, 30.0]}), 1, step=None, total="total")
    np.testing.assert_array_equal(recorded["elapsed"], [10.0, 20.0, 30.0])
    partial = common_trace(pd.DataFrame({**base, "elapsed": [np.nan, 20.0, np.nan]}), 1, step=None, total="total")
    np.testing.assert_array_equal(partial["elapsed"], [np.nan, 20.0, np.nan])
    missing = common_trace(pd.DataFrame({**base, "elapsed": [np.nan] * 3}), 1, step=None, total="total")
    np.testing.assert_array_equal(missing["elapsed"], [0.5, 1.5, 3.5])
    assert list(missing.columns) == ["step", "elapsed", "objective", "total", "seconds"]


# ------------------------------------------------------------ max_seconds, checked once --
def test_a_trusted_budget_is_not_checked_again() -> None:
    """:meth:`Budget.trusted` takes its caller's word: no check (a -1 budget is spent at once)."""
    budget = Budget.trusted(-1.0)
    assert budget.seconds == -1.0 and budget.spent()
    assert Budget.trusted(None).seconds == math.inf


BUDGETED = ("fastxml", "geneml", "mlgpf")


@pytest.mark.parametrize("family", BUDGETED)
@pytest.mark.parametrize("bad", [True, np.bool_(True), float("nan"), -1, 0, "5"])
def test_every_budgeted_family_refuses_a_bad_max_seconds_in_its_constraints(family, bad) -> None:
    """The parameter constraint :data:`MAX_SECONDS` refuses what :class:`Budget` refuses (a bool
    too, though scikit-learn's intervals take it for a number): ``fit`` can then trust the value."""
    from mlgp.estimator import ParameterError
    from mlgp.families import FAMILIES

    estimator = FAMILIES[family].estimator_class(max_seconds=bad)
    with pytest.raises(ParameterError, match="max_seconds"):
        estimator._validate_params()


@pytest.mark.parametrize("family", BUDGETED)
def test_fit_does_not_check_max_seconds_a_second_time(family, monkeypatch) -> None:
    """Each budgeted family's ``fit`` checks ``max_seconds`` once, by its constraints, and makes its
    budget without checking it again."""
    import mlgp.estimator.budget as training
    from _clock import random_problem
    from mlgp.families import make_estimator

    checked = training.arguments.max_seconds

    def refuse(seconds, name="max_seconds"):
        if name == "max_seconds":  # make_estimator's check of the budget is named "budget"
            raise AssertionError(f"max_seconds checked a second time: {seconds!r}")
        return checked(seconds, name)

    monkeypatch.setattr(training.arguments, "max_seconds", refuse)
    small = {"fastxml": {"n_estimators": 1, "n_jobs": 1}, "geneml": {"n_components": 2, "max_iter": 1},
             "mlgpf": {"epochs": 1, "num_inducing": 4, "num_latent_gps": 2, "validation_fraction": 0}}[family]
    X, Y = random_problem(30, 6, 4, seed=0)
    make_estimator(family, small, budget=50.0).fit(X, Y)


@pytest.mark.parametrize("steps, advance, warned", [(0, 10.0, True), (1, 10.0, True), (1, 5.0, True), (2, 10.0, False),
                                                     (1, 3.0, False)])
def test_a_budget_spent_by_the_first_step_is_said(monkeypatch, steps, advance, warned) -> None:
    """Warned only when at most one step was taken and the bound was reached at the last look."""
    import warnings

    from mlgp.errors import BudgetWarning

    clock = fake_clock(monkeypatch, tick=0.0)
    budget = Budget(5.0)
    clock.advance(advance)
    budget.spent()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        budget.warn_if_first_step_spent(steps, "Est", "what it kept")
    messages = [str(w.message) for w in caught if issubclass(w.category, BudgetWarning)]
    expected = f"Est: max_seconds=5 was spent by the end of the first training step ({advance:g} s, set-up included): what it kept"
    assert messages == ([expected] if warned else [])
