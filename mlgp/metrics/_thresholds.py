"""Decision thresholds chosen on held-out rows to maximise micro- or macro-F1.

Contract: :func:`select_thresholds` takes the 0/1 labels (N, K) and the probabilities (N, K) of
held-out rows and returns a :class:`ThresholdChoice` whose ``thresholds`` (K,) float64, each in
[0, 1], can be given as an estimator's ``threshold``: a label is predicted present where
``proba >= threshold`` (the rule of :class:`mlgp.estimator.MultiLabelEstimator`). F1 is defined as
in :func:`mlgp.metrics.f1_scores` (every 0/0 taken as 0). Only cuts between distinct held-out values
are considered, so a threshold never separates equal probabilities; a cut between two consecutive
distinct values is placed at their midpoint. Bad input raises :class:`~mlgp.errors.ShapeError` (the
data) or :class:`~mlgp.errors.ArgumentError` (the options) before any work. The held-out rows are
held densely (O(N K) memory); there are no Python loops over entries, only over labels. NumPy and
SciPy only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..arguments import flag, positive_int
from ..errors import ArgumentError, ShapeError
from ._classification import f1_scores
from ._labels import as_binary_csr, safe_div
from ..validation import float_matrix

__all__ = ["ThresholdChoice", "select_thresholds"]

AVERAGES = ("micro", "macro")


@dataclass(frozen=True, eq=False)
class ThresholdChoice:
    """Thresholds chosen by :func:`select_thresholds`.

    Attributes
    ----------
    thresholds : np.ndarray (K,) float64
        One read-only threshold per label, each in [0, 1] (all equal unless ``per_label``).
    average : str
        ``"micro"`` or ``"macro"``: the F1 that was maximised.
    per_label : bool
        Whether each label got its own threshold.
    score : float
        That F1 on the held-out rows with ``proba >= thresholds``.
    default_score : float
        The same F1 with ``proba >= 0.5``, for comparison.
    """

    thresholds: np.ndarray
    average: str
    per_label: bool
    score: float
    default_score: float


def select_thresholds(Y_true: Any, proba: Any, *, average: str = "micro", per_label: bool = False,
                      max_sweeps: int = 3) -> ThresholdChoice:
    """Thresholds that maximise micro- or macro-F1 of ``proba >= threshold`` on held-out rows.

    Parameters
    ----------
    Y_true : scipy sparse or np.ndarray (N, K)
        0/1 labels of the held-out rows; at least one entry must be 1.
    proba : array-like (N, K)
        Their probabilities (or scores), dense, finite, float64-convertible.
    average : {"micro", "macro"}
        The F1 to maximise (as in :func:`mlgp.metrics.f1_scores`).
    per_label : bool
        False: one threshold shared by all labels. True: one threshold per label.
    max_sweeps : int
        Most sweeps over the labels of the coordinate ascent (``per_label`` micro only), >= 1.

    Returns
    -------
    ThresholdChoice
        ``thresholds`` (K,) float64 in [0, 1], ``score`` and ``default_score``.

    Notes
    -----
    Candidates: a cut between consecutive distinct values ``lo < hi`` gets the threshold
    ``(lo + hi) / 2``; predicting everything gets the smallest value; predicting nothing the next
    float above the largest. Each is clipped into [0, 1] and scored by what it actually predicts (so
    a largest value of 1.0, or scores outside [0, 1], cannot be cut above it); every cut that some
    threshold in [0, 1] makes is among them, so ``score >= default_score``. Ties between candidates
    of equal F1 go to the highest threshold.

    - Global, micro: one sort of the N*K entries and a cumulative sweep, O(NK log NK), exact.
    - Global, macro: exact too; moving the threshold past one entry changes the F1 of that entry's
      label only, so the macro-F1 at every cut is a cumulative sum of per-entry changes computed
      from per-label cumulative counts over the same sorted entries, O(NK log NK).
    - Per label, macro: each label with a positive maximises its own F1 exactly, O(N log N) each.
    - Per label, micro: starts at the best global threshold, then sweeps over the labels, giving
      each the exact best threshold given the others' TP/FP/FN counts, only when it strictly raises
      micro-F1 (compared exactly, in integers), at most ``max_sweeps`` sweeps, stopping after a
      sweep that changes nothing. Micro-F1 never falls below the global start.

    A label with no positive among the held-out rows keeps the best global threshold (per label,
    nothing can be learnt about it).
    """
    T, P, per_label, max_sweeps = _check_inputs(Y_true, proba, average, per_label, max_sweeps)
    Y = T.toarray().astype(bool)
    pos = Y.sum(axis=0).astype(np.int64)
    t_global = _best_global(P, Y, pos, average)
    thresholds = np.full(P.shape[1], t_global)
    if per_label:
        cuts = [_label_cuts(P[:, k], Y[:, k]) if pos[k] else None for k in range(P.shape[1])]
        if average == "macro":
            for k, cut in enumerate(cuts):
                if cut is not None:
                    thr, m, tp = cut
                    thresholds[k] = thr[np.argmax(2 * tp / (pos[k] + m))]
        else:
            _micro_ascent(P, Y, pos, cuts, thresholds, max_sweeps)
    thresholds.setflags(write=False)
    return ThresholdChoice(
        thresholds=thresholds,
        average=average,
        per_label=per_label,
        score=f1_scores(T, P >= thresholds)[average],
        default_score=f1_scores(T, P >= 0.5)[average],
    )


def _check_inputs(Y_true: Any, proba: Any, average: Any, per_label: Any,
                  max_sweeps: Any) -> tuple[sp.csr_matrix, np.ndarray, bool, int]:
    """Validate everything before any work; returns Y_true as CSR, proba as float64 (N, K), and
    ``per_label`` and ``max_sweeps`` as a plain bool and int."""
    if not isinstance(average, str) or average not in AVERAGES:
        raise ArgumentError(f"average must be 'micro' or 'macro', got {average!r}")
    per_label = flag(per_label, "per_label")
    max_sweeps = positive_int(max_sweeps, "max_sweeps")
    T = as_binary_csr(Y_true, "Y_true")
    if sp.issparse(proba):
        raise ShapeError("proba must be a dense (N, K) array of probabilities, got a sparse matrix")
    P = float_matrix(proba, "proba", "array")
    N, K = T.shape
    if P.shape[0] != N:
        raise ShapeError(f"proba has {P.shape[0]} rows but Y_true has {N}: shape {P.shape} != {T.shape}")
    if P.shape[1] != K:
        raise ShapeError(f"proba has {P.shape[1]} labels but Y_true has K = {K}: shape {P.shape} != {T.shape}")
    if N == 0:
        raise ShapeError("Y_true has no rows (empty held-out data)")
    if not np.all(np.isfinite(P)):
        raise ShapeError("proba contains NaN or inf")
    if T.nnz == 0:
        raise ShapeError("Y_true has no positive label: F1 is 0 at every threshold")
    return T, P, per_label, max_sweeps


def _candidates(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Candidate thresholds of values ``s`` (n,) sorted descending, and how many values each keeps.

    Returns ``(thr, m)``, both (C,): ``thr`` in [0, 1], from the highest (above every value) to the
    lowest (the smallest value); ``m[c]`` the number of values ``>= thr[c]`` (ties never split).
    """
    n = s.size
    ends = np.flatnonzero(s[1:] != s[:-1]) + 1  # cuts inside: s[m - 1] > s[m]
    hi, lo = s[ends - 1], s[ends]
    mid = 0.5 * hi + 0.5 * lo  # no overflow for huge scores
    mid = np.where((mid > lo) & (mid <= hi), mid, hi)  # adjacent floats: the midpoint rounds onto lo
    thr = np.clip(np.concatenate(([np.nextafter(s[0], np.inf)], mid, [s[-1]])), 0.0, 1.0)
    m = n - np.searchsorted(s[::-1], thr, side="left")
    return thr, m


