"""``fit`` checks its arguments before any tracing and names the bad one."""

from __future__ import annotations

import pytest

from mlgp.data import mlgpf_prior
from mlgp.errors import ArgumentError
from mlgp.models import mlgpf_from_data
from mlgp.training import fit


@pytest.fixture(scope="module")
def model_and_data():
    ds = mlgpf_prior(num_train=40, num_test=10, num_features=3, num_labels=5, num_latent=2, seed=0)
    model = mlgpf_from_data(ds.train.X, ds.train.Y, kernel="se", num_latent_gps=2, num_inducing=4)
    return model, (ds.train.X, ds.train.Y)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(epochs=0), ArgumentError, r"epochs must be a positive integer, got 0"),
        (dict(epochs=2.5), ArgumentError, r"epochs must be a positive integer, got 2\.5"),
        (dict(batch_size=0), ArgumentError, r"batch_size must be a positive integer, got 0"),
        (dict(checkpoint_every=0), ArgumentError, r"checkpoint_every must be a positive integer, got 0"),
        (dict(batch_growth="paper"), ArgumentError,
         r"batch_growth must be a pair \(every ≥ 1, increment ≥ 0\) of whole numbers, got 'paper'"),
        (dict(batch_growth=(0, 5)), ArgumentError,
         r"batch_growth must be a pair \(every ≥ 1, increment ≥ 0\) of whole numbers, got \(0, 5\)"),
        (dict(batch_growth=(2, -1)), ArgumentError,
         r"batch_growth must be a pair \(every ≥ 1, increment ≥ 0\) of whole numbers, got \(2, -1\)"),
        (dict(batch_growth=(2, 2.5)), ArgumentError,
         r"batch_growth must be a pair \(every ≥ 1, increment ≥ 0\) of whole numbers, got \(2, 2\.5\)"),
        (dict(batch_growth=(2, "x")), ArgumentError,
         r"batch_growth must be a pair \(every ≥ 1, increment ≥ 0\) of whole numbers, got \(2, 'x'\)"),
        (dict(jit_compile="fast"), ArgumentError, r"jit_compile must be False, True or 'except-cholesky', got 'fast'"),
    ],
)
def test_fit_rejects_bad_arguments_before_tracing(model_and_data, kwargs, error, match):
    model, data = model_and_data
    before = [v.numpy().copy() for v in model.trainable_variables]
    with pytest.raises(error, match=match) as info:
        fit(model, data, progress=False, **{"epochs": 1, **kwargs})
    assert isinstance(info.value, ValueError)
    for v, b in zip(model.trainable_variables, before):
        assert (v.numpy() == b).all()
