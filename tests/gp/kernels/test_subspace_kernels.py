"""Subspace kernels and subspace inducing inputs against the D-dimensional kernels they stand for:
GPflow's stock kernels on the raw inputs (equal weights), the ARD metric W = X̃ᵀ diag(w) X̃ +
w_res (I − X̃ᵀ X̃) computed densely, and an MLGPF whose bound equals the stock model's."""

from __future__ import annotations

import gpflow
import numpy as np
import pytest
import scipy.sparse as sp
from gpflow import covariances

from mlgp.data.subspace import SubspaceProjection, subspace_basis
from mlgp.errors import ShapeError
from mlgp.inducing import SubspaceInducingPoints, input_dim, shared_inducing_variable
from mlgp.kernels import SharedScaleSEPlusLinear, SubspaceLinear, SubspaceSE, SubspaceSharedScaleSEPlusLinear

R, D, M = 4, 12, 5


@pytest.fixture(scope="module")
def setup():
    rng = np.random.default_rng(0)
    X = sp.csr_matrix(rng.random((30, D)) * (rng.random((30, D)) < 0.5))
    basis = subspace_basis(X, R, n_iter=8).basis
    proj = SubspaceProjection(basis)
    A = rng.normal(size=(M, R))
    return X.toarray(), proj(X), basis, A, A @ basis  # raw X, projected X, X̃, A, Z = A X̃


def _metric(basis, w, w_res):
    return basis.T @ np.diag(w) @ basis + w_res * (np.eye(D) - basis.T @ basis)


