"""Probability metrics: LPD, NLL per entry, Brier, ECE/MCE, reliability curves and ECE@k against
scikit-learn's log_loss, brier_score_loss and calibration_curve on the flattened arrays, and a dense
reference for the top-k, whatever the block size; bad input refused before any result."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss, log_loss

from mlgp.errors import ArgumentError, MLGPError, ShapeError
from mlgp.metrics import (ProbabilityMetrics, brier_score, calibration_error, evaluate_proba, log_predictive_density,
                          reliability_curve)
from mlgp.metrics._binning import EqualMassBins
from mlgp.metrics._probabilistic import EPS

#: float64 sums in another order (blocks) than scikit-learn's
TOL = dict(rtol=1e-12, atol=1e-15)


def _problem(rng, N=200, K=30, power=3.0):
    P = rng.random((N, K)) ** power
    Y = (rng.random((N, K)) < P).astype(np.int64)
    return Y, P


@pytest.mark.parametrize("batch_size", [1, 7, 64, 1000])
def test_lpd_nll_and_brier_equal_scikit_learn(rng, batch_size) -> None:
    Y, P = _problem(rng)
    P[0, 0], Y[0, 0] = 0.0, 1   # clipped to EPS: 36 nats, as log_loss
    P[1, 1], Y[1, 1] = 1.0, 0
    P[2, 2], Y[2, 2] = 1.0, 1
    r = evaluate_proba(sp.csr_matrix(Y), P, batch_size=batch_size)
    expected = log_loss(Y.ravel(), P.ravel(), labels=[0, 1])
    np.testing.assert_allclose(r.nll_per_entry, expected, **TOL)
    np.testing.assert_allclose(r.log_predictive_density, -expected * Y.shape[1], **TOL)
    np.testing.assert_allclose(r.brier, brier_score_loss(Y.ravel(), P.ravel()), **TOL)
    np.testing.assert_allclose(log_predictive_density(Y, P, per="entry"), -expected, **TOL)
    np.testing.assert_allclose(brier_score(Y, P), r.brier, **TOL)


def test_lpd_counts_every_label_of_a_point(rng) -> None:
    """Per point: the sum over all K labels (a dense reference), not the mean."""
    Y, P = _problem(rng, N=5, K=4)
    q = np.clip(P, EPS, 1 - EPS)
    dense = np.where(Y == 1, np.log(q), np.log1p(-q)).sum(axis=1).mean()
    np.testing.assert_allclose(log_predictive_density(Y, P), dense, **TOL)
    with pytest.raises(ArgumentError, match="per must be"):
        log_predictive_density(Y, P, per="row")


@pytest.mark.parametrize("n_bins", [1, 5, 15])
@pytest.mark.parametrize("batch_size", [3, 1000])
def test_reliability_curve_equals_calibration_curve(rng, n_bins, batch_size) -> None:
    Y, P = _problem(rng, N=120, K=9)
    P[:10] = 0.25  # many ties: coinciding quantiles, empty bins dropped
    freq, mean_p = calibration_curve(Y.ravel(), P.ravel(), n_bins=n_bins, strategy="quantile")
    r = evaluate_proba(Y, P, n_bins=n_bins, batch_size=batch_size)
    curve = reliability_curve(Y, P, n_bins=n_bins)
    assert curve.attrs["exact"] and r.reliability.exact
    np.testing.assert_allclose(curve["frequency"], freq, **TOL)
    np.testing.assert_allclose(curve["mean_probability"], mean_p, **TOL)
    np.testing.assert_allclose(r.reliability.frequency, freq, **TOL)
    # ECE and MCE from the same bins, by their definitions
    counts = curve["count"].to_numpy()
    assert counts.sum() == Y.size
    gap = np.abs(freq - mean_p)
    np.testing.assert_allclose(r.ece, np.dot(counts / counts.sum(), gap), **TOL)
    np.testing.assert_allclose(r.mce, gap.max(), **TOL)
    assert calibration_error(Y, P, n_bins=n_bins) == pytest.approx({"ece": r.ece, "mce": r.mce}, rel=1e-12)


def test_ece_at_k_is_ece_of_each_points_top_k(rng) -> None:
    """ECE@k over the N·k most probable entries (ties to the lower label), by a dense reference."""
    Y, P = _problem(rng, N=150, K=12)
    P[5] = 0.5  # a row of ties: its top 3 are labels 0, 1, 2
    order = np.argsort(-P, axis=1, kind="stable")
    for k in (1, 3):
        idx = order[:, :k]
        p = np.take_along_axis(P, idx, axis=1).ravel()
        y = np.take_along_axis(Y, idx, axis=1).ravel()
        freq, mean_p = calibration_curve(y, p, n_bins=10, strategy="quantile")
        counts = np.bincount(np.searchsorted(np.percentile(p, np.linspace(0, 1, 11) * 100)[1:-1], p),
                             minlength=10)
        counts = counts[counts > 0]
        ece = np.dot(counts / counts.sum(), np.abs(freq - mean_p))
        r = evaluate_proba(sp.csr_matrix(Y), P, n_bins=10, ks=(k,), batch_size=17)
        np.testing.assert_allclose(r.ece_at_k[k], ece, **TOL)
        np.testing.assert_allclose(r.mce_at_k[k], np.abs(freq - mean_p).max(), **TOL)
        np.testing.assert_allclose(calibration_error(Y, P, n_bins=10, k=k)["ece"], ece, **TOL)


def test_calibrated_probabilities_have_small_ece_and_overconfident_large(rng) -> None:
    """Labels drawn from P: ECE near 0; the same labels against P sharpened: ECE large."""
    P = rng.random((2000, 20))
    Y = (rng.random(P.shape) < P).astype(int)
    good = evaluate_proba(Y, P)
    sharp = np.clip((P - 0.5) * 3 + 0.5, 0, 1)
    bad = evaluate_proba(Y, sharp)
    assert good.ece < 0.01 < 0.1 < bad.ece
    assert good.nll_per_entry < bad.nll_per_entry and good.brier < bad.brier


def test_histogram_bins_match_exact_bins_closely(rng) -> None:
    """Past max_exact, cells of relative width 2^-8: bins equal-mass to within a cell, ECE close."""
    Y, P = _problem(rng, N=400, K=50)
    exact = evaluate_proba(Y, P, max_exact=1 << 30)
    hist = evaluate_proba(Y, P, max_exact=1000, batch_size=13)
    assert exact.reliability.exact and not hist.reliability.exact
    assert hist.reliability.count.sum() == Y.size
    np.testing.assert_allclose(hist.reliability.count, Y.size / 15, rtol=0.02)
    assert abs(hist.ece - exact.ece) < 2e-3
    np.testing.assert_allclose(hist.reliability.mean_probability, exact.reliability.mean_probability, rtol=0.02)
    # the other metrics do not depend on the binning
    assert hist.nll_per_entry == pytest.approx(exact.nll_per_entry, rel=1e-12)


def test_histogram_bin_sums_are_exact_per_bin(rng) -> None:
    """Each histogram bin's mean and frequency are exact over the entries it holds."""
    p = rng.random(5000) ** 2
    y = (rng.random(5000) < p).astype(int)
    bins = EqualMassBins(4, max_exact=0)
    bins.add(p[:2500], np.flatnonzero(y[:2500]))
    bins.add(p[2500:], np.flatnonzero(y[2500:]))
    b = bins.bins()
    cells = np.maximum(p.view(np.int64) >> 44, 0)
    order = np.argsort(cells, kind="stable")
    edges = np.cumsum(b.count)
    for j, (lo, hi) in enumerate(zip(np.r_[0, edges[:-1]], edges)):
        members = order[lo:hi]
        assert b.mean_probability[j] == pytest.approx(p[members].mean(), rel=1e-12)
        assert b.frequency[j] == pytest.approx(y[members].mean(), rel=1e-12)


