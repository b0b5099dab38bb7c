"""The probability columns of a comparison: held-out likelihood, calibration and decisions of one
fitted family on the test split.

Contract: :func:`probability_row` takes a fitted estimator and the test split and returns the
columns below (and the reliability bins for ``calibration.png``), or, for an estimator without
``predict_proba``, empty values and the reason. Columns:

- ``LPD``: test log predictive density, nats per test point (the sum over all K labels of
  log p(y_ik)); ``NLL``: mean Bernoulli negative log-likelihood per (point, label) entry; ``Brier``;
  ``ECE``, ``MCE`` over :data:`N_BINS` equal-mass bins of all entries; ``ECE@k`` over each point's
  k most probable labels in the same equal-mass bins, and ``ECE@k (10 uniform)`` over them in
  :data:`UNIFORM_BINS` equal-width bins, the protocol of Ullah et al.'s study of top-k calibration
  (:mod:`mlgp.metrics._probabilistic`); where the test split has at most
  :data:`MAX_BOOTSTRAP_ENTRIES` entries, ``ECE_debiased`` (ECE less the bias a bootstrap over test
  rows estimates) and ``ECE_low``, ``ECE_high``: the 95 % basic bootstrap interval of it
  (:func:`mlgp.metrics.calibration_error_bootstrap`; else all three empty);
- ``microF1@0.5``, ``macroF1@0.5``: F1 of ``predict_proba >= 0.5``; ``microF1_tuned`` (one threshold
  for all labels, chosen for micro-F1) and ``macroF1_tuned`` (one per label, chosen for macro-F1):
  the thresholds are chosen on one half of the test rows and applied to the other, both ways
  (:func:`mlgp.metrics.select_thresholds`), so no row is judged by thresholds it chose;
- ``proba_seconds``: the time of ``predict_proba`` on the test split.

Given a dict ``rows``, :func:`probability_row` also puts into it each test row's log predictive
density under ``"LPD"`` (:func:`mlgp.comparison.rows.log_density_rows`; their mean is ``LPD``).
"""

from __future__ import annotations

import time

import numpy as np

__all__ = ["KS", "MAX_BOOTSTRAP_ENTRIES", "N_BINS", "UNIFORM_BINS", "probability_row", "uniform_column"]

#: Equal-mass bins of the calibration errors and reliability curves.
N_BINS = 15
#: Equal-width bins of ECE@k in the study's protocol (Ullah et al., arXiv 2411.04276).
UNIFORM_BINS = 10
#: ECE@k cut-offs.
KS = (1, 5)
#: The bootstrap interval of ECE is computed up to this many test entries (N·K).
MAX_BOOTSTRAP_ENTRIES = 1_000_000


def uniform_column(k: int) -> str:
    """The column of ECE@k over :data:`UNIFORM_BINS` equal-width bins: ``"ECE@5 (10 uniform)"``."""
    return f"ECE@{k} ({UNIFORM_BINS} uniform)"


def _halves(N: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rows = np.random.default_rng(seed).permutation(N)
    return np.sort(rows[: N // 2]), np.sort(rows[N // 2:])


def _tuned_f1(Y, P: np.ndarray, seed: int) -> dict[str, float]:
    """Micro-F1 (one threshold) and macro-F1 (one per label) with thresholds chosen on the other
    half of the test rows; empty where a half has no positive label."""
    from ..errors import MLGPError
    from ..metrics import f1_scores, select_thresholds

    a, b = _halves(Y.shape[0], seed)
    out = {}
    for column, average, per_label in (("microF1_tuned", "micro", False), ("macroF1_tuned", "macro", True)):
        decided = np.zeros(P.shape, dtype=np.int8)
        try:
            for fit_rows, apply_rows in ((a, b), (b, a)):
                t = select_thresholds(Y[fit_rows], P[fit_rows], average=average, per_label=per_label).thresholds
                decided[apply_rows] = P[apply_rows] >= t
        except MLGPError:
            out[column] = float("nan")
            continue
        out[column] = 100.0 * f1_scores(Y, decided)[average]
    return out


def probability_row(estimator, X_test, Y_test, seed: int = 0, rows: dict | None = None) -> tuple[dict, dict]:
    """The probability columns of ``estimator`` on ``(X_test, Y_test)`` and its reliability bins
    (``{"all": ..., "top5": ...}``, each ``{"mean_probability": [...], "frequency": [...],
    "count": [...]}``); F1 in percent. Without ``predict_proba``: ``({"proba_note": why}, {})``.
    ``rows``, when given, receives ``"LPD"``: the (N_test,) log predictive density of each test row."""
    from ..metrics import calibration_error_bootstrap, evaluate_proba, f1_scores
    from .rows import log_density_rows

    if not hasattr(estimator, "predict_proba"):
        return {"proba_note": f"{type(estimator).__name__} has no predict_proba"}, {}
    N, K = Y_test.shape
    t0 = time.perf_counter()
    P = estimator.predict_proba(X_test)
    row: dict = {"proba_seconds": time.perf_counter() - t0}
    ks = [k for k in KS if k <= K]
    n_bins = min(N_BINS, N)
    report = evaluate_proba(Y_test, P, n_bins=n_bins, ks=ks, uniform_bins=UNIFORM_BINS)
    row.update({"LPD": report.log_predictive_density, "NLL": report.nll_per_entry, "Brier": report.brier,
                "ECE": report.ece, "MCE": report.mce})
    row.update({f"ECE@{k}": v for k, v in report.ece_at_k.items()})
    row.update({uniform_column(k): v for k, v in report.ece_at_k_uniform.items()})
    if rows is not None:
        rows["LPD"] = log_density_rows(Y_test, P)
    if N * K <= MAX_BOOTSTRAP_ENTRIES:
        boot = calibration_error_bootstrap(Y_test, P, n_bins, random_state=seed)
        row["ECE_debiased"], row["ECE_low"], row["ECE_high"] = boot.debiased, boot.low, boot.high
    f1 = f1_scores(Y_test, P >= 0.5)
    row.update({"microF1@0.5": 100.0 * f1["micro"], "macroF1@0.5": 100.0 * f1["macro"]})
    row.update(_tuned_f1(Y_test, P, seed))
    bins = {"all": report.reliability, **{f"top{k}": b for k, b in report.reliability_at_k.items() if k == max(ks)}}
    reliability = {name: {"mean_probability": b.mean_probability.tolist(), "frequency": b.frequency.tolist(),
                          "count": b.count.tolist()} for name, b in bins.items()}
    return row, reliability
