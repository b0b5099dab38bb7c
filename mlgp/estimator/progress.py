"""What a long fit shows while it runs: a progress bar on a terminal, a line every few seconds off it.

Every family that trains in steps reports through one :class:`Progress`, made where its ``fit``
begins and named for what the loop does (``"MLGPF fit"``, ``"MLGPF kernel se (3 of 3)"``,
``"MLGPF refit on all rows"``, ``"GenEML EM"``, ``"GenEML Gibbs"``). Its ``progress`` option is the
one switch: off, nothing is printed. On, the stream (standard error) decides the form, as Keras'
``verbose=1`` and ``verbose=2`` do:

- a terminal or a notebook (tqdm's own widget): a tqdm bar over the epochs (or iterations, sweeps)
  named as above, with the last values (ELBO, held-out density) beside it;
- anything else (a pipe, a log file, a captured stream): a plain line when the loop starts, then
  one after a unit (an epoch, an iteration) or a step whenever :data:`LINE_SECONDS` have passed since
  the last line, and one after the last unit: ``MLGPF fit: epoch 3/20, 12.4 s, elbo -1.42e+04,
  held-out lpd -7.55``. The first unit's line is always printed and names the seconds at its first
  step (the set-up before it), where the loop knows them.

The seconds shown (and the ones that make a line due) are the fit's own: a callable ``elapsed``
gives the seconds since ``fit`` began (the fit's :class:`~mlgp.estimator.budget.Budget`, which
is looked at after every step anyway, so that reporting reads no clock of its own and a test's fake
clock drives both). No TensorFlow here.
"""

from __future__ import annotations

import math
import sys
from typing import Callable, Iterable, Iterator

__all__ = ["LINE_SECONDS", "STEP_BAR_FROM", "Progress", "draws_bars"]

#: Seconds between two progress lines off a terminal (at most one line per unit or step, so a
#: line may come later when a step takes longer).
LINE_SECONDS = 10.0
#: Units of at least this many steps get a second, inner bar over their steps on a terminal.
STEP_BAR_FROM = 200


def draws_bars(stream) -> bool:
    """Whether progress on ``stream`` is drawn as a bar: a terminal, or a notebook (where tqdm
    draws its widget); a pipe, a file or a captured stream gets lines."""
    from tqdm import autonotebook, std

    if autonotebook.tqdm is not std.tqdm:  # tqdm found a notebook kernel
        return True
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if isatty is not None else False
    except (ValueError, OSError):  # a closed stream
        return False


