"""The MLGPF recipe with subspace inducing inputs: ``train_mlgpf(..., subspace_rank=R)`` and
``mlgp demo --subspace-rank R``."""

from __future__ import annotations

import numpy as np
import pytest

from mlgp.blocks import RowNormalised, take_rows
from mlgp.cli import main
from mlgp.data.preprocessing import normalise_rows
from mlgp.data import mlgpf_prior
from mlgp.data.subspace import SubspaceProjection
from mlgp.errors import ArgumentError, CheckpointMismatchError, ShapeError
from mlgp.inducing import SubspaceInducingPoints
from mlgp.recipes import MLGPFSettings, train_mlgpf

KW = dict(kernel="se", num_latent_gps=2, num_inducing=6, batch_size=40, progress=False, jit_compile=False)


@pytest.fixture(scope="module")
def problem():
    return mlgpf_prior(num_train=80, num_test=30, num_features=12, num_labels=7, num_latent=2, seed=3)


def test_train_mlgpf_builds_and_trains_the_subspace_model(problem, tmp_path):
    run = train_mlgpf(problem, epochs=2, subspace_rank=5, checkpoint_dir=tmp_path, **KW)
    # the model carries the recipe's row normalisation around the projection: it scores raw rows
    assert isinstance(run.model.input_map, RowNormalised)
    assert isinstance(run.model.input_map.inner, SubspaceProjection) and run.model.input_map.inner.basis.shape == (5, 12)
    by_hand = take_rows(normalise_rows(problem.test.X), slice(None), input_map=run.model.input_map.inner)
    assert run.estimator.model_ is run.model
    np.testing.assert_array_equal(run.estimator.decision_function(problem.test.X), run.model.mean_utilities(by_hand))
    iv = run.model.inducing_variable.inducing_variable
    assert isinstance(iv, SubspaceInducingPoints) and iv.A.shape == (6, 5)
    assert iv.unit_rows  # the recipe keeps Z on the unit sphere by default
    assert run.settings["subspace_rank"] == 5 and np.isfinite(run.trace["elbo"]).all()
    with pytest.raises(CheckpointMismatchError, match=r"subspace_rank: checkpoint 5, now 4"):
        train_mlgpf(problem, epochs=3, subspace_rank=4, checkpoint_dir=tmp_path, **KW)


@pytest.mark.parametrize("value, error, message", [
    (0, ArgumentError, r"subspace_rank must be a positive integer or None, got 0"),
    (2.0, ArgumentError, r"subspace_rank must be a positive integer or None, got 2\.0"),
])
def test_the_setting_is_checked_when_built(value, error, message):
    with pytest.raises(error, match=message):
        MLGPFSettings(subspace_rank=value)


def test_a_rank_the_data_cannot_hold_is_refused(problem):
    with pytest.raises(ShapeError, match=r"subspace_rank R must be below min\(N, D\) = 12, got 12"):
        train_mlgpf(problem, epochs=1, subspace_rank=12, **KW)


def test_demo_takes_the_subspace_rank(capsys, monkeypatch):
    monkeypatch.delenv("MLGP_DATA", raising=False)
    assert main(["demo", "--quick", "--subspace-rank", "4"]) == 0
    out = capsys.readouterr().out
    assert "inducing inputs in the top-4 singular subspace" in out
