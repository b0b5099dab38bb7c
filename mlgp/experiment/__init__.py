"""The small helper every script in ``experiments/`` shares.

An :class:`Experiment` is a context manager that owns one results folder,
``experiments/results/<name>/`` (or ``<name>/quick/`` in ``--quick`` mode; the root can be moved
with the environment variable ``MLGP_RESULTS``). Inside it a script writes its tables (CSV and
Markdown) and figures (PNG); on exit the helper records the settings, seeds, package versions,
command line and wall time in ``run.json`` — also when the script fails, with the error. The MLGPF
training options the scripts share are :mod:`mlgp.experiment.mlgpf_options`.

Example
-------
>>> parser = argparse.ArgumentParser()
>>> add_argparse_args(parser)
>>> args = parser.parse_args()
>>> with Experiment("table7", quick=args.quick, settings={"epochs": 3}) as exp:
...     exp.table("p_at_k", frame)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import traceback
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from ..files import atomic_write, atomic_write_text
from ..recipes.settings import PAPER_BATCH_GROWTH
from .mlgpf_options import QUICK_SIZES, add_training_args, run_checkpoint_dir, training_options
from .runlog import RunLog, each_dataset_and_method

__all__ = [
    "PAPER_BATCH_GROWTH",
    "QUICK_SIZES",
    "Experiment",
    "RunLog",
    "each_dataset_and_method",
    "add_argparse_args",
    "add_count_options",
    "choice_list",
    "parse_dataset_method_args",
    "count_options",
    "add_training_args",
    "elbo_axis_limits",
    "plot_traces",
    "results_root",
    "run_checkpoint_dir",
    "source_revision",
    "training_options",
    "versions",
]


_REPO = Path(__file__).resolve().parents[2]
_PACKAGES = ("mlgp", "numpy", "scipy", "pandas", "scikit-learn", "tensorflow", "tensorflow-probability", "gpflow", "tf-keras")


def results_root() -> Path:
    """Folder that holds every script's results: ``$MLGP_RESULTS`` or ``experiments/results``."""
    env = os.environ.get("MLGP_RESULTS")
    return Path(env) if env else _REPO / "experiments" / "results"


def source_revision() -> dict[str, object] | None:
    """The git commit of the package's source and whether its tracked files differ from it.

    Read when a run starts (the code a run imports is the code of that moment); ``None`` outside a
    git checkout or without git.
    """
    import subprocess

    def git(*cmd: str) -> str:
        return subprocess.run(["git", "-C", str(_REPO), *cmd], capture_output=True, text=True, check=True, timeout=30).stdout.strip()

    try:
        commit = git("rev-parse", "HEAD")
        dirty = bool(git("status", "--porcelain", "--untracked-files=no", "--", "mlgp", "experiments"))
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "modified": dirty}


def versions() -> dict[str, str]:
    """Installed versions of the packages a result depends on (``"-"`` when absent)."""
    out = {"python": platform.python_version()}
    for pkg in _PACKAGES:
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "-"
    return out


