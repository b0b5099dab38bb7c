"""MLGPFClassifier's options as they reach training (``build_and_train`` stubbed: nothing is
trained), and a save of more than 256 features."""

from __future__ import annotations

import numpy as np
import pytest

import mlgp.recipes.kernel_choice as kernel_choice_module
from mlgp.errors import DataFormatError
from mlgp.estimator import MultiLabelEstimator
from mlgp.recipes import MLGPFClassifier
from mlgp.recipes.held_out import HeldOutStopping


@pytest.fixture
def seen(monkeypatch) -> dict:
    """The first fit's ``build_and_train``'s arguments, recorded; it raises instead of training."""
    recorded: dict = {}

    def stop(Xtr, Ytr, s, *, jit_compile, callback=None, **kwargs):
        recorded.update(rows=Xtr.shape[0], batch=s.batch_size, jit=jit_compile, callback=callback, epochs=s.epochs)
        raise RuntimeError("stop before training")

    monkeypatch.setattr(kernel_choice_module, "build_and_train", stop)
    return recorded


def _fit(seen: dict, rows: int = 200, **params) -> dict:
    rng = np.random.default_rng(0)
    X, Y = rng.random((rows, 3)), (rng.random((rows, 4)) < 0.3).astype(np.int8)
    with pytest.raises(RuntimeError, match="stop before training"):
        # one kernel (kernel="auto" would try three): the options of one training run
        MLGPFClassifier(num_inducing=5, **{"epochs": 1, "kernel": "se+linear-shared", **params}).fit(X, Y)
    return seen


@pytest.mark.parametrize("jit", [False, True])
def test_a_given_jit_compile_is_passed_as_given(seen, jit) -> None:
    assert _fit(seen, jit_compile=jit, q_family="whitened")["jit"] is jit


@pytest.mark.parametrize("early_stopping, stops", [(True, True), ("auto", True), (False, False)])
def test_early_stopping_makes_the_held_out_stopping(seen, early_stopping, stops) -> None:
    callback = _fit(seen, early_stopping=early_stopping)["callback"]
    assert isinstance(callback, HeldOutStopping) is stops


@pytest.mark.parametrize("rows, batch, epoch_steps", [(200, 30, 6), (200, 60, 3), (200, 180, 1), (200, 20, 9)])
def test_the_stopping_counts_steps_per_epoch_and_patience(seen, rows, batch, epoch_steps) -> None:
    """Patience 5 epochs by default (``n_iter_no_change``); an epoch of ⌈training rows / batch⌉ steps
    (180 training rows: 10 % held out)."""
    got = _fit(seen, rows=rows, batch_size=batch)
    assert got["rows"] == 180 and got["batch"] == batch
    callback = got["callback"]
    assert callback.patience == 5 and callback.steps_per_epoch == epoch_steps
    assert MLGPFClassifier().get_params()["n_iter_no_change"] == 5


@pytest.mark.parametrize("rows, fraction, batch, epochs", [
    (200, 0.1, 180, 200), (200, 0.1, 20, 23), (200, 0.1, 10, 20), (200, 0.0, None, 200), (200, 0.1, 19, 20)])
def test_auto_epochs_give_at_least_20_epochs_and_200_steps(seen, rows, fraction, batch, epochs) -> None:
    """``epochs="auto"`` (the default): max(20, ⌈200 / steps per epoch⌉) epochs, the steps counted
    on the rows left after the hold-out (180 of 200; all 200 without it, one batch of 200)."""
    got = _fit(seen, rows=rows, epochs="auto", batch_size=batch, validation_fraction=fraction)
    assert got["epochs"] == epochs
    assert _fit(seen, rows=rows, epochs=7, batch_size=batch, validation_fraction=fraction)["epochs"] == 7
    assert MLGPFClassifier().get_params()["epochs"] == "auto"


@pytest.mark.parametrize("epochs", ["many", "Auto", 0, 2.5, True])
def test_epochs_other_than_auto_or_a_positive_integer_are_refused(epochs) -> None:
    from mlgp.estimator import ParameterError

    rng = np.random.default_rng(0)
    with pytest.raises(ParameterError, match="epochs"):
        MLGPFClassifier(epochs=epochs).fit(rng.random((20, 3)), (rng.random((20, 4)) < 0.3).astype(np.int8))


@pytest.mark.slow  # 4 s or more on 2 cores (README: the slow tier)
def test_auto_epochs_are_resolved_in_the_settings_and_kept_as_the_parameter(tmp_path) -> None:
    """A real fit with ``epochs="auto"`` on 30 rows (one step per epoch, no hold-out): 200 epochs
    run, ``settings_`` records 200, the parameter stays "auto" after the fit and after save / load;
    a NumPy integer is taken as the integer."""
    rng = np.random.default_rng(0)
    X, Y = rng.random((30, 3)), (rng.random((30, 4)) < 0.3).astype(np.int8)
    clf = MLGPFClassifier(num_latent_gps=2, num_inducing=4, validation_fraction=0, jit_compile=False).fit(X, Y)
    assert clf.n_iter_ == 200 and clf.settings_.epochs == 200 and clf.get_params()["epochs"] == "auto"
    loaded = MultiLabelEstimator.load(clf.save(tmp_path / "auto"))
    assert loaded.get_params()["epochs"] == "auto" and loaded.settings_.epochs == 200
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))
    two = MLGPFClassifier(num_latent_gps=2, num_inducing=4, validation_fraction=0, jit_compile=False,
                          epochs=np.int64(2)).fit(X, Y)
    assert two.n_iter_ == 2 and two.settings_.epochs == 2


@pytest.mark.slow  # 4 s or more on 2 cores (README: the slow tier)
def test_more_than_256_features_save_and_load(tmp_path) -> None:
    """D = 300 (ints above CPython's small-int cache); and the saved best epoch is checked on load."""
    rng = np.random.default_rng(1)
    X, Y = rng.random((40, 300)), (rng.random((40, 5)) < 0.4).astype(np.int8)
    clf = MLGPFClassifier(num_inducing=4, num_latent_gps=2, epochs=2, validation_fraction=0.2).fit(X, Y)
    loaded = MultiLabelEstimator.load(clf.save(tmp_path / "wide"))
    assert loaded.n_features_in_ == 300 and loaded.best_epoch_ == clf.best_epoch_
    np.testing.assert_array_equal(loaded.decision_function(X[:5]), clf.decision_function(X[:5]))
    clf.best_epoch_ = 0
    assert MultiLabelEstimator.load(clf.save(tmp_path / "zero")).best_epoch_ == 0
    clf.best_epoch_ = -1
    with pytest.raises(DataFormatError, match="best_epoch_"):
        MultiLabelEstimator.load(clf.save(tmp_path / "negative"))