def _best_global(P: np.ndarray, Y: np.ndarray, pos: np.ndarray, average: str) -> float:
    """The one threshold for all labels that maximises micro- or macro-F1 (exactly)."""
    N, K = P.shape
    flat = P.ravel()
    order = np.argsort(-flat, kind="stable")
    ys = Y.ravel()[order]
    thr, m = _candidates(flat[order])
    if average == "micro":
        tp = np.concatenate(([0], np.cumsum(ys, dtype=np.int64)))
        f1 = 2 * tp[m] / (pos.sum() + m)
    else:
        # each label's entries in descending order: (K, N) running counts after each entry
        by_label = np.argsort(order % K, kind="stable")
        y_l = ys[by_label].reshape(K, N)
        tp = np.cumsum(y_l, axis=1, dtype=np.int64)
        den = pos[:, None] + np.arange(1, N + 1)
        change = safe_div(2 * tp, den) - safe_div(2 * (tp - y_l), den - 1)  # that label's F1 change
        delta = np.empty(N * K)
        delta[by_label] = change.ravel()
        f1 = np.concatenate(([0.0], np.cumsum(delta)))[m] / K
    return float(thr[np.argmax(f1)])


def _label_cuts(p: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One label's candidates: thresholds, predicted counts and true positives, each (C,)."""
    order = np.argsort(-p, kind="stable")
    thr, m = _candidates(p[order])
    tp = np.concatenate(([0], np.cumsum(y[order], dtype=np.int64)))
    return thr, m, tp[m]


def _micro_ascent(P: np.ndarray, Y: np.ndarray, pos: np.ndarray, cuts: list, thresholds: np.ndarray,
                  max_sweeps: int) -> None:
    """Coordinate ascent of micro-F1 over the labels' thresholds, in place from ``thresholds``."""
    pred = P >= thresholds
    pp = pred.sum(axis=0).astype(np.int64)
    tp = (pred & Y).sum(axis=0).astype(np.int64)
    TP, PP, POS = int(tp.sum()), int(pp.sum()), int(pos.sum())
    for _ in range(max_sweeps):
        changed = False
        for k, cut in enumerate(cuts):
            if cut is None:
                continue
            thr, m, tp_k = cut
            rest_tp, rest_pp = TP - int(tp[k]), PP - int(pp[k])
            c = int(np.argmax((rest_tp + tp_k) / (POS + rest_pp + m)))
            new_tp, new_pp = rest_tp + int(tp_k[c]), rest_pp + int(m[c])
            if new_tp * (POS + PP) > TP * (POS + new_pp):  # strictly better, exactly
                thresholds[k] = thr[c]
                tp[k], pp[k] = tp_k[c], m[c]
                TP, PP = new_tp, new_pp
                changed = True
        if not changed:
            break
