"""``max_seconds`` in the FastXML family: wall seconds from the start of ``fit``, looked at after
every tree, on a fake clock that moves 1 s per reading (:mod:`tests._clock`)."""

from __future__ import annotations

import numpy as np
import pytest
from _clock import fake_clock, random_problem, slowed

import mlgp.baselines.fastxml as fastxml_module
from mlgp.baselines import FastXML, PfastreXML, PfastXML
from mlgp.errors import DataFormatError


@pytest.fixture(scope="module")
def data():
    return random_problem(120, 15, 8, seed=2)


@pytest.mark.parametrize("cls", [FastXML, PfastXML, PfastreXML])
def test_no_tree_is_added_once_the_budget_is_spent(cls, data, monkeypatch) -> None:
    """One tree at a time: the budget's looks after trees 1..4 read 1..4 s, so 3.5 s keeps 4 of 10,
    the first four tree numbers, with their seeds."""
    clock = fake_clock(monkeypatch)
    est = cls(n_estimators=10, max_leaf=10, n_jobs=1, random_state=0, max_seconds=3.5, calibration=None).fit(*data)
    assert est.forest_.n_trees == 4 and clock.readings == 5
    full = cls(n_estimators=10, max_leaf=10, n_jobs=1, random_state=0, calibration=None).fit(*data)
    np.testing.assert_array_equal(est.tree_seeds_, full.tree_seeds_[:4])
    assert full.forest_.n_trees == 10


def test_the_set_up_counts(data, monkeypatch) -> None:
    """Work before the first tree (here the split loss, made to take 100 s) counts: one tree."""
    slowed(monkeypatch, fake_clock(monkeypatch), fastxml_module, "split_loss")
    est = FastXML(n_estimators=5, n_jobs=1, random_state=0, max_seconds=50.0, calibration=None).fit(*data)
    assert est.forest_.n_trees == 1


def test_a_forest_cut_short_saves_and_loads_and_a_short_one_without_a_budget_is_refused(data, monkeypatch,
                                                                                         tmp_path) -> None:
    fake_clock(monkeypatch)
    X, Y = data
    est = FastXML(n_estimators=6, n_jobs=1, random_state=0, max_seconds=2.5, calibration=None).fit(X, Y)
    est.save(tmp_path / "cut.npz")
    back = FastXML.load(tmp_path / "cut.npz")
    assert back.forest_.n_trees == 3
    np.testing.assert_array_equal(back.decision_function(X), est.decision_function(X))
    est.set_params(max_seconds=None)
    est.save(tmp_path / "short.npz")
    with pytest.raises(DataFormatError, match="3 trees but n_estimators is 6 .and no max_seconds cut it short"):
        FastXML.load(tmp_path / "short.npz")


def test_trees_abandoned_by_the_budget_are_not_warned_about(data, monkeypatch) -> None:
    """With two workers, trees are in flight when the budget stops the forest: joblib's notice that
    it cancelled them is the budget's rule at work, which the user cannot act on: no warning."""
    import warnings

    fake_clock(monkeypatch)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = FastXML(n_estimators=30, max_leaf=10, n_jobs=2, random_state=0, max_seconds=1.5,
                      calibration=None).fit(*data)
    assert 1 <= est.forest_.n_trees < 30
    assert [str(w.message) for w in caught] == []
