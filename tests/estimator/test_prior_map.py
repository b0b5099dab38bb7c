"""Tests of mlgp.estimator.prior_map and of the ``calibration="prior"`` map of the estimators
(``MultiLabelEstimator._fit_proba_map`` and friends): the fitted θ against scipy's minimiser of the
same penalised objective written here independently, the AIC rule that keeps the label prior, the
identity recovered from calibrated probabilities, the mapped probabilities by hand, the label prior
by hand, the cross-fitting folds, and at estimator level the map fitted on cross-fitted copies,
rankings left alone, saving and loading, files edited out of range, failing copies and budgets."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize
from scipy.special import expit, logit

import mlgp.estimator.prior_map as prior_map
from _clock import fake_clock
from mlgp.baselines import LSPC, MLLSPCCV, FastXML, LabelFrequency, MLkNN
from mlgp.errors import BudgetWarning, DataFormatError
from mlgp.estimator.prior_map import PriorMap, held_out_folds, label_prior

PRIOR_THETA = np.array([0.0, 1.0, 0.0])  # θ_π = (a, c, b) = (0, 1, 0): the label prior itself


# --------------------------------------------------------------------------- #
# An independent statement of the objective
# --------------------------------------------------------------------------- #
def _inputs(P, prior):
    """logit(clip p) and logit π (broadcast), flat."""
    p = np.clip(np.asarray(P, dtype=np.float64), prior_map.EPS, 1.0 - prior_map.EPS)
    return logit(p).ravel(), np.broadcast_to(logit(np.asarray(prior, dtype=np.float64)), p.shape).ravel()


def _nll(theta, z, lp, y) -> float:
    """−Σ [y log σ(s) + (1 − y) log(1 − σ(s))], s = a z + c lπ + b."""
    s = theta[0] * z + theta[1] * lp + theta[2]
    return float(np.sum(y * np.logaddexp(0.0, -s) + (1.0 - y) * np.logaddexp(0.0, s)))


def _scipy_fit(P, Y, prior, ridge: float, blend: bool | None = None):
    """The penalised minimiser by scipy (trust-exact, analytic gradient and Hessian), and its
    unpenalised held-out gain over θ_π. ``blend`` (default: fewer than FULL_MAP_MIN_ROWS rows):
    only ``a`` free, θ = (a, 1 − a, 0), the penalty still ``ridge / 2 · ‖θ − θ_π‖²``."""
    blend = np.shape(P)[0] < prior_map.FULL_MAP_MIN_ROWS if blend is None else blend
    z, lp = _inputs(P, prior)
    y = (np.asarray(Y) != 0).astype(np.float64).ravel()
    F = np.stack([z, lp, np.ones_like(z)], axis=1)
    basis = np.array([[1.0], [-1.0], [0.0]]) if blend else np.eye(3)  # θ = θ_π + basis φ
    G = F @ basis

    def fun(phi):
        return _nll(PRIOR_THETA + basis @ phi, z, lp, y) + 0.5 * ridge * np.sum((basis @ phi) ** 2)

    def jac(phi):
        return G.T @ (expit(F @ (PRIOR_THETA + basis @ phi)) - y) + ridge * basis.T @ (basis @ phi)

    def hess(phi):
        q = expit(F @ (PRIOR_THETA + basis @ phi))
        return (G * (q * (1 - q))[:, None]).T @ G + ridge * basis.T @ basis

    res = minimize(fun, np.zeros(basis.shape[1]), jac=jac, hess=hess, method="trust-exact", options={"gtol": 1e-10})
    theta = PRIOR_THETA + basis @ res.x
    return theta, _nll(PRIOR_THETA, z, lp, y) - _nll(theta, z, lp, y)


def _problem(seed: int, N: int = 300, K: int = 6, *, slope: float = 0.8, shift: float = 0.3, noise: float = 1.0):
    """Held-out probabilities P, labels Y drawn from σ(slope·logit P + shift·logit π − 0.2), and the
    label prior π (K,) in (0, 1)."""
    rng = np.random.default_rng(seed)
    prior = rng.uniform(0.05, 0.6, size=K)
    P = expit(logit(prior) + noise * rng.standard_normal((N, K)))
    Y = (rng.random((N, K)) < expit(slope * logit(P) + shift * logit(prior) - 0.2)).astype(np.int64)
    return P, Y, prior


# --------------------------------------------------------------------------- #
# PriorMap.fit
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("N", [300, 120])
@pytest.mark.parametrize("ridge", [1.0, 20.0])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fit_is_the_penalised_minimiser(seed, ridge, N) -> None:
    P, Y, prior = _problem(seed, N=N)
    expected, gain = _scipy_fit(P, Y, prior, ridge)
    assert gain > prior_map.MIN_GAIN  # the map replaces the prior here
    fitted = PriorMap.fit(P, Y, prior, prior, ridge=ridge)
    np.testing.assert_allclose(fitted.theta, expected, rtol=0, atol=1e-5)
    assert not fitted.keeps_prior
    assert fitted.held_out_gain == pytest.approx(gain, rel=1e-6)
    np.testing.assert_array_equal(fitted.prior, prior)


def test_fit_with_sparse_labels_and_a_per_row_prior_is_the_penalised_minimiser() -> None:
    """Held-out rows of several copies: each row its own prior (N, K); CSR labels."""
    P, Y, prior = _problem(3, N=250, K=5)
    held_prior = np.clip(prior * np.random.default_rng(9).uniform(0.7, 1.3, size=P.shape), 0.01, 0.99)
    expected, gain = _scipy_fit(P, Y, held_prior, 1.0)
    assert gain > prior_map.MIN_GAIN
    fitted = PriorMap.fit(P, sp.csr_matrix(Y), held_prior, prior)
    np.testing.assert_allclose(fitted.theta, expected, rtol=0, atol=1e-5)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fewer_held_out_rows_than_full_map_min_rows_fit_the_blend(seed) -> None:
    """Below FULL_MAP_MIN_ROWS held-out rows only a is free: θ = (a, 1 − a, 0), the 1-D penalised
    minimiser; from FULL_MAP_MIN_ROWS rows on all three numbers are."""
    n = prior_map.FULL_MAP_MIN_ROWS
    P, Y, prior = _problem(seed, N=n, K=6)
    blend = PriorMap.fit(P[:n - 1], Y[:n - 1], prior, prior)
    expected, gain = _scipy_fit(P[:n - 1], Y[:n - 1], prior, 1.0, blend=True)
    assert gain > prior_map.MIN_GAIN and not blend.keeps_prior
    assert blend.theta[2] == 0.0 and blend.theta[0] + blend.theta[1] == pytest.approx(1.0, abs=1e-14)
    np.testing.assert_allclose(blend.theta, expected, rtol=0, atol=1e-5)
    assert blend.held_out_gain == pytest.approx(gain, rel=1e-6)
    full = PriorMap.fit(P, Y, prior, prior)
    expected, gain = _scipy_fit(P, Y, prior, 1.0, blend=False)
    assert full.theta[2] != 0.0
    np.testing.assert_allclose(full.theta, expected, rtol=0, atol=1e-5)
    assert full.held_out_gain == pytest.approx(gain, rel=1e-6)


@pytest.mark.parametrize("slope, shift, noise", [(0.8, 0.3, 1.0), (-1.0, 0.0, 1.0), (3.0, -1.0, 0.5), (0.0, 1.0, 2.0),
                                                 (0.1, 1.0, 0.3)],
                         ids=["miscalibrated", "reversed", "overconfident-model", "prior-only", "nearly-prior"])
@pytest.mark.parametrize("N", [120, 250])
def test_the_held_out_nll_of_the_map_is_at_most_the_priors(slope, shift, noise, N) -> None:
    for seed in range(4):
        P, Y, prior = _problem(seed, N=N, K=4, slope=slope, shift=shift, noise=noise)
        fitted = PriorMap.fit(P, Y, prior, prior)
        mapped = fitted.transform(P)
        z, lp = _inputs(P, prior)
        y = Y.ravel().astype(np.float64)
        nll_map = float(-np.sum(y * np.log(mapped.ravel()) + (1 - y) * np.log1p(-mapped.ravel())))
        nll_prior = _nll(PRIOR_THETA, z, lp, y)
        assert nll_map <= nll_prior + 1e-9 * abs(nll_prior)
        if fitted.keeps_prior:
            assert fitted.held_out_gain == 0.0
        else:
            assert nll_prior - nll_map == pytest.approx(fitted.held_out_gain, rel=1e-6)
            assert fitted.held_out_gain > prior_map.MIN_GAIN


def test_the_prior_is_kept_exactly_when_the_probabilities_carry_no_information() -> None:
    """p uniform noise, labels drawn from the prior alone: wherever the gain of the penalised minimiser
    (by scipy) is at most MIN_GAIN nats, or its rows' paired z at most MIN_Z, θ is exactly θ_π; and it
    is so on most draws."""
    kept = 0
    for seed in range(10):
        rng = np.random.default_rng(100 + seed)
        prior = rng.uniform(0.05, 0.6, size=5)
        P = rng.random((200, 5))
        Y = (rng.random((200, 5)) < prior).astype(np.int64)
        expected, gain = _scipy_fit(P, Y, prior, 1.0)
        fitted = PriorMap.fit(P, Y, prior, prior)
        if gain <= prior_map.MIN_GAIN or _row_z(P, Y, prior, expected) <= prior_map.MIN_Z:
            kept += 1
            assert fitted.keeps_prior and fitted.held_out_gain == 0.0
            np.testing.assert_array_equal(fitted.theta, PRIOR_THETA)
            np.testing.assert_allclose(fitted.transform(P), np.broadcast_to(prior, P.shape), rtol=1e-12)
        else:
            np.testing.assert_allclose(fitted.theta, expected, rtol=0, atol=1e-5)
    assert kept >= 7


def _row_z(P, Y, prior, theta) -> float:
    """The paired z of the rows' NLL gains of ``theta`` over θ_π, computed here by hand."""
    z, lp = logit(np.clip(P, 1e-9, 1 - 1e-9)), logit(np.broadcast_to(prior, P.shape))

    def row_nll(t):
        p = expit(t[0] * z + t[1] * lp + t[2])
        return -(Y * np.log(p) + (1 - Y) * np.log1p(-p)).sum(axis=1)

    d = row_nll(np.array([0.0, 1.0, 0.0])) - row_nll(np.asarray(theta))
    return d.mean() / (d.std(ddof=1) / np.sqrt(d.size))


