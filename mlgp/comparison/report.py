"""The files of a comparison (:func:`mlgp.compare`): ``results.csv``, ``traces.csv``, ``traces.png``,
``reliability.csv``, ``calibration.png`` and ``report.md``, each written atomically, and the tables
as text.

``traces.png`` has one panel per traced quantity present — test P@1, MLGPF's ELBO per training
point, GenEML's log posterior per training point — against seconds since the fit began, one line
per family; families without a trace appear in the P@1 panel as one marker at (fit seconds, P@1).
``calibration.png`` is the reliability diagram: the frequency of positives against the mean
predicted probability of each equal-mass bin, one line per family, over all (point, label) entries
and over each point's 5 most probable labels. ``report.md`` names the family with the best held-out
log predictive density and the one with the best P@1.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..files import atomic_write

__all__ = ["best_lines", "probability_table_text", "table_text", "write_report"]

#: the figures' resolution (dots per inch)
DPI = 110

_SHOWN = ["family", "P@1", "P@3", "P@5", "nDCG@3", "nDCG@5", "PSP@1", "PSP@3", "PSP@5", "fit_seconds",
          "predict_seconds", "peak_memory_mb"]
#: The probability table: column → decimals.
_PROBABILITY = {"LPD": 3, "NLL": 4, "Brier": 4, "ECE": 4, "ECE@1": 4, "ECE@5": 4, "microF1@0.5": 2,
                "macroF1@0.5": 2, "microF1_tuned": 2, "macroF1_tuned": 2}
_PANELS = {"P@1": "test P@1 (%)",
           "objective": "training objective per point\n(MLGPF: ELBO; GenEML: log posterior)"}


def probability_table_text(results: pd.DataFrame, markdown: bool = False) -> str:
    """The probability table: LPD (nats per test point), NLL per entry, Brier, ECE (with its
    bootstrap interval where there is one), ECE@k, micro/macro-F1 (percent) at 0.5 and tuned; a
    family without probabilities shows empty cells and the reason."""
    shown = pd.DataFrame({"family": results["family"]})
    for c, digits in _PROBABILITY.items():
        if c in results:
            shown[c] = results[c].map(lambda v, d=digits: "" if pd.isna(v) else f"{v:.{d}f}")
    if "ECE_low" in results and "ECE" in shown:
        ranges = [f" [{lo:.4f}, {hi:.4f}]" if pd.notna(lo) else "" for lo, hi in zip(results["ECE_low"], results["ECE_high"])]
        shown["ECE"] = [a + b if a else a for a, b in zip(shown["ECE"], ranges)]
    if "proba_note" in results:
        shown["note"] = results["proba_note"].fillna("")
    return shown.to_markdown(index=False) if markdown else shown.to_string(index=False)


def best_lines(results: pd.DataFrame) -> list[str]:
    """Which family has the best held-out log predictive density and which the best P@1, which are
    worse than the label prior, and what a family chose while fitting (``chosen``)."""
    lines = []
    for column, what, unit in (("LPD", "test log predictive density", " nats per test point"), ("P@1", "P@1", "")):
        if column in results and results[column].notna().any():
            best = results.loc[results[column].idxmax()]
            lines.append(f"- Best {what}: **{best['family']}** ({best[column]:.3f}{unit}).")
    if "NLL" in results and "family" in results and (results["family"] == "frequency").any():
        prior = results.loc[results["family"] == "frequency", "NLL"].iloc[0]
        worse = results.loc[results["NLL"] > prior, "family"].tolist() if pd.notna(prior) else []
        lines.append(f"- Worse than the label prior (NLL per entry above frequency's {prior:.4f}): "
                     + (", ".join(worse) if worse else "none") + ".")
    if "chosen" in results:
        lines += [f"- {row['family']} chose {row['chosen']}." for _, row in results.iterrows()
                  if isinstance(row["chosen"], str) and row["chosen"]]
    return lines


def table_text(results: pd.DataFrame, markdown: bool = False) -> str:
    """The results table (metrics to 2 decimals, seconds to 1, memory in MiB to 0), failed families
    with their error."""
    shown = results[[c for c in _SHOWN if c in results.columns]].copy()
    for c in shown.columns:
        if c != "family":
            digits = 0 if c == "peak_memory_mb" else 1 if c.endswith("seconds") else 2
            shown[c] = shown[c].map(lambda v, d=digits: "" if pd.isna(v) else f"{v:.{d}f}")
    if "error" in results:
        shown["error"] = results["error"].fillna("")
        if not shown["error"].any():
            shown = shown.drop(columns="error")
    shown = shown.rename(columns={"fit_seconds": "fit s", "predict_seconds": "predict s", "peak_memory_mb": "peak MiB"})
    return shown.to_markdown(index=False) if markdown else shown.to_string(index=False)


def _write_text(path: Path, text: str) -> None:
    data = text.encode()
    atomic_write(path, lambda f: f.write(data))


def _save(fig, path: Path) -> None:
    """Write ``fig`` as a PNG at :data:`DPI` (atomically) and close it."""
    import matplotlib.pyplot as plt

    atomic_write(path, lambda f: fig.savefig(f, format="png", dpi=DPI))
    plt.close(fig)


def _figure(results: pd.DataFrame, traces: pd.DataFrame, path: Path) -> None:
    _save(_traces_figure(results, traces), path)


def _traces_figure(results: pd.DataFrame, traces: pd.DataFrame):
    """One panel per traced quantity (P@1 always, with a square at (fit seconds, P@1) for each
    family without a trace), 5.2 × 4 inches each; returns the matplotlib figure."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    panels = [q for q in _PANELS if q == "P@1" or (len(traces) and (traces["quantity"] == q).any())]
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    color = {name: cycle[i % len(cycle)] for i, name in enumerate(results["family"])}  # one colour per family
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4), squeeze=False)
    for ax, quantity in zip(axes[0], panels):
        part = traces[traces["quantity"] == quantity] if len(traces) else traces
        for name, rows in part.groupby("family", sort=False):
            ax.plot(rows["seconds"], rows["value"], marker=".", markersize=3, label=name, color=color.get(name))
        if quantity == "P@1" and "P@1" in results:
            traced = set(part["family"]) if len(part) else set()
            for _, row in results.iterrows():
                if row["family"] not in traced and pd.notna(row.get("P@1")):
                    ax.scatter([row["fit_seconds"]], [row["P@1"]], marker="s", label=row["family"],
                               color=color.get(row["family"]))
        ax.set_xlabel("seconds since the fit began")
        ax.set_ylabel(_PANELS[quantity])
        ax.grid(alpha=0.3)
        if ax.has_data():
            ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def _calibration_figure(reliability: pd.DataFrame, path: Path) -> None:
    _save(_reliability_figure(reliability), path)


