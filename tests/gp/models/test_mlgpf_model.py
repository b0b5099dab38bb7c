"""MLGPF as a GPflow model: the bound against GPflow's stock SVGP, KL and predictions against dense
numpy, gradients against finite differences, and GPflow's own tooling (saving: test_mlgpf_saving.py)."""

from __future__ import annotations

import io
from contextlib import redirect_stdout

import gpflow
import numpy as np
import pytest
import scipy.sparse as sp
import tensorflow as tf
from _mlgpf_perturb import perturb as _perturb
from _rounding import FLOAT64, assert_decisions_agree, assert_topk_close
from gpflow.inducing_variables import InducingPoints, SharedIndependentInducingVariables
from gpflow.kernels import Linear, SharedIndependent, SquaredExponential, Sum

from mlgp.data import mlgpf_prior
from mlgp.errors import MLGPError
from mlgp.kernels import make_kernel
from mlgp.likelihoods import LabelBatch, MultiLabelBernoulli
from mlgp.metrics import TopK, topk
from mlgp.models import MLGPF, mlgpf_from_data
from mlgp.recipes import MLGPFClassifier
from mlgp.training import sample_labels

KERNELS = ["linear", "se", "se+linear"]
JITTER = gpflow.config.default_jitter()


# ----------------------------------------------------------------------------- dense references
def np_kernel(k, A, B):
    """k(A, B) in numpy from the kernel's parameter values (not from GPflow's kernel code)."""
    if isinstance(k, SharedIndependent):
        k = k.kernel
    if isinstance(k, Sum):
        return sum(np_kernel(c, A, B) for c in k.kernels)
    if isinstance(k, SquaredExponential):
        ls, var = k.lengthscales.numpy(), float(k.variance.numpy())
        d = (A[:, None, :] - B[None, :, :]) / ls
        return var * np.exp(-0.5 * np.sum(d * d, axis=-1))
    if isinstance(k, Linear):
        return (A * k.variance.numpy()) @ B.T
    raise TypeError(type(k))


def np_kl_gauss(mu, S, K):
    """KL[N(mu, S) || N(0, K)] for one M-dimensional Gaussian."""
    M = len(mu)
    Kinv = np.linalg.inv(K)
    _, ld_K = np.linalg.slogdet(K)
    _, ld_S = np.linalg.slogdet(S)
    return 0.5 * (np.trace(Kinv @ S) + mu @ Kinv @ mu - M + ld_K - ld_S)


def np_marginals(model, X):
    """q(h_p(x)) means and variances (N, P) by dense linear algebra."""
    Z = model.inducing_variable.inducing_variable.Z.numpy()
    Kzz = np_kernel(model.kernel, Z, Z) + JITTER * np.eye(len(Z))
    Kxz = np_kernel(model.kernel, X, Z)
    kxx = np.diag(np_kernel(model.kernel, X, X))
    q_mu, q_sqrt = model.q_mu.numpy(), model.q_sqrt.numpy()
    if model.whiten:
        A = Kxz @ np.linalg.inv(np.linalg.cholesky(Kzz)).T  # K_xZ L⁻ᵀ
    else:
        A = Kxz @ np.linalg.inv(Kzz)
    mean = A @ q_mu
    base = kxx - np.sum((Kxz @ np.linalg.inv(Kzz)) * Kxz, axis=1)
    var = np.stack([base + np.sum((A @ q_sqrt[p]) ** 2, axis=1) for p in range(q_mu.shape[1])], axis=1)
    return mean, var


# ----------------------------------------------------------------------------- problem builders
def random_kernel(name, D, rng):
    k = make_kernel(name, D)
    for part in (k.kernels if isinstance(k, Sum) else [k]):
        if isinstance(part, SquaredExponential):
            part.lengthscales.assign(rng.uniform(0.7, 2.0, D))
            part.variance.assign(rng.uniform(0.5, 1.5))
        else:
            part.variance.assign(rng.uniform(0.1, 0.5, D))
    return k


def random_problem(rng, N=30, D=5, K=6, P=2, M=4):
    X = rng.normal(size=(N, D))
    Y = (rng.random((N, K)) < 0.35).astype(np.float64)
    Y[0] = 0.0
    Y[1] = 1.0
    Z = X[:M] + 0.1 * rng.normal(size=(M, D))
    Phi = rng.normal(size=(K, P))
    b = rng.normal(size=K)
    q_mu = 0.3 * rng.normal(size=(M, P))
    q_sqrt = np.tril(0.2 * rng.normal(size=(P, M, M)), -1) + np.stack([np.diag(rng.uniform(0.3, 0.9, M)) for _ in range(P)])
    return dict(X=X, Y=Y, Z=Z, Phi=Phi, b=b, q_mu=q_mu, q_sqrt=q_sqrt)


