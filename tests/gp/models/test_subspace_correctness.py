"""Correctness of subspace inducing inputs: with R = rank(X) the subspace MLGPF has the bound of the
full-Z model for every q(u) family, its gradient in A matches finite differences, the projection of
a CSR matrix too wide to densify goes a row block at a time, bad input is refused before training,
empty rows stay finite, and ``subspace_sample`` takes the basis from a seeded row sample."""

from __future__ import annotations

import gpflow
import numpy as np
import pytest
import scipy.sparse as sp
import tensorflow as tf

import mlgp.models.builders as builders
from mlgp.blocks import row_blocks, take_rows
from mlgp.data.subspace import SubspaceProjection, subspace_basis
from mlgp.errors import ArgumentError, DataFormatError, MLGPError, ModelNotFoundError, ShapeError
from mlgp.inducing import SubspaceInducingPoints
from mlgp.kernels import SubspaceLinear, SubspaceSE
from mlgp.likelihoods import MultiLabelBernoulli
from mlgp.models import MLGPF, mlgpf_from_data
from mlgp.recipes import MLGPFClassifier
from mlgp.training import fit
from mlgp.variational import Q_FAMILIES, make_q

N, D, RANK, K, P, M = 40, 30, 6, 4, 2, 5


@pytest.fixture(scope="module")
def low_rank():
    """X (N, D) of exact rank 6, unit rows, as CSR; labels Y (N, K)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, RANK)) @ rng.normal(size=(RANK, D))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    Y = (rng.random((N, K)) < 0.4).astype(np.float64)
    return sp.csr_matrix(X), Y


def _q_values(family, rng):
    if family == "preconditioned":
        return dict(q_mu=rng.normal(size=(M, P)), q_sigma=rng.uniform(0.2, 1.0, size=(P, M)))
    q_sqrt = np.tril(0.2 * rng.normal(size=(P, M, M)), -1) + np.eye(M) * rng.uniform(0.4, 1.0, size=(P, 1, M))
    return dict(q_mu=rng.normal(size=(M, P)), q_sqrt=q_sqrt)


def _likelihood(loadings, bias):
    lik = MultiLabelBernoulli(K, P)
    lik.loadings.assign(loadings)
    lik.bias.assign(bias)
    return lik


@pytest.mark.parametrize("family", list(Q_FAMILIES))
@pytest.mark.parametrize("kernel", ["se", "linear"])
def test_with_r_equal_to_the_rank_the_subspace_bound_is_the_full_z_bound(low_rank, family, kernel):
    X, Y = low_rank
    basis = subspace_basis(X, RANK, n_iter=8).basis
    proj = SubspaceProjection(basis)
    U = proj(X)
    np.testing.assert_allclose(U[:, RANK], 0.0, atol=1e-12)  # R = rank(X): no residual anywhere
    rng = np.random.default_rng(1)
    A = U[rng.choice(N, M, replace=False), :RANK] + 0.1 * rng.normal(size=(M, RANK))
    q = _q_values(family, rng)
    loadings, bias = rng.normal(size=(K, P)), rng.normal(size=K)
    if kernel == "se":
        sub_k, full_k = SubspaceSE(RANK, variance=1.3, lengthscales=0.8), \
            gpflow.kernels.SquaredExponential(variance=1.3, lengthscales=0.8)
    else:
        sub_k, full_k = SubspaceLinear(RANK, variance=0.7), gpflow.kernels.Linear(variance=0.7)
    sub = MLGPF(sub_k, _likelihood(loadings, bias), SubspaceInducingPoints(A), num_data=3 * N,
                q=make_q(family, M, P, **q), input_map=proj)
    full = MLGPF(full_k, _likelihood(loadings, bias), gpflow.inducing_variables.InducingPoints(A @ basis),
                 num_data=3 * N, q=make_q(family, M, P, **q))
    sub_elbo = float(sub.elbo((sub.model_inputs(X), Y)))
    full_elbo = float(full.elbo((X.toarray(), Y)))
    assert np.isfinite(sub_elbo) and sub_elbo != float(sub.elbo((sub.model_inputs(X), 1.0 - Y)))  # depends on Y
    np.testing.assert_allclose(sub_elbo, full_elbo, rtol=1e-8)


@pytest.mark.parametrize("kernel", [lambda R: SubspaceSE(R, variance=1.2, lengthscales=np.linspace(0.6, 1.4, R + 1)),
                                    lambda R: SubspaceLinear(R, variance=np.linspace(0.5, 1.5, R + 1))],
                         ids=["se", "linear"])
def test_the_gradient_in_a_matches_central_finite_differences(kernel):
    rng = np.random.default_rng(2)
    R = 6  # ≥ M: the linear kernel's K_ZZ has rank min(M, R)
    X = sp.csr_matrix(rng.random((N, D)) * (rng.random((N, D)) < 0.3))  # full rank: residuals ≠ 0
    Y = (rng.random((N, K)) < 0.4).astype(np.float64)
    proj = SubspaceProjection(subspace_basis(X, R, n_iter=8).basis)
    U = proj(X)
    assert U[:, R].min() > 1e-3
    model = MLGPF(kernel(R), _likelihood(rng.normal(size=(K, P)), rng.normal(size=K)),
                  SubspaceInducingPoints(rng.normal(size=(M, R))), num_data=N,
                  q=make_q("cholesky", M, P, **_q_values("cholesky", rng)), input_map=proj)
    A = model.inducing_variable.inducing_variable.A
    with tf.GradientTape() as tape:
        elbo = model.elbo((U, Y))
    grad = tape.gradient(elbo, A.unconstrained_variable).numpy()
    A0, h = A.numpy().copy(), 1e-5
    for i, j in [(0, 0), (2, 1), (4, 5), (1, 3)]:
        values = []
        for step in (h, -h):
            shifted = A0.copy()
            shifted[i, j] += step
            A.assign(shifted)
            values.append(float(model.elbo((U, Y))))
        A.assign(A0)
        fd = (values[0] - values[1]) / (2 * h)
        assert abs(grad[i, j]) > 1e-3  # a gradient entry that matters
        np.testing.assert_allclose(grad[i, j], fd, rtol=1e-5, err_msg=f"d ELBO / d A[{i}, {j}]")


def test_the_projection_of_csr_is_the_dense_product_and_residual():
    rng = np.random.default_rng(3)
    dense = rng.random((25, 40)) * (rng.random((25, 40)) < 0.2)
    dense[7] = 0.0  # an empty row
    X = sp.csr_matrix(dense)
    basis = subspace_basis(X, 5, n_iter=8).basis
    out = SubspaceProjection(basis)(X)
    coords = dense @ basis.T
    np.testing.assert_allclose(out[:, :5], coords, atol=1e-12)
    np.testing.assert_allclose(out[:, 5], (dense**2).sum(1) - (coords**2).sum(1), atol=1e-12)
    assert np.all(out[:, 5] >= 0) and np.all(out[7] == 0)


def test_a_csr_matrix_too_large_to_densify_is_projected_in_row_blocks(forbid_dense_blocks):
    N_big, D_big, nnz, R = 200_000, 1_000_000, 5, 4  # dense: 1.6 TB
    rng = np.random.default_rng(4)
    stride = D_big // nnz
    support = np.sort(rng.choice(5000, 1000, replace=False))  # the columns the basis lives on
    # row i's j-th column in [j·stride, (j + 1)·stride): distinct and sorted; column 0 < 5000 meets the support
    cols = rng.integers(0, stride, size=(N_big, nnz))
    cols[:, 0] = rng.integers(0, 5000, size=N_big)
    cols += np.arange(nnz) * stride
    X = sp.csr_matrix((rng.random(N_big * nnz) + 0.1, cols.ravel().astype(np.int32),
                       np.arange(0, N_big * nnz + 1, nnz, dtype=np.int64)), shape=(N_big, D_big))
    Q, _ = np.linalg.qr(rng.normal(size=(len(support), R)))
    basis = np.zeros((R, D_big))
    basis[:, support] = Q.T
    proj = SubspaceProjection(basis)
    forbid_dense_blocks(D_big)  # no (B, D) dense block from here on
    out = np.concatenate([block for _, block in row_blocks(X, 25_000, input_map=proj)])
    assert out.shape == (N_big, R + 1) and np.all(np.isfinite(out)) and np.all(out[:, R] >= 0)
    assert np.count_nonzero(np.abs(out[:, :R]).sum(1)) > N_big // 10  # the basis is not missed
    rows = np.array([0, 17, 99_999, N_big - 1])
    np.testing.assert_array_equal(take_rows(X, rows, input_map=proj), out[rows])
    for i in rows:  # row i densified by hand (one row: 8 MB)
        x = np.zeros(D_big)
        x[X.indices[X.indptr[i]:X.indptr[i + 1]]] = X.data[X.indptr[i]:X.indptr[i + 1]]
        c = basis @ x
        np.testing.assert_allclose(out[i, :R], c, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(out[i, R], x @ x - c @ c, rtol=1e-12, atol=1e-14)


@pytest.fixture
def no_svd(monkeypatch):
    """Fail if from_data reaches the SVD: the checks that need none come first."""
    def refuse(*args, **kwargs):
        raise AssertionError("the SVD ran before the arguments were checked")

    monkeypatch.setattr(builders, "subspace_basis", refuse)


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(subspace_rank=-1), ArgumentError, r"subspace_rank must be a positive integer, got -1"),
    (dict(subspace_rank=D), ShapeError, r"subspace_rank R must be below min\(N, D\) = 30, got 30"),
    (dict(subspace_rank=3, num_inducing=8, subspace_sample=7), ShapeError,
     r"subspace_sample must be at least M = 8 and above R = 3 .*got 7"),
    (dict(subspace_rank=5, num_inducing=2, subspace_sample=5), ShapeError,
     r"subspace_sample must be at least M = 2 and above R = 5 .*got 5"),
    (dict(subspace_sample=20), ArgumentError, r"subspace_sample chooses the rows .*it needs subspace_rank"),
], ids=["R < 1", "R = D < N", "sample < M", "sample = R", "sample without R"])
def test_bad_subspace_arguments_are_refused_before_the_svd(low_rank, no_svd, kwargs, error, message):
    X, Y = low_rank
    with pytest.raises(error, match=message):
        mlgpf_from_data(X, Y, **dict(dict(kernel="se", num_latent_gps=P, num_inducing=M), **kwargs))


@pytest.mark.parametrize("rank", [RANK + 1, RANK + 5])
def test_a_rank_above_the_numerical_rank_is_refused_naming_the_rank(low_rank, rank):
    X, Y = low_rank
    with pytest.raises(ShapeError, match=rf"rank R = {rank} exceeds the numerical rank {RANK} of the "
                                         rf"features .*use R ≤ {RANK}"):
        mlgpf_from_data(X, Y, kernel="se", num_latent_gps=P, num_inducing=M, subspace_rank=rank)
    mlgpf_from_data(X, Y, kernel="se", num_latent_gps=P, num_inducing=M, subspace_rank=RANK)  # R = r is fine


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_features_are_refused_at_from_data(low_rank, no_svd, bad):
    X, Y = low_rank
    X = X.copy()
    X.data[X.indptr[9] + 2] = bad
    with pytest.raises(ShapeError, match=r"X contains NaN or inf \(first in row 9\)"):
        mlgpf_from_data(X, Y, kernel="se", num_latent_gps=P, num_inducing=M, subspace_rank=3)


@pytest.fixture(scope="module")
def subspace_model(low_rank):
    X, Y = low_rank
    return mlgpf_from_data(X, Y, kernel="se", num_latent_gps=P, num_inducing=M, subspace_rank=RANK)


@pytest.mark.parametrize("method", ["predict_topk", "decision_function", "predict_proba"])
@pytest.mark.parametrize("width", [D - 1, D + 1])
def test_a_csr_input_of_another_width_is_refused_at_prediction(low_rank, subspace_model, method, width):
    X, _ = low_rank
    other = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(N, width)) if width > D else X[:, :width]
    call = getattr(MLGPFClassifier.from_model(subspace_model), method)
    with pytest.raises(ShapeError, match=rf"X has {width} features, but MLGPFClassifier is expecting {D} features"):
        call(other, 2) if method == "predict_topk" else call(other)
    with pytest.raises(ShapeError, match=rf"X has {width} features but the model expects D = {D}"):
        subspace_model.model_inputs(other)


@pytest.mark.parametrize("method", ["predict_topk", "decision_function", "predict_proba"])
@pytest.mark.parametrize("bad, dense", [(np.nan, False), (np.inf, False), (-np.inf, True)])
def test_non_finite_features_are_refused_at_prediction(low_rank, subspace_model, method, bad, dense):
    X, _ = low_rank
    X = X[:6].copy()
    X.data[X.indptr[4]] = bad
    X = X.toarray() if dense else X
    call = getattr(MLGPFClassifier.from_model(subspace_model), method)
    with pytest.raises(ShapeError, match=r"X contains NaN or inf \(first in row 4\)"):
        call(X, 2) if method == "predict_topk" else call(X)


def test_a_save_without_its_basis_file_does_not_load(subspace_model, tmp_path):
    folder = subspace_model.save(tmp_path / "m")
    basis_file = folder / "constants.npz"
    assert list(np.load(basis_file).keys()) == ["input_map.basis"]
    np.testing.assert_array_equal(MLGPF.load(folder).input_map.basis, subspace_model.input_map.basis)
    basis_file.unlink()
    # documented in mlgp.models.persistence: a missing file named by model.json is a ModelNotFoundError
    with pytest.raises(ModelNotFoundError, match=r"constants\.npz: missing \(the save's model\.json names it\)") as info:
        MLGPF.load(folder)
    assert isinstance(info.value, MLGPError)
    np.savez(basis_file, other=np.zeros(3))  # a constants file without the basis in it
    with pytest.raises(DataFormatError, match=r"the constant 'input_map\.basis' is missing or malformed"):
        MLGPF.load(folder)


@pytest.mark.parametrize("kernel", ["se", "linear"])
def test_an_empty_row_gives_a_finite_bound_and_finite_predictions(kernel):
    rng = np.random.default_rng(5)
    dense = rng.random((N, D)) * (rng.random((N, D)) < 0.3)
    dense[3] = 0.0
    X = sp.csr_matrix(dense)
    assert X[3].nnz == 0
    Y = (rng.random((N, K)) < 0.4).astype(np.float64)
    model = mlgpf_from_data(X, Y, kernel=kernel, num_latent_gps=P, num_inducing=M, subspace_rank=5)
    U = model.model_inputs(X[:8])
    np.testing.assert_array_equal(U.numpy()[3], 0.0)
    assert np.isfinite(float(model.elbo((U, Y[:8]))))
    zero_rows = sp.csr_matrix((2, D))
    mean, var = model.predict_f(zero_rows)
    assert np.all(np.isfinite(mean.numpy())) and np.all(var.numpy() >= 0)
    est = MLGPFClassifier.from_model(model)
    assert np.all(np.isfinite(est.decision_function(zero_rows)))
    assert np.all(np.isfinite(est.predict_topk(zero_rows, 2).scores))
    proba = est.predict_proba(np.zeros((2, D)))
    assert np.all((proba > 0) & (proba < 1))


def test_subspace_sample_takes_the_basis_from_a_seeded_row_sample():
    rng = np.random.default_rng(6)
    n_rows, width, R, n = 120, 50, 4, 30
    X = sp.csr_matrix(rng.random((n_rows, width)) * (rng.random((n_rows, width)) < 0.3))
    Y = sp.csr_matrix((rng.random((n_rows, K)) < 0.4).astype(np.float64))

    def build(seed):
        return mlgpf_from_data(X, Y, kernel="se", num_latent_gps=P, num_inducing=M, subspace_rank=R,
                               subspace_sample=n, seed=seed)

    model = build(7)
    basis = model.input_map.basis
    assert model.spec["subspace_sample"] == n and model.spec["subspace_rank"] == R
    assert basis.shape == (R, width)
    np.testing.assert_allclose(basis @ basis.T, np.eye(R), atol=1e-10)
    # the sample's basis, not the full data's
    np.testing.assert_array_equal(basis, subspace_basis(X, R, seed=7, sample_rows=n).basis)
    assert not np.allclose(basis.T @ basis, (full := subspace_basis(X, R, seed=7).basis).T @ full, atol=1e-3)
    trace = fit(model, (X, Y), epochs=1, batch_size=40, progress=False)
    assert len(trace) == 1 and np.isfinite(trace["elbo"]).all()
    np.testing.assert_array_equal(build(7).input_map.basis, basis)
    assert not np.array_equal(build(8).input_map.basis, basis)


@pytest.mark.parametrize("bad", ["width", "nan"])
def test_predict_f_checks_raw_features_like_the_scoring_methods(low_rank, subspace_model, bad):
    X, _ = low_rank
    if bad == "width":
        X, message = X[:, : D - 1], rf"X has {D - 1} features but the model expects D = {D}"
    else:
        X = X[:6].copy()
        X.data[X.indptr[2]] = np.nan
        message = r"X contains NaN or inf \(first in row 2\)"
    with pytest.raises(ShapeError, match=message):
        subspace_model.predict_f(X)