def test_subspace_se_with_equal_lengthscales_is_gpflows_se_on_raw_inputs(setup):
    X, U, _, A, Z = setup
    k = SubspaceSE(R, variance=1.7, lengthscales=0.8)
    stock = gpflow.kernels.SquaredExponential(variance=1.7, lengthscales=0.8)
    iv = SubspaceInducingPoints(A)
    np.testing.assert_allclose(covariances.Kuu(iv, k), stock(Z), rtol=1e-10)
    np.testing.assert_allclose(covariances.Kuf(iv, k, U), stock(Z, X), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(k(U, full_cov=False), stock(X, full_cov=False))
    np.testing.assert_allclose(np.diag(k(U)), k.K_diag(U))


@pytest.mark.parametrize("kind", ["se", "linear"])
def test_ard_weights_are_the_metric_on_raw_inputs(setup, kind):
    X, U, basis, A, Z = setup
    w = np.array([0.5, 1.3, 2.0, 0.7, 0.9])  # R directions, then the residual
    iv = SubspaceInducingPoints(A)
    if kind == "se":
        k = SubspaceSE(R, variance=0.6, lengthscales=w)
        W = _metric(basis, 1 / w[:R] ** 2, 1 / w[R] ** 2)
        diff = X[:, None, :] - Z[None, :, :]
        ref = 0.6 * np.exp(-0.5 * np.einsum("nmd,de,nme->mn", diff, W, diff))
        dz = Z[:, None, :] - Z[None, :, :]
        ref_uu = 0.6 * np.exp(-0.5 * np.einsum("nmd,de,nme->nm", dz, W, dz))
        ref_diag = np.full(len(X), 0.6)
    else:
        k = SubspaceLinear(R, variance=w)
        W = _metric(basis, w[:R], w[R])
        ref, ref_uu, ref_diag = Z @ W @ X.T, Z @ W @ Z.T, np.einsum("nd,de,ne->n", X, W, X)
    np.testing.assert_allclose(covariances.Kuf(iv, k, U), ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(covariances.Kuu(iv, k), ref_uu, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(k.K_diag(U), ref_diag, rtol=1e-10)


def test_the_shared_scale_kernel_with_equal_scales_is_the_raw_one(setup):
    """Equal scales λ: the subspace shared-scale SE + linear equals SharedScaleSEPlusLinear on the
    raw inputs wherever one argument lies in the subspace, and on the diagonal."""
    X, U, _, A, Z = setup
    k = SubspaceSharedScaleSEPlusLinear(R, scale=0.8, se_weight=0.7, linear_weight=1.9)
    raw = SharedScaleSEPlusLinear(D, scale=0.8, se_weight=0.7, linear_weight=1.9)
    iv = SubspaceInducingPoints(A)
    np.testing.assert_allclose(covariances.Kuu(iv, k), raw(Z), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(covariances.Kuf(iv, k, U), raw(Z, X), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(k.K_diag(U), raw(X, full_cov=False), rtol=1e-10)
    np.testing.assert_allclose(np.diag(k(U)), k.K_diag(U), rtol=1e-12)


def test_the_shared_scale_kernels_scales_are_the_metric_on_raw_inputs(setup):
    """ARD scales λ (R directions, then the residual): ω exp(−dᵀ W d) + (1 − ω) xᵀ W z with
    W = X̃ᵀ diag(λ²) X̃ + λ_res² (I − X̃ᵀ X̃), computed densely; ``make_subspace_kernel`` builds it
    at λ = 1 / (√2 ℓ)."""
    from mlgp.kernels import make_subspace_kernel

    X, U, basis, A, Z = setup
    lam = np.array([0.5, 1.3, 2.0, 0.7, 0.9])
    k = SubspaceSharedScaleSEPlusLinear(R, scale=lam, se_weight=3.0, linear_weight=1.0)
    W, w = _metric(basis, lam[:R] ** 2, lam[R] ** 2), 0.75
    diff = X[:, None, :] - Z[None, :, :]
    ref = w * np.exp(-np.einsum("nmd,de,nme->mn", diff, W, diff)) + (1 - w) * Z @ W @ X.T
    dz = Z[:, None, :] - Z[None, :, :]
    ref_uu = w * np.exp(-np.einsum("nmd,de,nme->nm", dz, W, dz)) + (1 - w) * Z @ W @ Z.T
    iv = SubspaceInducingPoints(A)
    np.testing.assert_allclose(covariances.Kuf(iv, k, U), ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(covariances.Kuu(iv, k), ref_uu, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(k.K_diag(U), w + (1 - w) * np.einsum("nd,de,ne->n", X, W, X), rtol=1e-10)
    built = make_subspace_kernel("se+linear-shared", R, lengthscale=0.5)
    assert isinstance(built, SubspaceSharedScaleSEPlusLinear)
    np.testing.assert_allclose(built.scales.numpy(), np.full(R + 1, 1 / (np.sqrt(2) * 0.5)))


def test_subspace_linear_with_equal_variances_is_gpflows_linear(setup):
    X, U, _, A, Z = setup
    k, stock = SubspaceLinear(R, variance=0.4), gpflow.kernels.Linear(variance=0.4)
    iv = SubspaceInducingPoints(A)
    np.testing.assert_allclose(covariances.Kuf(iv, k, U), stock(Z, X), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(k.K_diag(U), stock(X, full_cov=False), rtol=1e-10)
    np.testing.assert_allclose(np.diag(k(U)), stock(X, full_cov=False), rtol=1e-10)


def test_the_inducing_variable_fits_mlgpfs_contract(setup):
    _, _, _, A, _ = setup
    shared = shared_inducing_variable(SubspaceInducingPoints(A), np.float64)
    assert input_dim(shared) == R + 1
    np.testing.assert_array_equal(shared.inducing_variable.Z.numpy()[:, R], 0.0)  # in the subspace
    with pytest.raises(ShapeError, match=r"A must be a finite non-empty \(M, R\) array"):
        SubspaceInducingPoints(np.full((2, 3), np.nan))
    with pytest.raises(ShapeError, match=r"lengthscales must be a positive number or R \+ 1 = 5 positive numbers"):
        SubspaceSE(R, lengthscales=[1.0, 2.0])


def test_an_mlgpf_on_subspace_inputs_has_the_bound_of_the_stock_model(setup):
    from mlgp.likelihoods import MultiLabelBernoulli
    from mlgp.models import MLGPF

    X, U, basis, A, Z = setup
    rng = np.random.default_rng(1)
    Y = (rng.random((len(X), 3)) < 0.4).astype(np.float64)
    proj = SubspaceProjection(basis)

    def model(kernel, iv, input_map):
        lik = MultiLabelBernoulli(3, 2, seed=3)
        m = MLGPF(kernel, lik, iv, num_data=len(X), input_map=input_map, q_family="cholesky")
        m.q.q_mu.assign(rng_q.normal(size=(M, 2)))
        return m

    rng_q = np.random.default_rng(2)
    sub = model(SubspaceSE(R, variance=1.3, lengthscales=0.9), SubspaceInducingPoints(A), proj)
    rng_q = np.random.default_rng(2)
    full = model(gpflow.kernels.SquaredExponential(variance=1.3, lengthscales=0.9), gpflow.inducing_variables.InducingPoints(Z), None)
    full.likelihood.loadings.assign(sub.likelihood.loadings.numpy())
    full.likelihood.bias.assign(sub.likelihood.bias.numpy())
    sub_elbo = float(sub.elbo((proj(sp.csr_matrix(X)), Y)))
    full_elbo = float(full.elbo((X, Y)))
    assert np.isfinite(sub_elbo)
    np.testing.assert_allclose(sub_elbo, full_elbo, rtol=1e-10)


@pytest.mark.parametrize("kernel", [lambda: SubspaceSE(R, lengthscales=np.linspace(0.5, 1.5, R + 1)),
                                    lambda: SubspaceLinear(R, variance=np.linspace(0.5, 1.5, R + 1)),
                                    lambda: SubspaceSE(R) + SubspaceLinear(R)], ids=["se", "linear", "se+linear"])
@pytest.mark.slow
def test_a_subspace_mlgpf_trains_saves_and_loads(setup, tmp_path, kernel):
    from mlgp.likelihoods import MultiLabelBernoulli
    from mlgp.models import MLGPF
    from mlgp.recipes import MLGPFClassifier
    from mlgp.training import fit

    X, _, basis, A, _ = setup
    Xs = sp.csr_matrix(X)
    Y = sp.csr_matrix((np.random.default_rng(4).random((len(X), 3)) < 0.4).astype(np.float64))
    model = MLGPF(kernel(), MultiLabelBernoulli(3, 2), SubspaceInducingPoints(A), num_data=len(X),
                  input_map=SubspaceProjection(basis), q_family="whitened")
    A0 = model.inducing_variable.inducing_variable.A.numpy().copy()
    fit(model, (Xs, Y), epochs=2, batch_size=10, progress=False)
    assert not np.allclose(model.inducing_variable.inducing_variable.A.numpy(), A0)  # A is trained
    loaded = MLGPF.load(model.save(tmp_path / "m"))
    assert isinstance(loaded.inducing_variable.inducing_variable, SubspaceInducingPoints)
    a, b = MLGPFClassifier.from_model(model), MLGPFClassifier.from_model(loaded)
    np.testing.assert_array_equal(b.predict_topk(Xs, 2).indices, a.predict_topk(Xs, 2).indices)
    np.testing.assert_array_equal(b.decision_function(Xs), a.decision_function(Xs))
