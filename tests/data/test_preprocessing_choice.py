"""The floor's choice between row normalisation and column standardisation
(:func:`mlgp.data.preprocessing.wants_columns`, :func:`~mlgp.data.preprocessing.column_statistics`)
and the input map that applies the columns' statistics (:class:`mlgp.blocks.ColumnStandardised`)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from mlgp.blocks import ColumnStandardised, RowNormalised
from mlgp.data.preprocessing import DENSE_FROM, column_statistics, wants_columns
from mlgp.errors import ArgumentError, ShapeError


def test_columns_for_dense_or_signed_features_never_for_one_row() -> None:
    dense = sp.csr_matrix(np.arange(1.0, 13.0).reshape(4, 3))
    sparse = sp.csr_matrix(np.eye(4, 10))  # 10 % stored, non-negative
    assert wants_columns(dense) and not wants_columns(sparse)
    signed = sparse.copy()
    signed.data[0] = -1.0
    assert wants_columns(signed)
    assert not wants_columns(dense[:1]) and not wants_columns(sp.csr_matrix((3, 4)))
    half = sp.csr_matrix(np.kron(np.eye(2), np.ones((1, 2))))  # 2 × 4, exactly half stored
    assert DENSE_FROM == 0.5 and wants_columns(half) and not wants_columns(sp.csr_matrix(np.eye(2, 5)))


def test_column_statistics_dense_sparse_and_constant_columns() -> None:
    X = np.array([[1.0, 5.0, 2.0], [3.0, 5.0, -2.0], [5.0, 5.0, 0.0]])
    centre, scale = column_statistics(X)  # dense (as an array, or CSR)
    np.testing.assert_allclose(centre, [3.0, 5.0, 0.0])
    np.testing.assert_allclose(scale, [np.std([1, 3, 5]), 1.0, np.std([2, -2, 0])])  # a constant column: scale 1
    np.testing.assert_array_equal(column_statistics(sp.csr_matrix(X))[1], scale)
    # a spread of exactly 1e-12 (times max(1, |centre|)) counts as none: scale 1; just above, kept
    tiny = np.array([[1e-12, 2e-12, 1.0], [-1e-12, -2e-12, 2.0]])
    np.testing.assert_array_equal(column_statistics(tiny)[1], [1.0, 2e-12, 0.5])
    S = sp.csr_matrix(np.array([[0.0, 3.0, 0.0, 0.0], [0.0, 4.0, 0.0, 0.0], [2.0, 0.0, 0.0, 0.0],
                                [0.0, 0.0, 0.0, 0.0]]))
    centre, scale = column_statistics(S)  # sparse: not centred, divided by the root mean square
    np.testing.assert_array_equal(centre, np.zeros(4))
    np.testing.assert_allclose(scale, [1.0, np.sqrt(25 / 4), 1.0, 1.0])


def test_the_map_standardises_then_applies_its_inner_map() -> None:
    X = np.array([[1.0, 5.0, 2.0], [3.0, 5.0, -2.0], [5.0, 5.0, 0.0]])
    centre, scale = column_statistics(X)
    plain = ColumnStandardised(centre, scale)
    np.testing.assert_array_equal(plain(X), (X - centre) / scale)
    np.testing.assert_array_equal(plain(sp.csr_matrix(X)), (X - centre) / scale)  # CSR in, dense out
    assert (plain.num_features, plain.num_outputs) == (3, 3)
    both = ColumnStandardised(centre, scale, inner=RowNormalised(num_features=3))
    np.testing.assert_allclose(both(X).toarray(), RowNormalised.rows((X - centre) / scale).toarray(), rtol=1e-15)


def test_a_zero_centre_keeps_a_csr_block_sparse() -> None:
    S = sp.csr_matrix(np.array([[0.0, 3.0, 0.0], [2.0, 0.0, 0.0]]))
    out = ColumnStandardised(np.zeros(3), np.array([2.0, 3.0, 4.0]))(S)
    assert sp.issparse(out) and out.nnz == 2
    np.testing.assert_array_equal(out.toarray(), [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])


@pytest.mark.parametrize("centre, scale, inner, error, message", [
    (np.zeros(3), np.ones(2), None, ShapeError, r"centre and scale must be \(D,\) each with D ≥ 1; got 3 and 2"),
    (np.zeros(0), np.ones(0), None, ShapeError, r"got 0 and 0"),
    (np.zeros(2), np.array([1.0, 0.0]), None, ShapeError, r"scale finite and > 0"),
    (np.array([np.nan, 0.0]), np.ones(2), None, ShapeError, r"centre must be finite"),
    (np.zeros(2), np.array([1.0, np.inf]), None, ShapeError, r"scale finite"),
    (np.zeros(2), np.ones(2), RowNormalised(num_features=3), ArgumentError, r"inner must be an input map of 2 features"),
    (np.zeros(2), np.ones(2), "rows", ArgumentError, r"inner must be an input map"),
])
def test_bad_statistics_or_inner_maps_are_refused(centre, scale, inner, error, message) -> None:
    with pytest.raises(error, match=message):
        ColumnStandardised(centre, scale, inner=inner)


def test_row_normalisation_has_one_public_home() -> None:
    """``normalise_rows`` is the floor's (:mod:`mlgp.data`); the recipes no longer re-export it."""
    import mlgp.data
    import mlgp.recipes
    from mlgp.data import preprocessing

    assert mlgp.data.normalise_rows is preprocessing.normalise_rows
    assert not hasattr(mlgp.recipes, "normalise_rows") and "normalise_rows" not in mlgp.recipes.__all__
