"""The two figures of a comparison's report (:mod:`mlgp.comparison.report`), as matplotlib figures.

``traces.png`` (:func:`traces_figure`): a panel of test P@1 against seconds since the fit began, one
line per family that traced it and one square at (fit seconds, P@1) per family that did not; then
one panel per family that traced a training objective (MLGPF: ELBO per training point; GenEML: log
posterior per training point), each on its own axis — the objectives of two families differ in kind
and scale, and on one axis both would look flat. At most three panels a row, 5.2 × 4 inches each.

``calibration.png`` (:func:`reliability_figure`): the reliability diagram, the frequency of
positives against the mean predicted probability of each equal-mass bin, one line per family, over
all (point, label) entries and over each point's 5 most probable labels, 10.4 × 4.6 inches. Each
panel's axes cover the populated range of its bins (:func:`axis_range`), the same range on both axes
so that the diagonal is perfect calibration: linear, or logarithmic where the probabilities span
more than :data:`LOG_SPAN` (a factor), as all entries of a set with many labels do.

Both carry the report's title, which names the data set.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from ..files import atomic_write

__all__ = ["DPI", "LOG_SPAN", "axis_range", "reliability_figure", "save", "traces_figure"]

#: The figures' resolution (dots per inch).
DPI = 110
#: A panel whose positive values span more than this factor gets logarithmic axes.
LOG_SPAN = 20.0
#: What each family's training objective is, for its panel's label.
_OBJECTIVES = {"mlgpf": "ELBO", "geneml": "log posterior"}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def save(fig, path: Path) -> None:
    """Write ``fig`` as a PNG at :data:`DPI` (atomically) and close it."""
    atomic_write(path, lambda f: fig.savefig(f, format="png", dpi=DPI))
    _pyplot().close(fig)


def objective_label(family: str) -> str:
    """The y label of a family's objective panel: ``"mlgpf: ELBO per training point"``."""
    return f"{family}: {_OBJECTIVES.get(family, 'training objective')} per training point"


def traces_figure(results: pd.DataFrame, traces: pd.DataFrame, title: str = ""):
    """The figure of ``traces.png`` (module docstring); returns the matplotlib figure."""
    plt = _pyplot()
    objective = traces[traces["quantity"] == "objective"] if len(traces) else traces
    families = list(dict.fromkeys(objective["family"])) if len(objective) else []
    n = 1 + len(families)
    cols = min(3, n)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 4 * rows), squeeze=False, layout="constrained")
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    color = {name: cycle[i % len(cycle)] for i, name in enumerate(results["family"])}  # one colour per family
    p1 = axes.flat[0]
    part = traces[traces["quantity"] == "P@1"] if len(traces) else traces
    for name, shown in part.groupby("family", sort=False):
        p1.plot(shown["seconds"], shown["value"], marker=".", markersize=3, label=name, color=color.get(name))
    if "P@1" in results:
        traced = set(part["family"]) if len(part) else set()
        for _, row in results.iterrows():
            if row["family"] not in traced and pd.notna(row.get("P@1")):
                p1.scatter([row["fit_seconds"]], [row["P@1"]], marker="s", label=row["family"],
                           color=color.get(row["family"]))
    p1.set_ylabel("test P@1 (%)")
    for ax, name in zip(axes.flat[1:], families):
        shown = objective[objective["family"] == name]
        ax.plot(shown["seconds"], shown["value"], marker=".", markersize=3, label=name, color=color.get(name))
        ax.set_ylabel(objective_label(name))
        ax.set_title(name, fontsize=10)
    for ax in axes.flat[:n]:
        ax.set_xlabel("seconds since the fit began")
        ax.grid(alpha=0.3)
        if ax.has_data() and ax is p1:
            ax.legend(fontsize=8)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    if title:
        fig.suptitle(f"{title}: test P@1 and training objectives", fontsize=11)
    return fig


def axis_range(values: np.ndarray) -> tuple[str, float, float]:
    """The scale (``"linear"`` or ``"log"``) and limits of a reliability panel holding ``values``
    (mean probabilities and frequencies, in [0, 1]): the populated range with a margin, logarithmic
    when the positive values span more than :data:`LOG_SPAN`; ``("linear", 0, 1)`` with no values."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return "linear", 0.0, 1.0
    positive = v[v > 0]
    if positive.size and positive.max() > LOG_SPAN * positive.min():
        return "log", float(positive.min()) / 1.5, min(1.0, float(positive.max()) * 1.5)
    lo, hi = float(v.min()), float(v.max())
    pad = max(0.05 * (hi - lo), 0.02)
    return "linear", max(0.0, lo - pad), min(1.0, hi + pad)


def reliability_figure(reliability: pd.DataFrame, title: str = ""):
    """The figure of ``calibration.png`` (module docstring); returns the matplotlib figure."""
    plt = _pyplot()
    panels = [("all", "all (point, label) entries"), ("top5", "each point's 5 most probable labels")]
    fig, axes = plt.subplots(1, 2, figsize=(10.4, 4.6), squeeze=False, layout="constrained")
    for ax, (entries, heading) in zip(axes[0], panels):
        part = reliability[reliability["entries"] == entries]
        scale, lo, hi = axis_range(np.concatenate([part["mean_probability"], part["frequency"]]))
        ax.plot([lo, hi], [lo, hi], color="0.6", linestyle=":", linewidth=1)
        for name, rows in part.groupby("family", sort=False):
            y = rows["frequency"].to_numpy(dtype=float)
            ax.plot(rows["mean_probability"], np.maximum(y, lo) if scale == "log" else y, marker="o",
                    markersize=3, label=name)
        ax.set_xscale(scale)
        ax.set_yscale(scale)
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        ax.set_xlabel("mean predicted probability (equal-mass bins)" + (", log scale" if scale == "log" else ""))
        ax.set_ylabel("frequency of positives" + (" (log; 0 drawn at the bottom)" if scale == "log" else ""))
        ax.set_title(heading, fontsize=10)
        ax.grid(alpha=0.3)
        if ax.has_data() and len(part):
            ax.legend(fontsize=7)
    if title:
        fig.suptitle(f"{title}: reliability of the predicted probabilities", fontsize=11)
    return fig