def test_a_gain_carried_by_a_few_rows_is_not_significant_and_keeps_the_prior() -> None:
    """400 rows whose probabilities carry nothing, and 4 rows of 50 labels where they are right: the
    total gain is large, but it is those few rows' (paired z under MIN_Z): the prior is kept. The
    same gain spread over every row is kept."""
    rng = np.random.default_rng(5)
    prior = np.full(50, 0.3)
    Y = (rng.random((404, 50)) < 0.3).astype(np.int64)
    P = rng.random((404, 50))
    P[:4] = np.where(Y[:4] == 1, 0.99, 0.01)  # four rows predicted right and sure
    few = PriorMap.fit(P, Y, prior, prior)
    full_gain = _row_z(P, Y, prior, _scipy_fit(P, Y, prior, 1.0)[0])
    assert full_gain <= prior_map.MIN_Z and few.keeps_prior
    spread = np.where(Y == 1, 0.6, 0.2)  # every row a little better than the prior
    assert not PriorMap.fit(spread, Y, prior, prior).keeps_prior


def test_a_gain_just_under_the_threshold_keeps_the_prior(monkeypatch) -> None:
    """The same data as a kept map, MIN_GAIN raised just above its gain: θ_π."""
    P, Y, prior = _problem(0)
    gain = PriorMap.fit(P, Y, prior, prior).held_out_gain
    monkeypatch.setattr(prior_map, "MIN_GAIN", gain + 1e-6)
    fitted = PriorMap.fit(P, Y, prior, prior)
    assert fitted.keeps_prior and fitted.held_out_gain == 0.0
    monkeypatch.setattr(prior_map, "MIN_GAIN", gain - 1e-6)
    assert not PriorMap.fit(P, Y, prior, prior).keeps_prior


