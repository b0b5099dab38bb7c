"""GenEML's predictive probabilities (commit 6e36a50): :func:`mlgp.geneml.predictive.expected_sigmoid`
against adaptive quadrature, and ``GenEML.predict_proba`` = μ_l E[σ(uᵀ v_l)], u ~ N(x W,
``residual_covariance_``), against Monte Carlo draws of u; the residual covariance against U − X W
recomputed here; saved files with and without the covariance."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from scipy import integrate
from scipy.special import expit

import mlgp.geneml.inference as inference_module
from mlgp.data import geneml_lowrank
from mlgp.errors import DataFormatError
from mlgp.geneml import GenEML
from mlgp.geneml.predictive import expected_sigmoid

# ----------------------------------------------------------------------------- expected_sigmoid --


def _quad_expected_sigmoid(mean: float, variance: float) -> float:
    """∫ σ(m + s z) φ(z) dz by scipy.integrate.quad over z in [−40, 40] (φ < 1e-300 beyond), split
    at the sigmoid's centre z = −m / s."""
    s = np.sqrt(variance)
    if s == 0:
        return float(expit(mean))

    def integrand(z):
        return expit(mean + s * z) * np.exp(-0.5 * z * z) / np.sqrt(2.0 * np.pi)

    centre = -mean / s
    points = [centre] if -40 < centre < 40 else None
    value, _ = integrate.quad(integrand, -40.0, 40.0, points=points, epsabs=1e-14, epsrel=1e-13, limit=500)
    return value


MEANS = np.linspace(-20.0, 20.0, 41)


@pytest.mark.parametrize("variance", [0.0, 1e-6, 1.0, 25.0, 100.0])
def test_expected_sigmoid_equals_quadrature(variance) -> None:
    """E[σ(f)], f ~ N(m, v), equals adaptive quadrature of σ(m + √v z) φ(z) to 1e-8 absolute for
    means −20..20 (the module's promise: better than 1e-9 up to a standard deviation of 10)."""
    got = expected_sigmoid(MEANS, np.full(MEANS.shape, variance))
    ref = np.array([_quad_expected_sigmoid(m, variance) for m in MEANS])
    worst = int(np.argmax(np.abs(got - ref)))
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-8,
                               err_msg=f"variance {variance}: worst at mean {MEANS[worst]}")


def test_expected_sigmoid_with_zero_variance_is_the_sigmoid() -> None:
    """Variance 0: σ(mean) to 1e-15 relative, for means far into both tails."""
    m = np.linspace(-40.0, 40.0, 801)
    np.testing.assert_allclose(expected_sigmoid(m, 0.0), expit(m), rtol=1e-15, atol=0)


def test_expected_sigmoid_broadcasts_a_variance_per_column(rng) -> None:
    """A (K,) variance with (B, K) means gives (B, K), each entry the scalar call at its column's
    variance; and E[σ(−f)] = 1 − E[σ(f)] (σ(−x) = 1 − σ(x) under the symmetric Gaussian)."""
    means = rng.normal(scale=3.0, size=(6, 4))
    variance = np.array([0.0, 0.3, 1.0, 2.0])
    out = expected_sigmoid(means, variance)
    assert out.shape == (6, 4) and out.dtype == np.float64
    scalar = np.array([[expected_sigmoid(np.array(means[i, j]), np.array(variance[j])) for j in range(4)]
                       for i in range(6)])
    np.testing.assert_allclose(out, scalar, rtol=1e-15, atol=0)
    np.testing.assert_allclose(expected_sigmoid(-means, variance), 1.0 - out, rtol=0, atol=1e-14)
    assert out.min() >= 0 and out.max() <= 1


# ------------------------------------------------------------------------------- GenEML fits --

K, k = 10, 3


@pytest.fixture(scope="module")
def data():
    ds = geneml_lowrank(num_train=200, num_test=20, num_labels=K, num_features=8, rank=3, seed=0)
    return ds.train.X, ds.train.Y, ds.test.X


@pytest.fixture(scope="module", params=[None, "global"], ids=["no-exposure", "global-exposure"])
def fitted(request, data):
    """GenEML (k = 3, 5 EM iterations) fitted with the given exposure; batch EM's final state (its U)
    is kept by wrapping batch_em."""
    X, Y, _ = data
    final = {}

    def keep_state(*args, **kwargs):
        state, trace = original(*args, **kwargs)
        final["state"] = state
        return state, trace

    original = inference_module.batch_em
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(inference_module, "batch_em", keep_state)
        est = GenEML(n_components=k, max_iter=5, exposure=request.param, random_state=0, preprocessing=None,
                     calibration=None).fit(X, Y)
    return est, final["state"]