def build(prob, kernel, whiten, bias=True, num_data=None, n_gh=10):
    K, P = prob["Phi"].shape
    lik = MultiLabelBernoulli(K, P, loadings=prob["Phi"], bias=prob["b"] if bias else np.zeros(K),
                              num_gauss_hermite_points=n_gh)
    return MLGPF(gpflow.utilities.deepcopy(kernel), lik, prob["Z"], num_data=num_data or len(prob["X"]),
                 q_mu=prob["q_mu"], q_sqrt=prob["q_sqrt"], q_family="whitened" if whiten else "cholesky")


def stock_svgp(prob, kernel, whiten, num_data, mean_function=None):
    """GPflow's own SVGP with a LinearCoregionalization kernel: the same model written the stock way."""
    P = prob["Phi"].shape[1]
    kern = gpflow.kernels.LinearCoregionalization([gpflow.utilities.deepcopy(kernel) for _ in range(P)], W=prob["Phi"])
    lik = gpflow.likelihoods.Bernoulli(invlink=tf.sigmoid)
    lik.quadrature = gpflow.quadrature.NDiagGHQuadrature(1, 10)  # the same 10 Gauss–Hermite points
    return gpflow.models.SVGP(
        kernel=kern, likelihood=lik,
        inducing_variable=SharedIndependentInducingVariables(InducingPoints(prob["Z"])),
        mean_function=mean_function,
        q_mu=prob["q_mu"], q_sqrt=prob["q_sqrt"], whiten=whiten, num_latent_gps=P, num_data=num_data,
    )