def test_calibrated_probabilities_give_the_identity() -> None:
    """Labels drawn from p itself, 200 000 entries, priors that differ between labels: θ ≈ (1, 0, 0)."""
    rng = np.random.default_rng(5)
    N, K = 4000, 50
    prior = rng.uniform(0.02, 0.5, size=K)
    P = expit(logit(prior) + 1.5 * rng.standard_normal((N, K)))
    Y = (rng.random((N, K)) < P).astype(np.int8)
    fitted = PriorMap.fit(P, Y, prior, prior)
    np.testing.assert_allclose(fitted.theta, [1.0, 0.0, 0.0], atol=0.04)
    np.testing.assert_allclose(fitted.transform(P), P, rtol=0, atol=0.05)


def test_transform_by_hand() -> None:
    theta, prior = np.array([1.7, -0.4, 0.35]), np.array([0.1, 0.5, 0.02, 0.9])
    P = np.array([[0.0, 1.0, 0.3, 0.5], [1e-12, 1 - 1e-13, 0.99, 0.01], [0.2, 0.2, 0.2, 0.2]])
    m = PriorMap(theta, prior)
    p = np.clip(P, 1e-9, 1 - 1e-9)
    by_hand = 1.0 / (1.0 + np.exp(-(1.7 * np.log(p / (1 - p)) - 0.4 * np.log(prior / (1 - prior)) + 0.35)))
    np.testing.assert_allclose(m.transform(P), by_hand, rtol=1e-12, atol=0)
    np.testing.assert_allclose(m.transform(sp.csr_matrix(P)), by_hand, rtol=1e-12, atol=0)
    assert m.transform(P).dtype == np.float64 and m.transform(P).shape == P.shape
    identity = PriorMap([1.0, 0.0, 0.0], prior).transform(P[2:])
    np.testing.assert_allclose(identity, P[2:], rtol=1e-12)
    np.testing.assert_allclose(PriorMap(PRIOR_THETA, prior).transform(P), np.broadcast_to(prior, P.shape), rtol=1e-12)