def test_negative_zero_is_counted_as_zero() -> None:
    bins = EqualMassBins(2, max_exact=0)
    bins.add(np.array([-0.0, 0.0, 0.5, 1.0]), np.array([3]))
    b = bins.bins()
    assert b.count.sum() == 4 and b.mean_probability[0] == 0.0


def test_blocks_from_an_iterable_and_caller_arrays_unchanged(rng) -> None:
    Y, P = _problem(rng, N=50, K=6)
    Ys, P0 = sp.csr_matrix(Y), P.copy()
    blocks = ((slice(a, min(a + 8, 50)), P[a:a + 8]) for a in range(0, 50, 8))
    a = evaluate_proba(Ys, blocks, ks=(1, 2), n_bins=5)
    b = evaluate_proba(Ys, P, ks=(1, 2), n_bins=5)
    assert a.as_dict() == pytest.approx(b.as_dict(), rel=1e-12)
    np.testing.assert_array_equal(P, P0)
    with pytest.raises(ShapeError, match="cover rows 0..49 in order"):
        evaluate_proba(Ys, iter([(slice(8, 16), P[8:16])]), n_bins=5, ks=())
    with pytest.raises(ShapeError, match="cover 8 rows; the labels have 50"):
        evaluate_proba(Ys, iter([(slice(0, 8), P[:8])]), n_bins=5, ks=())


@pytest.mark.parametrize("bad, match", [
    (np.nan, "non-finite"), (np.inf, "non-finite"), (1.5, r"in \[0, 1\]"), (-0.1, r"in \[0, 1\]"),
])
def test_bad_probabilities_are_refused(rng, bad, match) -> None:
    Y, P = _problem(rng, N=20, K=4)
    P[7, 2] = bad
    with pytest.raises(ShapeError, match=match):
        evaluate_proba(Y, P)
    with pytest.raises(MLGPError, match="rows 0..19"):  # the block is named
        ProbabilityMetrics(4, ks=()).update(sp.csr_matrix(Y), P)


