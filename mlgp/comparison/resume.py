"""The run files of a comparison: ``out/runs/<family>.json``, one per finished family, from which a
later :func:`mlgp.compare` with the same ``out`` resumes.

A run file is a JSON object with exactly three fields: ``config`` (what the family was run with: its
name, class, every parameter's ``repr``, the budget, the seed and the fingerprint of the data),
``row`` (its row of the results, :mod:`mlgp.comparison.isolation`) and ``trace`` (its trace frame as
``{column: [values]}``, :mod:`mlgp.comparison.traces`). :func:`record_run` writes it atomically.
:func:`finished_run` takes an earlier result from it only when the config is the one asked for, the
family did not fail there, and the file is whole: every field of the row present with the type and
range it has when written (a name, seconds ≥ 0, percentages in [0, 100], probabilities and
calibration errors in [0, 1], reliability bins of equal lengths, no field it does not write) and the
trace's five columns of equal lengths and their types. Beside it, ``out/runs/<family>.rows.npz``
holds the family's per-test-row values (:mod:`mlgp.comparison.rows`), written before the run file;
an earlier result is taken only with its rows file whole too. Any other file, or a missing rows file,
is not used: :func:`finished_run` says why in one line and the family is fitted again.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from .isolation import KS
from .probabilities import KS as CALIBRATION_KS
from .probabilities import uniform_column
from .rows import BrokenRows, read_rows, save_rows
from .traces import TRACE_COLUMNS, empty_trace

__all__ = ["Earlier", "finished_run", "record_run", "run_file"]


class Earlier(NamedTuple):
    """What :func:`finished_run` found in a family's run file.

    Attributes
    ----------
    result : tuple of (dict, pandas.DataFrame, dict) or None
        The earlier row, trace and per-test-row values (measure → (N_test,) array) to take;
        ``None``: the family is fitted.
    problem : str or None
        Why the run file was not used, when it is broken (``None`` when there is no file, or it was
        made with other settings or data, or the family failed there).
    """

    result: tuple[dict, pd.DataFrame, dict[str, np.ndarray]] | None
    problem: str | None = None


class _Bad(Exception):
    """A run file that cannot be used; the message says why."""


def _show(value) -> str:
    """``repr(value)``, cut to 40 characters (a message stays one short line)."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class _Number(NamedTuple):
    """A finite number (not a bool) in ``[low, high]``; NaN or ``None`` where allowed."""

    low: float = -math.inf
    high: float = math.inf
    nan: bool = False
    none: bool = False

    def check(self, what: str, value) -> None:
        """Raise :class:`_Bad` naming ``what`` unless ``value`` is such a number."""
        if value is None and self.none:
            return
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _Bad(f"{what} is {_show(value)}, not a number")
        if math.isnan(value) and self.nan:
            return
        if not (math.isfinite(value) and self.low <= value <= self.high):
            raise _Bad(f"{what} is {_show(value)}, not a finite number {self.range()}")

    def range(self) -> str:
        """``"in [0, 100]"``, ``"≥ 0"``, ``"≤ 0"`` or ``""``."""
        if math.isfinite(self.low) and math.isfinite(self.high):
            return f"in [{self.low:g}, {self.high:g}]"
        if math.isfinite(self.low):
            return f"≥ {self.low:g}"
        return f"≤ {self.high:g}" if math.isfinite(self.high) else ""


_SECONDS = _Number(0.0)
_PERCENT = _Number(0.0, 100.0)
_FRACTION = _Number(0.0, 1.0)
#: The fields of every row that ran, beyond its name, class, settings and ``error``.
_TIMES = {"fit_seconds": _SECONDS, "predict_seconds": _SECONDS, "peak_memory_mb": _Number(0.0, none=True)}
#: The probability columns (:mod:`mlgp.comparison.probabilities`) of a family with probabilities.
_PROBABILITIES = {"proba_seconds": _SECONDS, "LPD": _Number(high=0.0), "NLL": _Number(0.0), "Brier": _FRACTION,
                  "ECE": _FRACTION, "MCE": _FRACTION, "microF1@0.5": _PERCENT, "macroF1@0.5": _PERCENT,
                  "microF1_tuned": _Number(0.0, 100.0, nan=True), "macroF1_tuned": _Number(0.0, 100.0, nan=True)}