def test_a_per_row_prior_equal_on_every_row_is_the_broadcast_prior() -> None:
    P, Y, prior = _problem(4, N=150, K=5)
    one = PriorMap.fit(P, Y, prior, prior)
    per_row = PriorMap.fit(P, Y, np.tile(prior, (P.shape[0], 1)), prior)
    assert not one.keeps_prior
    np.testing.assert_array_equal(per_row.theta, one.theta)
    assert per_row.held_out_gain == one.held_out_gain


def test_subsampling_above_max_entries_is_seeded(monkeypatch) -> None:
    P, Y, prior = _problem(6, N=400, K=5, slope=1.5, shift=0.0, noise=1.5)
    full = PriorMap.fit(P, Y, prior, prior, seed=0)
    monkeypatch.setattr(prior_map, "MAX_ENTRIES", 500)  # 100 of the 400 rows
    a, b = PriorMap.fit(P, Y, prior, prior, seed=3), PriorMap.fit(P, Y, prior, prior, seed=3)
    other = PriorMap.fit(P, Y, prior, prior, seed=4)
    assert not a.keeps_prior and not other.keeps_prior
    np.testing.assert_array_equal(a.theta, b.theta)
    assert a.held_out_gain == b.held_out_gain
    assert not np.allclose(a.theta, full.theta) and not np.allclose(a.theta, other.theta)
    # the per-row prior is subsampled with its rows
    rows_prior = PriorMap.fit(P, Y, np.tile(prior, (P.shape[0], 1)), prior, seed=3)
    np.testing.assert_array_equal(rows_prior.theta, a.theta)
    # the subsample is 100 rows of the 400: the minimiser of one of its subsets of that size, with
    # the full map, which the 400 rows held out (not the 100 subsampled) choose
    rows = np.sort(np.random.default_rng(3).choice(400, 100, replace=False))
    expected, _ = _scipy_fit(P[rows], Y[rows], prior, 1.0, blend=False)
    np.testing.assert_allclose(a.theta, expected, rtol=0, atol=1e-5)


def test_probabilities_zero_and_one_give_finite_results() -> None:
    rng = np.random.default_rng(7)
    prior = np.array([0.1, 0.3, 0.5])
    Y = (rng.random((100, 3)) < 0.3).astype(np.int64)
    P = np.where(rng.random((100, 3)) < 0.5, Y, 1 - Y).astype(np.float64)  # only 0 and 1, half of them wrong
    P[:50] = Y[:50]  # a first half exactly right
    fitted = PriorMap.fit(P, Y, prior, prior)
    assert np.all(np.isfinite(fitted.theta)) and np.isfinite(fitted.held_out_gain)
    out = fitted.transform(np.array([[0.0, 1.0, 0.5], [1.0, 0.0, 0.0]]))
    assert np.all(np.isfinite(out)) and np.all((out >= 0) & (out <= 1))
    steep = PriorMap([50.0, 0.0, 0.0], prior).transform(np.array([[0.0, 1.0, 0.5]]))
    assert np.all(np.isfinite(steep)) and not np.any(np.isnan(steep))


# --------------------------------------------------------------------------- #
# label_prior, held_out_folds
# --------------------------------------------------------------------------- #
def test_label_prior_by_hand() -> None:
    Y = np.array([[1, 0, 0, 1], [1, 0, 1, 1], [0, 0, 0, 1], [1, 0, 0, 1], [1, 0, 0, 1]])
    expected = np.array([4.5, 0.5, 1.5, 5.5]) / 6.0
    for labels in (Y, sp.csr_matrix(Y), Y.astype(np.float32), sp.csr_matrix(Y.astype(np.float64)), Y.astype(bool)):
        got = label_prior(labels)
        assert got.dtype == np.float64 and got.shape == (4,)
        np.testing.assert_allclose(got, expected, rtol=1e-15)
    assert 0.0 < label_prior(Y)[1] < 0.1 and np.isfinite(label_prior(Y)).all()
    assert label_prior(Y)[3] < 1.0
    X = np.zeros((5, 2))
    np.testing.assert_allclose(LabelFrequency().fit(X, Y).predict_proba(X)[0], expected, rtol=1e-14)


