"""Equal-mass and equal-width bins of (probability, outcome) pairs, accumulated a block at a time.

:class:`EqualMassBins` collects pairs ``(p, y)`` with ``p`` in [0, 1] and ``y`` in {0, 1} and returns
the reliability bins: for each non-empty bin its number of entries, mean probability and frequency
of ``y = 1``. Two regimes, one definition:

- **exact** (while at most ``max_exact`` pairs have been seen): the pairs are kept and the bin edges
  are the ``n_bins + 1`` quantiles of all ``p`` (NumPy's linear interpolation), each pair going to the
  bin ``searchsorted(edges[1:-1], p)`` (a ``p`` equal to an inner edge falls in the lower bin) —
  scikit-learn's ``calibration_curve(strategy="quantile")``, to rounding;
- **histogram** (beyond ``max_exact`` pairs): each pair is counted in a fine cell of ``p`` — the top
  20 bits of its float64 pattern, cells of relative width 2⁻⁸ — with the exact count, sum of ``p``
  and sum of ``y`` per cell, and the bins are runs of whole cells cut where the cumulative count
  first reaches each multiple of 1/n_bins of the total. Bins are then equal-mass to within one fine
  cell, and each bin's mean probability and frequency are exact for the entries it holds. Memory is
  O(2¹⁸) whatever the number of pairs.

Empty bins (quantiles that coincide, as with many equal probabilities) are dropped, as scikit-learn
drops them.

:class:`UniformBins` is the other binning: ``n_bins`` equal-width bins ``[b/n, (b+1)/n)`` of [0, 1],
the last one closed (``p = 1`` falls in it), with exact counts and sums per bin — the binning of
Ullah, Schultheis, Zhang and Babbar's study of top-k calibration in extreme classification (arXiv
2411.04276; 10 bins). NumPy only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Bins", "EqualMassBins", "FINE_SHIFT", "UniformBins"]

#: Bits dropped from a float64 pattern to give its fine cell (11 exponent bits and 8 of mantissa kept).
FINE_SHIFT = 44
_NUM_CELLS = (np.float64(1.0).view(np.int64) >> FINE_SHIFT) + 1  # the cell of 1.0 is the last


@dataclass(frozen=True)
class Bins:
    """Non-empty reliability bins, lowest probabilities first.

    Attributes
    ----------
    count : np.ndarray (B,) int64
        Entries in each bin.
    mean_probability : np.ndarray (B,) float64
        Mean ``p`` of each bin.
    frequency : np.ndarray (B,) float64
        Fraction of each bin's entries with ``y = 1``.
    exact : bool
        Whether the edges are the exact quantiles (else equal-mass to within one fine cell).
    """

    count: np.ndarray
    mean_probability: np.ndarray
    frequency: np.ndarray
    exact: bool

    @property
    def total(self) -> int:
        return int(self.count.sum())

    def expected_error(self) -> float:
        """ECE: ``Σ_b (n_b / n) |frequency_b − mean_probability_b|``; 0.0 with no entries."""
        if self.total == 0:
            return 0.0
        gap = np.abs(self.frequency - self.mean_probability)
        return float(np.dot(self.count / self.total, gap))

    def maximum_error(self) -> float:
        """MCE: ``max_b |frequency_b − mean_probability_b|`` over non-empty bins; 0.0 with none."""
        if self.count.size == 0:
            return 0.0
        return float(np.max(np.abs(self.frequency - self.mean_probability)))


class EqualMassBins:
    """Accumulate (probability, outcome) pairs into ``n_bins`` equal-mass bins.

    Parameters
    ----------
    n_bins : int
        Number of bins (>= 1; checked by the caller).
    max_exact : int
        Pairs kept for exact quantile edges; past it the pairs go to the fine histogram.
    """

    def __init__(self, n_bins: int, max_exact: int = 1 << 24) -> None:
        self.n_bins = int(n_bins)
        self.max_exact = int(max_exact)
        self.num_entries = 0
        self._p: list[np.ndarray] = []
        self._y: list[np.ndarray] = []
        self._cells: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    @property
    def exact(self) -> bool:
        return self._cells is None

    def add(self, p: np.ndarray, positive: np.ndarray, scratch: np.ndarray | None = None) -> None:
        """Add pairs: probabilities ``p`` (any shape, float64 in [0, 1]; flattened in C order) and
        ``positive``, the flat indices into ``p`` of the pairs with ``y = 1`` (the rest have ``y = 0``).
        ``scratch``: an int64 array of at least ``p.size`` entries to hold the cells (saves an
        allocation per call)."""
        p = np.asarray(p, dtype=np.float64).ravel()
        positive = np.asarray(positive, dtype=np.int64).ravel()
        self.num_entries += p.size
        if self._cells is None and self.num_entries <= self.max_exact:
            y = np.zeros(p.size, dtype=np.int8)
            y[positive] = 1
            self._p.append(p.copy())
            self._y.append(y)
            return
        self._to_histogram()
        self._count(p, positive, scratch)

    def _to_histogram(self) -> None:
        """Move the kept pairs into the fine cells (once)."""
        if self._cells is None:
            self._cells = tuple(np.zeros(_NUM_CELLS, dtype=dt) for dt in (np.int64, np.float64, np.int64))
            for kept_p, kept_y in zip(self._p, self._y):
                self._count(kept_p, np.flatnonzero(kept_y))
            self._p, self._y = [], []

    def merge(self, other: "EqualMassBins") -> None:
        """Add every pair ``other`` holds (same ``n_bins``; for accumulators filled in parallel)."""
        if other._cells is None:
            for p, y in zip(other._p, other._y):
                self.add(p, np.flatnonzero(y))
            return
        self._to_histogram()
        for mine, theirs in zip(self._cells, other._cells):
            mine += theirs
        self.num_entries += other.num_entries

    def _count(self, p: np.ndarray, positive: np.ndarray, scratch: np.ndarray | None = None) -> None:
        cells = np.empty(p.size, np.int64) if scratch is None or scratch.size < p.size else scratch[:p.size]
        np.right_shift(p.view(np.int64), FINE_SHIFT, out=cells)
        np.maximum(cells, 0, out=cells)  # −0.0 has its sign bit set: the cell of +0.0
        count, total_p, total_y = self._cells
        count += np.bincount(cells, minlength=_NUM_CELLS)
        total_p += np.bincount(cells, weights=p, minlength=_NUM_CELLS)
        total_y += np.bincount(cells[positive], minlength=_NUM_CELLS)

    def bins(self) -> Bins:
        """The non-empty bins of every pair added so far."""
        if self._cells is None:
            p = np.concatenate(self._p) if self._p else np.zeros(0)
            y = np.concatenate(self._y) if self._y else np.zeros(0, dtype=np.int8)
            if p.size == 0:
                return Bins(np.zeros(0, np.int64), np.zeros(0), np.zeros(0), True)
            edges = np.percentile(p, np.linspace(0.0, 1.0, self.n_bins + 1) * 100)
            ids = np.searchsorted(edges[1:-1], p, side="left")
            count = np.bincount(ids, minlength=self.n_bins)
            total_p = np.bincount(ids, weights=p, minlength=self.n_bins)
            total_y = np.bincount(ids, weights=y, minlength=self.n_bins)
            exact = True
        else:
            cell_count, cell_p, cell_y = self._cells
            cumulative = np.cumsum(cell_count)
            targets = cumulative[-1] * np.arange(1, self.n_bins) / self.n_bins
            cuts = np.searchsorted(cumulative, targets, side="left")  # the last cell of each bin but the last
            ids = np.searchsorted(cuts, np.arange(_NUM_CELLS), side="left")
            count = np.bincount(ids, weights=cell_count, minlength=self.n_bins).astype(np.int64)
            total_p = np.bincount(ids, weights=cell_p, minlength=self.n_bins)
            total_y = np.bincount(ids, weights=cell_y, minlength=self.n_bins)
            exact = False
        full = count > 0
        n = count[full]
        return Bins(n.astype(np.int64), total_p[full] / n, total_y[full] / n, exact)


class UniformBins:
    """Accumulate (probability, outcome) pairs into ``n_bins`` equal-width bins of [0, 1].

    Parameters
    ----------
    n_bins : int
        Number of bins (>= 1; checked by the caller). A pair goes to the bin ``b`` with
        ``edges[b] <= p < edges[b + 1]``, ``edges = linspace(0, 1, n_bins + 1)``; ``p = 1`` to the last.
    """

    def __init__(self, n_bins: int) -> None:
        self.n_bins = int(n_bins)
        self._edges = np.linspace(0.0, 1.0, self.n_bins + 1)
        self._count = np.zeros(self.n_bins, dtype=np.int64)
        self._sum_p = np.zeros(self.n_bins)
        self._sum_y = np.zeros(self.n_bins, dtype=np.int64)

    def add(self, p: np.ndarray, positive: np.ndarray) -> None:
        """Add pairs: probabilities ``p`` (flattened in C order) and ``positive``, the flat indices
        into ``p`` of the pairs with ``y = 1``."""
        p = np.asarray(p, dtype=np.float64).ravel()
        ids = np.minimum(np.searchsorted(self._edges, p, side="right") - 1, self.n_bins - 1)
        self._count += np.bincount(ids, minlength=self.n_bins)
        self._sum_p += np.bincount(ids, weights=p, minlength=self.n_bins)
        self._sum_y += np.bincount(ids[np.asarray(positive, dtype=np.int64).ravel()], minlength=self.n_bins)

    def merge(self, other: "UniformBins") -> None:
        """Add every pair ``other`` (same ``n_bins``) holds."""
        self._count += other._count
        self._sum_p += other._sum_p
        self._sum_y += other._sum_y

    def bins(self) -> Bins:
        """The non-empty bins of every pair added so far (``exact``: always)."""
        full = self._count > 0
        n = self._count[full]
        return Bins(n, self._sum_p[full] / n, self._sum_y[full] / n, True)
