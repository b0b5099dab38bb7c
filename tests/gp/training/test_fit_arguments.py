"""``fit`` checks its arguments before any tracing and names the bad one."""

from __future__ import annotations

import pytest

from mlgp.data import mlgpf_prior
from mlgp.errors import ShapeError
from mlgp.models import MLGPF
from mlgp.training import fit


@pytest.fixture(scope="module")
def model_and_data():
    ds = mlgpf_prior(num_train=40, num_test=10, num_features=3, num_labels=5, num_latent=2, seed=0)
    model = MLGPF.from_data(ds.train.X, ds.train.Y, kernel="se", num_latent_gps=2, num_inducing=4)
    return model, (ds.train.X, ds.train.Y)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(epochs=0), "epochs must be >= 1"),
        (dict(epochs=2.5), "epochs must be a positive integer"),
        (dict(batch_size=0), "batch_size must be >= 1"),
        (dict(checkpoint_every=0), "checkpoint_every must be >= 1"),
        (dict(batch_growth="paper"), "batch_growth must be a pair"),
        (dict(batch_growth=(0, 5)), "batch_growth every must be >= 1"),
        (dict(batch_growth=(2, -1)), "batch_growth must be a pair"),
        (dict(jit_compile="fast"), "jit_compile must be False, True or 'except-cholesky'"),
    ],
)
def test_fit_rejects_bad_arguments_before_tracing(model_and_data, kwargs, match):
    model, data = model_and_data
    before = [v.numpy().copy() for v in model.trainable_variables]
    with pytest.raises(ValueError, match=match) as info:
        fit(model, data, progress=False, **{"epochs": 1, **kwargs})
    if "jit_compile" not in kwargs:
        assert isinstance(info.value, ShapeError)
    for v, b in zip(model.trainable_variables, before):
        assert (v.numpy() == b).all()
