"""The files of a comparison (:func:`mlgp.compare`): ``results.csv``, ``traces.csv``, ``traces.png``
and ``report.md``, each written atomically, and the table as text.

``traces.png`` has one panel per traced quantity present — test P@1, MLGPF's ELBO per training
point, GenEML's log posterior per training point — against seconds since the fit began, one line
per family; families without a trace appear in the P@1 panel as one marker at (fit seconds, P@1).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..files import atomic_write

__all__ = ["table_text", "write_report"]

_SHOWN = ["family", "P@1", "P@3", "P@5", "nDCG@3", "nDCG@5", "PSP@1", "PSP@3", "PSP@5", "fit_seconds",
          "predict_seconds", "peak_memory_mb"]
_PANELS = {"P@1": "test P@1 (%)", "elbo_per_point": "MLGPF ELBO per training point",
           "log_posterior_per_point": "GenEML log posterior per training point"}


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


def _figure(results: pd.DataFrame, traces: pd.DataFrame, path: Path) -> None:
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
    atomic_write(path, lambda f: fig.savefig(f, format="png", dpi=110))
    plt.close(fig)


def write_report(comparison, out: str | Path, title: str = "Comparison", command: str | None = None) -> dict:
    """Write the comparison's four files into the folder ``out`` (made if needed); returns their paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    results = comparison.results.drop(columns=[c for c in ("traceback",) if c in comparison.results])
    paths = {name: out / name for name in ("results.csv", "traces.csv", "traces.png", "report.md")}
    _write_text(paths["results.csv"], results.to_csv(index=False))
    _write_text(paths["traces.csv"], comparison.traces.to_csv(index=False))
    _figure(results, comparison.traces, paths["traces.png"])
    lines = [f"# {title}", ""]
    if command:
        lines += ["```bash", command, "```", ""]
    lines += [table_text(results, markdown=True), "", "Settings (parameters that differ from each class's defaults):", ""]
    lines += [f"- **{r['family']}** ({r['estimator']}): {r['settings'] or 'defaults'}" for _, r in results.iterrows()]
    lines += ["", "![traces](traces.png)", ""]
    _write_text(paths["report.md"], "\n".join(lines))
    return paths
