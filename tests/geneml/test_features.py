"""GenEML's feature preprocessing (:mod:`mlgp.geneml.features`): the ``"auto"`` rule, column
standardisation against scikit-learn's scalers and NumPy, constant and all-zero columns, the
training statistics reused for new rows and kept through save / load, and the earlier
``normalize_rows`` switch."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.preprocessing import StandardScaler, normalize

from mlgp.errors import ArgumentError
from mlgp.geneml import GenEML
from mlgp.geneml.features import FeatureMap


def _dense_signed(seed: int = 0, N: int = 60, D: int = 6) -> sp.csr_matrix:
    """Dense features with unrelated scales and signs (as emotions': −99 to 237)."""
    rng = np.random.default_rng(seed)
    return sp.csr_matrix(rng.standard_normal((N, D)) * np.array([100.0, 0.01, 5.0, 1.0, 30.0, 2.0]) + 7.0)


def _sparse_counts(seed: int = 0) -> sp.csr_matrix:
    return sp.random(80, 40, density=0.1, random_state=seed, format="csr", data_rvs=lambda n: np.ceil(5 * np.random.default_rng(seed).random(n)))


def test_auto_normalises_rows_of_non_negative_sparse_features_and_standardises_the_rest():
    X = _sparse_counts()
    assert FeatureMap.fit(X, "auto").kind == "rows"
    np.testing.assert_allclose(FeatureMap.fit(X, "auto")(X).toarray(), normalize(X.toarray()), rtol=1e-12)
    assert FeatureMap.fit(_dense_signed(), "auto").kind == "columns"
    signed = X.copy()
    signed.data[::3] *= -1
    assert FeatureMap.fit(signed, "auto").kind == "columns"
    assert FeatureMap.fit(X, None)(X) is X


def test_dense_columns_are_standardised_as_scikit_learn_does_then_shifted_by_one():
    X = _dense_signed()
    mapped = FeatureMap.fit(X, "columns")
    np.testing.assert_allclose(mapped(X).toarray(), StandardScaler().fit_transform(X.toarray()) + 1.0, rtol=1e-10,
                               atol=1e-12)
    new = _dense_signed(seed=1, N=9)  # new rows: the training rows' statistics, not their own
    np.testing.assert_allclose(mapped(new).toarray(), StandardScaler().fit(X.toarray()).transform(new.toarray()) + 1.0,
                               rtol=1e-10, atol=1e-12)


def test_centred_features_still_give_the_frequent_labels_first():
    """GenEML has no per-label bias: with centred columns and no shift an average row had u ≈ 0, so
    every label scored σ(0) and the most frequent label could rank anywhere (foodtruck: P@1 31.85
    against the label prior's 72.59). Features that carry nothing: the frequencies must show."""
    rng = np.random.default_rng(0)
    X = sp.csr_matrix(rng.standard_normal((300, 8)))
    freq = np.array([0.9, 0.05, 0.05, 0.05, 0.5, 0.05])
    Y = sp.csr_matrix((rng.random((300, 6)) < freq).astype(float))
    est = GenEML(n_components=3, calibration=None, random_state=0).fit(X, Y)
    assert est.feature_map_.kind == "columns"
    top = est.predict_topk(sp.csr_matrix(rng.standard_normal((50, 8))), 2).indices
    assert (top[:, 0] == 0).mean() >= 0.9 and (top[:, 1] == 4).mean() >= 0.8


def test_sparse_signed_columns_are_only_scaled_by_their_root_mean_square():
    X = _sparse_counts(1)
    X.data[::2] *= -1
    out = FeatureMap.fit(X, "columns")(X)
    dense = X.toarray()
    rms = np.sqrt(np.mean(dense ** 2, axis=0))
    expected = np.divide(dense, rms, out=np.zeros_like(dense), where=rms > 0)
    np.testing.assert_allclose(out.toarray(), expected, rtol=1e-12)
    assert out.nnz == X.nnz  # the zeros stay zeros


def test_constant_and_all_zero_columns_are_centred_and_not_divided():
    X = _dense_signed().toarray()
    X[:, 1] = 3.5
    X[:, 4] = 0.0
    X = sp.csr_matrix(X)
    mapped = FeatureMap.fit(X, "columns")
    out = mapped(X).toarray()
    assert np.all(np.isfinite(out)) and np.all(out[:, [1, 4]] == 1.0)  # centred, then the shift
    assert mapped.scale[1] == mapped.scale[4] == 1.0
    before = X.copy()
    mapped(X)
    assert (X != before).nnz == 0  # the caller's matrix is not changed


def test_an_unknown_preprocessing_is_refused():
    with pytest.raises(ArgumentError, match="preprocessing must be one of"):
        FeatureMap.fit(_sparse_counts(), "l2")


def test_the_estimator_keeps_its_training_statistics_through_save_and_load(tmp_path):
    X, Xte = _dense_signed(), _dense_signed(seed=2, N=10)
    Y = sp.csr_matrix((np.random.default_rng(0).random((60, 5)) < 0.3).astype(float))
    est = GenEML(n_components=2, max_iter=3).fit(X, Y)
    assert est.feature_map_.kind == "columns"
    np.testing.assert_allclose(est._rows(Xte).toarray(),
                               StandardScaler().fit(X.toarray()).transform(Xte.toarray()) + 1.0, rtol=1e-10, atol=1e-12)
    loaded = GenEML.load(est.save(tmp_path / "columns"))
    np.testing.assert_array_equal(loaded.feature_map_.scale, est.feature_map_.scale)
    np.testing.assert_array_equal(loaded.predict_proba(Xte), est.predict_proba(Xte))
    rows = GenEML(n_components=2, max_iter=3, normalize_rows=True).fit(X, Y)
    assert rows.feature_map_.kind == "rows"
    assert GenEML.load(rows.save(tmp_path / "rows")).feature_map_.kind == "rows"
    assert GenEML(n_components=2, max_iter=3, normalize_rows=False).fit(X, Y).feature_map_.kind is None


def test_auto_normalises_rows_of_tf_idf_values_below_one():
    """Non-negative sparse features below 1 (TF-IDF weights) are row-normalised too: the rule
    asks for a negative value, not for values under 1."""
    X = _sparse_counts(2)
    X.data = X.data / 10.0
    assert X.data.max() < 1 and FeatureMap.fit(X, "auto").kind == "rows"


def test_a_column_constant_up_to_rounding_is_not_divided():
    """A column whose spread is below 1e-12 of its size (a constant, up to float64 rounding, at
    1e8) is only centred: dividing by its rounding noise would blow it up."""
    X = _dense_signed().toarray()
    X[:, 2] = 1e8 + 1e-5 * np.random.default_rng(3).standard_normal(X.shape[0])
    mapped = FeatureMap.fit(sp.csr_matrix(X), "columns")
    assert mapped.scale[2] == 1.0 and mapped.scale[0] != 1.0
    assert np.abs(mapped(sp.csr_matrix(X)).toarray()[:, 2] - 1.0).max() < 1e-3


@pytest.mark.parametrize("kind", ["columns", "rows"])
def test_dense_arrays_are_mapped_as_their_csr_form(kind):
    """Scoring calls and validation pairs may hand the map dense arrays: the same result as CSR."""
    X = _dense_signed() if kind == "columns" else _sparse_counts()
    mapped = FeatureMap.fit(X, kind)
    np.testing.assert_array_equal(mapped(X.toarray()).toarray(), mapped(X).toarray())
    signed = _sparse_counts(4)
    signed.data[::2] *= -1
    scaled = FeatureMap.fit(signed, "columns")
    np.testing.assert_array_equal(scaled(signed.toarray()).toarray(), scaled(signed).toarray())


def test_a_dense_validation_pair_is_preprocessed_like_the_training_rows():
    X, Y = _dense_signed(), sp.csr_matrix((np.random.default_rng(1).random((60, 5)) < 0.3).astype(float))
    est = GenEML(n_components=2, max_iter=2).fit(X.toarray(), Y, validation=(X[:10].toarray(), Y[:10].toarray()))
    assert est.feature_map_.kind == "columns" and "P@1" in est.trace_

