"""The subspace basis (truncated SVD of sparse X) and the projection input map, against dense
references (numpy's SVD and dense products)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from mlgp.blocks import INPUT_MAPS, InputMap, take_rows
from mlgp.data.subspace import SubspaceProjection, subspace_basis
from mlgp.errors import ArgumentError, ShapeError


def _sparse(seed=0, N=60, D=40, density=0.15):
    rng = np.random.default_rng(seed)
    dense = rng.random((N, D)) * (rng.random((N, D)) < density)
    dense[:, :3] += rng.random((N, 1)) * np.array([3.0, 2.0, 1.0])  # a few dominant directions
    return sp.csr_matrix(dense)


@pytest.mark.parametrize("solver", ["randomized", "svds"])
def test_the_basis_is_the_top_right_singular_subspace(solver):
    X = _sparse()
    R = 5
    result = subspace_basis(X, R, solver=solver, seed=1, n_iter=10)
    _, S, Vt = np.linalg.svd(X.toarray(), full_matrices=False)
    np.testing.assert_allclose(result.singular_values, S[:R], rtol=1e-6)
    np.testing.assert_allclose(result.basis @ result.basis.T, np.eye(R), atol=1e-10)
    # the same subspace: projections onto it agree (to the iterative solvers' accuracy)
    np.testing.assert_allclose(result.basis.T @ result.basis, Vt[:R].T @ Vt[:R], atol=1e-4)
    np.testing.assert_allclose(result.coordinates, X.toarray() @ result.basis.T, atol=1e-8)


def test_both_solvers_give_the_same_signed_basis():
    X = _sparse(2)
    a = subspace_basis(X, 4, solver="randomized", n_iter=10).basis
    b = subspace_basis(X, 4, solver="svds").basis
    np.testing.assert_allclose(a, b, atol=1e-4)


@pytest.mark.parametrize("sparse_block", [True, False])
def test_the_projection_gives_coordinates_and_the_residual_norm(sparse_block):
    X = _sparse(3)
    basis = subspace_basis(X, 6, seed=0).basis
    proj = SubspaceProjection(basis)
    assert isinstance(proj, InputMap) and (proj.num_features, proj.num_outputs) == (40, 7)
    block = X[5:25] if sparse_block else X[5:25].toarray()
    out = take_rows(X if sparse_block else X.toarray(), slice(5, 25), input_map=proj)
    dense = X[5:25].toarray()
    coords = dense @ basis.T
    np.testing.assert_allclose(out[:, :6], coords, atol=1e-12)
    np.testing.assert_allclose(out[:, 6], (dense**2).sum(1) - (coords**2).sum(1), atol=1e-10)
    np.testing.assert_allclose(proj(block), out)
    # what a subspace kernel needs: x zᵀ for z = a X̃, and ‖x‖², from the R + 1 numbers
    a = np.random.default_rng(0).normal(size=(3, 6))
    np.testing.assert_allclose(out[:, :6] @ a.T, dense @ (a @ basis).T, atol=1e-10)
    np.testing.assert_allclose((out[:, :6] ** 2).sum(1) + out[:, 6], (dense**2).sum(1), atol=1e-10)


def test_a_point_in_the_subspace_has_no_residual():
    basis = subspace_basis(_sparse(4), 3).basis
    x = np.array([[1.0, -2.0, 0.5]]) @ basis
    np.testing.assert_allclose(SubspaceProjection(basis)(x)[0, 3], 0.0, atol=1e-12)


@pytest.mark.parametrize("call, error, message", [
    (lambda X: subspace_basis(X, 60), ShapeError, r"rank R must be at most 40 for the 'randomized' solver"),
    (lambda X: subspace_basis(X, 40, solver="svds"), ShapeError, r"rank R must be at most 39 for the 'svds' solver"),
    (lambda X: subspace_basis(X, 0), ArgumentError, r"rank must be a positive integer, got 0"),
    (lambda X: subspace_basis(X, 3, solver="lanczos"), ArgumentError, r"solver must be one of 'randomized', 'svds'"),
    (lambda X: SubspaceProjection(np.ones((2, 40))), ShapeError, r"the basis rows must be orthonormal"),
    (lambda X: SubspaceProjection(np.eye(3)), ShapeError, r"the basis must be \(R, D\) with 1 ≤ R < D"),
], ids=["rank > D", "svds rank = D", "rank 0", "solver", "not orthonormal", "square"])
def test_bad_arguments_are_refused(call, error, message):
    with pytest.raises(error, match=message):
        call(_sparse())


@pytest.mark.slow
def test_an_mlgpf_on_the_projection_trains_saves_and_loads(tmp_path):
    from mlgp.models import MLGPF, mlgpf_from_data
    from mlgp.recipes import MLGPFClassifier
    from mlgp.training import fit

    assert "mlgp.data.subspace:SubspaceProjection" in INPUT_MAPS
    X = _sparse(5)
    rng = np.random.default_rng(5)
    Y = sp.csr_matrix((rng.random((60, 4)) < 0.4).astype(float))
    proj = SubspaceProjection(subspace_basis(X, 5).basis)
    model = mlgpf_from_data(X, Y, kernel="se", num_latent_gps=2, num_inducing=6, input_map=proj)
    assert model.inducing_variable.inducing_variable.Z.shape == (6, 6)  # M × (R + 1)
    fit(model, (X, Y), epochs=1, batch_size=20, progress=False)
    loaded = MLGPF.load(model.save(tmp_path / "m"))
    np.testing.assert_array_equal(MLGPFClassifier.from_model(loaded).decision_function(X),
                                  MLGPFClassifier.from_model(model).decision_function(X))