def test_bad_shapes_and_bins_are_refused(rng) -> None:
    Y, P = _problem(rng, N=20, K=4)
    with pytest.raises(ShapeError, match=r"shape \(20, 3\)"):
        evaluate_proba(Y, P[:, :3])
    with pytest.raises(ShapeError, match=r"shape \(19, 4\)"):
        evaluate_proba(Y, P[:19])
    with pytest.raises(ArgumentError, match="n_bins must be an integer >= 1"):
        evaluate_proba(Y, P, n_bins=0)
    with pytest.raises(ArgumentError, match="more than the 20 entries"):
        evaluate_proba(Y, P, n_bins=21, ks=(1,))    # ECE@1 has N·1 = 20 entries
    with pytest.raises(ArgumentError, match="more than the 80 entries"):
        evaluate_proba(Y, P, n_bins=81, ks=())
    assert evaluate_proba(Y, P, n_bins=80, ks=()).reliability.count.sum() == 80
    with pytest.raises(ArgumentError, match="k <= K = 4"):
        evaluate_proba(Y, P, ks=(5,))
    with pytest.raises(ShapeError, match="0/1"):
        evaluate_proba(Y * 2, P)


def test_predict_proba_blocks_stream_the_estimators_probabilities(rng) -> None:
    """An estimator's row blocks give the same report as its whole predict_proba; bad X fails at
    the call, before any block."""
    from mlgp.baselines import MLkNN

    X = rng.random((90, 4))
    Y = sp.csr_matrix((rng.random((90, 5)) < 0.3).astype(float))
    model = MLkNN(n_neighbors=5).fit(X, Y)
    blocks = model.predict_proba_blocks(X, batch_size=16)
    first = next(blocks)
    assert first[0] == slice(0, 16) and first[1].shape == (16, 5)
    a = evaluate_proba(Y, model.predict_proba_blocks(X, batch_size=16), n_bins=5).as_dict()
    b = evaluate_proba(Y, model.predict_proba(X), n_bins=5).as_dict()
    assert a == pytest.approx(b, rel=1e-12)
    with pytest.raises(ShapeError, match="expecting 4 features"):
        model.predict_proba_blocks(X[:, :3])


def test_bootstrap_interval_of_ece_covers_it_and_refuses_bad_levels(rng) -> None:
    from mlgp.metrics import calibration_error_interval

    Y, P = _problem(rng, N=100, K=8)
    ece = evaluate_proba(Y, P, ks=()).ece
    low, high = calibration_error_interval(Y, P, n_boot=100)
    assert 0 <= low < high and low <= ece * 1.5 and high >= ece * 0.5
    assert calibration_error_interval(Y, P, n_boot=100) == (low, high)  # seeded
    narrow = calibration_error_interval(Y, P, n_boot=100, level=0.5)
    assert low <= narrow[0] <= narrow[1] <= high
    with pytest.raises(ArgumentError, match="level"):
        calibration_error_interval(Y, P, level=1.0)


@pytest.mark.parametrize("max_exact", [1 << 30, 500, 3000])
def test_threads_give_the_same_report(rng, max_exact) -> None:
    """Blocks spread over threads, accumulators merged (exact with exact, exact into histogram):
    the same report as one thread, to rounding."""
    Y, P = _problem(rng, N=160, K=25)
    one = evaluate_proba(Y, P, batch_size=9, max_exact=max_exact)
    for n_jobs in (2, 3):
        many = evaluate_proba(Y, P, batch_size=9, max_exact=max_exact, n_jobs=n_jobs)
        assert many.as_dict() == pytest.approx(one.as_dict(), rel=1e-12, abs=1e-15)
        np.testing.assert_array_equal(many.reliability.count, one.reliability.count)
        assert many.reliability.exact == one.reliability.exact
    bad = P.copy()
    bad[100, 3] = np.nan
    with pytest.raises(ShapeError, match="rows 99..107"):
        evaluate_proba(Y, bad, batch_size=9, n_jobs=2)


def test_exact_bins_up_to_and_including_max_exact_entries(rng) -> None:
    Y, P = _problem(rng, N=10, K=6)
    assert evaluate_proba(Y, P, n_bins=5, max_exact=60).reliability.exact
    assert not evaluate_proba(Y, P, n_bins=5, max_exact=59).reliability.exact


def test_the_accumulator_refuses_more_bins_than_entries(rng) -> None:
    Y, P = _problem(rng, N=20, K=1)
    acc = ProbabilityMetrics(1, n_bins=21, ks=())
    acc.update(sp.csr_matrix(Y), P)
    with pytest.raises(ArgumentError, match="more than the 20 entries"):
        acc.report()
    acc = ProbabilityMetrics(1, n_bins=20, ks=())
    acc.update(sp.csr_matrix(Y), P)
    assert acc.report().reliability.count.sum() == 20
    with pytest.raises(ArgumentError, match="no rows"):
        ProbabilityMetrics(1, ks=()).report()
