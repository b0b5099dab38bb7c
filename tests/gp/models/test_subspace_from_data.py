"""mlgpf_from_data(..., subspace_rank=R): the projection as the input map, the subspace kernel,
Z = A X̃ from k-means on the coordinates; it trains, predicts and saves without a dense block of
the raw width, and refuses what it cannot combine with."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from mlgp.data.subspace import SubspaceProjection
from mlgp.errors import ArgumentError, ShapeError
from mlgp.inducing import SubspaceInducingPoints
from mlgp.kernels import SubspaceLinear, SubspaceSE
from mlgp.models import MLGPF, mlgpf_from_data
from mlgp.recipes import MLGPFClassifier
from mlgp.training import fit

N, D, K, R, M = 120, 2000, 6, 10, 12


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    nnz = 15  # per row: X stays sparse and wide
    cols = np.concatenate([np.sort(rng.choice(D, nnz, replace=False)) for _ in range(N)])
    X = sp.csr_matrix((rng.random(N * nnz), cols, np.arange(0, N * nnz + 1, nnz)), shape=(N, D))
    Y = sp.csr_matrix((rng.random((N, K)) < 0.3).astype(np.float64))
    return X, Y


@pytest.fixture
def no_wide_dense(forbid_dense_blocks):
    """Fail on any densifying of a CSR block as wide as the raw features."""
    forbid_dense_blocks(D)


@pytest.mark.parametrize("kernel, parts", [("se", (SubspaceSE,)), ("linear", (SubspaceLinear,)),
                                           ("se+linear", (SubspaceSE, SubspaceLinear))])
@pytest.mark.slow
def test_the_subspace_model_trains_scores_and_saves_without_a_wide_dense_block(data, no_wide_dense, tmp_path,
                                                                            kernel, parts):
    X, Y = data
    model = mlgpf_from_data(X, Y, kernel=kernel, num_latent_gps=3, num_inducing=M, subspace_rank=R,
                            q_family="whitened", warm_start=True)
    iv = model.inducing_variable.inducing_variable
    assert isinstance(model.input_map, SubspaceProjection) and model.input_map.basis.shape == (R, D)
    assert isinstance(iv, SubspaceInducingPoints) and iv.A.shape == (M, R) and model.input_dim == R + 1
    inner = model.kernel.kernel  # inside SharedIndependent
    kernels = getattr(inner, "kernels", [inner])
    assert tuple(type(k) for k in kernels) == parts
    assert model.spec["subspace_rank"] == R
    A0 = iv.A.numpy().copy()
    trace = fit(model, (X, Y), epochs=1, batch_size=40, progress=False)
    assert np.isfinite(trace["elbo"]).all() and not np.allclose(iv.A.numpy(), A0)
    top = MLGPFClassifier.from_model(model).predict_topk(X, 3, batch_size=50)
    loaded = MLGPF.load(model.save(tmp_path / "m"))
    np.testing.assert_array_equal(MLGPFClassifier.from_model(loaded).predict_topk(X, 3, batch_size=50).indices,
                                  top.indices)


def test_fixed_subspace_inducing_inputs_stay_where_they_start(data):
    X, Y = data
    model = mlgpf_from_data(X, Y, kernel="se", num_latent_gps=2, num_inducing=M, subspace_rank=R, fixed_inducing=True)
    iv = model.inducing_variable.inducing_variable
    A0 = iv.A.numpy().copy()
    fit(model, (X, Y), epochs=1, batch_size=40, progress=False)
    np.testing.assert_array_equal(iv.A.numpy(), A0)
    # random training points' coordinates: rows of X X̃ᵀ
    coords = X @ model.input_map.basis.T
    assert all(np.isclose(coords, a, atol=1e-9).all(axis=1).any() for a in A0)


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(subspace_rank=0), ArgumentError, r"subspace_rank must be a positive integer, got 0"),
    (dict(subspace_rank=2.5), ArgumentError, r"subspace_rank must be a positive integer, got 2\.5"),
    (dict(subspace_rank=N), ShapeError, r"subspace_rank R must be below min\(N, D\) = 120, got 120"),
    (dict(subspace_rank=R, input_map=SubspaceProjection(np.eye(2, D))), ArgumentError, r"cannot be combined with input_map"),
], ids=["R 0", "R 2.5", "R = N", "input map"])
def test_what_subspace_inducing_inputs_refuse(data, kwargs, error, message):
    X, Y = data
    with pytest.raises(error, match=message):
        mlgpf_from_data(X, Y, **dict(dict(num_latent_gps=2, num_inducing=M), **kwargs))


def test_unit_sphere_subspace_inducing_inputs_keep_unit_norm(data, tmp_path):
    X, Y = data
    model = mlgpf_from_data(X, Y, kernel="se", num_latent_gps=2, num_inducing=M, subspace_rank=R,
                            unit_sphere_inducing=True)
    iv = model.inducing_variable.inducing_variable
    fit(model, (X, Y), epochs=2, batch_size=40, progress=False)
    Z = iv.A.numpy() @ model.input_map.basis  # the inducing inputs in the raw space
    np.testing.assert_allclose(np.linalg.norm(Z, axis=1), 1.0, rtol=1e-10)
    loaded = MLGPF.load(model.save(tmp_path / "m"))
    assert loaded.inducing_variable.inducing_variable.unit_rows
    np.testing.assert_array_equal(loaded.inducing_variable.inducing_variable.A.numpy(), iv.A.numpy())


def test_subspace_training_with_sampled_negative_labels(data, no_wide_dense):
    """Label subsampling (negatives=) on the subspace path: the bound stays finite and A moves."""
    X, Y = data
    model = mlgpf_from_data(X, Y, kernel="linear", num_latent_gps=2, num_inducing=R, subspace_rank=R,
                            q_family="whitened", dtype="float32")
    A0 = model.inducing_variable.inducing_variable.A.numpy().copy()
    trace = fit(model, (X, Y), epochs=2, batch_size=40, negatives=2, progress=False)
    assert np.isfinite(trace["elbo"]).all() and not np.allclose(model.inducing_variable.inducing_variable.A.numpy(), A0)
    assert MLGPFClassifier.from_model(model).predict_topk(X[:5], 2).indices.shape == (5, 2)


@pytest.mark.parametrize("subspace_rank", [R, None])
def test_fixed_unit_sphere_inducing_inputs_skip_points_at_zero(subspace_rank):
    """A fixed inducing input on the unit sphere cannot start at a point whose (projected) features
    are 0: such points are replaced by others; with fewer than M usable points it is refused."""
    rng = np.random.default_rng(5)
    X = sp.csr_matrix(rng.random((30, 40)) * (rng.random((30, 40)) < 0.3))
    X[7] = 0.0  # an empty row: its coordinates in any subspace are 0
    X.eliminate_zeros()
    Y = sp.csr_matrix((rng.random((30, 4)) < 0.4).astype(np.float64))
    model = mlgpf_from_data(X, Y, kernel="se", num_latent_gps=2, num_inducing=29, fixed_inducing=True,
                            unit_sphere_inducing=True, subspace_rank=subspace_rank)
    iv = model.inducing_variable.inducing_variable
    Z = iv.A.numpy() if subspace_rank else iv.Z.numpy()
    np.testing.assert_allclose(np.linalg.norm(Z, axis=1), 1.0, rtol=1e-12)
    with pytest.raises(ShapeError, match="fewer than M = 30 training rows are non-zero"):
        mlgpf_from_data(X, Y, kernel="se", num_latent_gps=2, num_inducing=30, fixed_inducing=True,
                        unit_sphere_inducing=True, subspace_rank=subspace_rank)
