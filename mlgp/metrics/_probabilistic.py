"""Metrics of predicted probabilities: held-out log predictive density, Brier score, calibration.

Every entry ``(i, k)`` of an (N, K) probability matrix ``P`` is a Bernoulli prediction of the label
``y_ik`` ∈ {0, 1}:

- **log predictive density** (LPD) per test point ``(1/N) Σ_i Σ_k log p(y_ik)``, nats, with
  ``p(1) = P_ik`` and ``p(0) = 1 − P_ik``; the **NLL per entry** is ``−LPD / K``, the mean Bernoulli
  negative log-likelihood (scikit-learn's ``log_loss`` of the flattened arrays). Probabilities are
  clipped to ``[ε, 1 − ε]`` with ε = 2.2e-16 (float64's machine epsilon, scikit-learn's convention)
  before the logarithm, so a positive label given probability 0 costs 36.0 nats, not infinity;
- **Brier score**: ``mean (P_ik − y_ik)²`` over all N·K entries (unclipped);
- **ECE / MCE**: expected and maximum calibration error over ``n_bins`` equal-mass bins of all
  entries (:mod:`mlgp.metrics._binning`), and the reliability curve those bins draw;
- **ECE@k / MCE@k**: the same over each point's ``k`` most probable labels only (ties to the lower
  label index, :func:`mlgp.scores.topk`): N·k entries, in ``n_bins`` equal-mass bins (mlgp's
  protocol). Over all entries the long tail of labels with near-zero probability dominates ECE; @k
  measures the probabilities a user acts on;
- **ECE@k in the study's protocol** (Ullah, Schultheis, Zhang, Babbar, "Labels in Extremes", arXiv
  2411.04276; their code xmc-aalto/xmc-topk-calibration): the same N·k flattened top-k entries in
  ``uniform_bins`` (10) equal-width bins ``[b/10, (b+1)/10)`` (the last closed),
  ``Σ_b (n_b / n) |frequency_b − mean_probability_b|`` (:class:`~mlgp.metrics._binning.UniformBins`).
  Equal-width bins leave the bins where no probability falls empty and put most top-k entries
  into a few bins; equal-mass bins resolve where the entries are. The two differ, and both are
  given so that a number can be set beside the study's.

:class:`ProbabilityMetrics` accumulates all of them a block of rows at a time from sparse labels, so
memory does not grow with N·K (N = 300,000 × K = 13,330 runs in a few hundred MB); :func:`evaluate_proba`
runs it over an (N, K) array or over the ``(rows, block)`` pairs of
:meth:`mlgp.estimator.MultiLabelEstimator.predict_proba_blocks`. NumPy and SciPy only.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..arguments import positive_int
from ..errors import ArgumentError, ShapeError
from ..scores import topk
from ._binning import Bins, EqualMassBins, UniformBins
from ._labels import as_binary_csr
from ._ranking import _hits

__all__ = ["EPS", "ProbabilityMetrics", "ProbabilityReport", "evaluate_proba", "log_predictive_density",
           "brier_score", "calibration_error", "reliability_curve"]

#: Probabilities are clipped to [EPS, 1 − EPS] before a logarithm (scikit-learn's ``log_loss``).
EPS = float(np.finfo(np.float64).eps)


@dataclass(frozen=True)
class ProbabilityReport:
    """What :class:`ProbabilityMetrics` measured over ``num_points`` rows and ``num_labels`` labels.

    ``reliability`` and ``reliability_at_k`` hold the bins (:class:`~mlgp.metrics._binning.Bins`);
    ``ece``/``mce`` are ``None`` when calibration was not asked for.
    """

    num_points: int
    num_labels: int
    log_predictive_density: float
    nll_per_entry: float
    brier: float
    ece: float | None = None
    mce: float | None = None
    reliability: Bins | None = None
    reliability_at_k: dict[int, Bins] = field(default_factory=dict)
    uniform_at_k: dict[int, Bins] = field(default_factory=dict)
    n_uniform: int | None = None

    @property
    def ece_at_k(self) -> dict[int, float]:
        return {k: b.expected_error() for k, b in self.reliability_at_k.items()}

    @property
    def ece_at_k_uniform(self) -> dict[int, float]:
        """ECE@k over equal-width bins (the study's protocol; module docstring)."""
        return {k: b.expected_error() for k, b in self.uniform_at_k.items()}

    @property
    def mce_at_k(self) -> dict[int, float]:
        return {k: b.maximum_error() for k, b in self.reliability_at_k.items()}

    def as_dict(self) -> dict[str, float]:
        """Flat ``{name: value}``: ``LPD``, ``NLL``, ``Brier``, ``ECE``, ``MCE``, ``ECE@k``, ``MCE@k``,
        ``ECE@k (10 uniform)``."""
        out = {"LPD": self.log_predictive_density, "NLL": self.nll_per_entry, "Brier": self.brier}
        if self.ece is not None:
            out.update({"ECE": self.ece, "MCE": self.mce})
        out.update({f"ECE@{k}": v for k, v in self.ece_at_k.items()})
        out.update({f"MCE@{k}": v for k, v in self.mce_at_k.items()})
        out.update({f"ECE@{k} ({self.n_uniform} uniform)": v for k, v in self.ece_at_k_uniform.items()})
        return out


def _check_n_bins(n_bins: Any) -> int:
    try:
        return positive_int(n_bins, "n_bins")
    except ArgumentError:
        raise ArgumentError(f"n_bins must be an integer >= 1, got {n_bins!r}") from None


def check_proba_block(P: Any, shape: tuple[int, int], where: str = "") -> np.ndarray:
    """``P`` as float64 of ``shape``, every entry finite and in [0, 1]; :class:`ShapeError` otherwise."""
    return _checked(P, shape, where)[0]


def _checked(P: Any, shape: tuple[int, int], where: str = "") -> tuple[np.ndarray, float]:
    """:func:`check_proba_block` and the block's largest probability (0.0 when empty)."""
    if sp.issparse(P):
        P = P.toarray()
    try:
        P = np.asarray(P, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ShapeError(f"probabilities{where} must be numbers: {err}") from None
    if P.shape != tuple(shape):
        raise ShapeError(f"probabilities{where} have shape {P.shape}; the labels need {tuple(shape)}")
    if not P.size:
        return P, 0.0
    lo, hi = P.min(), P.max()  # NaN propagates into both, and fails both comparisons
    if not (lo >= 0.0 and hi <= 1.0):
        bad = "non-finite values" if not (np.isfinite(lo) and np.isfinite(hi)) else f"values in [{lo:g}, {hi:g}]"
        raise ShapeError(f"probabilities{where} must be finite and in [0, 1]; got {bad}")
    return P, float(hi)


class ProbabilityMetrics:
    """Accumulate probability metrics a block of rows at a time.

    Parameters
    ----------
    num_labels : int
        K.
    n_bins : int or None
        Equal-mass bins of ECE, MCE and the reliability curves; ``None`` skips calibration.
    ks : sequence of int
        Cut-offs of ECE@k (each ``1 <= k <= K``); empty skips them.
    uniform_bins : int or None
        Equal-width bins of ECE@k in the study's protocol (module docstring); ``None`` skips it.
    max_exact : int
        Entries held for exact quantile bin edges (per binning); beyond, fine-histogram bins
        (:mod:`mlgp.metrics._binning`).
    """

    def __init__(self, num_labels: int, *, n_bins: int | None = 15, ks: Sequence[int] = (1, 3, 5),
                 uniform_bins: int | None = 10, max_exact: int = 1 << 24) -> None:
        self.num_labels = positive_int(num_labels, "num_labels")
        self.n_bins = None if n_bins is None else _check_n_bins(n_bins)
        self.ks = sorted({positive_int(k, "each k in ks") for k in ks})
        if self.ks and self.ks[-1] > self.num_labels:
            raise ArgumentError(f"ECE@k needs k <= K = {self.num_labels}; got k = {self.ks[-1]}")
        if self.ks and self.n_bins is None:
            raise ArgumentError("ECE@k needs n_bins")
        self.num_points = 0
        self._sum_log = 0.0      # Σ over all entries of log p(y)
        self._sum_sq = 0.0       # Σ P² over all entries
        self._sum_pos_p = 0.0    # Σ P over the positive entries
        self._num_pos = 0
        self._bins = None if self.n_bins is None else EqualMassBins(self.n_bins, max_exact)
        self._buffer = np.empty(0)
        self._bins_at = {k: EqualMassBins(self.n_bins, max_exact) for k in self.ks}
        n_uniform = None if uniform_bins is None else _check_n_bins(uniform_bins)
        self._uniform_at = {} if n_uniform is None else {k: UniformBins(n_uniform) for k in self.ks}
        self._n_uniform = n_uniform

    def update(self, Y_block: sp.csr_matrix, P_block: np.ndarray, first_row: int | None = None) -> None:
        """Add a block: ``Y_block`` canonical 0/1 CSR (B, K) (as :func:`as_binary_csr` returns) and
        ``P_block`` (B, K) probabilities (checked: finite, in [0, 1]); ``first_row`` names the block's
        rows in an error (default: the rows added so far)."""
        B, K = Y_block.shape
        first = self.num_points if first_row is None else int(first_row)
        P, largest = _checked(P_block, (B, K), f" of rows {first}..{first + B - 1}")
        rows = np.repeat(np.arange(B, dtype=np.int64), np.diff(Y_block.indptr))
        flat_pos = rows * K + Y_block.indices
        p_pos = P.ravel()[flat_pos]
        q_pos = np.clip(p_pos, EPS, 1.0 - EPS)
        work = self._work(P.size).reshape(P.shape)  # one reused buffer: no page faults per block
        if largest > 1.0 - EPS:
            np.clip(P, EPS, 1.0 - EPS, out=work)
            np.subtract(1.0, work, out=work)
        else:  # clipping below at EPS would change 1 − p by less than its rounding: skip the pass
            np.subtract(1.0, P, out=work)
        np.log(work, out=work)  # log(1 − q), as scikit-learn's log_loss
        self._sum_log += float(work.sum()) + float((np.log(q_pos) - np.log(1.0 - q_pos)).sum())
        flat = P.ravel()
        self._sum_sq += float(np.dot(flat, flat))
        self._sum_pos_p += float(p_pos.sum())
        self._num_pos += int(flat_pos.size)
        self.num_points += B
        if self._bins is not None:
            self._bins.add(P, flat_pos, scratch=self._work(P.size).view(np.int64))
        if self.ks:
            top = topk(P, self.ks[-1])
            hits = _hits(Y_block, top.indices)
            for k, bins in self._bins_at.items():
                bins.add(np.ascontiguousarray(top.scores[:, :k]), np.flatnonzero(hits[:, :k]))
            for k, bins in self._uniform_at.items():
                bins.add(np.ascontiguousarray(top.scores[:, :k]), np.flatnonzero(hits[:, :k]))

    def _work(self, size: int) -> np.ndarray:
        """A float64 scratch array of ``size`` entries, reused from block to block."""
        if self._buffer.size < size:
            self._buffer = np.empty(size)
        return self._buffer[:size]

    def merge(self, other: "ProbabilityMetrics") -> None:
        """Add everything ``other`` (made with the same settings) accumulated."""
        self.num_points += other.num_points
        self._sum_log += other._sum_log
        self._sum_sq += other._sum_sq
        self._sum_pos_p += other._sum_pos_p
        self._num_pos += other._num_pos
        if self._bins is not None:
            self._bins.merge(other._bins)
        for k, bins in self._bins_at.items():
            bins.merge(other._bins_at[k])
        for k, bins in self._uniform_at.items():
            bins.merge(other._uniform_at[k])

    def report(self) -> ProbabilityReport:
        """The metrics of every block added; :class:`ArgumentError` with no rows, or more bins than
        entries."""
        N, K = self.num_points, self.num_labels
        if N == 0:
            raise ArgumentError("no rows to evaluate")
        if self.n_bins is not None:
            fewest = N * min([K, *self.ks])
            if self.n_bins > fewest:
                raise ArgumentError(f"n_bins = {self.n_bins} is more than the {fewest} entries to bin")
        lpd = self._sum_log / N
        brier = (self._sum_sq - 2.0 * self._sum_pos_p + self._num_pos) / (N * K)
        if self._bins is None:
            return ProbabilityReport(N, K, lpd, -lpd / K, brier)
        bins = self._bins.bins()
        at_k = {k: b.bins() for k, b in self._bins_at.items()}
        uniform = {k: b.bins() for k, b in self._uniform_at.items()}
        return ProbabilityReport(N, K, lpd, -lpd / K, brier, bins.expected_error(), bins.maximum_error(), bins, at_k,
                                 uniform, self._n_uniform if uniform else None)


def _pairs(proba: Any, N: int, K: int, batch_size: int) -> Iterable[tuple[slice, Any]]:
    """``(rows, block)`` pairs of an (N, K) array (copied a block at a time), or of an iterable."""
    if sp.issparse(proba) or isinstance(proba, np.ndarray) or isinstance(proba, (list, tuple)):
        shape = proba.shape if sp.issparse(proba) else np.shape(proba)
        if tuple(shape) != (N, K):
            raise ShapeError(f"probabilities have shape {tuple(shape)}; the labels have shape {(N, K)}")
        if not sp.issparse(proba):
            proba = np.asarray(proba)
        return ((slice(a, min(a + batch_size, N)), proba[a:a + batch_size]) for a in range(0, N, batch_size))
    return proba


#: The cut-offs of ECE@k when none are given (those <= K).
DEFAULT_KS = (1, 3, 5)


def evaluate_proba(Y_true: Any, proba: Any, *, n_bins: int | None = 15, ks: Sequence[int] | None = None,
                   uniform_bins: int | None = 10, batch_size: int = 2048, max_exact: int = 1 << 24,
                   n_jobs: int = 1) -> ProbabilityReport:
    """All probability metrics of ``proba`` against ``Y_true``, a block of rows at a time.

    Parameters
    ----------
    Y_true : scipy sparse or np.ndarray (N, K)
        0/1 labels.
    proba : np.ndarray (N, K) or iterable of (slice, np.ndarray (B, K))
        Probabilities, or consecutive row blocks of them (``predict_proba_blocks``).
    n_bins, ks, uniform_bins, max_exact
        As :class:`ProbabilityMetrics`; ``ks=None``: those of 1, 3, 5 that are <= K.
    batch_size : int
        Rows per block when ``proba`` is an array.
    n_jobs : int
        Threads that evaluate blocks at once (NumPy releases the GIL in its loops); each holds one
        block and its own accumulator, merged at the end (sums in another order: equal to rounding).

    Returns
    -------
    ProbabilityReport
    """
    Y = as_binary_csr(Y_true, "Y_true")
    N, K = Y.shape
    n_bins = None if n_bins is None else _check_n_bins(n_bins)
    if ks is None:
        ks = [k for k in DEFAULT_KS if k <= K] if n_bins is not None else []
    if n_bins is not None and n_bins > N * min([K, *ks]):
        raise ArgumentError(f"n_bins = {n_bins} is more than the {N * min([K, *ks])} entries to bin")
    n_jobs = positive_int(n_jobs, "n_jobs")
    accs = [ProbabilityMetrics(K, n_bins=n_bins, ks=ks, uniform_bins=uniform_bins, max_exact=max_exact)
            for _ in range(n_jobs)]
    start = 0
    with ThreadPoolExecutor(max_workers=n_jobs) as pool:
        pending = [None] * n_jobs  # each accumulator takes one block at a time
        for i, (rows, block) in enumerate(_pairs(proba, N, K, positive_int(batch_size, "batch_size"))):
            if rows.start != start or rows.stop > N:
                raise ShapeError(f"probability blocks must cover rows 0..{N - 1} in order; got rows "
                                 f"{rows.start}..{rows.stop - 1} after {start}")
            j = i % n_jobs
            if pending[j] is not None:
                pending[j].result()
            pending[j] = pool.submit(accs[j].update, Y[rows], block, rows.start)
            start = rows.stop
        for job in pending:
            if job is not None:
                job.result()
    if start != N:
        raise ShapeError(f"the probability blocks cover {start} rows; the labels have {N}")
    for other in accs[1:]:
        accs[0].merge(other)
    return accs[0].report()


def log_predictive_density(Y_true: Any, proba: Any, per: str = "point") -> float:
    """Held-out log predictive density: nats per test point (``per="point"``) or the mean Bernoulli
    log-likelihood per (point, label) entry (``per="entry"``; minus scikit-learn's ``log_loss``)."""
    if per not in ("point", "entry"):
        raise ArgumentError(f"per must be 'point' or 'entry', got {per!r}")
    r = evaluate_proba(Y_true, proba, n_bins=None, ks=())
    return r.log_predictive_density if per == "point" else -r.nll_per_entry


def brier_score(Y_true: Any, proba: Any) -> float:
    """Mean squared error ``mean (P − Y)²`` over all N·K entries."""
    return evaluate_proba(Y_true, proba, n_bins=None, ks=()).brier


def calibration_error(Y_true: Any, proba: Any, n_bins: int = 15, k: int | None = None) -> dict[str, float]:
    """``{"ece": ..., "mce": ...}`` over ``n_bins`` equal-mass bins of all entries, or of each
    point's ``k`` most probable labels."""
    bins = _bins_of(Y_true, proba, n_bins, k)
    return {"ece": bins.expected_error(), "mce": bins.maximum_error()}


def reliability_curve(Y_true: Any, proba: Any, n_bins: int = 15, k: int | None = None) -> pd.DataFrame:
    """The reliability curve: one row per non-empty equal-mass bin (lowest probabilities first) with
    ``mean_probability``, ``frequency`` (fraction of positives) and ``count``; ``.attrs["exact"]``
    says whether the bin edges are exact quantiles."""
    bins = _bins_of(Y_true, proba, n_bins, k)
    frame = pd.DataFrame({"mean_probability": bins.mean_probability, "frequency": bins.frequency,
                          "count": bins.count})
    frame.attrs["exact"] = bins.exact
    return frame


def _bins_of(Y_true: Any, proba: Any, n_bins: int, k: int | None) -> Bins:
    r = evaluate_proba(Y_true, proba, n_bins=n_bins, ks=() if k is None else (k,))
    return r.reliability if k is None else r.reliability_at_k[positive_int(k, "k")]
