"""ECE@k in the study's protocol (10 equal-width bins of the flattened top-k entries) and the
bias-corrected bootstrap interval of ECE, against independent NumPy references."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from mlgp.metrics import calibration_error_bootstrap, calibration_error_interval, evaluate_proba


def _uniform_ece(p: np.ndarray, y: np.ndarray, n_bins: int = 10) -> float:
    """Equal-width ECE by ``np.histogram`` (bins [a, b), the last closed): Σ n_b/n |freq_b − mean_b|."""
    count, _ = np.histogram(p, bins=n_bins, range=(0.0, 1.0))
    total_p, _ = np.histogram(p, bins=n_bins, range=(0.0, 1.0), weights=p)
    total_y, _ = np.histogram(p, bins=n_bins, range=(0.0, 1.0), weights=y)
    full = count > 0
    return float(np.sum(np.abs(total_y[full] - total_p[full])) / p.size)


@pytest.mark.parametrize("k", [1, 3, 5])
def test_ece_at_k_in_ten_uniform_bins_is_that_of_the_flattened_top_k(k) -> None:
    rng = np.random.default_rng(7)
    P = rng.random((300, 12)) ** 3
    y = (rng.random((300, 12)) < P).astype(float)
    report = evaluate_proba(sp.csr_matrix(y), P, ks=(1, 3, 5))
    top = np.argsort(-P, axis=1, kind="stable")[:, :k]
    p_top, y_top = np.take_along_axis(P, top, 1).ravel(), np.take_along_axis(y, top, 1).ravel()
    assert report.ece_at_k_uniform[k] == pytest.approx(_uniform_ece(p_top, y_top), rel=1e-12, abs=1e-15)
    assert report.as_dict()[f"ECE@{k} (10 uniform)"] == report.ece_at_k_uniform[k]
    assert report.ece_at_k_uniform[k] != pytest.approx(report.ece_at_k[k], rel=1e-6)  # the two binnings differ


def test_uniform_bin_edges_go_up_and_one_falls_in_the_last_bin() -> None:
    """p = 0.1 is in [0.1, 0.2), p = 1.0 in [0.9, 1.0]: with outcomes chosen so that a wrong bin
    changes the error."""
    from mlgp.metrics._binning import UniformBins

    bins = UniformBins(10)
    bins.add(np.array([0.1, 0.15, 1.0, 0.95, 0.0]), np.array([0, 2]))
    b = bins.bins()
    assert b.count.tolist() == [1, 2, 2]
    np.testing.assert_allclose(b.mean_probability, [0.0, 0.125, 0.975])
    np.testing.assert_allclose(b.frequency, [0.0, 0.5, 0.5])


def _small_calibrated(seed: int) -> tuple[sp.csr_matrix, np.ndarray]:
    rng = np.random.default_rng(seed)
    P = rng.random((60, 30)) * 0.02
    return sp.csr_matrix((rng.random(P.shape) < P).astype(float)), P


def test_the_debiased_ece_lies_in_its_interval_where_the_percentile_one_misses_ece() -> None:
    """On a small, calibrated test set the resampled ECEs lie above ECE (the percentile interval
    misses it); the debiased ECE is 2 ECE − their mean and its basic interval holds it."""
    Y, P = _small_calibrated(1)
    boot = calibration_error_bootstrap(Y, P, n_boot=100)
    low, high = calibration_error_interval(Y, P, n_boot=100)
    assert not low <= boot.ece <= high  # the percentile interval misses its own point estimate
    assert boot.low <= boot.debiased <= boot.high and boot.debiased < boot.ece
    assert boot.high == pytest.approx(max(0.0, 2 * boot.ece - low), rel=1e-12)
    assert boot.low == pytest.approx(max(0.0, 2 * boot.ece - high), rel=1e-12)
    assert boot.ece == pytest.approx(evaluate_proba(Y, P).ece, rel=1e-12)