# ----------------------------------------------------------------------------- 1. the bound vs GPflow SVGP
@pytest.mark.slow
@pytest.mark.parametrize("whiten", [False, True])
@pytest.mark.parametrize("kname", KERNELS)
def test_elbo_equals_stock_svgp_with_linear_coregionalization(rng, kname, whiten):
    prob = random_problem(rng)
    kern = random_kernel(kname, prob["X"].shape[1], rng)
    model = build(prob, kern, whiten, bias=False)
    ref = stock_svgp(prob, kern, whiten, num_data=len(prob["X"]))
    data = (prob["X"], prob["Y"])
    ours, theirs = model.elbo(data).numpy(), ref.elbo(data).numpy()
    assert np.isfinite(ours)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)
    np.testing.assert_allclose(model.prior_kl().numpy(), ref.prior_kl().numpy(), rtol=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("whiten", [False, True])
def test_minibatch_elbo_with_bias_equals_stock_svgp(rng, whiten):
    """b ≠ 0 as GPflow's Constant mean function, and the N/|B| scaling on a minibatch of 10 of 30."""
    prob = random_problem(rng)
    kern = random_kernel("se+linear", prob["X"].shape[1], rng)
    N = len(prob["X"])
    model = build(prob, kern, whiten, bias=True, num_data=N)
    ref = stock_svgp(prob, kern, whiten, num_data=N, mean_function=gpflow.functions.Constant(prob["b"]))
    rows = rng.choice(N, size=10, replace=False)
    batch = (prob["X"][rows], prob["Y"][rows])
    np.testing.assert_allclose(model.elbo(batch).numpy(), ref.elbo(batch).numpy(), rtol=1e-6)
    # and the scaling itself: N/|B| Σ_B ve − KL
    ve = model.expected_log_likelihood(batch).numpy()
    np.testing.assert_allclose(model.elbo(batch).numpy(), N / 10 * ve.sum() - model.prior_kl().numpy(), rtol=1e-12)


@pytest.mark.slow  # 4 s or more on 2 cores (README: the slow tier)
def test_linear_coregionalization_marginals_are_phi_squared_mixtures(rng):
    """GPflow's full-output-covariance route: diag of Φ diag(s) Φᵀ equals Σ_p φ_kp² s_p."""
    prob = random_problem(rng)
    kern = random_kernel("se", prob["X"].shape[1], rng)
    model = build(prob, kern, whiten=False, bias=False)
    ref = stock_svgp(prob, kern, whiten=False, num_data=len(prob["X"]))
    X = prob["X"][:8]
    mu, var = model.predict_f(X)
    mean, uvar = (t.numpy() for t in model.likelihood.utilities(mu, var))
    f_mu, f_cov = (t.numpy() for t in ref.predict_f(X, full_output_cov=True))  # (N, K), (N, K, K)
    np.testing.assert_allclose(mean, f_mu, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(uvar, np.diagonal(f_cov, axis1=1, axis2=2), rtol=1e-9, atol=1e-12)
    f_mu2, f_var2 = (t.numpy() for t in ref.predict_f(X, full_output_cov=False))
    np.testing.assert_allclose(uvar, f_var2, rtol=1e-9, atol=1e-12)
    # and the mixing formula spelled out for one entry
    Phi, s = prob["Phi"], var.numpy()
    assert uvar[3, 2] == pytest.approx(sum(Phi[2, p] ** 2 * s[3, p] for p in range(Phi.shape[1])), rel=1e-12)


# ----------------------------------------------------------------------------- 5. KL, and the marginals
@pytest.mark.parametrize("whiten", [False, True])
@pytest.mark.parametrize("kname", ["se", "se+linear"])
def test_prior_kl_equals_dense_numpy(rng, kname, whiten):
    prob = random_problem(rng, P=3)
    kern = random_kernel(kname, prob["X"].shape[1], rng)
    model = build(prob, kern, whiten)
    Z = prob["Z"]
    Kzz = np_kernel(kern, Z, Z) + JITTER * np.eye(len(Z))
    prior = np.eye(len(Z)) if whiten else Kzz
    ref = sum(np_kl_gauss(prob["q_mu"][:, p], prob["q_sqrt"][p] @ prob["q_sqrt"][p].T, prior) for p in range(3))
    np.testing.assert_allclose(model.prior_kl().numpy(), ref, rtol=1e-8)
    assert ref > 0


@pytest.mark.parametrize("whiten", [False, True])
def test_predict_f_equals_dense_numpy_conditional(rng, whiten):
    prob = random_problem(rng)
    kern = random_kernel("se+linear", prob["X"].shape[1], rng)
    model = build(prob, kern, whiten)
    Xs = rng.normal(size=(9, prob["X"].shape[1]))
    mu, var = (t.numpy() for t in model.predict_f(Xs))
    mu_ref, var_ref = np_marginals(model, Xs)
    np.testing.assert_allclose(mu, mu_ref, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(var, var_ref, rtol=1e-7, atol=1e-9)


# ----------------------------------------------------------------------------- 4. gradients
def _finite_difference_check(model, data, eps=1e-6):
    f = tf.function(lambda: -model.elbo(data))
    variables = model.trainable_variables
    names = {v.ref(): v.name for v in variables}
    with tf.GradientTape() as tape:
        loss = f()
    grads = tape.gradient(loss, variables)
    assert len(variables) >= 7  # loadings, bias, q_mu, q_sqrt, Z, kernel hyperparameters
    for v, g in zip(variables, grads):
        assert g is not None, f"no gradient for {names[v.ref()]}"
        g = tf.convert_to_tensor(g).numpy()
        x0 = np.array(v.numpy(), dtype=np.float64)
        fd = np.zeros_like(x0)
        for i in np.ndindex(x0.shape):
            xp, xm = x0.copy(), x0.copy()
            xp[i] += eps
            xm[i] -= eps
            v.assign(xp)
            lp = f().numpy()
            v.assign(xm)
            lm = f().numpy()
            fd[i] = (lp - lm) / (2 * eps)
        v.assign(x0)
        np.testing.assert_allclose(g, fd, rtol=1e-4, atol=1e-5, err_msg=names[v.ref()])


@pytest.mark.slow  # 4 s or more on 2 cores (README: the slow tier)
def test_gradients_match_finite_differences_exact_labels(rng):
    prob = random_problem(rng, N=12, D=3, K=5, P=2, M=3)
    kern = random_kernel("se+linear", 3, rng)
    model = build(prob, kern, whiten=False, num_data=40)
    _finite_difference_check(model, (tf.constant(prob["X"]), tf.constant(prob["Y"])))


def test_gradients_match_finite_differences_label_batch(rng):
    prob = random_problem(rng, N=12, D=3, K=5, P=2, M=3)
    kern = random_kernel("se+linear", 3, rng)
    model = build(prob, kern, whiten=True, num_data=40)
    idx, sgn, w = sample_labels(sp.csr_matrix(prob["Y"]), 2, rng)
    labels = LabelBatch(tf.constant(idx), tf.constant(sgn), tf.constant(w))
    assert np.any(w > 1)  # genuinely subsampled
    _finite_difference_check(model, (tf.constant(prob["X"]), labels))


# ----------------------------------------------------------------------------- 6. predictions
@pytest.fixture(scope="module")
def fitted_like():
    """A model from from_data with non-default parameter values (N=23, D=4, K=7, P=3, M=5)."""
    rng = np.random.default_rng(7)
    ds = mlgpf_prior(num_train=23, num_test=11, num_features=4, num_labels=7, num_latent=3, seed=3)
    model = mlgpf_from_data(ds.train.X, ds.train.Y, kernel="se+linear", num_latent_gps=3, num_inducing=5, seed=1)
    _perturb(model, rng)
    return model, ds


def test_scores_are_phi_times_latent_mean_plus_bias(fitted_like):
    model, ds = fitted_like
    X = ds.test.X.toarray()
    mu, _ = model.predict_f(X)
    ref = mu.numpy() @ model.likelihood.loadings.numpy().T + model.likelihood.bias.numpy()
    scores = MLGPFClassifier.from_model(model).decision_function(X)
    assert scores.shape == (X.shape[0], 7)
    np.testing.assert_allclose(scores, ref, rtol=1e-12, atol=1e-12)
    # and against the dense numpy conditional (independent of GPflow's conditional)
    mu_np, _ = np_marginals(model, X)
    np.testing.assert_allclose(scores, mu_np @ model.likelihood.loadings.numpy().T + model.likelihood.bias.numpy(), rtol=1e-7, atol=1e-9)


def test_predictions_invariant_to_batch_size_and_sparsity(fitted_like):
    model, ds = fitted_like
    Xs = ds.test.X  # CSR
    Xd = Xs.toarray()
    N = Xd.shape[0]
    est = MLGPFClassifier.from_model(model)
    ref = est.decision_function(Xd, batch_size=N)
    ref_top = est.predict_topk(Xd, 3, batch_size=N)
    assert isinstance(ref_top, TopK)
    t = topk(ref, 3)
    np.testing.assert_array_equal(ref_top.indices, t.indices)
    np.testing.assert_allclose(ref_top.scores, t.scores, rtol=0, atol=0)
    # other batch sizes are other kernels: scores equal to rounding, labels exactly away from near-ties
    for bs in (1, 7, N):
        for X in (Xd, Xs):
            np.testing.assert_allclose(est.decision_function(X, batch_size=bs), ref, rtol=1e-12, atol=1e-12)
            assert_topk_close(est.predict_topk(X, 3, batch_size=bs), ref, rtol=1e-12, atol=1e-12)
    p = est.predict_proba(Xs, batch_size=4)
    assert p.shape == (N, 7) and np.all((p >= 0) & (p <= 1))
    np.testing.assert_allclose(est.predict_proba(Xd, batch_size=N), p, rtol=1e-12, atol=1e-14)
    # f is symmetric about f̄ and σ − ½ is odd and increasing, so E[σ(f)] > ½ exactly when f̄ > 0
    # (p from blocks of 4, f̄ from one block: no f̄ within rounding of 0)
    assert_decisions_agree(p > 0.5, ref > 0, ref, 0.0, **FLOAT64)


def test_predict_rejects_wrong_feature_count(fitted_like):
    model, _ = fitted_like
    est = MLGPFClassifier.from_model(model)
    with pytest.raises(MLGPError, match="features"):
        est.decision_function(np.zeros((3, 5)))
    with pytest.raises(MLGPError, match="NaN"):
        est.decision_function(np.full((3, 4), np.nan))
    with pytest.raises(MLGPError, match="features"):
        model.model_inputs(np.zeros((3, 5)))
    with pytest.raises(MLGPError, match="NaN"):
        model.model_inputs(np.full((3, 4), np.nan))


# ----------------------------------------------------------------------------- 8. GPflow tooling
def test_gpflow_tooling(rng):
    prob = random_problem(rng, N=20, D=3, K=5, P=2, M=3)
    kern = random_kernel("se+linear", 3, rng)
    model = build(prob, kern, whiten=False)
    data = (tf.constant(prob["X"]), tf.constant(prob["Y"]))

    buf = io.StringIO()
    with redirect_stdout(buf):
        gpflow.utilities.print_summary(model)
    text = buf.getvalue()
    for name in ("q_mu", "q_sqrt", "loadings", "bias", "lengthscales", "Z"):
        assert name in text

    n_all = len(model.trainable_variables)
    gpflow.utilities.set_trainable(model.likelihood.loadings, False)
    assert len(model.trainable_variables) == n_all - 1
    gpflow.utilities.set_trainable(model.kernel, False)
    assert len(model.trainable_variables) == n_all - 4  # SE variance + lengthscales, linear variance
    gpflow.utilities.set_trainable(model, True)
    assert len(model.trainable_variables) == n_all

    closure = model.training_loss_closure(data)
    np.testing.assert_allclose(closure().numpy(), -model.elbo(data).numpy(), rtol=1e-12)
    before = model.elbo(data).numpy()
    res = gpflow.optimizers.Scipy().minimize(closure, model.trainable_variables, options=dict(maxiter=8))
    after_scipy = model.elbo(data).numpy()
    assert np.isfinite(after_scipy) and after_scipy > before + 1.0, (before, after_scipy, res.message)

    opt = gpflow.keras.tf_keras.optimizers.Adam(0.01)
    for _ in range(3):
        opt.minimize(model.training_loss_closure(data, compile=False), model.trainable_variables)
    assert int(opt.iterations.numpy()) == 3
    after_adam = model.elbo(data).numpy()
    assert np.isfinite(after_adam) and after_adam != after_scipy