def test_label_prior_dense_and_csr_agree() -> None:
    rng = np.random.default_rng(1)
    Y = (rng.random((300, 40)) < 0.05).astype(np.int64)
    Y[:, 7] = 0
    np.testing.assert_array_equal(label_prior(sp.csr_matrix(Y)), label_prior(Y))
    assert label_prior(Y)[7] == pytest.approx(0.5 / 301)


def _check_partition(folds, n: int) -> None:
    assert len(folds) == prior_map.CROSS_FIT_FOLDS
    held_all = np.concatenate([held for _, held in folds])
    np.testing.assert_array_equal(np.sort(held_all), np.arange(n))  # every row held out exactly once
    sizes = [held.size for _, held in folds]
    assert max(sizes) - min(sizes) <= 1
    for kept, held in folds:
        assert np.intersect1d(kept, held).size == 0
        np.testing.assert_array_equal(np.union1d(kept, held), np.arange(n))
        assert kept.size + held.size == n
        assert np.all(np.diff(kept) > 0) and np.all(np.diff(held) > 0)  # sorted


def test_held_out_folds_below_min_rows_are_none() -> None:
    assert held_out_folds(0) == [] and held_out_folds(prior_map.MIN_ROWS - 1) == []
    assert len(held_out_folds(prior_map.MIN_ROWS)) == prior_map.CROSS_FIT_FOLDS


@pytest.mark.parametrize("n", [20, 23, 97, 2000])
def test_held_out_folds_partition_the_rows(n) -> None:
    _check_partition(held_out_folds(n, seed=1), n)


def test_held_out_folds_above_the_cross_fitting_size_are_one_split(monkeypatch) -> None:
    monkeypatch.setattr(prior_map, "CROSS_FIT_MAX_ROWS", 50)
    _check_partition(held_out_folds(50, seed=2), 50)
    for n in (51, 77, 203):
        (kept, held), = held_out_folds(n, seed=2)
        assert held.size == round(0.2 * n)
        assert np.intersect1d(kept, held).size == 0
        np.testing.assert_array_equal(np.union1d(kept, held), np.arange(n))
        assert np.all(np.diff(kept) > 0) and np.all(np.diff(held) > 0)


def test_held_out_folds_are_seeded(monkeypatch) -> None:
    for n in (40, 500):
        a, b, c = held_out_folds(n, seed=5), held_out_folds(n, seed=5), held_out_folds(n, seed=6)
        for (ka, ha), (kb, hb) in zip(a, b):
            np.testing.assert_array_equal(ka, kb)
            np.testing.assert_array_equal(ha, hb)
        assert any(not np.array_equal(ha, hc) for (_, ha), (_, hc) in zip(a, c))
    monkeypatch.setattr(prior_map, "CROSS_FIT_MAX_ROWS", 50)
    np.testing.assert_array_equal(held_out_folds(120, seed=5)[0][1], held_out_folds(120, seed=5)[0][1])
    assert not np.array_equal(held_out_folds(120, seed=5)[0][1], held_out_folds(120, seed=6)[0][1])


# --------------------------------------------------------------------------- #
# Estimators
# --------------------------------------------------------------------------- #
def _informative(seed: int = 0, N: int = 80, D: int = 6, K: int = 4):
    """Non-negative features and labels that depend on them."""
    rng = np.random.default_rng(seed)
    X = rng.random((N, D))
    Y = (X[:, :K] + 0.4 * rng.random((N, K)) > 0.75).astype(np.int64)
    return X, Y


def _uninformative(seed: int = 3, N: int = 120, D: int = 5, K: int = 4):
    """Random features, labels drawn independently of them (frequencies differing between labels)."""
    rng = np.random.default_rng(seed)
    return rng.random((N, D)), (rng.random((N, K)) < np.array([0.1, 0.25, 0.4, 0.6])).astype(np.int64)


FAMILIES = {
    "MLkNN": lambda **kw: MLkNN(n_neighbors=5, **kw),
    "LSPC": lambda **kw: LSPC(n_basis=15, random_state=0, **kw),
    "FastXML": lambda **kw: FastXML(n_estimators=3, max_leaf=6, n_jobs=1, random_state=0, **kw),
}


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_the_map_changes_probabilities_only(name) -> None:
    X, Y = _informative()
    X_test = _informative(seed=1, N=15)[0]
    mapped, raw = FAMILIES[name]().fit(X, Y), FAMILIES[name](calibration=None).fit(X, Y)
    assert mapped.calibration == "prior" and raw.proba_map_ is None
    assert isinstance(mapped.proba_map_, PriorMap) and not mapped.proba_map_.keeps_prior
    np.testing.assert_array_equal(mapped.decision_function(X_test), raw.decision_function(X_test))
    ta, tb = mapped.predict_topk(X_test, 2), raw.predict_topk(X_test, 2)
    np.testing.assert_array_equal(ta.indices, tb.indices)
    np.testing.assert_array_equal(ta.scores, tb.scores)
    expected = mapped.proba_map_.transform(raw.predict_proba(X_test))
    for batch_size in (4, 1000):
        np.testing.assert_array_equal(mapped.predict_proba(X_test, batch_size=batch_size), expected)
    blocks = np.concatenate([P for _, P in mapped.predict_proba_blocks(X_test, batch_size=4)])
    np.testing.assert_array_equal(blocks, expected)
    np.testing.assert_array_equal(mapped.proba_map_.prior, label_prior(Y))


