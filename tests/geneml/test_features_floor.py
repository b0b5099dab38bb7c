"""GenEML's preprocessing is the floor's: :class:`~mlgp.geneml.features.FeatureMap` carries a
:class:`~mlgp.blocks.RowNormalised` or :class:`~mlgp.blocks.ColumnStandardised` and takes ``"auto"``
from the one rule, :func:`mlgp.data.preprocessing.chosen_preprocessing` (change the rule there and
GenEML follows); its files keep their form."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import mlgp.data.preprocessing as preprocessing
from mlgp.blocks import ColumnStandardised, RowNormalised
from mlgp.geneml.features import FeatureMap


def _dense(seed: int = 0) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    return sp.csr_matrix(rng.standard_normal((30, 4)) * np.array([50.0, 0.1, 3.0, 1.0]) + 2.0)


def _sparse(seed: int = 0) -> sp.csr_matrix:
    return sp.random(40, 12, density=0.15, random_state=seed, format="csr")


def test_the_maps_are_the_floors_and_give_its_arithmetic() -> None:
    X, S = _dense(), _sparse()
    rows = FeatureMap.fit(S, "rows")
    assert isinstance(rows.input_map, RowNormalised) and rows.input_map.num_features == 12
    np.testing.assert_array_equal(rows(S).toarray(), preprocessing.normalise_rows(S).toarray())
    columns = FeatureMap.fit(X, "columns")
    assert isinstance(columns.input_map, ColumnStandardised)
    centre, scale = preprocessing.column_statistics(X)
    np.testing.assert_array_equal(columns.scale, scale)
    np.testing.assert_array_equal(columns.centre, centre - scale)  # the +1 shift of dense columns
    np.testing.assert_array_equal(columns(X).toarray(), ColumnStandardised(centre - scale, scale)(X))
    scaled = FeatureMap.fit(S, "columns")  # sparse: centre 0, the floor's sparse product
    np.testing.assert_array_equal(scaled(S).toarray(), ColumnStandardised(np.zeros(12), scaled.scale)(S).toarray())
    assert FeatureMap.fit(S, None).input_map is None


@pytest.mark.parametrize("make", [_dense, _sparse])
def test_auto_is_the_floors_one_rule(monkeypatch, make) -> None:
    X = make()
    assert FeatureMap.fit(X, "auto").kind == preprocessing.chosen_preprocessing("auto", X)
    monkeypatch.setattr(preprocessing, "wants_columns", lambda X: not X.nnz >= 0.5 * X.shape[0] * X.shape[1])
    assert FeatureMap.fit(X, "auto").kind == preprocessing.chosen_preprocessing("auto", X)  # the rule, changed


def test_the_rule_takes_dense_arrays_and_refuses_unknown_names() -> None:
    from mlgp.errors import ArgumentError

    X = _dense()
    assert preprocessing.chosen_preprocessing("auto", X.toarray()) == "columns"
    assert preprocessing.chosen_preprocessing("auto", _sparse()) == "rows"
    assert [preprocessing.chosen_preprocessing(p, X) for p in ("rows", "columns", None)] == ["rows", "columns", None]
    with pytest.raises(ArgumentError, match="preprocessing must be one of"):
        preprocessing.chosen_preprocessing("l2", X)


def test_a_saved_map_is_restored_as_the_floors(tmp_path) -> None:
    """The file's entries are unchanged (``preprocessing_``, ``feature_centre_``, ``feature_scale_``)
    and come back as the floor's maps; a file from before ``preprocessing_`` gives rows or nothing."""
    from mlgp.geneml import GenEML

    Y = sp.csr_matrix((np.random.default_rng(0).random((30, 3)) < 0.4).astype(float))
    est = GenEML(n_components=2, max_iter=2, calibration=None).fit(_dense(), Y)
    scalars, arrays = est.feature_map_.saved()
    assert scalars == {"preprocessing_": "columns"} and set(arrays) == {"feature_centre_", "feature_scale_"}
    loaded = GenEML.load(est.save(tmp_path / "g"))
    assert isinstance(loaded.feature_map_.input_map, ColumnStandardised)
    np.testing.assert_array_equal(loaded.predict_proba(_dense(1)), est.predict_proba(_dense(1)))

    class Old:  # a state without preprocessing_ (files of releases before it)
        @staticmethod
        def has_scalar(name):
            return False

    assert isinstance(FeatureMap.restore(Old(), 4, True).input_map, RowNormalised)
    assert FeatureMap.restore(Old(), 4, False).input_map is None