def test_residual_covariance_is_the_covariance_of_u_minus_xw(fitted, data) -> None:
    """residual_covariance_ (k, k) is symmetric PSD and equals (1/N) Σ_n r_n r_nᵀ, r_n = u_n − x_n W
    over the training rows, from the fit's final U (a loop of outer products here)."""
    est, state = fitted
    X = data[0].toarray()
    S = est.residual_covariance_
    assert S.shape == (k, k) and S.dtype == np.float64
    np.testing.assert_allclose(S, S.T, rtol=0, atol=1e-15 * np.abs(S).max())
    assert np.linalg.eigvalsh(S).min() >= -1e-12
    R = state.U - X @ est.W_
    ref = sum(np.outer(r, r) for r in R) / X.shape[0]
    np.testing.assert_allclose(S, ref, rtol=1e-12, atol=0)
    assert np.abs(S - np.eye(k) / est.lambda_u).max() > 0.1  # not the prior's I / λ_u on these data


def test_residual_covariance_is_the_prior_where_the_fit_keeps_no_u(data) -> None:
    """Online EM without carry_local keeps no U: residual_covariance_ is the prior's I / λ_u."""
    X, Y, _ = data
    est = GenEML(n_components=k, inference="online-em", carry_local=False, max_iter=2, batch_size=50,
                 lambda_u=4.0, random_state=0).fit(X, Y)
    np.testing.assert_array_equal(est.residual_covariance_, np.eye(k) / 4.0)


def _monte_carlo(est, X, covariance, draws: int = 100_000, seed: int = 0):
    """E[σ(uᵀ v_l)] with u ~ N(x W, covariance) by plain Monte Carlo (the draws' mean and its
    standard error), per point of X (dense) and label, times exposure_ where there is one."""
    gen = np.random.default_rng(seed)
    L = np.linalg.cholesky(covariance + 1e-300 * np.eye(covariance.shape[0]))
    mean, se = np.empty((X.shape[0], K)), np.empty((X.shape[0], K))
    for i, x in enumerate(X):
        u = x @ est.W_ + gen.standard_normal((draws, k)) @ L.T
        s = expit(u @ est.V_.T)
        mean[i], se[i] = s.mean(axis=0), s.std(axis=0, ddof=1) / np.sqrt(draws)
    mu = np.ones(K) if est.exposure_ is None else est.exposure_
    return mean * mu, se * mu


def test_predict_proba_equals_monte_carlo_over_the_residual_spread(fitted, data) -> None:
    """predict_proba equals μ_l times a Monte-Carlo mean of σ(uᵀ v_l), u drawn about x W with the
    fitted residual covariance, within 5 standard errors; the spread matters (the plug-in
    μ σ(ψ) is many standard errors away)."""
    est, _ = fitted
    X_test = data[2][:5]
    proba = est.predict_proba(X_test)
    mc, se = _monte_carlo(est, X_test.toarray(), est.residual_covariance_)
    assert np.all(np.abs(proba - mc) <= 5 * se), np.max(np.abs(proba - mc) / se)
    mu = np.ones(K) if est.exposure_ is None else est.exposure_
    plug_in = mu * expit(X_test.toarray() @ est.W_ @ est.V_.T)
    assert np.max(np.abs(plug_in - mc) / se) > 20


def test_predict_proba_uses_the_whole_covariance(fitted, data) -> None:
    """With a covariance of strong correlations set in place of the fitted one, predict_proba
    still equals the Monte-Carlo estimate within 5 standard errors (the logit's variance is
    v_lᵀ Σ v_l, off-diagonal terms included, not Σ's diagonal alone)."""
    est, _ = fitted
    est = copy.deepcopy(est)
    A = np.array([[1.0, 0.0, 0.0], [0.9, 0.3, 0.0], [-0.8, 0.2, 0.4]])
    est.residual_covariance_ = 0.3 * A @ A.T
    X_test = data[2][:4]
    proba = est.predict_proba(X_test)
    mc, se = _monte_carlo(est, X_test.toarray(), est.residual_covariance_, seed=1)
    assert np.all(np.abs(proba - mc) <= 5 * se), np.max(np.abs(proba - mc) / se)
    diagonal = copy.deepcopy(est)
    diagonal.residual_covariance_ = np.diag(np.diag(est.residual_covariance_))
    assert np.max(np.abs(diagonal.predict_proba(X_test) - mc) / se) > 20  # the test can tell


