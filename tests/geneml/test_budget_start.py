"""GenEML's ``max_seconds`` counts from the start of ``fit``: the data check and the preprocessing
are inside the budget, not before it. On the fake clock of :mod:`tests._clock` (one second per
reading), each of them in turn is made to take 100 s: a 50 s budget then leaves one EM iteration,
whose trace reads 101 s — as :func:`test_budget.test_the_budget_counts_the_set_up` shows for the
exposure set-up, which comes after them."""

from __future__ import annotations

import pytest
from _clock import fake_clock, random_problem, slowed

from mlgp.geneml import GenEML
from mlgp.geneml.features import FeatureMap

#: What runs in ``fit`` before the first iteration, as (owner, attribute): the data check, fitting
#: the preprocessing, and applying it to the training rows.
SET_UP = {"data check": (GenEML, "_validate_fit_data"), "preprocessing fitted": (FeatureMap, "fit"),
          "preprocessing applied": (GenEML, "_rows")}


@pytest.mark.parametrize("step", list(SET_UP))
def test_the_budget_counts_the_data_check_and_the_preprocessing(monkeypatch, step) -> None:
    owner, name = SET_UP[step]
    slowed(monkeypatch, fake_clock(monkeypatch), owner, name, seconds=100.0)
    X, Y = random_problem(40, 6, 4, seed=1)
    est = GenEML(n_components=2, max_iter=20, max_seconds=50.0, random_state=0, calibration=None).fit(X, Y)
    assert list(est.trace_["step"]) == [1] and est.n_iter_ == 1, f"the {step} is outside the budget"
    assert est.trace_["elapsed"].iloc[0] == 101.0


def test_without_slow_set_up_the_budget_runs_its_iterations(monkeypatch) -> None:
    """The same fit on the same clock, nothing slowed: readings 1, 2, … after each iteration, so a
    50 s budget is not what stops it (20 iterations, or the convergence stop before them)."""
    fake_clock(monkeypatch)
    X, Y = random_problem(40, 6, 4, seed=1)
    est = GenEML(n_components=2, max_iter=20, max_seconds=50.0, random_state=0, calibration=None).fit(X, Y)
    assert est.n_iter_ > 1 and est.trace_["elapsed"].iloc[0] == 1.0
