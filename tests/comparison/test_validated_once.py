"""Each parameter is checked once on the way from ``mlgp compare`` / ``mlgp fit`` to a family's
``fit``: :func:`mlgp.families.make_estimator` checks them before any data are read, and the fit
trusts that check (scikit-learn's ``skip_parameter_validation``) instead of repeating it."""

from __future__ import annotations

import pytest
from _compare_stubs import tiny

import mlgp
from mlgp.baselines import LSPC
from mlgp.estimator import MultiLabelEstimator


@pytest.fixture
def checks(monkeypatch) -> list[str]:
    """The class name of every estimator whose parameters are checked, in order."""
    seen: list[str] = []
    original = MultiLabelEstimator._validate_params

    def counted(self) -> None:
        seen.append(type(self).__name__)
        original(self)

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