def test_zero_covariance_gives_the_plug_in_probability(fitted, data) -> None:
    """With a zero residual covariance predict_proba is exposure_ · σ(decision_function) (1e-15)."""
    est, _ = fitted
    est = copy.deepcopy(est)
    est.residual_covariance_ = np.zeros((k, k))
    X_test = data[2]
    mu = np.ones(K) if est.exposure_ is None else est.exposure_
    np.testing.assert_allclose(est.predict_proba(X_test), mu * expit(est.decision_function(X_test)),
                               rtol=1e-15, atol=0)


def test_probabilities_lie_in_the_unit_interval_and_below_the_exposure(fitted, data) -> None:
    """predict_proba (N, K) lies in [0, 1], and at most exposure_ where there is one."""
    est, _ = fitted
    proba = est.predict_proba(data[2])
    assert proba.shape == (data[2].shape[0], K)
    assert proba.min() >= 0 and proba.max() <= 1
    if est.exposure_ is not None:
        assert np.all(proba <= est.exposure_[None, :])
        assert est.exposure_.min() < 0.99  # the factor matters


def test_predict_thresholds_the_probabilities(fitted, data) -> None:
    """predict is predict_proba >= threshold (0.4 here)."""
    est, _ = fitted
    est = copy.deepcopy(est).set_params(threshold=0.4)
    X_test = data[2]
    np.testing.assert_array_equal(est.predict(X_test), (est.predict_proba(X_test) >= 0.4).astype(np.int64))


def test_save_and_load_keep_the_probabilities(fitted, data, tmp_path) -> None:
    """save → load keeps residual_covariance_ and gives identical predict_proba."""
    est, _ = fitted
    loaded = GenEML.load(est.save(tmp_path / "geneml"))
    np.testing.assert_array_equal(loaded.residual_covariance_, est.residual_covariance_)
    np.testing.assert_array_equal(loaded.predict_proba(data[2]), est.predict_proba(data[2]))


def _rewrite_without(path, name: str, replace=None):
    """The .npz at ``path`` written again without the array ``name`` (or with it replaced)."""
    with np.load(path, allow_pickle=False) as archive:
        arrays = {key: archive[key] for key in archive.files}
    assert name in arrays
    del arrays[name]
    if replace is not None:
        arrays[name] = replace
    np.savez(path, **arrays)


def test_a_file_of_an_earlier_release_loads_with_the_plug_in_probability(fitted, data, tmp_path) -> None:
    """A saved file lacking residual_covariance_ (as files of releases before it) loads with a zero
    covariance, and predict_proba is exposure_ · σ(x W Vᵀ), ψ computed densely here."""
    est, _ = fitted
    path = est.save(tmp_path / "old")
    _rewrite_without(path, "residual_covariance_")
    loaded = GenEML.load(path)
    np.testing.assert_array_equal(loaded.residual_covariance_, np.zeros((k, k)))
    X_test = data[2]
    mu = np.ones(K) if est.exposure_ is None else est.exposure_
    expected = mu * expit(X_test.toarray() @ est.W_ @ est.V_.T)
    np.testing.assert_allclose(loaded.predict_proba(X_test), expected, rtol=1e-12, atol=0)
    assert np.abs(expected - est.predict_proba(X_test)).max() > 1e-3  # not the fitted spread


def test_a_file_with_a_negative_covariance_is_refused_or_scores_finitely(fitted, data, tmp_path) -> None:
    """The file format's contract: a file that loads scores finitely. A residual_covariance_
    that is not positive semi-definite (here −I: a negative logit variance) must be refused with
    DataFormatError, or give finite probabilities in [0, 1]."""
    est, _ = fitted
    path = est.save(tmp_path / "bad")
    _rewrite_without(path, "residual_covariance_", replace=-np.eye(k))
    try:
        loaded = GenEML.load(path)
    except DataFormatError:
        return
    with np.errstate(invalid="ignore"):
        proba = loaded.predict_proba(data[2])
    assert np.all(np.isfinite(proba)) and proba.min() >= 0 and proba.max() <= 1