@pytest.mark.parametrize("name", ["MLkNN", "LSPC"])
def test_the_map_is_fitted_on_cross_fitted_copies(name) -> None:
    """The same map again, by hand: copies with calibration=None fitted on each fold's kept rows,
    scoring its held rows, against the label prior of the rows they were fitted on."""
    X, Y = _informative(seed=2, N=70)
    est = FAMILIES[name]().fit(X, Y)
    seed = getattr(est, "random_state", None) or 0
    P, Y_held, priors = [], [], []
    for kept, held in held_out_folds(X.shape[0], seed):
        copy = FAMILIES[name](calibration=None).fit(X[kept], Y[kept])
        P.append(copy.predict_proba(X[held]))
        Y_held.append(Y[held])
        priors.append(np.tile((Y[kept].sum(axis=0) + 0.5) / (kept.size + 1.0), (held.size, 1)))
    P, Y_held, priors = np.concatenate(P), np.concatenate(Y_held), np.concatenate(priors)
    expected, gain = _scipy_fit(P, Y_held, priors, 1.0)
    assert gain > prior_map.MIN_GAIN
    np.testing.assert_allclose(est.proba_map_.theta, expected, rtol=0, atol=1e-5)
    assert est.proba_map_.held_out_gain == pytest.approx(gain, rel=1e-6)


@pytest.mark.parametrize("seed", [0, 3])
@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_uninformative_features_give_the_label_prior(name, seed) -> None:
    X, Y = _uninformative(seed)
    est = FAMILIES[name]().fit(X, Y)
    assert est.proba_map_.keeps_prior
    X_test = np.random.default_rng(8).random((6, X.shape[1]))
    frequency = LabelFrequency().fit(X, Y).predict_proba(X_test)
    np.testing.assert_allclose(est.predict_proba(X_test), frequency, rtol=1e-12, atol=0)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_no_map_without_calibration_or_with_few_rows(name) -> None:
    X, Y = _informative(N=60)
    assert FAMILIES[name](calibration=None).fit(X, Y).proba_map_ is None
    few = FAMILIES[name]().fit(X[:prior_map.MIN_ROWS - 1], Y[:prior_map.MIN_ROWS - 1])
    assert few.proba_map_ is None
    raw = FAMILIES[name](calibration=None).fit(X[:prior_map.MIN_ROWS - 1], Y[:prior_map.MIN_ROWS - 1])
    np.testing.assert_array_equal(few.predict_proba(X), raw.predict_proba(X))
    assert FAMILIES[name]().fit(X[:prior_map.MIN_ROWS], Y[:prior_map.MIN_ROWS]).proba_map_ is not None


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_save_and_load_keep_the_map(name, tmp_path) -> None:
    X, Y = _informative()
    est = FAMILIES[name]().fit(X, Y)
    loaded = type(est).load(est.save(tmp_path / "model.npz"))
    np.testing.assert_array_equal(loaded.proba_map_.theta, est.proba_map_.theta)
    np.testing.assert_array_equal(loaded.proba_map_.prior, est.proba_map_.prior)
    assert loaded.proba_map_.held_out_gain == est.proba_map_.held_out_gain
    np.testing.assert_array_equal(loaded.predict_proba(X), est.predict_proba(X))
    raw = FAMILIES[name](calibration=None).fit(X, Y)
    back = type(raw).load(raw.save(tmp_path / "raw.npz"))
    assert back.proba_map_ is None
    np.testing.assert_array_equal(back.predict_proba(X), raw.predict_proba(X))


def _archive(path) -> tuple[dict, dict]:
    with np.load(path, allow_pickle=False) as f:
        arrays = {k: f[k] for k in f.files}
    return json.loads(str(arrays.pop("__header__"))), arrays


def _write(path, header, arrays) -> None:
    np.savez(path, __header__=np.array(json.dumps(header)), **arrays)


