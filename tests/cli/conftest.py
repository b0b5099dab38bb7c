"""Fixtures of the command-line tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlgp.data import write_xc
from mlgp.data.synthetic import mlgpf_prior


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    """A data home with one small dataset, ``tiny`` (150 train, 80 test, D = 8, K = 12)."""
    root = tmp_path_factory.mktemp("home")
    ds = mlgpf_prior(num_train=150, num_test=80, num_features=8, num_labels=12, num_latent=3, seed=3)
    (root / "tiny").mkdir()
    write_xc(root / "tiny" / "train.txt.gz", ds.train.X, ds.train.Y)
    write_xc(root / "tiny" / "test.txt.gz", ds.test.X, ds.test.Y)
    return root
