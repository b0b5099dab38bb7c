"""Shared by the training tests: a small MLGPF-prior problem and the model built on it."""

from __future__ import annotations

import numpy as np

from mlgp.data import mlgpf_prior
from mlgp.models import mlgpf_from_data


def small_problem():
    """60 training and 20 test points, D = 5, K = 8, from the MLGPF prior (P = 2)."""
    return mlgpf_prior(num_train=60, num_test=20, num_features=5, num_labels=8, num_latent=2, lengthscale=2.0, seed=0)


def build(ds, seed=0, **kw):
    """An SE-kernel MLGPF (P = 2, M = 5) from ``ds``'s training split."""
    kw = dict(dict(kernel="se", num_latent_gps=2, num_inducing=5), **kw)
    return mlgpf_from_data(ds.train.X, ds.train.Y, seed=seed, **kw)


def values(model):
    """Copies of the model's trainable variables."""
    return [v.numpy().copy() for v in model.trainable_variables]


def full_elbo(model, ds) -> float:
    """The bound on ``ds``'s whole training split, every label (dense)."""
    return float(model.elbo((ds.train.X.toarray(), ds.train.Y.toarray().astype(np.float64))).numpy())
