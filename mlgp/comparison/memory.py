"""Peak resident memory of this process and its child processes (joblib workers) over a block of
code: :class:`PeakMemory`, sampled every 20 ms by a background thread through psutil.

``peak_mb`` is the largest sum of the resident set sizes seen (the process's and every live
descendant's), ``added_mb`` that peak less the sum at the start: what the block added, an upper
bound on what it needed since pages shared with workers count in each. Sampling can miss a peak
shorter than the interval.
"""

from __future__ import annotations

import threading

__all__ = ["PeakMemory"]


class PeakMemory:
    """``with PeakMemory() as m: ...`` then ``m.peak_mb`` and ``m.added_mb``: the peak RSS and its
    rise over the start, in MiB (``None`` where psutil cannot read them)."""

    def __init__(self, interval: float = 0.02) -> None:
        self.interval = interval
        self.peak_mb: float | None = None
        self.added_mb: float | None = None
        self._start: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _sample(self) -> int:
        import psutil

        me = psutil.Process()
        total = me.memory_info().rss
        for child in me.children(recursive=True):
            try:
                total += child.memory_info().rss
            except psutil.Error:  # a worker that ended meanwhile
                pass
        return total

    def _loop(self) -> None:
        peak = 0
        while True:
            try:
                peak = max(peak, self._sample())
            except Exception:  # noqa: BLE001 - no figure rather than a failed run
                return
            self.peak_mb = peak / 2**20
            if self._stop.wait(self.interval):
                return

    def __enter__(self) -> "PeakMemory":
        try:
            self._start = self._sample() / 2**20
        except Exception:  # noqa: BLE001
            self._start = None
        self._thread = threading.Thread(target=self._loop, name="mlgp-peak-memory", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        try:
            self.peak_mb = max(self.peak_mb or 0.0, self._sample() / 2**20)
        except Exception:  # noqa: BLE001
            pass
        if self.peak_mb is not None and self._start is not None:
            self.added_mb = max(0.0, self.peak_mb - self._start)
