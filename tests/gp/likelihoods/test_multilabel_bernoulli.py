"""MultiLabelBernoulli and label subsampling, checked against independent numpy/scipy computations."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import tensorflow as tf
from scipy import integrate

from mlgp.errors import ShapeError
from mlgp.likelihoods import LabelBatch, MultiLabelBernoulli
from mlgp.training import MinibatchSampler, sample_labels

#: TensorFlow's kernels (its own log, exp, matmul and sums, in another order) against numpy's: equal
#: to rounding. The house float64 rtol; atol 1e-13 for the entries that cancel to near 0 from terms
#: of a few units (a few ulp of those terms).
TF_VS_NUMPY = dict(rtol=1e-12, atol=1e-13)


# ----------------------------------------------------------------------------- references
def quad_expectation(g, mean: float, var: float) -> float:
    """∫ g(f) N(f; mean, var) df by adaptive quadrature (independent of Gauss–Hermite)."""
    sd = np.sqrt(var)
    dens = lambda f: np.exp(-0.5 * (f - mean) ** 2 / var) / np.sqrt(2.0 * np.pi * var)  # noqa: E731
    val, _ = integrate.quad(lambda f: g(f) * dens(f), mean - 30 * sd, mean + 30 * sd,
                            epsabs=1e-13, epsrel=1e-12, limit=400, points=[mean])
    return val


def log_sigmoid(z):
    return -np.logaddexp(0.0, -z)


def expit(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def random_moments(rng, B, P, var_hi=2.0):
    Fmu = rng.normal(0.0, 1.0, size=(B, P))
    Fvar = rng.uniform(0.05, var_hi, size=(B, P))
    return Fmu, Fvar


def make_lik(rng, K, P, n_gh=10):
    Phi = rng.normal(0.0, 1.0, size=(K, P))
    b = rng.normal(0.0, 1.0, size=K)
    return MultiLabelBernoulli(K, P, loadings=Phi, bias=b, num_gauss_hermite_points=n_gh), Phi, b


# ----------------------------------------------------------------------------- quadrature
@pytest.mark.parametrize("n_gh, atol", [(10, 2e-3), (100, 1e-8)])
def test_expected_log_sigmoid_matches_adaptive_quadrature(rng, n_gh, atol):
    lik = MultiLabelBernoulli(3, 2, num_gauss_hermite_points=n_gh)
    mean = np.concatenate([rng.uniform(-6, 6, 16), [0.0, 25.0, -25.0, 3.0]])
    var = np.concatenate([rng.uniform(0.01, 9.0, 16), [1e-4, 4.0, 4.0, 9.0]])
    y = np.concatenate([rng.choice([-1.0, 1.0], 16), [1.0, -1.0, -1.0, 1.0]])
    got = lik._expected_log_sigmoid(tf.constant(y), tf.constant(mean), tf.constant(var)).numpy()
    ref = np.array([quad_expectation(lambda f, s=s: log_sigmoid(s * f), m, v) for s, m, v in zip(y, mean, var)])
    np.testing.assert_allclose(got, ref, rtol=0, atol=atol)
    # near-deterministic f: second-order Taylor, log σ(0) + ½ v (log σ)''(0) = −log 2 − v/8
    np.testing.assert_allclose(got[16], -np.log(2.0) - 1e-4 / 8, atol=1e-9)


def test_variational_expectations_are_label_sums_of_1d_expectations(rng):
    """Σ_k E_N(Φm+b, Φ²s)[log σ(y f)] with y = 2Y−1 and 0/1 labels; high-order GH vs scipy quad."""
    B, K, P = 4, 5, 3
    lik, Phi, b = make_lik(rng, K, P, n_gh=100)
    Fmu, Fvar = random_moments(rng, B, P)
    Y = (rng.random((B, K)) < 0.4).astype(np.float64)
    got = lik.variational_expectations(None, tf.constant(Fmu), tf.constant(Fvar), tf.constant(Y)).numpy()
    mean = Fmu @ Phi.T + b
    var = Fvar @ (Phi**2).T
    ref = np.zeros(B)
    for i in range(B):
        for k in range(K):
            s = 1.0 if Y[i, k] == 1 else -1.0
            ref[i] += quad_expectation(lambda f: log_sigmoid(s * f), mean[i, k], var[i, k])
    assert got.shape == (B,)
    np.testing.assert_allclose(got, ref, rtol=1e-7, atol=1e-8)


def test_quadrature_with_10_points_is_the_numpy_gauss_hermite_rule(rng):
    """The paper's 10-point rule, written out with numpy's hermgauss: Σ_j w_j/√π g(μ + √(2v) x_j)."""
    lik = MultiLabelBernoulli(3, 2)  # default: 10 points
    assert lik.num_gauss_hermite_points == 10
    mean, var = rng.normal(size=7), rng.uniform(0.1, 3, size=7)
    y = rng.choice([-1.0, 1.0], 7)
    x, w = np.polynomial.hermite.hermgauss(10)
    ref = np.sum(w / np.sqrt(np.pi) * log_sigmoid(y[:, None] * (mean[:, None] + np.sqrt(2 * var)[:, None] * x)), axis=1)
    got = lik._expected_log_sigmoid(tf.constant(y), tf.constant(mean), tf.constant(var)).numpy()
    np.testing.assert_allclose(got, ref, **TF_VS_NUMPY)


# ----------------------------------------------------------------------------- utilities
def test_utilities_match_numpy(rng):
    K, P = 6, 3
    lik, Phi, b = make_lik(rng, K, P)
    Fmu, Fvar = random_moments(rng, 5, P)
    mean, var = (t.numpy() for t in lik.utilities(tf.constant(Fmu), tf.constant(Fvar)))
    np.testing.assert_allclose(mean, Fmu @ Phi.T + b, **TF_VS_NUMPY)
    np.testing.assert_allclose(var, Fvar @ (Phi * Phi).T, **TF_VS_NUMPY)
    # elementwise definition, not the matrix product
    i, k = 3, 4
    assert mean[i, k] == pytest.approx(sum(Phi[k, p] * Fmu[i, p] for p in range(P)) + b[k], rel=1e-12, abs=1e-13)
    assert var[i, k] == pytest.approx(sum(Phi[k, p] ** 2 * Fvar[i, p] for p in range(P)), rel=1e-12, abs=1e-13)
    # extra leading batch dimensions
    Fmu3, Fvar3 = rng.normal(size=(2, 4, P)), rng.uniform(0.1, 1, size=(2, 4, P))
    m3, v3 = (t.numpy() for t in lik.utilities(tf.constant(Fmu3), tf.constant(Fvar3)))
    np.testing.assert_allclose(m3, np.einsum("abp,kp->abk", Fmu3, Phi) + b, **TF_VS_NUMPY)
    np.testing.assert_allclose(v3, np.einsum("abp,kp->abk", Fvar3, Phi**2), **TF_VS_NUMPY)


def test_gathered_utilities_consistent_with_utilities(rng):
    K, P, B, S = 7, 2, 4, 5
    lik, _, _ = make_lik(rng, K, P)
    Fmu, Fvar = random_moments(rng, B, P)
    idx = rng.integers(0, K, size=(B, S)).astype(np.int32)
    gm, gv = (t.numpy() for t in lik.gathered_utilities(tf.constant(Fmu), tf.constant(Fvar), tf.constant(idx)))
    m, v = (t.numpy() for t in lik.utilities(tf.constant(Fmu), tf.constant(Fvar)))
    # the gathered rows' own products against the full matmul: equal to rounding
    np.testing.assert_allclose(gm, np.take_along_axis(m, idx, axis=1), **TF_VS_NUMPY)
    np.testing.assert_allclose(gv, np.take_along_axis(v, idx, axis=1), **TF_VS_NUMPY)


def test_predictive_quantities_match_quadrature(rng):
    B, K, P = 3, 4, 2
    lik, Phi, b = make_lik(rng, K, P, n_gh=100)
    Fmu, Fvar = random_moments(rng, B, P, var_hi=0.3)
    Y = (rng.random((B, K)) < 0.5).astype(np.float64)
    mean, var = Fmu @ Phi.T + b, Fvar @ (Phi**2).T
    p, pv = (t.numpy() for t in lik.predict_mean_and_var(None, tf.constant(Fmu), tf.constant(Fvar)))
    p_ref = np.array([[quad_expectation(expit, mean[i, k], var[i, k]) for k in range(K)] for i in range(B)])
    np.testing.assert_allclose(p, p_ref, atol=1e-8)
    np.testing.assert_allclose(pv, p_ref * (1 - p_ref), atol=1e-8)
    lpd = lik.predict_log_density(None, tf.constant(Fmu), tf.constant(Fvar), tf.constant(Y)).numpy()
    lpd_ref = np.sum(np.log(np.where(Y == 1, p_ref, 1 - p_ref)), axis=1)
    np.testing.assert_allclose(lpd, lpd_ref, atol=1e-7)
    F = rng.normal(size=(B, P))
    lp = lik.log_prob(None, tf.constant(F), tf.constant(Y)).numpy()
    f = F @ Phi.T + b
    np.testing.assert_allclose(lp, np.sum(log_sigmoid((2 * Y - 1) * f), axis=1), rtol=1e-12)


def test_constructor_rejects_bad_shapes():
    with pytest.raises(ShapeError, match=r"loadings must have shape \(K, P\) = \(4, 2\), got \(2, 4\)"):
        MultiLabelBernoulli(4, 2, loadings=np.zeros((2, 4)))
    with pytest.raises(ShapeError, match=r"bias must have shape \(K,\) = \(4,\), got \(3,\)"):
        MultiLabelBernoulli(4, 2, bias=np.zeros(3))
    with pytest.raises(ShapeError, match=r"need num_labels ≥ 1 and num_latent ≥ 1, got K=4, P=0"):
        MultiLabelBernoulli(4, 0)
    with pytest.raises(ShapeError, match=r"need num_labels ≥ 1 and num_latent ≥ 1, got K=0, P=2"):
        MultiLabelBernoulli(0, 2)
    with pytest.raises(ShapeError, match=r"num_gauss_hermite_points must be ≥ 1, got 0"):
        MultiLabelBernoulli(4, 2, num_gauss_hermite_points=0)


# ----------------------------------------------------------------------------- label subsampling
def _label_rows(K):
    """Rows with 0 positives, all K positives, one positive, and a few mixed ones."""
    Y = np.zeros((6, K))
    Y[1] = 1.0
    Y[2, 3] = 1.0
    Y[3, [0, 2, 5]] = 1.0
    Y[4, [1, K - 1]] = 1.0
    Y[5, : K - 2] = 1.0  # only two negatives
    return Y


def test_sample_labels_structure(rng):
    K, n = 8, 3
    Y = _label_rows(K)
    idx, sgn, w = sample_labels(sp.csr_matrix(Y), n, rng)
    n_pos = Y.sum(axis=1).astype(int)
    assert idx.shape == sgn.shape == w.shape == (6, n_pos.max() + n)
    for i in range(Y.shape[0]):
        pos = set(np.flatnonzero(Y[i]))
        neg_avail = K - len(pos)
        live = w[i] > 0
        pos_slots = live & (sgn[i] > 0)
        neg_slots = live & (sgn[i] < 0)
        assert set(idx[i, pos_slots]) == pos and pos_slots.sum() == len(pos)
        np.testing.assert_array_equal(w[i, pos_slots], 1.0)
        neg = idx[i, neg_slots]
        assert len(set(neg)) == len(neg) == min(n, neg_avail)  # without replacement
        assert not set(neg) & pos
        if len(neg):
            np.testing.assert_allclose(w[i, neg_slots], neg_avail / len(neg))
        np.testing.assert_array_equal(w[i, ~live], 0.0)
        assert np.all((idx[i] >= 0) & (idx[i] < K))


def test_sample_labels_rejects_bad_arguments(rng):
    Y = sp.csr_matrix(_label_rows(6))
    with pytest.raises(ShapeError, match=r"negatives must be ≥ 1 \(or None for all labels\), got 0"):
        sample_labels(Y, 0, rng)
    with pytest.raises(ShapeError, match=r"num_slots=2 cannot hold 6 positives plus 3 negatives"):
        sample_labels(Y, 3, rng, num_slots=2)


def test_subsampled_bound_is_unbiased(rng):
    """Mean of 2000 subsampled estimates per point = exact label sum, within 4 Monte Carlo SEs.

    Rows with fewer negatives than ``negatives`` (here 1 and 2 of n = 3) draw all of them, so their
    weight is |N_i| / (negatives drawn) = 1, not |N_i| / n: their estimate is exact on every draw.
    """
    K, P, n, R = 8, 2, 3, 2000
    lik, _, _ = make_lik(rng, K, P)
    Y = np.vstack([_label_rows(K), np.zeros((2, K))])
    Y[6, : K - 1] = 1.0  # one negative, fewer than n
    Y[7, 1 : K - 2] = 1.0  # exactly n negatives (labels 0, 6, 7)
    B = Y.shape[0]
    num_neg = K - Y.sum(axis=1)
    assert num_neg.tolist() == [8, 0, 7, 5, 6, 2, 1, 3]
    fewer = (num_neg > 0) & (num_neg < n)
    assert fewer.sum() == 2  # rows 5 and 6
    Fmu, Fvar = random_moments(rng, B, P)
    exact = lik.variational_expectations(None, tf.constant(Fmu), tf.constant(Fvar), tf.constant(Y)).numpy()

    Yc = sp.csr_matrix(Y)
    S = int(Y.sum(axis=1).max()) + n
    draws = [sample_labels(Yc, n, rng, num_slots=S) for _ in range(R)]
    idx = np.concatenate([d[0] for d in draws])
    sgn = np.concatenate([d[1] for d in draws])
    w = np.concatenate([d[2] for d in draws])
    # the rows with fewer negatives than requested: every negative drawn, each with weight 1
    neg_w = np.where(sgn < 0, w, 0.0).reshape(R, B, S)
    np.testing.assert_array_equal((neg_w > 0).sum(axis=2)[:, fewer], np.broadcast_to(num_neg[fewer], (R, 2)))
    np.testing.assert_array_equal(neg_w.sum(axis=2)[:, fewer], np.broadcast_to(num_neg[fewer], (R, 2)))
    est = lik.subsampled_expectations(
        tf.constant(np.tile(Fmu, (R, 1))), tf.constant(np.tile(Fvar, (R, 1))),
        LabelBatch(tf.constant(idx), tf.constant(sgn), tf.constant(w)),
    ).numpy().reshape(R, B)
    mean, se = est.mean(axis=0), est.std(axis=0, ddof=1) / np.sqrt(R)
    # rows whose negatives are all sampled (0 or ≤ n negatives) have no Monte Carlo noise at all
    deterministic = num_neg <= n
    assert deterministic.tolist() == [False, True, False, False, False, True, True, True]
    np.testing.assert_allclose(est[:, deterministic], np.broadcast_to(exact[deterministic], (R, deterministic.sum())), rtol=1e-12)
    assert np.all(se[~deterministic] > 0)
    z = np.abs(mean - exact)[~deterministic] / se[~deterministic]
    assert np.all(z < 4.0), f"z-scores {z}"
    # and the estimator is genuinely noisy: a single draw is not the exact value
    assert np.max(np.abs(est[0] - exact)[~deterministic]) > 1e-6


@pytest.mark.parametrize("case", ["K-1", "K", "K+2"])
def test_subsampled_bound_is_exact_when_every_negative_is_sampled(rng, case):
    """negatives ≥ K − |P_i| for every row: all negatives sampled, weight 1, the exact label sum."""
    K, P = 8, 3
    lik, _, _ = make_lik(rng, K, P)
    Y = _label_rows(K)
    if case == "K-1":
        Y = Y[1:]  # every row has ≥ 1 positive, so K − 1 negatives suffice
    n = {"K-1": K - 1, "K": K, "K+2": K + 2}[case]
    assert np.all(n >= K - Y.sum(axis=1))
    Fmu, Fvar = random_moments(rng, Y.shape[0], P)
    idx, sgn, w = sample_labels(sp.csr_matrix(Y), n, rng)
    np.testing.assert_array_equal(w[w > 0], 1.0)
    got = lik.subsampled_expectations(tf.constant(Fmu), tf.constant(Fvar), LabelBatch(tf.constant(idx), tf.constant(sgn), tf.constant(w))).numpy()
    exact = lik.variational_expectations(None, tf.constant(Fmu), tf.constant(Fvar), tf.constant(Y)).numpy()
    np.testing.assert_allclose(got, exact, rtol=1e-12, atol=1e-12)
    # the all-positive row has no negative slot; the no-positive row (when present) no positive slot
    r_all = int(np.flatnonzero(Y.sum(axis=1) == K)[0])
    assert np.all(sgn[r_all][w[r_all] > 0] == 1)
    for r in np.flatnonzero(Y.sum(axis=1) == 0):
        assert np.all(sgn[r][w[r] > 0] == -1) and (w[r] > 0).sum() == K


def test_minibatch_sampler_covers_each_point_once_per_epoch(rng):
    X = rng.normal(size=(23, 3))
    Y = (rng.random((23, 6)) < 0.3).astype(float)
    s = MinibatchSampler(X, sp.csr_matrix(Y), batch_size=5, negatives=None, seed=1)
    seen = []
    for xb, yb in s.epoch():
        assert xb.shape[0] == yb.shape[0] <= 5
        # recover the rows from the features (all distinct)
        rows = [int(np.flatnonzero(np.all(np.isclose(X, r), axis=1))[0]) for r in xb.numpy()]
        np.testing.assert_array_equal(yb.numpy(), Y[rows])
        seen += rows
    assert sorted(seen) == list(range(23)) and s.steps_per_epoch == 5
    s2 = MinibatchSampler(X, sp.csr_matrix(Y), batch_size=5, negatives=2, seed=1)
    xb, lb = next(iter(s2.epoch()))
    assert isinstance(lb, LabelBatch) and lb.indices.shape[0] == xb.shape[0]
    # negatives ≥ K means the exact bound: dense labels
    s3 = MinibatchSampler(X, sp.csr_matrix(Y), batch_size=5, negatives=6, seed=1)
    assert s3.negatives is None
