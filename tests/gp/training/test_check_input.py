"""Data are checked once, at the boundary: ``check_input=False`` skips the checks a caller has done."""

from __future__ import annotations

import numpy as np

import mlgp.scores._batches
import importlib
from mlgp.data import mlgpf_prior
from mlgp.models import MLGPF
from mlgp.recipes import train_mlgpf
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


def test_fit_checks_training_data_unless_told_and_validation_data_once(monkeypatch):
    ds = mlgpf_prior(num_train=40, num_test=20, num_features=3, num_labels=5, num_latent=2, seed=0)
    train = _count_calls(monkeypatch, FIT_MODULE, "check_training_data")
    scored = _count_calls(monkeypatch, mlgp.scores._batches, "check_features")
    model = MLGPF.from_data(ds.train.X, ds.train.Y, kernel="se", num_latent_gps=2, num_inducing=4)
    fit(model, (ds.train.X, ds.train.Y), epochs=3, batch_size=20, progress=False,
        validation=(ds.test.X, ds.test.Y))
    assert train == [(40, 3)]
    assert scored == []  # the validation split is checked once by fit itself, not at every epoch
    fit(model, (ds.train.X, ds.train.Y), epochs=1, batch_size=20, progress=False, check_input=False)
    assert train == [(40, 3)]
    model.predict_topk(ds.test.X, 2)
    model.predict_topk(ds.test.X, 2, check_input=False)
    assert scored == [(20, 3)]


def test_the_recipe_checks_the_training_data_once(monkeypatch):
    """train_mlgpf → from_data → fit: the training data are checked (and copied) once in all."""
    ds = mlgpf_prior(num_train=40, num_test=20, num_features=3, num_labels=5, num_latent=2, seed=1)
    calls = []
    for name in ("mlgp.recipes.mlgpf", "mlgp.models.builders", "mlgp.training.fit", "mlgp.training.fit_options", "mlgp.training.sampler"):
        module = importlib.import_module(name)
        if hasattr(module, "check_training_data"):
            calls.append(_count_calls(monkeypatch, module, "check_training_data"))
    run = train_mlgpf(ds, kernel="se", num_latent_gps=2, num_inducing=4, epochs=1, batch_size=20, progress=False)
    assert sum(len(c) for c in calls) == 1 and np.isfinite(run.trace["elbo"]).all()
