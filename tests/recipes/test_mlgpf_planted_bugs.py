"""Fast checks of MLGPFClassifier's held-out choices that only the slow tier caught before: the best
epoch restored, the refit's epoch count, a refit cut short not kept, early stopping scored on the
held-out rows, and the held-out row count rounded (``round(fraction · N)``, not truncated).

Each fit is tiny (40 or 47 rows of :func:`mlgp.data.synthetic.mlgpf_prior`, D = 5, K = 4, the
linear kernel, P = 2, M = 5, float64, one minibatch per epoch, at most 4 epochs). Where the test
needs the held-out density to peak at a given epoch, :func:`mlgp.recipes.held_out.held_out_lpd`
(the one early stopping calls) is replaced by a script that returns chosen values, records the rows
it was given and the model's parameters at that epoch: the checks then read exact values, not
how the optimiser happened to move.
"""

from __future__ import annotations

import gpflow
import numpy as np
import pytest
from _clock import fake_clock

import mlgp.recipes.estimator as estimator_module
import mlgp.recipes.held_out as held_out
import mlgp.recipes.kernel_choice as kernel_choice_module
from mlgp.data.synthetic import mlgpf_prior
from mlgp.estimator import HeldOutSplit
from mlgp.estimator.budget import Budget
from mlgp.metrics import log_predictive_density
from mlgp.recipes import MLGPFClassifier
from mlgp.recipes.held_out import split_rows

#: One candidate kernel, one minibatch per epoch (36 kept rows of 40), four epochs (all scored;
#: fewer than the 100 steps early stopping waits past the best, so all four run).
TINY = dict(kernel="linear", num_latent_gps=2, num_inducing=5, epochs=4, batch_size=64, dtype="float64",
            calibration=None, seed=0)


def _data(N: int = 40):
    ds = mlgpf_prior(num_train=N, num_test=1, num_features=5, num_labels=4, num_latent=2, seed=0)
    return ds.train.X, ds.train.Y


def _dense(A) -> np.ndarray:
    return A.toarray() if hasattr(A, "toarray") else np.asarray(A)


class ScriptedDensity:
    """In place of ``held_out.held_out_lpd``: the ``values`` in turn (one per scored epoch), and
    per call the rows (X, Y) it was given and the model's parameter values then."""

    def __init__(self, values) -> None:
        self.values, self.rows, self.parameters = list(values), [], []

    def __call__(self, model, X, Y) -> float:
        self.rows.append((_dense(X), _dense(Y)))
        self.parameters.append({k: np.array(v) for k, v in gpflow.utilities.read_values(model).items()})
        return self.values[len(self.rows) - 1]


@pytest.fixture
def calls(monkeypatch) -> list:
    """Every ``build_and_train`` of MLGPFClassifier (the first fit's and the refit's, both in
    kernel_choice): (rows, epochs, the model and the trace it returned)."""
    seen: list = []

    def recording(real):
        def recorded(X, Y, s, **kwargs):
            model, trace = real(X, Y, s, **kwargs)
            seen.append((X.shape[0], s.epochs, model, trace))
            return model, trace

        return recorded

    monkeypatch.setattr(kernel_choice_module, "build_and_train", recording(kernel_choice_module.build_and_train))
    return seen


# ------------------------------------------------------------------------- 1. the best epoch kept --
def test_the_best_epochs_parameters_are_restored_at_the_end_of_the_fit(monkeypatch) -> None:
    """Held-out densities −3, −0.01, −2, −2.5: epoch 2 is the best, and after four epochs the model
    holds exactly the parameters it had at the end of epoch 2 (not epoch 4's, which differ). The
    best density −0.01 is above any bias-only density of 4 labels, so the guard keeps the model."""
    script = ScriptedDensity([-3.0, -0.01, -2.0, -2.5])
    monkeypatch.setattr(held_out, "held_out_lpd", script)
    X, Y = _data()
    clf = MLGPFClassifier(refit=False, **TINY).fit(X, Y)
    assert clf.n_iter_ == 4 and clf.best_epoch_ == 2 and not clf.bias_only_ and not clf.refitted_
    np.testing.assert_array_equal(clf.trace_["held-out lpd"].to_numpy()[1:], script.values)
    after = {k: np.array(v) for k, v in gpflow.utilities.read_values(clf.model_).items()}
    assert after.keys() == script.parameters[1].keys()
    assert not np.array_equal(script.parameters[1][".likelihood.loadings"],
                              script.parameters[3][".likelihood.loadings"])  # training moved on after epoch 2
    for name, value in script.parameters[1].items():
        np.testing.assert_array_equal(after[name], value, err_msg=f"{name} is not the best epoch's")


# ---------------------------------------------------------------- 2. the refit's number of epochs --
def test_the_refit_trains_for_the_best_epoch_count_not_the_epoch_cap(monkeypatch, calls) -> None:
    """Best at epoch 2 of the 4 allowed: the refit on all 40 rows trains for 2 epochs
    (:func:`~mlgp.recipes.held_out.refit_epochs`: the best epoch), and its model is kept."""
    monkeypatch.setattr(held_out, "held_out_lpd", ScriptedDensity([-3.0, -0.01, -2.0, -2.5]))
    X, Y = _data()
    clf = MLGPFClassifier(refit=True, **TINY).fit(X, Y)
    assert clf.best_epoch_ == 2 and not clf.bias_only_
    assert [(rows, epochs) for rows, epochs, _, _ in calls] == [(36, 4), (40, 2)]
    assert clf.refitted_ and clf.model_ is calls[1][2]
    assert clf.n_iter_ == 4  # n_iter_ and trace_ stay the first fit's


