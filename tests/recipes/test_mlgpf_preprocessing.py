"""MLGPFClassifier's ``preprocessing``: chosen from the training rows (``"auto"``), carried by the
model as its input map (columns standardised, then rows normalised), saved and scored on raw rows;
the recipe (``train_mlgpf``) keeps the paper's row normalisation by default."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp

from mlgp.blocks import ColumnStandardised, RowNormalised, take_rows
from mlgp.data.preprocessing import column_statistics, normalise_rows
from mlgp.data.synthetic import default_problem
from mlgp.errors import ArgumentError
from mlgp.estimator import MultiLabelEstimator
from mlgp.recipes import MLGPFClassifier, MLGPFSettings

SMALL = dict(num_latent_gps=2, num_inducing=10, epochs=2, validation_fraction=0)


@pytest.fixture(scope="module")
def dense():
    """Dense signed features, columns on unlike scales."""
    ds = default_problem()
    scale = np.linspace(0.1, 100.0, ds.train.X.shape[1])
    def dense_of(X):
        return X.toarray() if sp.issparse(X) else np.asarray(X)

    return ds, dense_of(ds.train.X) * scale, dense_of(ds.test.X) * scale


def test_auto_standardises_dense_signed_columns_and_the_model_carries_it(dense, tmp_path) -> None:
    ds, X, Xt = dense
    clf = MLGPFClassifier(**SMALL).fit(X, ds.train.Y)
    assert clf.settings_.preprocessing == "columns"
    outer = clf.model_.input_map
    assert isinstance(outer, ColumnStandardised) and isinstance(outer.inner, RowNormalised)
    centre, scale = column_statistics(X)
    np.testing.assert_array_equal(outer.centre, centre)
    np.testing.assert_array_equal(outer.scale, scale)
    by_hand = take_rows(normalise_rows((Xt - centre) / scale), slice(None), input_map=outer.inner.inner)
    np.testing.assert_allclose(clf.decision_function(Xt), clf.model_.mean_utilities(by_hand), rtol=1e-5, atol=1e-5)
    loaded = MultiLabelEstimator.load(clf.save(tmp_path / "columns"))
    assert isinstance(loaded.model_.input_map, ColumnStandardised) and loaded.settings_.preprocessing == "columns"
    np.testing.assert_array_equal(loaded.decision_function(Xt), clf.decision_function(Xt))


@pytest.mark.slow  # 4 s or more on 2 cores (README: the slow tier)
def test_auto_keeps_rows_for_sparse_non_negative_features_and_rows_can_be_asked_for(dense) -> None:
    ds, X, _ = dense
    counts = sp.csr_matrix((np.abs(X) > 60.0).astype(np.float64))  # sparse 0/1
    clf = MLGPFClassifier(**SMALL).fit(counts, ds.train.Y)
    assert clf.settings_.preprocessing == "rows" and isinstance(clf.model_.input_map, RowNormalised)
    rows = MLGPFClassifier(preprocessing="rows", **SMALL).fit(X, ds.train.Y)
    assert rows.settings_.preprocessing == "rows" and isinstance(rows.model_.input_map, RowNormalised)
    forced = MLGPFClassifier(preprocessing="columns", **SMALL).fit(counts, ds.train.Y)
    assert isinstance(forced.model_.input_map, ColumnStandardised) and not forced.model_.input_map.centre.any()


def test_the_recipe_keeps_the_papers_rows_and_a_bad_name_is_refused() -> None:
    assert MLGPFSettings().preprocessing == "rows" and MLGPFClassifier().preprocessing == "auto"
    with pytest.raises(ArgumentError, match=r"preprocessing must be one of 'auto', 'rows', 'columns'; got 'cols'"):
        MLGPFSettings(preprocessing="cols")


def test_a_file_saved_before_the_setting_reads_as_rows(dense, tmp_path, monkeypatch) -> None:
    ds, X, Xt = dense
    clf = MLGPFClassifier(preprocessing="rows", **SMALL).fit(X, ds.train.Y)
    as_json = MLGPFSettings.as_json
    monkeypatch.setattr(MLGPFSettings, "as_json", lambda self: {k: v for k, v in as_json(self).items()
                                                                if k != "preprocessing"})
    path = clf.save(tmp_path / "old")
    monkeypatch.undo()
    with np.load(path, allow_pickle=False) as f:
        header = json.loads(str(f["__header__"]))

    def settings_of(node):
        if isinstance(node, dict):
            return node["settings_"] if "settings_" in node else next(
                (found for v in node.values() if (found := settings_of(v)) is not None), None)
        return None

    assert "preprocessing" not in settings_of(header) and "kernel" in settings_of(header)
    loaded = MultiLabelEstimator.load(path)
    assert loaded.settings_.preprocessing == "rows"
    np.testing.assert_array_equal(loaded.decision_function(Xt), clf.decision_function(Xt))
