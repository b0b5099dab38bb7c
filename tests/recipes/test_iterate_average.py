"""MLGPFClassifier(average_from=A): the running mean of the epoch-end parameters from epoch A on
(IterateAverage), scored and kept by early stopping, assigned after training without it, and
averaged over a refit's own epochs; training itself continues from the iterates."""

from __future__ import annotations

import gpflow
import numpy as np
import pytest

from mlgp.estimator import ParameterError
from mlgp.recipes import MLGPFClassifier, held_out
from mlgp.recipes import kernel_choice as kernel_choice_module
from mlgp.recipes.held_out import HeldOutStopping, IterateAverage


class _Holder(gpflow.base.Module):
    def __init__(self) -> None:
        self.w = gpflow.Parameter(np.zeros(3))
        self.s = gpflow.Parameter(1.0, transform=gpflow.utilities.positive())  # averaged unconstrained


def _set(model, epoch: int) -> None:
    model.w.assign(np.array([epoch, 2.0 * epoch, -epoch], dtype=float))
    model.s.assign(float(epoch))


def test_the_mean_is_of_the_epochs_from_start_on_in_the_unconstrained_space():
    model, average = _Holder(), IterateAverage(3)
    seen_w, seen_s = [], []
    for epoch in range(1, 7):
        _set(model, epoch)
        assert average(epoch, model, {}) is False  # a callback that never stops training
        if epoch >= 3:
            seen_w.append(model.w.numpy().copy())
            seen_s.append(model.s.unconstrained_variable.numpy().copy())
    assert average.count == 4
    average.assign(model)
    np.testing.assert_allclose(model.w.numpy(), np.mean(seen_w, axis=0), rtol=1e-12)
    np.testing.assert_allclose(model.s.unconstrained_variable.numpy(), np.mean(seen_s), rtol=1e-12)


def test_nothing_is_averaged_before_the_start():
    model, average = _Holder(), IterateAverage(5)
    for epoch in range(1, 5):
        _set(model, epoch)
        average.update(epoch, model)
    assert average.count == 0
    average.assign(model)
    np.testing.assert_array_equal(model.w.numpy(), [4.0, 8.0, -4.0])
    with average.swapped(model):
        np.testing.assert_array_equal(model.w.numpy(), [4.0, 8.0, -4.0])


def test_swapped_holds_the_mean_inside_and_the_iterate_after_even_on_error():
    model, average = _Holder(), IterateAverage(1)
    for epoch in (1, 2, 3):
        _set(model, epoch)
        average.update(epoch, model)
    with pytest.raises(RuntimeError, match="inside"):
        with average.swapped(model):
            np.testing.assert_allclose(model.w.numpy(), [2.0, 4.0, -2.0])
            raise RuntimeError("inside")
    np.testing.assert_array_equal(model.w.numpy(), [3.0, 6.0, -3.0])


def test_early_stopping_scores_and_keeps_the_averaged_parameters(monkeypatch):
    """The held-out density is computed on the mean (here: it reads w[0]); the best epoch's copy is
    of the mean; after each call the model trains on from its iterate."""
    monkeypatch.setattr(held_out, "held_out_lpd", lambda model, X, Y: -abs(float(model.w.numpy()[0]) - 2.5))
    model = _Holder()
    stopper = HeldOutStopping(None, None, patience=10, average=IterateAverage(2))
    rows = []
    for epoch in range(1, 6):
        _set(model, epoch)
        row = {}
        stopper(epoch, model, row)
        rows.append(row["held-out lpd"])
        np.testing.assert_array_equal(model.w.numpy()[0], float(epoch))  # the iterate is back
    # epoch 1: no mean yet (w = 1); epochs 2..5: means of 2..epoch = 2, 2.5, 3, 3.5
    np.testing.assert_allclose(rows, [-1.5, -0.5, 0.0, -0.5, -1.0])
    assert stopper.best_epoch == 3
    stopper.restore(model)
    np.testing.assert_allclose(model.w.numpy(), [2.5, 5.0, -2.5])


class _Recording(IterateAverage):
    """IterateAverage that records the epoch-end values of Φ it averages."""

    made: list = []

    def __init__(self, start: int) -> None:
        super().__init__(start)
        self.loadings = []
        _Recording.made.append(self)

    def update(self, epoch: int, model) -> None:
        if epoch >= self.start:
            self.loadings.append(model.likelihood.loadings.numpy().copy())
        super().update(epoch, model)


@pytest.fixture
def recording(monkeypatch):
    _Recording.made = []
    monkeypatch.setattr(kernel_choice_module, "IterateAverage", _Recording)  # the first fit's and the refit's
    return _Recording.made


def _problem():
    from mlgp.data import mlgpf_prior

    ds = mlgpf_prior(num_train=200, num_test=5, num_features=4, num_labels=6, num_latent=2, seed=0)
    return ds.train.X, ds.train.Y


_SMALL = dict(kernel="se", num_latent_gps=2, num_inducing=5, batch_size=20, learning_rate=0.05, seed=0)


def test_without_early_stopping_the_fitted_model_is_the_mean(recording):
    X, Y = _problem()
    clf = MLGPFClassifier(**_SMALL, epochs=4, early_stopping=False, validation_fraction=0, average_from=2).fit(X, Y)
    (average,) = recording
    assert len(average.loadings) == 3
    np.testing.assert_allclose(clf.model_.likelihood.loadings.numpy(), np.mean(average.loadings, axis=0), rtol=1e-6, atol=1e-6)  # float32 sums, Φ of order 0.1–1
    assert not np.allclose(average.loadings[-1], np.mean(average.loadings, axis=0))  # not the last iterate


@pytest.mark.slow  # 4 s or more on 2 cores (README: the slow tier)
def test_a_refit_averages_its_own_epochs(recording):
    X, Y = _problem()
    clf = MLGPFClassifier(**_SMALL, epochs=6, refit=True, n_iter_no_change=20, average_from=1).fit(X, Y)
    assert clf.refitted_ and len(recording) == 2
    refit = recording[1]
    assert len(refit.loadings) == clf.best_epoch_
    np.testing.assert_allclose(clf.model_.likelihood.loadings.numpy(), np.mean(refit.loadings, axis=0), rtol=1e-6, atol=1e-6)  # float32 sums, Φ of order 0.1–1


@pytest.mark.parametrize("bad", [0, -1, 2.5, "5"])
def test_average_from_is_a_positive_epoch_or_none(bad):
    X, Y = _problem()
    with pytest.raises(ParameterError, match="average_from"):
        MLGPFClassifier(average_from=bad).fit(X, Y)
    assert MLGPFClassifier(average_from=None).get_params()["average_from"] is None