@pytest.mark.parametrize("edit, message", [
    (lambda h, a: a["proba_map_.prior"].__setitem__(0, 0.0), "proba_map_.prior"),
    (lambda h, a: a["proba_map_.prior"].__setitem__(1, 1.0), "proba_map_.prior"),
    (lambda h, a: a["proba_map_.prior"].__setitem__(2, 1.5), "proba_map_.prior"),
    (lambda h, a: a["proba_map_.prior"].__setitem__(0, -0.1), "proba_map_.prior"),
    (lambda h, a: a.update({"proba_map_.prior": a["proba_map_.prior"][:3]}), "proba_map_.prior"),
    (lambda h, a: a.pop("proba_map_.prior"), "proba_map_.prior"),
    (lambda h, a: h["fitted"]["proba_map_"].update(theta=[1.0, 0.5]), "proba_map_.theta"),
    (lambda h, a: h["fitted"]["proba_map_"].update(theta=[1.0, 0.5, 0.0, 0.1]), "proba_map_.theta"),
    (lambda h, a: h["fitted"]["proba_map_"].update(theta=[1.0, "x", 0.0]), "proba_map_.theta"),
    (lambda h, a: h["fitted"]["proba_map_"].update(theta=[1.0, True, 0.0]), "proba_map_.theta"),
    (lambda h, a: h["fitted"]["proba_map_"].update(theta=3.0), "proba_map_.theta|theta"),
], ids=["prior 0", "prior 1", "prior above 1", "prior negative", "prior short", "prior missing", "theta of 2",
        "theta of 4", "theta string", "theta bool", "theta number"])
