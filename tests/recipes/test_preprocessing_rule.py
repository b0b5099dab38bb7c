"""MLGPF's ``preprocessing="auto"`` is the floor's one rule (``chosen_preprocessing``), the rule
GenEML takes too: changing the rule changes both."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

import mlgp.data.preprocessing as preprocessing
from mlgp.recipes import MLGPFSettings
from mlgp.recipes.build import resolved_preprocessing


def test_auto_follows_the_floors_rule(monkeypatch) -> None:
    X = sp.csr_matrix(np.abs(np.random.default_rng(0).standard_normal((20, 4))))
    s = MLGPFSettings(preprocessing="auto")
    assert resolved_preprocessing(s, X).preprocessing == "columns"  # dense features
    monkeypatch.setattr(preprocessing, "wants_columns", lambda X: False)
    assert resolved_preprocessing(s, X).preprocessing == "rows"
    assert resolved_preprocessing(MLGPFSettings(preprocessing="columns"), X).preprocessing == "columns"