#: The debiased ECE and its bootstrap interval: all three or none (small test splits only).
_INTERVAL = {"ECE_debiased": _Number(0.0, 1.0, nan=True), "ECE_low": _Number(0.0, 1.0, nan=True),
             "ECE_high": _Number(0.0, 1.0, nan=True)}
_BINS = ("mean_probability", "frequency", "count")


def run_file(out: Path, name: str) -> Path:
    """The run file of family ``name`` under the comparison's folder ``out``."""
    return out / "runs" / f"{name}.json"


def _fields(obj, names, what: str) -> None:
    """Raise :class:`_Bad` unless ``obj`` is a JSON object with exactly the fields ``names``."""
    if not isinstance(obj, dict):
        raise _Bad(f"{what} is {type(obj).__name__}, not an object")
    missing, extra = sorted(set(names) - set(obj)), sorted(set(obj) - set(names), key=str)
    if missing:
        raise _Bad(f"{what} lacks {', '.join(map(repr, missing))}")
    if extra:
        raise _Bad(f"{what} has the unexpected field(s) {', '.join(_show(e) for e in extra)}")


def _text(what: str, value, equal: str | None = None) -> None:
    """Raise :class:`_Bad` unless ``value`` is a text (equal to ``equal`` when given)."""
    if not isinstance(value, str) or (equal is not None and value != equal):
        raise _Bad(f"{what} is {_show(value)}, not " + (repr(equal) if equal is not None else "a text"))


def _reliability_bins(bins, expected: set[str]) -> None:
    """Check ``_reliability``: ``{entries: {"mean_probability": [...], "frequency": [...], "count": [...]}}``."""
    _fields(bins, expected, "row field '_reliability'")
    for entries, columns in bins.items():
        what = f"the reliability bins {entries!r}"
        _fields(columns, _BINS, what)
        if not all(isinstance(columns[c], list) for c in _BINS) or len({len(columns[c]) for c in _BINS}) != 1:
            raise _Bad(f"{what} are not lists of one length")
        for c in ("mean_probability", "frequency"):
            for value in columns[c]:
                _FRACTION.check(f"a {c} of {what}", value)
        for value in columns["count"]:
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise _Bad(f"a count of {what} is {_show(value)}, not a whole number ≥ 0")


def _expected_fields(row: dict, num_labels: int) -> dict:
    """Field → :class:`_Number` of the numbers a row written for ``num_labels`` labels has."""
    numbers = dict(_TIMES)
    numbers.update({f"{m}@{k}": _PERCENT for m in ("P", "nDCG", "PSP") for k in KS if k <= num_labels})
    if "proba_note" not in row:
        numbers.update(_PROBABILITIES)
        numbers.update({f"ECE@{k}": _FRACTION for k in CALIBRATION_KS if k <= num_labels})
        numbers.update({uniform_column(k): _FRACTION for k in CALIBRATION_KS if k <= num_labels})
        if any(field in row for field in _INTERVAL):
            numbers.update(_INTERVAL)
    return numbers


def _check_row(row: dict, name: str, estimator: str, num_labels: int) -> None:
    """Raise :class:`_Bad` unless ``row`` is the whole row of a finished run of ``name``."""
    numbers = _expected_fields(row, num_labels)
    texts = {"family", "estimator", "settings", "error", "_reliability"}
    texts |= {"proba_note"} if "proba_note" in row else set()
    texts |= {"chosen"} if "chosen" in row else set()
    _fields(row, texts | set(numbers) | ({"resumed"} if "resumed" in row else set()), "the row")
    _text("row field 'family'", row["family"], name)
    _text("row field 'estimator'", row["estimator"], estimator)
    _text("row field 'error'", row["error"], "")
    _text("row field 'settings'", row["settings"])
    for optional in ("proba_note", "chosen"):
        if optional in row:
            _text(f"row field {optional!r}", row[optional])
    if not isinstance(row.get("resumed", False), bool):
        raise _Bad(f"row field 'resumed' is {_show(row['resumed'])}, not true or false")
    for field, number in numbers.items():
        number.check(f"row field {field!r}", row[field])
    ks = [k for k in CALIBRATION_KS if k <= num_labels]
    expected_bins = set() if "proba_note" in row else {"all", *([f"top{max(ks)}"] if ks else [])}
    _reliability_bins(row["_reliability"], expected_bins)


