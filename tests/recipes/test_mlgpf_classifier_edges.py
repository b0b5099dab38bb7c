"""MLGPFClassifier at the edges of what it can learn from: a budget spent by the first step, one
training row, a label that never occurs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from _clock import fake_clock, slowed
from mlgp.data.synthetic import default_problem
from mlgp.errors import BudgetWarning, ShapeError
from mlgp.recipes import MLGPFClassifier

SMALL = dict(num_latent_gps=2, num_inducing=10, epochs=3)


@pytest.mark.parametrize("validation_fraction, kept", [(0.0, "the model is its start after one step"),
                                                       (0.1, None)])
def test_a_budget_spent_by_the_first_step_is_said(monkeypatch, validation_fraction, kept) -> None:
    """A build that takes 100 s of a 50 s budget leaves one step: the fit says so, and what it kept
    (with held-out rows, the bias guard's choice)."""
    import mlgp.recipes.build as recipe

    slowed(monkeypatch, fake_clock(monkeypatch), recipe, "_build")
    ds = default_problem()
    clf = MLGPFClassifier(max_seconds=50.0, validation_fraction=validation_fraction, kernel="se+linear-shared",
                          **SMALL)
    with pytest.warns(BudgetWarning, match=r"^MLGPFClassifier: max_seconds=50 was spent by the end of the first "
                                           r"training step \(10\d s, set-up included\): ") as caught:
        clf.fit(ds.train.X, ds.train.Y)
    kept = kept or ("the bias alone is kept" if clf.bias_only_ else "the model is its start after one step")
    said = [str(w.message) for w in caught if issubclass(w.category, BudgetWarning)]
    assert len(said) == 1 and said[0].endswith(kept)
    assert list(clf.trace_["step"]) == [0, 1]  # the set-up row, then the one step


def test_a_budget_that_leaves_more_steps_is_not_warned_about(monkeypatch) -> None:
    fake_clock(monkeypatch)  # one second per look
    ds = default_problem()
    with warnings.catch_warnings():
        warnings.simplefilter("error", BudgetWarning)
        clf = MLGPFClassifier(max_seconds=5.5, validation_fraction=0, **SMALL).fit(ds.train.X, ds.train.Y)
    assert clf.trace_["step"].max() > 1


def test_one_training_row_trains_without_a_hold_out_and_says_so() -> None:
    ds = default_problem()
    X, Y = ds.train.X[:1], ds.train.Y[:1]
    with pytest.warns(UserWarning, match=r"^1 training row: none can be held out"):
        clf = MLGPFClassifier(num_latent_gps=1, epochs=2).fit(X, Y)
    assert clf.model_.inducing_variable.num_inducing == 1 and clf.best_epoch_ is None and not clf.bias_only_
    assert np.isfinite(clf.predict_proba(ds.test.X)).all()
    with pytest.raises(ShapeError, match="early_stopping=True holds out training rows: it needs at least 2, got 1"):
        MLGPFClassifier(num_latent_gps=1, epochs=2, early_stopping=True).fit(X, Y)


def test_a_label_that_never_occurs_is_predicted_rare_and_finite() -> None:
    """Its bias starts at the smoothed log-odds of ½ in N + 1: finite, and its probability is the
    lowest of every row."""
    ds = default_problem()
    Y = sp.hstack([ds.train.Y, sp.csr_matrix((ds.train.Y.shape[0], 1))]).tocsr()
    clf = MLGPFClassifier(validation_fraction=0, **SMALL).fit(ds.train.X, Y)
    proba = clf.predict_proba(ds.test.X)
    assert np.isfinite(proba).all() and (proba[:, -1] < 0.5).all()
    assert (proba[:, -1] <= proba[:, :-1].min(axis=1)).mean() > 0.9
