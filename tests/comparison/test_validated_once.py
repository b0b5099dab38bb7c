"""Each parameter is checked once on the way from ``mlgp compare`` / ``mlgp fit`` to a family's
``fit``: :func:`mlgp.families.make_estimator` checks them before any data are read, and the fit
trusts that check (scikit-learn's ``skip_parameter_validation``) instead of repeating it."""

from __future__ import annotations

import pytest
from _compare_stubs import command_line, tiny

import mlgp
from mlgp.baselines import LSPC
from mlgp.estimator import MultiLabelEstimator


@pytest.fixture
def checks(monkeypatch) -> list[str]:
    """The class name of every estimator whose parameters are checked, in order."""
    seen: list[str] = []
    original = MultiLabelEstimator._validate_params

    def counted(self, trusted=()) -> None:
        seen.append(type(self).__name__)
        original(self, trusted)

    monkeypatch.setattr(MultiLabelEstimator, "_validate_params", counted)
    return seen


def test_compare_checks_each_family_once(checks) -> None:
    result = mlgp.compare(["frequency", "lspc"], dataset=tiny(), isolate=False)
    assert (result.results["error"] == "").all()
    assert checks == ["LabelFrequency", "LSPC"]  # by make_estimator, before the data; not again in fit


def test_a_fit_outside_compare_still_checks(checks) -> None:
    """Only the comparison's (and the command line's) fit trusts the check: a user's own fit of a
    hand-changed estimator is checked."""
    ds = tiny()
    est = LSPC()
    est.fit(ds.train.X, ds.train.Y)
    assert checks == ["LSPC"]


def test_mlgp_fit_checks_once(checks, tmp_path) -> None:
    from mlgp.cli import main
    from mlgp.data.io import write_labelled

    ds = tiny()
    train = tmp_path / "train.txt"
    write_labelled(train, ds.train.X, ds.train.Y)
    assert main(["fit", "lspc", "--train", str(train), "--out", str(tmp_path / "m.npz")]) == 0
    assert checks == ["LSPC"]


@pytest.fixture
def budget_checks(monkeypatch) -> dict:
    """Counts the checks of a budget: :func:`mlgp.arguments.max_seconds` named ``budget`` (given a
    value) and the ``max_seconds`` constraint of the estimators."""
    import mlgp.arguments
    from mlgp.estimator import budget as training

    seen = {"budget": 0, "max_seconds": 0}
    max_seconds, satisfied = mlgp.arguments.max_seconds, training._Seconds.is_satisfied_by

    def counted_seconds(value, name="max_seconds"):
        seen["budget"] += name == "budget" and value is not None
        return max_seconds(value, name)

    def counted_constraint(self, val):
        seen["max_seconds"] += 1
        return satisfied(self, val)

    monkeypatch.setattr(mlgp.arguments, "max_seconds", counted_seconds)
    monkeypatch.setattr(training._Seconds, "is_satisfied_by", counted_constraint)
    return seen


def test_compare_checks_the_budget_once_per_family(budget_checks) -> None:
    """``compare(budget=…)``: checked once on each family's way to its ``fit`` (by make_estimator),
    not again by the ``max_seconds`` constraint it becomes, with or without a budget of its own."""
    result = mlgp.compare(["frequency", "fastxml"], dataset=tiny(), budget=5, isolate=False,
                          settings={"fastxml": {"n_estimators": 2}})
    assert (result.results["error"] == "").all()
    assert "max_seconds=5" in result.results.set_index("family").loc["fastxml", "settings"]
    assert budget_checks == {"budget": 2, "max_seconds": 0}


def test_a_max_seconds_given_as_a_setting_is_checked_by_its_constraint(budget_checks) -> None:
    from mlgp.families import make_estimator

    make_estimator("fastxml", {"max_seconds": 3.0}, budget=5)
    assert budget_checks == {"budget": 1, "max_seconds": 1}
    with pytest.raises(mlgp.errors.ArgumentError, match="max_seconds"):
        make_estimator("fastxml", {"max_seconds": -1.0}, budget=5)


@pytest.mark.parametrize("command", ["compare", "fit"])
def test_the_command_line_converts_the_budget_and_make_estimator_checks_it(budget_checks, tmp_path, command) -> None:
    from mlgp.cli import main

    args = command_line(command, "fastxml", tmp_path)
    assert main([*args, "--budget", "5", "--set", f"{'fastxml.' if command == 'compare' else ''}n_estimators=2"]) == 0
    assert budget_checks == {"budget": 1, "max_seconds": 0}
    for bad in ("0", "nan", "-1", "inf"):
        assert main([*args, "--budget", bad]) == 2
