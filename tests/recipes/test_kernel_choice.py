"""MLGPFClassifier's ``kernel="auto"`` (mlgp.recipes.kernel_choice) and its ``calibration="prior"``."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import mlgp.recipes.kernel_choice as kc
from mlgp.data.synthetic import default_problem
from mlgp.errors import BudgetWarning
from mlgp.estimator.budget import Budget
from mlgp.recipes import MLGPFClassifier
from mlgp.recipes.kernel_choice import (CANDIDATES, CHOICE_SHARE, DEFAULT_KERNEL, MIN_CANDIDATE_SECONDS, Trial,
                                        candidate_kernels, choice_frame, train_candidates)

SMALL = dict(num_latent_gps=2, num_inducing=8, epochs=1, batch_size=64)


# ------------------------------------------------------------------------- candidate_kernels --
def test_a_named_kernel_is_the_one_candidate() -> None:
    assert candidate_kernels("se", True, 60.0, True) == (["se"], 60.0, "")
    assert candidate_kernels("linear", False, math.inf, False) == (["linear"], math.inf, "")


def test_auto_tries_the_candidates_default_first() -> None:
    kernels, seconds, reason = candidate_kernels("auto", True, math.inf, True)
    assert kernels == list(CANDIDATES) and kernels[0] == DEFAULT_KERNEL and seconds == math.inf and reason == ""
    assert set(CANDIDATES) == {"se+linear-shared", "linear", "se"}


@pytest.mark.parametrize("refit_possible, share", [(True, CHOICE_SHARE), (False, 1.0)])
def test_auto_shares_the_budget_and_leaves_room_for_a_refit(refit_possible, share) -> None:
    kernels, seconds, reason = candidate_kernels("auto", True, 60.0, refit_possible)
    assert kernels == list(CANDIDATES) and seconds == pytest.approx(60.0 * share) and reason == ""


def test_auto_without_held_out_rows_trains_the_default() -> None:
    kernels, seconds, reason = candidate_kernels("auto", False, 60.0, True)
    assert kernels == [DEFAULT_KERNEL] and seconds == 60.0 and reason == "no rows are held out to judge the kernels on"


def test_auto_with_too_small_a_budget_trains_the_default() -> None:
    at_edge = MIN_CANDIDATE_SECONDS * len(CANDIDATES)  # exactly MIN_CANDIDATE_SECONDS each, without a refit
    assert candidate_kernels("auto", True, at_edge, False)[0] == list(CANDIDATES)
    kernels, seconds, reason = candidate_kernels("auto", True, at_edge * 0.99, False)
    assert kernels == [DEFAULT_KERNEL] and seconds == pytest.approx(at_edge * 0.99)
    assert reason.startswith(f"max_seconds={at_edge * 0.99:g} leaves under {MIN_CANDIDATE_SECONDS:g} s for each")
    assert candidate_kernels("auto", True, at_edge, True)[0] == [DEFAULT_KERNEL]  # 70 % of it is too little


# -------------------------------------------------------------------------- train_candidates --
class _Stopping:
    best_epoch = 1


def _fake_trials(monkeypatch, lpds: dict, clock: list, names: list | None = None) -> list:
    """Replace the training of one candidate: each takes 2 s of a fake clock and scores ``lpds``
    (``names``: collects the name each candidate's progress is given)."""
    seen, names = [], [] if names is None else names

    def trial(est, kernel, s, Xtr, Ytr, held_rows, steps_per_epoch, jit, validation, budget, strategy, early, begun,
              name, callback=None):
        seen.append((kernel, budget.seconds, budget.started, begun))
        names.append(name)
        clock[0] += 2.0
        return Trial(kernel, object(), pd.DataFrame({"epoch": [1, 2]}), _Stopping(), False, lpds[kernel], 2.0, s)

    monkeypatch.setattr(kc, "_trial", trial)
    monkeypatch.setattr("mlgp.estimator.budget.perf_counter", lambda: clock[0])
    return seen


def test_each_candidate_gets_an_equal_share_of_what_is_left(monkeypatch) -> None:
    clock, names = [100.0], []
    seen = _fake_trials(monkeypatch, {"se+linear-shared": -3.0, "linear": -2.0, "se": -2.5}, clock, names)
    budget = Budget.trusted(60.0, started=95.0)  # 5 s of it spent before the choice
    trials, winner = train_candidates(None, list(CANDIDATES), 42.0, budget, None, None, None, None, 1, False, None,
                                      None, "auto")
    assert [k for k, *_ in seen] == list(CANDIDATES)
    # counted from the start of fit (95 s on the clock), like the fit's own budget and every trace
    assert [b for _, b, _, _ in seen] == pytest.approx([5 + (42 - 5) / 3, 7 + (42 - 7) / 2, 9 + (42 - 9) / 1])
    assert [started for _, _, started, _ in seen] == [95.0] * 3
    assert [begun for *_, begun in seen] == pytest.approx([5.0, 7.0, 9.0])
    assert names == ["MLGPF kernel se+linear-shared (1 of 3)", "MLGPF kernel linear (2 of 3)",
                     "MLGPF kernel se (3 of 3)"]
    assert winner.kernel == "linear" and winner.model is not None
    assert [t.model is None for t in trials] == [True, False, True]  # the losers' models are dropped


def test_candidates_not_begun_before_the_choice_is_spent_are_left_out(monkeypatch) -> None:
    clock = [100.0]
    seen = _fake_trials(monkeypatch, {"se+linear-shared": -3.0, "linear": -2.0, "se": -2.5}, clock)
    budget = Budget.trusted(60.0, started=95.0)
    trials, winner = train_candidates(None, list(CANDIDATES), 6.5, budget, None, None, None, None, 1, False, None,
                                      None, "auto")
    assert [k for k, *_ in seen] == ["se+linear-shared"]  # 7 s of the 6.5 s choice spent after the first
    assert winner is trials[0] and len(trials) == 1


def test_a_tie_keeps_the_first_candidate_and_one_kernel_gets_the_whole_budget(monkeypatch) -> None:
    clock = [0.0]
    seen = _fake_trials(monkeypatch, {"se+linear-shared": -2.0, "linear": -2.0, "se": -2.0}, clock)
    budget = Budget.trusted(60.0, started=0.0)
    _, winner = train_candidates(None, list(CANDIDATES), 60.0, budget, None, None, None, None, 1, False, None, None,
                                 "auto")
    assert winner.kernel == DEFAULT_KERNEL
    seen.clear()
    budget = Budget.trusted(60.0, started=clock[0])
    trials, winner = train_candidates(None, ["se"], 60.0, budget, None, None, None, None, 1, False, None, None, "auto")
    assert seen == [("se", 60.0, 6.0, 0.0)] and winner is trials[0]  # the fit's own budget


def test_choice_frame_marks_the_winner() -> None:
    trials = [Trial(k, None, pd.DataFrame({"epoch": range(n)}), None, b, lpd, 1.5, None)
              for k, n, b, lpd in (("se+linear-shared", 3, False, -2.0), ("linear", 4, True, -1.0))]
    frame = choice_frame(trials, trials[1])
    assert list(frame.columns) == ["kernel", "held_out_lpd", "epochs", "best_epoch", "seconds", "bias_only", "chosen"]
    assert frame["chosen"].tolist() == [False, True] and frame["epochs"].tolist() == [3, 4]
    assert frame["bias_only"].tolist() == [False, True] and frame["best_epoch"].tolist() == [3, 4]


# ------------------------------------------------------------------------------ end to end --
@pytest.fixture(scope="module")
def se_fit():
    ds = default_problem()
    return ds, MLGPFClassifier(seed=0, kernel="se", **SMALL).fit(ds.train.X[:200], ds.train.Y[:200])


@pytest.fixture(scope="module")
def auto_fit():
    ds = default_problem()
    return ds, MLGPFClassifier(seed=0, **SMALL).fit(ds.train.X[:200], ds.train.Y[:200])


@pytest.mark.slow
def test_auto_keeps_the_candidate_with_the_best_held_out_density(auto_fit) -> None:
    ds, clf = auto_fit
    assert clf.kernel == "auto"
    choice = clf.kernel_choice_
    assert choice["kernel"].tolist() == list(CANDIDATES) and choice["chosen"].sum() == 1
    chosen = choice.loc[choice["chosen"]].iloc[0]
    assert chosen["held_out_lpd"] == choice["held_out_lpd"].max()
    assert clf.settings_.kernel == chosen["kernel"]
    assert len(clf.trace_) == chosen["epochs"] + 1 == clf.n_iter_ + 1  # the set-up row and the epochs
    assert np.isfinite(clf.predict_proba(ds.test.X)).all()


def test_the_prior_map_is_fitted_on_the_held_out_rows(se_fit) -> None:
    """``predict_proba`` is E_q[σ(f)] through ``proba_map_``; rankings are the model's own; a given
    kernel is the one trained, with no choice table."""
    ds, clf = se_fit
    assert clf.settings_.kernel == "se" and clf.kernel_choice_ is None
    assert clf.proba_map_ is not None and clf.proba_map_.prior.shape == (ds.train.Y.shape[1],)
    raw = clf.model_.label_probabilities(clf._inputs(ds.test.X))
    np.testing.assert_allclose(clf.predict_proba(ds.test.X), clf.proba_map_.transform(raw), rtol=1e-12)
    np.testing.assert_array_equal(clf.decision_function(ds.test.X),
                                  clf.model_.mean_utilities(clf._inputs(ds.test.X)))


def test_no_map_without_held_out_rows_or_with_calibration_none() -> None:
    ds = default_problem()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        plain = MLGPFClassifier(validation_fraction=0, kernel="se", **SMALL).fit(ds.train.X, ds.train.Y)
    assert plain.proba_map_ is None and plain.kernel_choice_ is None
    own = MLGPFClassifier(calibration=None, kernel="se", **SMALL).fit(ds.train.X, ds.train.Y)
    assert own.proba_map_ is None
    np.testing.assert_array_equal(own.predict_proba(ds.test.X), own.model_.label_probabilities(own._inputs(ds.test.X)))


def test_too_small_a_budget_trains_the_default_and_says_so() -> None:
    ds = default_problem()
    with pytest.warns(BudgetWarning, match=r"^MLGPFClassifier: kernel='auto' trains se\+linear-shared only: "
                                           r"max_seconds=6 leaves under 5 s"):
        clf = MLGPFClassifier(max_seconds=6.0, **SMALL).fit(ds.train.X, ds.train.Y)
    assert clf.settings_.kernel == DEFAULT_KERNEL and clf.kernel_choice_["kernel"].tolist() == [DEFAULT_KERNEL]


def test_a_model_the_guard_reduced_to_its_bias_predicts_the_label_prior() -> None:
    """Features that carry nothing: the guard keeps σ(b); its probabilities are then the label prior
    of every training row (LabelFrequency's), not a map refitted on the held-out few."""
    from mlgp.baselines import LabelFrequency

    rng = np.random.default_rng(0)
    X = rng.standard_normal((150, 5))
    Y = (rng.random((150, 6)) < np.array([0.6, 0.3, 0.2, 0.1, 0.05, 0.4])).astype(float)
    clf = MLGPFClassifier(kernel="se", seed=0, num_latent_gps=2, num_inducing=8, epochs=3, batch_size=64)
    clf.fit(X, Y)
    assert clf.bias_only_ and clf.proba_map_.keeps_prior
    X_new = rng.standard_normal((4, 5))
    np.testing.assert_allclose(clf.predict_proba(X_new), LabelFrequency().fit(X, Y).predict_proba(X_new), rtol=1e-12)


def test_the_bias_alone_gets_the_prior_of_every_training_row_without_scoring_the_held_out_rows() -> None:
    from mlgp.estimator.prior_map import label_prior
    from mlgp.recipes.calibrate import held_out_prior_map

    rng = np.random.default_rng(1)
    Y_all = (rng.random((40, 5)) < 0.3).astype(float)
    fitted = held_out_prior_map(None, None, None, Y_all[:30], Y_all, bias_only=True)  # no model is scored
    assert fitted.keeps_prior and fitted.held_out_gain == 0.0
    np.testing.assert_array_equal(fitted.prior, label_prior(Y_all))
