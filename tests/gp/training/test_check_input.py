"""Data are checked once, at the boundary: ``check_input=False`` skips the checks a caller has done."""

from __future__ import annotations

import numpy as np
import pytest

import mlgp.scores._batches
import importlib
from mlgp.data import mlgpf_prior
from mlgp.models import mlgpf_from_data
from mlgp.recipes import MLGPFClassifier, train_mlgpf
from mlgp.training import fit

FIT_MODULE = importlib.import_module("mlgp.training.fit_options")  # where fit checks its data


def _count_calls(monkeypatch, module, name):
    calls = []
    real = getattr(module, name)

    def spy(*args, **kwargs):
        calls.append(args[0].shape)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return calls


@pytest.mark.slow
def test_fit_checks_training_data_unless_told_and_validation_data_once(monkeypatch):
    ds = mlgpf_prior(num_train=40, num_test=20, num_features=3, num_labels=5, num_latent=2, seed=0)
    train = _count_calls(monkeypatch, FIT_MODULE, "check_training_data")
    scored = _count_calls(monkeypatch, mlgp.scores._batches, "check_features")
    model = mlgpf_from_data(ds.train.X, ds.train.Y, kernel="se", num_latent_gps=2, num_inducing=4)
    fit(model, (ds.train.X, ds.train.Y), epochs=3, batch_size=20, progress=False,
        validation=(ds.test.X, ds.test.Y))
    assert train == [(40, 3)]
    assert scored == []  # the validation split is checked once by fit itself, not at every epoch
    fit(model, (ds.train.X, ds.train.Y), epochs=1, batch_size=20, progress=False, check_input=False)
    assert train == [(40, 3)]
    # scoring checks X once, at the estimator's boundary, and not again for each block
    estimator_checks = _count_calls(monkeypatch, importlib.import_module("mlgp.recipes.estimator"), "check_features")
    MLGPFClassifier.from_model(model).predict_topk(ds.test.X, 2, batch_size=7)
    assert estimator_checks == [(20, 3)] and scored == []


@pytest.mark.slow
def test_the_recipe_checks_the_training_data_once(monkeypatch):
    """train_mlgpf → MLGPFClassifier.fit → build → fit: the training features are checked (and
    copied) once in all, at the classifier's boundary (its ``check_features``)."""
    ds = mlgpf_prior(num_train=40, num_test=20, num_features=3, num_labels=5, num_latent=2, seed=1)
    calls = []
    for name in ("mlgp.recipes.mlgpf", "mlgp.recipes.estimator", "mlgp.recipes.build", "mlgp.estimator.base",
                 "mlgp.models.builders", "mlgp.training.fit", "mlgp.training.fit_options", "mlgp.training.sampler"):
        module = importlib.import_module(name)
        for check in ("check_training_data", "check_features"):
            if hasattr(module, check):
                calls.append(_count_calls(monkeypatch, module, check))
    run = train_mlgpf(ds, kernel="se", num_latent_gps=2, num_inducing=4, epochs=1, batch_size=20, progress=False)
    training = [shape for c in calls for shape in c if shape == (40, 3)]
    assert len(training) == 1 and np.isfinite(run.trace["elbo"]).all()


def test_m_against_n_is_one_check_with_its_bound_included() -> None:
    """``1 ≤ M ≤ N`` is :func:`mlgp.validation.check_num_inducing`, which the builder, the recipe and
    the estimator call: M = N is taken, M = N + 1 refused with the caller's reason at the end."""
    import pytest

    from mlgp.errors import ShapeError
    from mlgp.validation import check_num_inducing

    check_num_inducing(5, 5)
    with pytest.raises(ShapeError, match=r"^num_inducing M must be in \[1, N=5\] \(the training points used\), "
                                         r"got 6: after the hold-out$"):
        check_num_inducing(6, 5, ": after the hold-out")


def test_the_three_doors_to_mlgpf_share_the_m_check(monkeypatch) -> None:
    """The builder (through ``check_training_data``), ``train_mlgpf`` and ``MLGPFClassifier`` all
    refuse M > N through the one function."""
    import mlgp.recipes.estimator as estimator_module
    import mlgp.recipes.mlgpf as recipe_module
    import mlgp.validation as validation

    for module in (validation, recipe_module, estimator_module):
        assert module.check_num_inducing is validation.check_num_inducing


def test_fit_options_are_given_by_name() -> None:
    """Twenty-odd options in a row: a positional record could take them shifted by one."""
    import dataclasses

    from mlgp.training.fit_options import FitOptions

    assert all(f.kw_only for f in dataclasses.fields(FitOptions))
    with pytest.raises(TypeError, match="positional argument"):
        FitOptions(10, 100)  # noqa: the refusal is the point