def _reliability_figure(reliability: pd.DataFrame):
    """Reliability curves of all entries and of each point's top 5, 10.4 × 4.6 inches; returns the
    matplotlib figure."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    panels = [("all", "all (point, label) entries"), ("top5", "each point's 5 most probable labels")]
    fig, axes = plt.subplots(1, 2, figsize=(10.4, 4.6), squeeze=False)
    for ax, (entries, title) in zip(axes[0], panels):
        ax.plot([0, 1], [0, 1], color="0.6", linestyle=":", linewidth=1)
        part = reliability[reliability["entries"] == entries]
        for name, rows in part.groupby("family", sort=False):
            ax.plot(rows["mean_probability"], rows["frequency"], marker="o", markersize=3, label=name)
        ax.set_xscale("symlog", linthresh=0.01)
        ax.set_yscale("symlog", linthresh=0.01)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_xlabel("mean predicted probability (equal-mass bins)")
        ax.set_ylabel("frequency of positives")
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
        if ax.has_data() and len(part):
            ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def write_report(comparison, out: str | Path, title: str = "Comparison", command: str | None = None) -> dict:
    """Write the comparison's six files into the folder ``out`` (made if needed); returns their paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    results = comparison.results.drop(columns=[c for c in ("traceback",) if c in comparison.results])
    names = ("results.csv", "traces.csv", "traces.png", "reliability.csv", "calibration.png", "report.md")
    paths = {name: out / name for name in names}
    _write_text(paths["results.csv"], results.to_csv(index=False))
    _write_text(paths["traces.csv"], comparison.traces.to_csv(index=False))
    _write_text(paths["reliability.csv"], comparison.reliability.to_csv(index=False))
    _figure(results, comparison.traces, paths["traces.png"])
    _calibration_figure(comparison.reliability, paths["calibration.png"])
    lines = [f"# {title}", ""]
    if command:
        lines += ["```bash", command, "```", ""]
    lines += [table_text(results, markdown=True), ""]
    lines += ["Probabilities on the test split (LPD: nats per test point; NLL, Brier: per (point, label) entry; "
              "ECE over 15 equal-mass bins of all entries, with a 95 % bootstrap interval over test rows on small "
              "test sets, ECE@k over each point's k most probable labels; F1 in percent at 0.5 and with thresholds "
              "chosen on the other half of the test rows):", "", probability_table_text(results, markdown=True), ""]
    lines += best_lines(results) + [""]
    lines += ["Settings (parameters that differ from each class's defaults):", ""]
    lines += [f"- **{r['family']}** ({r['estimator']}): {r['settings'] or 'defaults'}" for _, r in results.iterrows()]
    lines += ["", "![traces](traces.png)", "", "![calibration](calibration.png)", ""]
    _write_text(paths["report.md"], "\n".join(lines))
    return paths