def add_argparse_args(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the options every experiment script shares: ``--quick``, ``--seeds``, ``--out``."""
    parser.add_argument("--quick", action="store_true", help="tiny run for the CI smoke test")
    parser.add_argument(
        "--seeds",
        type=lambda s: [int(v) for v in s.split(",") if v.strip()],
        default=None,
        help="comma-separated seeds, e.g. 0,1,2 (default: the script's own)",
    )
    parser.add_argument("--out", type=Path, default=None, help="results folder (default: experiments/results/<script>)")
    return parser


def parse_dataset_method_args(description: str, datasets, methods, argv: list[str] | None = None,
                              default_methods=None) -> argparse.Namespace:
    """The options of a script that runs methods on data sets: :func:`add_argparse_args`'s,
    ``--fresh``, ``--datasets`` (comma-separated, default ``datasets``) and ``--method NAME``
    (repeatable, one of ``methods``; default ``default_methods``, else all), parsed from ``argv``."""
    default_methods = list(default_methods or methods)
    parser = add_argparse_args(argparse.ArgumentParser(description=description))
    parser.add_argument("--fresh", action="store_true", help="discard the stored runs and start over")
    parser.add_argument("--datasets", default=",".join(datasets), help="comma-separated data sets")
    others = [m for m in methods if m not in default_methods]
    parser.add_argument("--method", dest="methods", action="append", choices=list(methods), metavar="NAME",
                        help=f"a method to run, repeatable (default: {'; '.join(default_methods)}"
                             + (f"; the others: {'; '.join(others)})" if others else ")"))
    args = parser.parse_args(argv)
    args.methods = args.methods or default_methods
    return args


def choice_list(parser: argparse.ArgumentParser, text: str, choices, what: str) -> list[str]:
    """A comma-separated option's names, each one of ``choices`` (blank names dropped);
    ``parser.error`` names the unknown ones (``what``: e.g. "method") and the choices, or says that
    none was given."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in choices]
    if unknown or not names:
        parser.error(f"unknown {what}(s) {unknown}; choose from {', '.join(choices)}" if unknown else f"no {what} given")
    return names


def add_count_options(parser: argparse.ArgumentParser, full: dict[str, int], quick: dict[str, int]) -> None:
    """One integer option ``--<key>`` per key of ``full`` (the full run's value; ``quick``'s with
    ``--quick``); :func:`count_options` reads them back."""
    for key, value in full.items():
        parser.add_argument("--" + key.replace("_", "-"), type=int, default=None,
                            help=f"default {value} ({quick[key]} with --quick)")


def count_options(args: argparse.Namespace, full: dict[str, int], quick: dict[str, int]) -> dict[str, int]:
    """The options :func:`add_count_options` added: each as given, else the full or quick default."""
    defaults = quick if args.quick else full
    return {k: getattr(args, k) if getattr(args, k) is not None else defaults[k] for k in full}


def elbo_axis_limits(epoch: np.ndarray, elbo: np.ndarray) -> tuple[float, float, int] | None:
    """ELBO-axis limits that leave out the first tenth of the epochs, for :func:`plot_traces`.

    Parameters
    ----------
    epoch, elbo
        (T,) epoch numbers and ELBO values of one or more stacked traces.

    Returns
    -------
    (bottom, top, cut): the limits (5% margins) and the last epoch they ignore; or None with fewer
    than 10 epochs, when no finite value is left after the cut, or when nothing before the cut lies
    below it (no clipping needed).
    """
    epoch = np.asarray(epoch, dtype=float)
    elbo = np.asarray(elbo, dtype=float)
    if epoch.size == 0 or np.nanmax(epoch) < 10:
        return None
    cut = int(np.nanmax(epoch) // 10)
    late = elbo[(epoch > cut) & np.isfinite(elbo)]
    if late.size == 0:
        return None
    lo, hi = float(late.min()), float(np.nanmax(elbo))
    margin = 0.05 * max(hi - lo, abs(lo) * 1e-6)
    if not np.any(elbo[np.isfinite(elbo)] < lo - margin):
        return None
    return lo - margin, hi + margin, cut


def plot_traces(traces: pd.DataFrame, by: Sequence[str], title: str | None = None):
    """Figure of per-epoch training traces: the ELBO, and test P@1 beside it when recorded.

    Parameters
    ----------
    traces
        Rows of :func:`mlgp.training.fit` traces (``epoch``, ``elbo``, optionally ``P@1``) stacked
        with the columns ``by`` that name each run.
    by
        Columns whose values tell the runs apart (one line per run).
    title
        Figure title.

    Returns
    -------
    matplotlib.figure.Figure

    Notes
    -----
    The ELBO of the first epochs is often far below the rest (Bibtex: −120,000 after one epoch,
    −36,000 after 100), which would flatten every later difference into one line. With 10 or more
    epochs the ELBO axis therefore starts just below the lowest value after the first tenth of the
    epochs (:func:`elbo_axis_limits`), and the panel says so.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with_p1 = "P@1" in traces and traces["P@1"].notna().any()
    panels = 2 if with_p1 else 1
    fig, axes = plt.subplots(1, panels, figsize=(5.5 * panels, 3.6), squeeze=False)
    for key, g in traces.groupby(list(by)):
        key = key if isinstance(key, tuple) else (key,)
        label = ", ".join(f"{c} {v}" if c == "seed" else str(v) for c, v in zip(by, key))
        axes[0, 0].plot(g["epoch"], g["elbo"], label=label)
        if with_p1:
            axes[0, 1].plot(g["epoch"], g["P@1"], label=label)
    axes[0, 0].set_ylabel("ELBO estimate (mean over the epoch's steps)")
    limits = elbo_axis_limits(traces["epoch"].to_numpy(), traces["elbo"].to_numpy())
    if limits is not None:
        bottom, top, first = limits
        axes[0, 0].set_ylim(bottom, top)
        last = int(np.nanmax(traces["epoch"]))
        axes[0, 0].set_title(f"axis fitted to epochs {first + 1}–{last}; earlier ones run off the bottom", fontsize="small")
    if with_p1:
        axes[0, 1].set_ylabel("test P@1 (%)")
    for ax in axes[0]:
        ax.set_xlabel("epoch")
        ax.legend(fontsize="small")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


class Experiment:
    """Results folder, bookkeeping and printing for one experiment script.

    Parameters
    ----------
    name
        Script name; results go to ``results_root()/name`` (``.../name/quick`` when ``quick``).
    quick
        Whether this is the CI smoke-test mode.
    settings
        Everything the run was configured with; stored in ``run.json``.
    seeds
        Random seeds used.
    out
        Explicit results folder (overrides the default).
    """

    def __init__(
        self,
        name: str,
        quick: bool = False,
        settings: Mapping[str, Any] | None = None,
        seeds: Sequence[int] | None = None,
        out: Path | str | None = None,
    ) -> None:
        self.name = name
        self.quick = quick
        self.settings = dict(settings or {})
        self.seeds = list(seeds or [])
        base = Path(out) if out is not None else results_root() / name
        self.folder = base / "quick" if (quick and out is None) else base
        self.files: list[str] = []
        self.notes: dict[str, Any] = {}
        self._t0 = 0.0

    def __enter__(self) -> "Experiment":
        self.folder.mkdir(parents=True, exist_ok=True)
        self._t0 = time.perf_counter()
        self._started = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self._revision = source_revision()
        print(f"[{self.name}] results in {self.folder}" + (" (quick mode)" if self.quick else ""), flush=True)
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        wall = time.perf_counter() - self._t0
        record = {
            "script": self.name,
            "quick": self.quick,
            "started_utc": self._started,
            "wall_seconds": round(wall, 3),
            "settings": self.settings,
            "seeds": self.seeds,
            "versions": versions(),
            "source": self._revision,
            "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
            "command": [Path(sys.argv[0]).name, *sys.argv[1:]],
            "files": self.files,
            "notes": self.notes,
            "status": "ok" if exc_type is None else "failed",
        }
        if exc_type is not None:
            record["error"] = "".join(traceback.format_exception(exc_type, exc, tb))[-4000:]
        atomic_write_text(self.folder / "run.json", json.dumps(record, indent=2, default=str) + "\n")
        print(f"[{self.name}] wall time {wall:.1f} s; run record {self.folder / 'run.json'}", flush=True)
        return False

    def table(self, name: str, frame: pd.DataFrame, floatfmt: str = ".2f", show: bool = True) -> Path:
        """Write ``frame`` as ``<name>.csv`` and ``<name>.md`` and print it; returns the CSV path."""
        csv = self.folder / f"{name}.csv"
        atomic_write_text(csv, frame.to_csv(index=False))
        md = frame.to_markdown(index=False, floatfmt=floatfmt)
        atomic_write_text(self.folder / f"{name}.md", md + "\n")
        self.files += [f for f in (csv.name, f"{name}.md") if f not in self.files]
        if show:
            print(f"\n## {name}\n{md}\n", flush=True)
        return csv

    def figure(self, name: str, fig) -> Path:
        """Save a matplotlib figure as ``<name>.png`` (150 dpi) and close it."""
        import matplotlib.pyplot as plt

        path = self.folder / f"{name}.png"
        atomic_write(path, lambda f: fig.savefig(f, format="png", dpi=150, bbox_inches="tight"))
        plt.close(fig)
        if path.name not in self.files:
            self.files.append(path.name)
        print(f"[{self.name}] figure {path}", flush=True)
        return path

    def note(self, key: str, value: Any) -> None:
        """Record a free-form fact (e.g. a measured rate) in ``run.json``."""
        self.notes[key] = value
