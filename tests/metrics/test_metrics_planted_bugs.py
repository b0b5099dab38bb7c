"""Bugs an audit planted in the metrics that no other test caught, each against an independent NumPy
reference: the log clip at 1 − ε, ECE@k with several k asked at once, the bootstrap's tails and its
statistic (ECE@k when k is given), and the documented tie rule of per-label macro thresholds."""

from __future__ import annotations

import numpy as np
import pytest

from mlgp.metrics import (calibration_error_bootstrap, calibration_error_interval, evaluate_proba,
                          log_predictive_density, select_thresholds)

#: float64's machine epsilon: the documented clip is [EPS, 1 − EPS] (written here, not imported)
EPS = 2.0 ** -52


def _lpd_reference(Y: np.ndarray, P: np.ndarray) -> float:
    """Σ_ik log p(y_ik) / N with probabilities clipped into [EPS, 1 − EPS]."""
    q = np.clip(P, EPS, 1.0 - EPS)
    return float(np.where(Y == 1, np.log(q), np.log1p(-q)).sum() / Y.shape[0])


def _ece_reference(p: np.ndarray, y: np.ndarray, n_bins: int) -> float:
    """ECE over equal-mass bins: edges the quantiles of ``p``, an entry on an inner edge in the lower bin."""
    edges = np.percentile(p, np.linspace(0.0, 1.0, n_bins + 1) * 100)
    ids = np.searchsorted(edges[1:-1], p, side="left")
    total = 0.0
    for b in np.unique(ids):
        inside = ids == b
        total += inside.sum() / p.size * abs(y[inside].mean() - p[inside].mean())
    return total


def _ece_at_k_reference(Y: np.ndarray, P: np.ndarray, k: int, n_bins: int) -> float:
    """ECE of each row's k most probable entries (ties to the lower label index)."""
    top = np.argsort(-P, axis=1, kind="stable")[:, :k]
    return _ece_reference(np.take_along_axis(P, top, 1).ravel(), np.take_along_axis(Y, top, 1).ravel(), n_bins)


def _problem(seed: int, N: int = 40, K: int = 8) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    P = rng.random((N, K)) ** 3
    Y = (rng.random((N, K)) < 0.5 * P).astype(np.int64)  # over-confident: ECE@k far from ECE
    return Y, P


# 1. the clip at 1 − ε -------------------------------------------------------------------------------------

@pytest.mark.parametrize("high", [1.0, 1.0 - 1e-17, 1.0 - EPS / 2, float(np.nextafter(1.0, 0.0)), 1.0 - EPS],
                         ids=["1", "1-1e-17", "1-eps/2", "below-1", "1-eps"])
def test_nll_of_a_negative_label_near_one_is_the_value_at_the_clip_bound(high: float) -> None:
    # the block's largest probability is `high`: nothing above it can trigger the clip instead
    P = np.array([[high, 0.3, 0.0], [0.2, high, 0.7]])
    Y = np.array([[0, 1, 1], [0, 0, 1]])  # `high` on negatives; a positive given probability 0
    expected = _lpd_reference(Y, P)
    # each negative given `high`, and the positive given 0, costs −log(EPS) ≈ 36.04 nats at the bound
    assert expected == pytest.approx((3 * np.log(EPS) + np.log(0.3 * 0.8 * 0.7)) / 2, rel=1e-12)
    assert log_predictive_density(Y, P) == pytest.approx(expected, rel=1e-12)
    assert log_predictive_density(Y, P, per="entry") == pytest.approx(expected * 2 / 6, rel=1e-12)
    assert evaluate_proba(Y, P, n_bins=None, ks=()).nll_per_entry == pytest.approx(-expected * 2 / 6, rel=1e-12)


# 2. ECE@k with several k at once ----------------------------------------------------------------------------

def test_ece_at_k_with_several_k_equals_each_k_asked_alone() -> None:
    Y, P = _problem(0, N=60)
    together = evaluate_proba(Y, P, n_bins=5, ks=[1, 3, 5])
    for k in (1, 3, 5):
        alone = evaluate_proba(Y, P, n_bins=5, ks=[k])
        assert together.reliability_at_k[k].total == 60 * k
        assert together.ece_at_k[k] == pytest.approx(alone.ece_at_k[k], abs=1e-15)
        assert together.mce_at_k[k] == pytest.approx(alone.mce_at_k[k], abs=1e-15)
        assert together.ece_at_k_uniform[k] == pytest.approx(alone.ece_at_k_uniform[k], abs=1e-15)
        assert together.ece_at_k[k] == pytest.approx(_ece_at_k_reference(Y, P, k, 5), rel=1e-12, abs=1e-15)


# 3. the bootstrap: its statistic and its tails ---------------------------------------------------------------

def _resampled(Y: np.ndarray, P: np.ndarray, k: int | None, n_bins: int, n_boot: int, seed: int) -> np.ndarray:
    """The statistic on each resample of the rows, drawn as documented (sorted uniform row indices)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_boot):
        rows = np.sort(rng.integers(0, Y.shape[0], Y.shape[0]))
        if k is None:
            out.append(_ece_reference(P[rows].ravel(), Y[rows].ravel(), n_bins))
        else:
            out.append(_ece_at_k_reference(Y[rows], P[rows], k, n_bins))
    return np.array(out)


@pytest.mark.parametrize("k", [None, 2])
def test_bootstrap_quantiles_are_the_central_interval_of_the_statistic_asked_for(k) -> None:
    Y, P = _problem(1)
    n_bins, n_boot, level, seed = 5, 40, 0.8, 7
    values = _resampled(Y, P, k, n_bins, n_boot, seed)
    other = _resampled(Y, P, 2 if k is None else None, n_bins, n_boot, seed)
    assert abs(values.mean() - other.mean()) > 0.05  # ECE and ECE@2 differ a lot on these data
    q_low, q_high = np.quantile(values, [0.1, 0.9])  # tails (1 − level)/2 on each side

    low, high = calibration_error_interval(Y, P, n_bins, k, n_boot=n_boot, level=level, random_state=seed)
    assert (low, high) == pytest.approx((q_low, q_high), rel=1e-12, abs=1e-15)

    estimate = _ece_reference(P.ravel(), Y.ravel(), n_bins) if k is None else _ece_at_k_reference(Y, P, k, n_bins)
    result = calibration_error_bootstrap(Y, P, n_bins, k, n_boot=n_boot, level=level, random_state=seed)
    expected = (estimate, max(0.0, 2 * estimate - values.mean()), max(0.0, 2 * estimate - q_high),
                max(0.0, 2 * estimate - q_low))
    assert tuple(result) == pytest.approx(expected, rel=1e-12, abs=1e-15)


# 4. per-label macro thresholds: ties to the highest -------------------------------------------------------------

def test_per_label_macro_thresholds_break_ties_to_the_highest() -> None:
    # label 0: predicting the top entry (threshold 0.8) or all four (threshold 0.2) both give F1 2/3
    # label 1: the same with the order of the values reversed across the rows
    P = np.array([[0.9, 0.2], [0.7, 0.5], [0.5, 0.7], [0.2, 0.9]])
    Y = np.array([[1, 1], [0, 0], [0, 0], [1, 1]])
    choice = select_thresholds(Y, P, average="macro", per_label=True)
    np.testing.assert_allclose(choice.thresholds, [0.8, 0.8], rtol=1e-15)
    assert choice.score == pytest.approx(2 / 3)