@pytest.mark.parametrize("name", ["MLkNN", "LSPC"])
def test_an_edited_map_is_refused(name, edit, message, tmp_path) -> None:
    X, Y = _informative()
    est = FAMILIES[name]().fit(X, Y)
    header, arrays = _archive(est.save(tmp_path / "model.npz"))
    assert len(header["fitted"]["proba_map_"]["theta"]) == 3
    edit(header, arrays)
    path = tmp_path / "edited.npz"
    _write(path, header, arrays)
    with pytest.raises(DataFormatError, match=message) as info:
        type(est).load(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_fit_leaves_the_callers_data_alone(name, sparse) -> None:
    X, Y = _informative()
    X, Y = (sp.csr_matrix(X), sp.csr_matrix(Y)) if sparse else (X, Y)
    before = [m.copy() for m in (X, Y)]
    FAMILIES[name]().fit(X, Y)
    for now, then in zip((X, Y), before):
        if sparse:
            for part in ("data", "indices", "indptr"):
                np.testing.assert_array_equal(getattr(now, part), getattr(then, part))
        else:
            np.testing.assert_array_equal(now, then)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_labels_never_seen_give_finite_probabilities(name) -> None:
    X, Y = _informative(N=60, K=5)
    Y[:, 1] = 0  # never seen
    Y[:, 3] = 1  # always seen
    est = FAMILIES[name]().fit(X, Y)
    assert est.proba_map_ is not None
    P = est.predict_proba(_informative(seed=4, N=10)[0])
    assert np.all(np.isfinite(P)) and np.all((P >= 0) & (P <= 1))
    assert np.all(P[:, 1] < 0.5) and np.all(P[:, 3] > 0.5)
    assert np.isfinite(est.proba_map_.prior).all() and 0 < est.proba_map_.prior[1] < est.proba_map_.prior[3] < 1


def test_lspc_on_classes_has_no_map_and_rows_sum_to_one() -> None:
    X, Y = _informative(N=60)
    y = np.array(["a", "b", "c", "d"])[Y.argmax(axis=1)]
    est = LSPC(n_basis=15, random_state=0).fit(X, y)
    assert est.calibration == "prior" and est.proba_map_ is None
    P = est.predict_proba(X)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(P, LSPC(n_basis=15, random_state=0, calibration=None).fit(X, y).predict_proba(X))


def test_the_search_maps_the_refit_only(tmp_path) -> None:
    X, Y = _informative(N=60)
    kw = dict(alphas=(0.1, 1.0), couplings=(0.0, 0.1), n_basis=15, cv=2, random_state=0)
    search, plain = MLLSPCCV(**kw).fit(X, Y), MLLSPCCV(**kw, calibration=None).fit(X, Y)
    assert search.best_estimator_.calibration == "prior"
    assert isinstance(search.best_estimator_.proba_map_, PriorMap)
    assert plain.best_estimator_.proba_map_ is None
    np.testing.assert_array_equal(search.predict_proba(X), search.best_estimator_.predict_proba(X))
    # the candidates are scored without the map: the same search, the same choice
    np.testing.assert_array_equal(search.cv_results_["mean_test_score"], plain.cv_results_["mean_test_score"])
    assert search.best_params_ == plain.best_params_
    np.testing.assert_array_equal(search.predict_proba(X),
                                  search.best_estimator_.proba_map_.transform(plain.predict_proba(X)))
    loaded = MLLSPCCV.load(search.save(tmp_path / "search.npz"))
    np.testing.assert_array_equal(loaded.best_estimator_.proba_map_.theta, search.best_estimator_.proba_map_.theta)
    np.testing.assert_array_equal(loaded.predict_proba(X), search.predict_proba(X))


def test_a_copy_that_fails_leaves_the_probabilities_unmapped() -> None:
    """25 rows: MLkNN with 20 neighbours fits them (21 needed), its copies on 20 kept rows cannot."""
    X, Y = _informative(N=25)
    with pytest.warns(UserWarning, match="calibration") as record:
        est = MLkNN(n_neighbors=20).fit(X, Y)
    assert any("calibration" in str(w.message) and "MLkNN" in str(w.message) for w in record)
    assert est.proba_map_ is None
    raw = MLkNN(n_neighbors=20, calibration=None).fit(X, Y)
    np.testing.assert_array_equal(est.predict_proba(X), raw.predict_proba(X))
    np.testing.assert_array_equal(est.decision_function(X), raw.decision_function(X))


@pytest.mark.parametrize("max_seconds, copies_get", [(10.0, 10.0 / 4 / 5), (None, None)])
def test_a_budget_gives_the_copies_a_quarter_shared_among_the_folds(monkeypatch, max_seconds, copies_get) -> None:
    seen = []
    real_fit = FastXML.fit

    def recording_fit(self, *args, **kwargs):
        seen.append((self.calibration, self.max_seconds))
        return real_fit(self, *args, **kwargs)

    monkeypatch.setattr(FastXML, "fit", recording_fit)
    X, Y = _informative(N=60)
    clock = fake_clock(monkeypatch, tick=0.01)  # the deadline and each look move it by 0.01 s
    est = FastXML(n_estimators=2, max_leaf=6, n_jobs=1, random_state=0, max_seconds=max_seconds).fit(X, Y)
    assert seen[0] == ("prior", max_seconds)
    copies = seen[1:]
    assert len(copies) == prior_map.CROSS_FIT_FOLDS
    for calibration, seconds in copies:
        assert calibration is None
        if copies_get is None:
            assert seconds is None
        else:  # an equal part of what the shared quarter has left
            assert 0 < seconds <= max_seconds / 4
    if copies_get is not None:
        assert copies[0][1] == pytest.approx(copies_get, abs=0.01)
    assert est.max_seconds == max_seconds and est.proba_map_ is not None
    assert clock.readings > 0


def test_the_copies_share_one_deadline_and_stop_at_it(monkeypatch) -> None:
    """With one second per look, a 20 s budget leaves the copies 5 s from the deadline's reading:
    each copy takes at least 2 readings, so fewer than the 5 folds are fitted; the map comes from
    those, and the model still fits on every row. A 3.5 s budget's quarter is gone by the next
    reading: no copy, a BudgetWarning, no map."""
    seen = []
    real_fit = FastXML.fit

    def recording_fit(self, *args, **kwargs):
        seen.append(self.calibration)
        return real_fit(self, *args, **kwargs)

    monkeypatch.setattr(FastXML, "fit", recording_fit)
    X, Y = _informative(N=60)
    fake_clock(monkeypatch)
    est = FastXML(n_estimators=10, max_leaf=6, n_jobs=1, random_state=0, max_seconds=20.0).fit(X, Y)
    assert seen[0] == "prior" and 1 <= len(seen) - 1 < prior_map.CROSS_FIT_FOLDS and set(seen[1:]) == {None}
    assert est.proba_map_ is not None and est.forest_.n_trees >= 1
    seen.clear()
    fake_clock(monkeypatch)
    with pytest.warns(BudgetWarning, match=r"^FastXML: calibration='prior' left out, its probabilities are its own: "
                                           r"a quarter of max_seconds=3\.5 was spent before a copy was fitted"):
        est = FastXML(n_estimators=10, max_leaf=6, n_jobs=1, random_state=0, max_seconds=3.5).fit(X, Y)
    assert seen == ["prior"] and est.proba_map_ is None and est.forest_.n_trees >= 1


def test_the_paired_z_of_row_gains() -> None:
    from mlgp.estimator.prior_map import _z

    assert _z(np.array([3.0])) == -np.inf  # one row: no spread to judge
    assert _z(np.array([1.0, 1.0])) == np.inf and _z(np.array([0.0, 0.0])) == -np.inf
    d = np.array([1.0, 2.0, 3.0, 6.0])
    assert _z(d) == pytest.approx(d.mean() / (d.std(ddof=1) / 2.0), rel=1e-12)
