"""MLGPFClassifier's ``refit``: after early stopping chose the epochs on the held-out rows, a second
fit from the start on every row for that many epochs (:func:`mlgp.recipes.held_out.refit_epochs`
decides), kept only when it ran whole."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from _clock import fake_clock

import mlgp.recipes.estimator as estimator_module
import mlgp.recipes.kernel_choice as kernel_choice_module
from mlgp.data.synthetic import default_problem
from mlgp.estimator import MultiLabelEstimator, ParameterError
from mlgp.estimator.budget import Budget
from mlgp.recipes import MLGPFClassifier
from mlgp.recipes.held_out import REFIT_MAX_ROWS, refit_epochs

#: One kernel: the first fit is one training run (kernel="auto" would try three)
SMALL = dict(num_latent_gps=2, num_inducing=10, epochs=4, n_iter_no_change=1, kernel="se+linear-shared")


def _budget(monkeypatch, seconds: float | None, elapsed: float) -> Budget:
    clock = fake_clock(monkeypatch, tick=0.0)
    budget = Budget(seconds)
    clock.advance(elapsed)
    return budget


@pytest.mark.parametrize("refit, rows, expected", [(True, 100, 3), ("auto", REFIT_MAX_ROWS, 3),
                                                   ("auto", REFIT_MAX_ROWS + 1, 0), (True, REFIT_MAX_ROWS + 1, 3),
                                                   (False, 100, 0)])
def test_refit_asks_for_the_best_epoch_on_small_data(monkeypatch, refit, rows, expected) -> None:
    budget = _budget(monkeypatch, None, 10.0)
    assert refit_epochs(refit, SimpleNamespace(best_epoch=3), False, budget, 6, rows, rows - 10) == expected


def test_no_refit_without_early_stopping_a_best_epoch_or_with_the_bias_alone(monkeypatch) -> None:
    budget = _budget(monkeypatch, None, 10.0)
    assert refit_epochs(True, None, False, budget, 6, 100, 90) == 0
    assert refit_epochs(True, SimpleNamespace(best_epoch=0), False, budget, 6, 100, 90) == 0
    assert refit_epochs(True, SimpleNamespace(best_epoch=1), False, budget, 6, 100, 90) == 1
    assert refit_epochs(True, SimpleNamespace(best_epoch=3), True, budget, 6, 100, 90) == 0


@pytest.mark.parametrize("seconds, expected", [(19.375, 3), (19.37, 0), (None, 3)])
def test_refit_only_where_the_budget_has_room_at_the_first_fits_pace(monkeypatch, seconds, expected) -> None:
    """10 s for 4 epochs on 80 rows: 3 epochs on 100 rows take 10 × 3/4 × 100/80 = 9.375 s more."""
    budget = _budget(monkeypatch, seconds, 10.0)
    assert refit_epochs(True, SimpleNamespace(best_epoch=3), False, budget, 4, 100, 80) == expected


@pytest.fixture
def calls(monkeypatch) -> list:
    """Every ``build_and_train`` of MLGPFClassifier (the first fit's and the refit's, both in
    kernel_choice): (rows, epochs, validation given, callback given)."""
    seen: list = []

    def recording(real):
        def recorded(X, Y, s, **kwargs):
            seen.append((X.shape[0], s.epochs, kwargs.get("validation") is not None,
                         kwargs.get("callback") is not None))
            return real(X, Y, s, **kwargs)

        return recorded

    monkeypatch.setattr(kernel_choice_module, "build_and_train", recording(kernel_choice_module.build_and_train))
    return seen


@pytest.mark.slow  # 4 s or more on 2 cores (README: the slow tier)
def test_a_refit_trains_again_on_every_row_for_the_best_epochs(calls, tmp_path) -> None:
    ds = default_problem()
    X, Y = ds.train.X, ds.train.Y
    clf = MLGPFClassifier(seed=1, **SMALL).fit(X, Y, validation=(ds.test.X, ds.test.Y))
    assert not clf.bias_only_ and clf.refitted_ and 1 <= clf.best_epoch_ <= 4
    assert calls == [(540, 4, True, True), (600, clf.best_epoch_, False, False)]
    assert clf.n_iter_ == len(clf.trace_) - 1 and "held-out lpd" in clf.trace_  # the first fit's trace (and set-up row)
    kept = MLGPFClassifier(seed=1, refit=False, **SMALL).fit(X, Y)
    assert not kept.refitted_ and len(calls) == 3
    assert not np.allclose(kept.predict_proba(ds.test.X), clf.predict_proba(ds.test.X))
    loaded = MultiLabelEstimator.load(clf.save(tmp_path / "refitted"))
    assert loaded.refitted_ is True and MultiLabelEstimator.load(kept.save(tmp_path / "kept")).refitted_ is False
    np.testing.assert_allclose(loaded.predict_proba(ds.test.X), clf.predict_proba(ds.test.X), rtol=1e-6)


@pytest.mark.slow  # 4 s or more on 2 cores (README: the slow tier)
def test_a_refit_cut_short_by_the_budget_keeps_the_first_model(monkeypatch, calls) -> None:
    """One second per look at the clock: the refit is allowed by the first fit's pace, then every
    step of it counts too; a refit that did not run whole is not kept."""
    ds = default_problem()
    allowed = {}
    real = estimator_module.refit_epochs

    def allow_then_squeeze(refit, stopping, bias_only, budget, *args):
        allowed["epochs"] = real(refit, stopping, bias_only, Budget(None), *args)
        budget.seconds = budget.elapsed + 1.5  # room for one step more
        return allowed["epochs"]

    monkeypatch.setattr(estimator_module, "refit_epochs", allow_then_squeeze)
    fake_clock(monkeypatch)
    clf = MLGPFClassifier(seed=1, max_seconds=1e6, **SMALL).fit(ds.train.X, ds.train.Y)
    assert allowed["epochs"] >= 1 and len(calls) == 2 and not clf.refitted_


def test_refit_is_a_checked_parameter() -> None:
    ds = default_problem()
    with pytest.raises(ParameterError, match="refit"):
        MLGPFClassifier(refit="always").fit(ds.train.X, ds.train.Y)


@pytest.mark.slow  # 4 s or more on 2 cores (README: the slow tier)
def test_numpys_booleans_mean_what_pythons_do(calls) -> None:
    """``np.False_`` passes the parameter check as a boolean: it must turn early stopping (and with
    it the refit) off, and ``np.True_`` must ask for them, as ``False`` and ``True`` do."""
    ds = default_problem()
    off = MLGPFClassifier(seed=1, early_stopping=np.False_, **SMALL).fit(ds.train.X, ds.train.Y)
    assert off.best_epoch_ is None and not off.refitted_
    no_refit = MLGPFClassifier(seed=1, refit=np.False_, **SMALL).fit(ds.train.X, ds.train.Y)
    assert no_refit.best_epoch_ is not None and not no_refit.refitted_
    with pytest.raises(ParameterError, match="early_stopping=True needs held-out rows"):
        MLGPFClassifier(early_stopping=np.True_, validation_fraction=0).fit(ds.train.X, ds.train.Y)
    assert calls == [(540, 4, False, False), (540, 4, False, True)]  # no stopping; no refit; nothing refused trains