def _trace_frame(trace, name: str) -> pd.DataFrame:
    """The trace frame saved as ``{column: [values]}``; :class:`_Bad` unless it is whole."""
    _fields(trace, TRACE_COLUMNS, "the trace")
    if not all(isinstance(trace[c], list) for c in TRACE_COLUMNS) or len({len(trace[c]) for c in TRACE_COLUMNS}) != 1:
        raise _Bad("the trace's columns are not lists of one length")
    for value in trace["family"]:
        _text("a trace 'family'", value, name)
    for value in trace["step"]:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not float(value).is_integer() or value < 0:
            raise _Bad(f"a trace 'step' is {_show(value)}, not a whole number ≥ 0")
    for value in trace["seconds"]:
        _SECONDS.check("a trace 'seconds'", value)
    for value in trace["quantity"]:
        if not isinstance(value, str) or not value:
            raise _Bad(f"a trace 'quantity' is {_show(value)}, not a name")
    for value in trace["value"]:
        _Number().check("a trace 'value'", value)
    if not trace["family"]:
        return empty_trace()
    return pd.DataFrame({"family": trace["family"], "step": pd.Series(trace["step"]).astype(int),
                         "seconds": pd.Series(trace["seconds"], dtype=float), "quantity": trace["quantity"],
                         "value": pd.Series(trace["value"], dtype=float)})


def _read(path: Path) -> dict:
    """The run file's JSON object with its three fields; :class:`_Bad` when it does not read."""
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as err:
        raise _Bad(f"it does not read as JSON ({type(err).__name__})") from None
    _fields(saved, ("config", "row", "trace"), "the file")
    return saved


def finished_run(out: Path | None, name: str, config: dict, num_labels: int, num_rows: int) -> Earlier:
    """An earlier run's ``(row, trace, rows)`` for ``name`` made with ``config``, if its run file and
    its rows file are whole.

    Parameters
    ----------
    out : Path or None
        The comparison's folder (``None``: nothing to resume).
    name : str
        The family.
    config : dict
        What it is run with now (:func:`mlgp.comparison.run._config`): the file's must be equal.
    num_labels : int
        Labels of the data (which P@k, nDCG@k, PSP@k and ECE@k the row has).
    num_rows : int
        Test rows of the data (the length of each per-row array).

    Returns
    -------
    Earlier
        The result to take, or ``None`` with the reason when the file is broken.
    """
    if out is None or not run_file(out, name).is_file():
        return Earlier(None)
    try:
        saved = _read(run_file(out, name))
        wanted = json.loads(json.dumps(config))
        _fields(saved["config"], wanted, "the config")
        if saved["config"] != wanted:  # other settings or data: fitted again
            return Earlier(None)
        row = saved["row"]
        if isinstance(row, dict) and isinstance(row.get("error"), str) and row["error"]:  # failed there
            return Earlier(None)
        if not isinstance(row, dict):
            raise _Bad(f"the row is {type(row).__name__}, not an object")
        _check_row(row, name, config["class"], num_labels)
        trace = _trace_frame(saved["trace"], name)
        rows = read_rows(out, name, row, num_rows, num_labels)
    except (_Bad, BrokenRows) as bad:
        return Earlier(None, str(bad))
    return Earlier((dict(row), trace, rows))


def record_run(out: Path, name: str, config: dict, row: dict, trace: pd.DataFrame,
            rows: dict[str, np.ndarray] | None = None) -> None:
    """Write family ``name``'s rows file (when it ran: ``rows``, measure → (N_test,) array), then its
    run file, each atomically: ``config``, ``row`` and ``trace`` (what :func:`finished_run` reads back
    on a later call)."""
    from ..files import atomic_write

    (out / "runs").mkdir(parents=True, exist_ok=True)
    if rows:
        save_rows(out, name, rows)
    text = json.dumps({"config": config, "row": row, "trace": trace.to_dict(orient="list")}, indent=1,
                      default=float).encode()
    atomic_write(run_file(out, name), lambda f: f.write(text))