def _value(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


class Progress:
    """The progress of one loop of ``total`` units (epochs, iterations, sweeps).

    Parameters
    ----------
    name : str
        What the loop does; the bar's name and each line's start.
    total : int or None
        Units the loop runs at most (``None``: unknown).
    unit : str, default="epoch"
        What a unit is called (``"epoch"``, ``"iteration"``, ``"sweep"``).
    enabled : bool, default=True
        ``False``: nothing is shown or printed (a fit's ``progress=False``).
    elapsed : callable, optional
        Seconds since the fit began (read after a unit or a step; the fit's budget's
        ``elapsed``). ``None``: lines show no seconds and come after every unit.
    initial : int, default=0
        Units done before this loop (a run resumed from a checkpoint).
    stream : file, optional
        Where to write (default: standard error as it is when the progress is made).
    every : float, optional
        Seconds between lines off a terminal (default :data:`LINE_SECONDS`).
    bars : bool, optional
        Force a bar (``True``) or lines (``False``); default :func:`draws_bars` of ``stream``.
    """

    def __init__(self, name: str, total: int | None = None, *, unit: str = "epoch", enabled: bool = True,
                 elapsed: Callable[[], float] | None = None, initial: int = 0, stream=None,
                 every: float | None = None, bars: bool | None = None) -> None:
        self.name, self.total, self.unit, self.enabled = str(name), total, unit, bool(enabled)
        self.elapsed = elapsed
        self.stream = sys.stderr if stream is None else stream
        self.every = LINE_SECONDS if every is None else float(every)
        self.bars = self.enabled and (draws_bars(self.stream) if bars is None else bool(bars))
        self.done, self._first = int(initial), True
        self._last_line = -math.inf
        self._bar = None
        if not self.enabled:
            return
        if self.bars:
            from tqdm.auto import tqdm

            self._bar = tqdm(total=total, initial=self.done, desc=self.name, unit=unit, file=self.stream)
        else:
            of = f", {total} {unit}{'' if total == 1 else 's'}" if total is not None else ""
            self._write(f"{self.name}: started{of}" + (f", from {unit} {self.done + 1}" if self.done else ""))
            self._last_line = None  # the interval counts from the first reading

    # ------------------------------------------------------------------------------ reporting --
    def unit_done(self, setup: float | None = None, last: bool = False, shown: dict | None = None) -> None:
        """One unit (epoch, iteration, sweep) done; ``shown``: its values by name (``{"elbo": …,
        "held-out lpd": …}``; None and NaN left out) beside the bar or in its line. ``setup``: the
        seconds at the first unit's first step (named in its line); ``last``: the loop stops after
        this unit (its line is printed, as the line of unit ``total`` is)."""
        if not self.enabled:
            return
        self.done += 1
        shown = {k: v for k, v in (shown or {}).items() if v is not None and not (isinstance(v, float) and math.isnan(v))}
        if self._bar is not None:
            if shown:
                self._bar.set_postfix({k: _value(v) for k, v in shown.items()}, refresh=False)
            self._bar.update(1)
            return
        first, self._first = self._first, False
        last = last or (self.total is not None and self.done >= self.total)
        if first or last or self._due():
            extra = f" (first step at {setup:.1f} s)" if first and setup is not None else ""
            self._line(f"{self.unit} {self._of()}{extra}", shown)

    def step_done(self, step: int, steps: int | None = None) -> None:
        """Step ``step`` (1-based) of ``steps`` within the current unit done: a line off a terminal
        when one is due (a long unit is not silent)."""
        if not self.enabled or self._bar is not None or self.elapsed is None or not self._due():
            return
        within = f", step {step}" + (f"/{steps}" if steps is not None else "")
        self._line(f"{self.unit} {self.done + 1}" + (f"/{self.total}" if self.total is not None else "") + within, {})

    def close(self, note: str | None = None) -> None:
        """End the loop: the bar closed; off a terminal, ``note`` (e.g. why it stopped) as a line."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        elif self.enabled and note:
            self._write(f"{self.name}: {note}")

    def steps(self, iterable: Iterable, total: int, label: str) -> Iterable:
        """``iterable`` (one unit's steps), under an inner bar named ``label`` on a terminal when the
        unit has at least :data:`STEP_BAR_FROM` steps; as it is otherwise."""
        if self._bar is None or total < STEP_BAR_FROM:
            return iterable
        from tqdm.auto import tqdm

        return tqdm(iterable, total=total, desc=f"{self.name}: {label}", unit="step", leave=False, file=self.stream)

    def wrap(self, iterable: Iterable) -> Iterator:
        """``iterable`` with :meth:`unit_done` after each of its items (the loop body) and
        :meth:`close` at its end: the form GenEML's loops take (``progress(loop)``)."""
        try:
            for item in iterable:
                yield item
                self.unit_done()
        finally:
            self.close()

    # -------------------------------------------------------------------------------- helpers --
    def _seconds(self) -> float:
        return float(self.elapsed())

    def _due(self) -> bool:
        if self.elapsed is None:  # no seconds to count: a line per unit
            return True
        now = self._seconds()
        if self._last_line is None:
            self._last_line = now
        return now - self._last_line >= self.every

    def _of(self) -> str:
        return f"{self.done}/{self.total}" if self.total is not None else str(self.done)

    def _line(self, where: str, shown: dict) -> None:
        parts = [where]
        if self.elapsed is not None:
            now = self._seconds()
            self._last_line = now
            parts.append(f"{now:.1f} s")
        parts += [f"{k} {_value(v)}" for k, v in shown.items()]
        self._write(f"{self.name}: " + ", ".join(parts))

    def _write(self, text: str) -> None:
        print(text, file=self.stream, flush=True)
