"""The row-normalising input map (:class:`mlgp.blocks.RowNormalised`): bit for bit the arithmetic of
``normalise_rows`` (zero rows stay zero, CSR stays CSR where no map densified it), composed with
the subspace projection and a linear map, and saved and rebuilt with a model."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.preprocessing import normalize

from mlgp.blocks import INPUT_MAPS, InputMap, LinearInputMap, RowNormalised, row_blocks, take_rows
from mlgp.data.preprocessing import normalise_rows
from mlgp.data.subspace import SubspaceProjection, subspace_basis
from mlgp.errors import ArgumentError, DataFormatError, ShapeError


def _raw(seed=0, N=40, D=15):
    """CSR rows of mixed scales, with two rows of zeros (one of them the first)."""
    rng = np.random.default_rng(seed)
    dense = rng.random((N, D)) * (rng.random((N, D)) < 0.4) * rng.choice([0.01, 1.0, 300.0], size=(N, 1))
    dense[[0, 17]] = 0.0
    dense[5, 2] = 7.0  # a row that is not all zeros (at least one entry)
    return sp.csr_matrix(dense)


@pytest.mark.parametrize("kind", ["csr", "dense"])
def test_the_map_is_normalise_rows_bit_for_bit(kind):
    X = _raw()
    given = X if kind == "csr" else X.toarray()
    by_hand = normalise_rows(X)
    # the arithmetic normalise_rows has always had, written out: the results must not move a bit
    np.testing.assert_array_equal(by_hand.toarray(), normalize(sp.csr_matrix(X, dtype=np.float64), norm="l2").toarray())
    rows = np.array([0, 3, 5, 17, 39])
    mapped = take_rows(given, rows, input_map=RowNormalised(num_features=15))
    assert isinstance(mapped, np.ndarray)
    np.testing.assert_array_equal(mapped, by_hand[rows].toarray())
    assert not np.any(mapped[[0, 3]])  # the zero rows stay zero, no NaN
    # an independent reference: x / ‖x‖₂ in dense NumPy (not L1, not max)
    dense = X.toarray()[rows]
    norms = np.linalg.norm(dense, axis=1)
    np.testing.assert_allclose(mapped[norms > 0], dense[norms > 0] / norms[norms > 0, None], rtol=1e-14)
    np.testing.assert_allclose(np.linalg.norm(mapped, axis=1), (norms > 0).astype(float), rtol=1e-14)


def test_without_an_inner_map_csr_blocks_stay_csr():
    """dense=False: the map gives the normalised CSR block, as take_rows gave the CSR block of a
    hand-normalised matrix; nothing (B, D) dense is formed."""
    X = _raw()
    by_hand = normalise_rows(X)
    blocks = list(row_blocks(X, 7, input_map=RowNormalised(num_features=15), dense=False))
    assert len(blocks) == 6 and all(sp.issparse(b) for _, b in blocks)
    for rows, block in blocks:
        want = by_hand[rows]
        for a, b in ((block.data, want.data), (block.indices, want.indices), (block.indptr, want.indptr)):
            np.testing.assert_array_equal(a, b)
    dense = list(row_blocks(X, 7, input_map=RowNormalised(num_features=15)))
    assert all(isinstance(b, np.ndarray) for _, b in dense)


@pytest.mark.parametrize("inner_kind", ["subspace", "linear"])
def test_the_map_composes_with_an_inner_map(inner_kind):
    X = _raw(1)
    if inner_kind == "subspace":
        inner = SubspaceProjection(subspace_basis(normalise_rows(X), 4, seed=0).basis)
    else:
        inner = LinearInputMap(np.random.default_rng(2).standard_normal((15, 3)))
    outer = RowNormalised(inner)
    assert (outer.num_features, outer.num_outputs) == (15, inner.num_outputs)
    rows = slice(3, 30)
    np.testing.assert_array_equal(take_rows(X, rows, input_map=outer),
                                  take_rows(normalise_rows(X), rows, input_map=inner))
    np.testing.assert_array_equal(take_rows(X.toarray(), rows, input_map=outer),
                                  take_rows(normalise_rows(X), rows, input_map=inner))


def test_the_map_is_a_registered_input_map_and_checks_its_arguments():
    outer = RowNormalised(num_features=15)
    assert isinstance(outer, InputMap) and RowNormalised in INPUT_MAPS.values()
    assert (outer.num_features, outer.num_outputs, outer.inner) == (15, 15, None)
    with pytest.raises(ArgumentError, match="needs num_features"):
        RowNormalised()
    with pytest.raises(ArgumentError, match="inner must be an input map"):
        RowNormalised(np.eye(3))
    with pytest.raises(ShapeError, match="num_features must be the inner map's 15"):
        RowNormalised(LinearInputMap(np.ones((15, 2))), num_features=14)


# ----------------------------------------------------------------------------- with a model
@pytest.fixture(scope="module")
def models():
    """A subspace model built on normalised rows, and the same model carrying the normalisation."""
    from mlgp.models import mlgpf_from_data

    rng = np.random.default_rng(0)
    X = _raw(3, N=60, D=15)
    Y = sp.csr_matrix((rng.random((60, 5)) < 0.3).astype(float))
    plain = mlgpf_from_data(normalise_rows(X), Y, kernel="se", num_latent_gps=2, num_inducing=6, subspace_rank=4,
                            dtype="float64", seed=0)
    carried = mlgpf_from_data(normalise_rows(X), Y, kernel="se", num_latent_gps=2, num_inducing=6, subspace_rank=4,
                              dtype="float64", seed=0)
    carried.input_map = RowNormalised(carried.input_map, num_features=15)
    return X, plain, carried


def _scored(model):
    """The estimator that scores ``model`` (its raw rows through its input map)."""
    from mlgp.recipes import MLGPFClassifier

    return MLGPFClassifier.from_model(model)


def test_a_model_scores_raw_rows_as_the_hand_normalised_path(models):
    X, plain, carried = models
    carried, plain = _scored(carried), _scored(plain)
    np.testing.assert_array_equal(carried.decision_function(X), plain.decision_function(normalise_rows(X)))
    np.testing.assert_array_equal(carried.predict_topk(X, 3).indices, plain.predict_topk(normalise_rows(X), 3).indices)


def test_the_map_is_saved_and_rebuilt_with_its_inner_map(models, tmp_path):
    from mlgp.models import MLGPF, load_parameters

    X, plain, carried = models
    loaded = MLGPF.load(carried.save(tmp_path / "carried"))
    node = json.loads((tmp_path / "carried" / "model.json").read_text())["input_map"]
    assert node["class"] == "mlgp.blocks:RowNormalised" and node["arguments"] == {"num_features": 15}
    assert node["children"]["inner"]["class"] == "mlgp.data.subspace:SubspaceProjection"
    assert isinstance(loaded.input_map, RowNormalised) and isinstance(loaded.input_map.inner, SubspaceProjection)
    np.testing.assert_array_equal(loaded.input_map.inner.basis, carried.input_map.inner.basis)
    np.testing.assert_array_equal(_scored(loaded).decision_function(X), _scored(carried).decision_function(X))
    # an older save (no normalisation in it) loads as it was: a model of normalised rows
    old = MLGPF.load(plain.save(tmp_path / "plain"))
    assert isinstance(old.input_map, SubspaceProjection)
    np.testing.assert_array_equal(_scored(old).decision_function(normalise_rows(X)), _scored(carried).decision_function(X))
    load_parameters(loaded, tmp_path / "carried")
    with pytest.raises(DataFormatError, match="another input map"):
        load_parameters(old, tmp_path / "carried")


def test_the_identity_map_round_trips_without_an_inner_node(tmp_path):
    from mlgp.models import MLGPF, mlgpf_from_data

    rng = np.random.default_rng(1)
    X = _raw(4, N=30, D=6)
    Y = sp.csr_matrix((rng.random((30, 4)) < 0.4).astype(float))
    model = mlgpf_from_data(normalise_rows(X), Y, kernel="se", num_latent_gps=2, num_inducing=5, dtype="float64")
    model.input_map = RowNormalised(num_features=6)
    loaded = MLGPF.load(model.save(tmp_path / "m"))
    assert isinstance(loaded.input_map, RowNormalised) and loaded.input_map.inner is None
    np.testing.assert_array_equal(_scored(loaded).decision_function(X), _scored(model).decision_function(X))


def test_row_blocks_in_a_given_order_cover_it_block_by_block() -> None:
    """With ``order`` the blocks are its consecutive slices (the last one shorter), each taken in
    that order; ``input_map`` and ``dense`` are keyword-only in ``take_rows``."""
    X = np.arange(20.0).reshape(10, 2)
    order = np.array([7, 2, 9, 0, 4, 1, 8, 3, 6, 5])
    blocks = list(row_blocks(X, 3, order=order))
    assert [list(rows) for rows, _ in blocks] == [[7, 2, 9], [0, 4, 1], [8, 3, 6], [5]]
    np.testing.assert_array_equal(np.vstack([b for _, b in blocks]), X[order])
    with pytest.raises(TypeError, match="positional argument"):
        take_rows(X, slice(0, 2), None)