# ------------------------------------------------------- 3. a refit cut short by the budget dropped --
@pytest.mark.parametrize("room, refit_rows", [(1.5, 1), (6.5, 3)])
def test_a_refit_cut_short_by_the_budget_is_not_kept(monkeypatch, calls, room, refit_rows) -> None:
    """On a fake clock of one second per reading, two minibatches per epoch: the refit of 3 epochs
    (the best epoch) is allowed, then the budget is set to end ``room`` seconds later, so the refit
    stops in its first epoch (1.5 s) or in its last (6.5 s: its trace has all 3 epochs' rows, the
    last cut short, 5 of its 6 steps). Either way the first fit's model is kept (``refitted_``
    False), as ``refit``'s documentation says."""
    monkeypatch.setattr(held_out, "held_out_lpd", ScriptedDensity([-3.0, -2.0, -0.01, -2.5]))
    allowed = {}
    real = estimator_module.refit_epochs

    def allow_then_squeeze(refit, stopping, bias_only, budget, *args):
        allowed["epochs"] = real(refit, stopping, bias_only, Budget(None), *args)
        budget.seconds = budget.elapsed + room
        return allowed["epochs"]

    monkeypatch.setattr(estimator_module, "refit_epochs", allow_then_squeeze)
    fake_clock(monkeypatch)
    X, Y = _data()
    clf = MLGPFClassifier(refit=True, max_seconds=1e6, **{**TINY, "batch_size": 20}).fit(X, Y)
    assert allowed["epochs"] == 3 and [(rows, epochs) for rows, epochs, _, _ in calls] == [(36, 4), (40, 3)]
    refit_trace = calls[1][3]
    assert len(refit_trace) == refit_rows and refit_trace["step"].iloc[-1] < 6  # the scenario: cut short
    assert not clf.refitted_ and clf.model_ is calls[0][2] and clf.best_epoch_ == 3


# ---------------------------------------------------- 4. early stopping scores the held-out rows --
def test_early_stopping_scores_the_held_out_rows(monkeypatch) -> None:
    """Every density early stopping computes is of the held-out rows (``split_rows(40, 0.1, 0)``'s
    4 rows), never of the 36 trained on; and the kept model's density of those rows, computed
    independently (:func:`mlgp.metrics.log_predictive_density` of ``predict_proba``), is the
    trace's best."""
    real = held_out.held_out_lpd
    seen = []

    def recording(model, X, Y):
        seen.append((_dense(X), _dense(Y)))
        return real(model, X, Y)

    monkeypatch.setattr(held_out, "held_out_lpd", recording)
    X, Y = _data()
    clf = MLGPFClassifier(refit=False, **TINY).fit(X, Y)
    _, held = split_rows(40, 0.1, 0)
    assert len(seen) == 4  # one per epoch
    for X_seen, Y_seen in seen:
        np.testing.assert_array_equal(X_seen, _dense(X)[held])
        np.testing.assert_array_equal(Y_seen, _dense(Y)[held])
    assert not clf.bias_only_
    traced = clf.trace_["held-out lpd"].to_numpy()[1:]
    expected = log_predictive_density(Y[held], clf.predict_proba(X[held]))
    assert clf.best_epoch_ == int(np.argmax(traced)) + 1
    assert expected == pytest.approx(traced.max(), rel=1e-9)


# ------------------------------------------------------------- 5. the held-out row count rounded --
@pytest.mark.parametrize("N, fraction, held", [(47, 0.1, 5), (19, 0.3, 6), (10, 0.25, 2), (30, 0.1, 3)])
def test_the_held_out_count_is_rounded_not_truncated(N, fraction, held) -> None:
    """``round(fraction · N)`` rows held out by both splits: 4.7 → 5 and 5.7 → 6 (truncation would
    give 4 and 5); 2.5 → 2 (Python's round) and 3.0 → 3."""
    train, kept_out = split_rows(N, fraction, 0)
    assert (len(kept_out), len(train)) == (held, N - held)
    fitting, held_rows = HeldOutSplit(fraction, 0).rows(N)
    assert (len(held_rows), len(fitting)) == (held, N - held)


def test_the_classifier_holds_out_the_rounded_count(monkeypatch, calls) -> None:
    """47 rows at the default fraction 0.1: 5 held out (4.7 rounded), 42 trained on."""
    script = ScriptedDensity([-0.01])
    monkeypatch.setattr(held_out, "held_out_lpd", script)
    X, Y = _data(47)
    clf = MLGPFClassifier(refit=False, **{**TINY, "epochs": 1}).fit(X, Y)
    assert [call[0] for call in calls] == [42]
    assert script.rows[0][0].shape[0] == 5 and clf.n_samples_ == 47
