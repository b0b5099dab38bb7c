"""Resumable result rows for long experiment scripts: one CSV row per finished run.

Contract: :class:`RunLog` owns ``<folder>/<name>.csv`` and ``<name>.settings.json``. Rows are
appended (and flushed) as each run finishes; reopening the log with other settings raises
``SystemExit`` with the two settings side by side, before anything is written; a cut-off last line
(a run killed while writing) is dropped, and a file left without a whole line holds no runs;
``fresh=True`` discards what is there.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from ..files import atomic_write_text

__all__ = ["RunLog", "each_dataset_and_method"]

_clock = time.perf_counter  # the fit's seconds (a test replaces it)


class RunLog:
    """One CSV row per finished run, appended as soon as it is done, plus the settings it was made
    with (``<name>.settings.json``); reopening with other settings is refused.

    Parameters
    ----------
    folder : Path
        The results folder.
    name : str
        The log's file stem.
    columns : list of str
        The columns of every row.
    key : list of str
        The columns that name a run (``done`` and ``get`` take their values).
    settings : dict
        What makes rows comparable (JSON-serialisable, or turned to text).
    fresh : bool
        Discard stored rows and settings first.

    Attributes
    ----------
    rows : pandas.DataFrame
        The stored rows, in order.
    """

    def __init__(self, folder: Path, name: str, columns: list[str], key: list[str], settings: dict, fresh: bool) -> None:
        self.path, self.meta = folder / f"{name}.csv", folder / f"{name}.settings.json"
        self.columns, self.key = columns, key
        settings = json.loads(json.dumps(settings, default=str))
        folder.mkdir(parents=True, exist_ok=True)
        if fresh:
            self.path.unlink(missing_ok=True)
            self.meta.unlink(missing_ok=True)
        if self.path.is_file():
            stored = json.loads(self.meta.read_text()) if self.meta.is_file() else None
            if stored != settings:
                raise SystemExit(f"{self.path} holds runs made with other settings:\n  stored  {stored}\n  now     {settings}\n"
                                 f"rerun with the same options, another --out, or --fresh to discard them")
            text = self.path.read_text()
            if text and not text.endswith("\n"):
                # a run killed while writing left a cut-off last line: drop it
                text = text[: text.rfind("\n") + 1]
                atomic_write_text(self.path, text)
            if not text:  # not even the header was written whole: no runs, and the next row writes it
                self.path.unlink()
                self.rows = pd.DataFrame(columns=columns)
                return
            rows = pd.read_csv(self.path)
            missing = [c for c in columns if c not in rows.columns]
            if missing:
                raise SystemExit(f"{self.path} lacks the columns {missing}; use another --out or --fresh")
            # rows missing a key value are not runs; other columns may hold NaN (e.g. a solver
            # without iterations)
            self.rows = rows[columns].dropna(subset=key).reset_index(drop=True)
            atomic_write_text(self.path, self.rows.to_csv(index=False))
        else:
            self.rows = pd.DataFrame(columns=columns)
            atomic_write_text(self.meta, json.dumps(settings, indent=2) + "\n")

    def done(self, *key) -> bool:
        """Whether a row with these values of the key columns (compared as text) is stored."""
        if self.rows.empty:
            return False
        hit = np.ones(len(self.rows), dtype=bool)
        for col, value in zip(self.key, key):
            hit &= (self.rows[col].astype(str) == str(value)).to_numpy()
        return bool(hit.any())

    def get(self, *key) -> dict:
        """The first stored row with these key values, as a dict."""
        hit = np.ones(len(self.rows), dtype=bool)
        for col, value in zip(self.key, key):
            hit &= (self.rows[col].astype(str) == str(value)).to_numpy()
        return self.rows[hit].iloc[0].to_dict()

    def append(self, row: dict) -> None:
        """Write one finished run's row (a dict over ``columns``) to the CSV at once."""
        frame = pd.DataFrame([row], columns=self.columns)
        frame.to_csv(self.path, mode="a", header=not self.path.is_file() or self.path.stat().st_size == 0, index=False)
        self.rows = frame if self.rows.empty else pd.concat([self.rows, frame], ignore_index=True)


def each_dataset_and_method(log: RunLog, datasets, methods: dict, fit: Callable, score: Callable,
                            max_train: int | None = None) -> None:
    """One run per data set (a name :func:`mlgp.data.load` reads) and method (``{name: params}``)
    that ``log`` (keyed by ``dataset`` and ``method``) does not hold yet: ``fit(params, X, Y)`` on
    the first ``max_train`` training rows (all with None), timed, then the row
    ``{"dataset", "method", **score(estimator, dataset), "fit s"}`` appended at once."""
    import mlgp.data

    for name in datasets:
        ds = mlgp.data.load(name)
        X, Y = ds.train.X[:max_train], ds.train.Y[:max_train]
        for method, params in methods.items():
            if log.done(name, method):
                continue
            started = _clock()
            estimator = fit(params, X, Y)
            seconds = _clock() - started
            log.append({"dataset": name, "method": method, **score(estimator, ds), "fit s": seconds})
