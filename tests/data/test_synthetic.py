"""Tests of the synthetic problems (mlgp.data.synthetic)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from mlgp.data import Dataset, default_problem, geneml_lowrank, lspc_toy, mlgpf_prior
from mlgp.errors import ArgumentError


def _check_dataset(ds: Dataset, ntr: int, nte: int, d: int, k: int) -> None:
    assert isinstance(ds, Dataset)
    for split, n in ((ds.train, ntr), (ds.test, nte)):
        assert isinstance(split.X, sp.csr_matrix) and isinstance(split.Y, sp.csr_matrix)
        assert split.X.shape == (n, d) and split.Y.shape == (n, k)
        assert split.X.dtype == np.float64 and split.Y.dtype == np.int8
        assert set(np.unique(split.Y.data)) <= {1}


def _same(a: Dataset, b: Dataset) -> bool:
    return all(
        (sa.X != sb.X).nnz == 0 and (sa.Y != sb.Y).nnz == 0
        for sa, sb in ((a.train, b.train), (a.test, b.test))
    )


GENERATORS = [
    (lambda s: lspc_toy(30, 20, num_labels=4, num_features=7, seed=s), (30, 20, 7, 4)),
    (lambda s: geneml_lowrank(40, 10, num_labels=12, num_features=6, rank=3, seed=s),
     (40, 10, 6, 12)),
    (lambda s: mlgpf_prior(50, 25, num_features=5, num_labels=8, num_latent=2, seed=s),
     (50, 25, 5, 8)),
]


@pytest.mark.parametrize("make,shape", GENERATORS)
def test_shapes_and_determinism(make, shape):
    a, b, c = make(3), make(3), make(4)
    _check_dataset(a, *shape)
    assert _same(a, b)
    assert not _same(a, c)


@pytest.mark.parametrize("inputs", ["normal", "uniform"])
def test_lspc_decision_rule(inputs):
    T = 6
    ds = lspc_toy(100, 50, num_labels=T, num_features=10, seed=1, inputs=inputs)
    assert ds.extras["inputs"] == inputs
    for split in (ds.train, ds.test):
        X = split.X.toarray()
        assert np.all(np.abs(X) <= 1.0) == (inputs == "uniform")
        t = np.arange(1, T + 1)
        rule = (np.cos(2 * np.pi * t / T) * X[:, [0]] + np.sin(2 * np.pi * t / T) * X[:, [1]]) > 0
        np.testing.assert_array_equal(split.Y.toarray(), rule.astype(np.int8))


def test_lspc_noise_flips_some():
    clean = lspc_toy(200, 10, seed=2)
    noisy = lspc_toy(200, 10, noise=0.2, seed=2)
    np.testing.assert_array_equal(clean.train.X.toarray(), noisy.train.X.toarray())
    frac = (clean.train.Y != noisy.train.Y).nnz / np.prod(clean.train.Y.shape)
    assert 0.1 < frac < 0.3


def test_geneml_exposure_hides_only_positives():
    ds = geneml_lowrank(300, 100, num_labels=20, num_features=8, rank=4,
                        exposure=(2.0, 2.0), seed=5)
    ex = ds.extras
    full = ex["Y_full"].toarray()
    observed = np.vstack([ds.train.Y.toarray(), ds.test.Y.toarray()])
    assert full.shape == observed.shape == (400, 20)
    assert np.all(observed <= full)  # never a positive that is not in Y_full
    assert (full - observed).sum() > 0  # some positives hidden
    np.testing.assert_array_equal(ex["Y_full_train"].toarray(), full[:300])
    np.testing.assert_array_equal(ex["Y_full_test"].toarray(), full[300:])
    mu = ex["exposure"]
    assert mu.shape == (20,) and np.all((mu > 0) & (mu < 1))
    assert ex["W"].shape == (4, 8) and ex["V"].shape == (20, 4)
    # Observed rate per label is about mu times the full rate.
    ratio = observed.sum() / full.sum()
    assert abs(ratio - np.average(mu, weights=full.sum(0) + 1e-12)) < 0.05


def test_mlgpf_prior_extras():
    ds = mlgpf_prior(60, 40, num_features=4, num_labels=7, num_latent=3, lengthscale=2.0,
                     seed=0)
    assert ds.extras["Phi"].shape == (7, 3) and ds.extras["b"].shape == (7,)
    assert ds.extras["H"].shape == (100, 3)
    # Labels are consistent with the latent logits (strongly positive -> mostly 1).
    logits = ds.extras["H"] @ ds.extras["Phi"].T + ds.extras["b"]
    Y = np.vstack([ds.train.Y.toarray(), ds.test.Y.toarray()])
    assert Y[logits > 3].mean() > 0.8 and Y[logits < -3].mean() < 0.2


def test_default_problem():
    ds = default_problem()
    assert ds.name == "synthetic"
    _check_dataset(ds, 600, 300, 20, 30)
    rate = ds.train.Y.nnz / np.prod(ds.train.Y.shape)
    assert 0.05 < rate < 0.7
    assert _same(ds, default_problem(0))


def test_bad_arguments():
    with pytest.raises(ArgumentError, match=r"num_train must be a positive integer, got 0"):
        lspc_toy(0, 10)
    with pytest.raises(ArgumentError, match=r"num_labels must be a positive integer, got 2\.5"):
        geneml_lowrank(10, 10, num_labels=2.5)
    with pytest.raises(ArgumentError, match=r"num_latent must be a positive integer, got 0"):
        mlgpf_prior(10, 10, num_latent=0)
    with pytest.raises(ArgumentError, match=r"lspc_toy needs num_features >= 2"):
        lspc_toy(10, 10, num_features=1)
    with pytest.raises(ArgumentError, match=r"noise must be a probability, got 2\.0"):
        lspc_toy(10, 10, noise=2.0)
    with pytest.raises(ArgumentError, match=r"exposure Beta parameters must be positive, got \(0\.0, 1\.0\)"):
        geneml_lowrank(10, 10, exposure=(0.0, 1.0))
    with pytest.raises(ArgumentError, match=r"lengthscale must be positive, got -1\.0"):
        mlgpf_prior(10, 10, lengthscale=-1.0)
