"""The files of a comparison (:func:`mlgp.compare`): ``results.csv``, ``traces.csv``, ``traces.png``,
``reliability.csv``, ``calibration.png`` and ``report.md``, each written atomically, and the tables
as text.

The figures are drawn by :mod:`mlgp.comparison.figures`. ``report.md`` holds the tables, the best
family per measure or the families tied within the test split's noise (a paired bootstrap over the
test rows, :mod:`mlgp.comparison.best`), what ECE's interval is, and, after a resumed call, which
rows come from earlier runs in ``runs/`` (the rows of every whole run there made on this split
with this seed and budget, whether or not this call named the family).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..files import atomic_write_text
from .best import best_lines
from .figures import DPI, reliability_figure, save, traces_figure
from .probabilities import KS as CALIBRATION_KS
from .probabilities import N_BINS, UNIFORM_BINS, uniform_column

__all__ = ["DPI", "best_lines", "probability_table_text", "table_text", "write_report"]

_SHOWN = ["family", "P@1", "P@3", "P@5", "nDCG@3", "nDCG@5", "PSP@1", "PSP@3", "PSP@5", "fit_seconds",
          "predict_seconds", "peak_memory_mb"]
#: The probability table: column → decimals.
_PROBABILITY = {"LPD": 3, "NLL": 4, "Brier": 4, "ECE": 4, "ECE debiased [95 % basic interval]": 4,
                **{f"ECE@{k}": 4 for k in CALIBRATION_KS}, **{uniform_column(k): 4 for k in CALIBRATION_KS},
                "microF1@0.5": 2, "macroF1@0.5": 2, "microF1_tuned": 2, "macroF1_tuned": 2}
#: The column of the debiased ECE and its interval in the probability table.
_DEBIASED = "ECE debiased [95 % basic interval]"
#: What the probability table's columns are, for ``report.md``.
PROBABILITY_NOTE = (
    f"Probabilities on the test split. LPD: nats per test point; NLL, Brier: per (point, label) entry. ECE: over "
    f"{N_BINS} equal-mass bins of all entries. ECE is biased upward (the bins' noise adds to |frequency − "
    "probability|), most on small test sets; where the test split has at most 10⁶ entries, '" + _DEBIASED + "' is "
    "ECE less the bias a bootstrap over test rows estimates (2·ECE − the mean of 200 resampled ECEs) with the 95 % "
    "basic bootstrap interval [2·ECE − q97.5, 2·ECE − q2.5] (q: quantiles of the resampled ECEs), both clipped at "
    "0: an interval of the debiased value, which may lie below ECE itself. "
    f"ECE@k: over each point's k most probable labels, in {N_BINS} equal-mass bins (ours); ECE@k ({UNIFORM_BINS} "
    f"uniform): the same entries in {UNIFORM_BINS} equal-width bins, the protocol of Ullah, Schultheis, Zhang and "
    "Babbar's study of top-k calibration (arXiv 2411.04276). F1 in percent at 0.5 and with thresholds chosen on "
    "the other half of the test rows.")


def probability_table_text(results: pd.DataFrame, markdown: bool = False) -> str:
    """The probability table: LPD (nats per test point), NLL per entry, Brier, ECE, the debiased ECE
    with its basic bootstrap interval where there is one (:data:`PROBABILITY_NOTE`), ECE@k in both
    binnings, micro/macro-F1 (percent) at 0.5 and tuned; a family without probabilities shows
    empty cells and the reason."""
    shown = pd.DataFrame({"family": results["family"]})
    for c, digits in _PROBABILITY.items():
        if c == _DEBIASED and "ECE_debiased" in results:
            shown[c] = [f"{d:.4f} [{lo:.4f}, {hi:.4f}]" if pd.notna(d) else ""
                        for d, lo, hi in zip(results["ECE_debiased"], results["ECE_low"], results["ECE_high"])]
        elif c in results:
            shown[c] = results[c].map(lambda v, d=digits: "" if pd.isna(v) else f"{v:.{d}f}")
    if "proba_note" in results:
        shown["note"] = results["proba_note"].fillna("")
    return shown.to_markdown(index=False) if markdown else shown.to_string(index=False)


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


def _figure(results: pd.DataFrame, traces: pd.DataFrame, title: str, path: Path) -> None:
    save(traces_figure(results, traces, title), path)


def _calibration_figure(reliability: pd.DataFrame, title: str, path: Path) -> None:
    save(reliability_figure(reliability, title), path)


_traces_figure = traces_figure
_reliability_figure = reliability_figure


def _earlier_lines(results: pd.DataFrame, earlier: list[str]) -> list[str]:
    """Which rows come from earlier runs in ``runs/`` (``resumed``), and which of those this call
    did not name (``earlier``)."""
    if "resumed" not in results or not results["resumed"].fillna(False).astype(bool).any():
        return []
    taken = results.loc[results["resumed"].fillna(False).astype(bool), "family"].tolist()
    line = (f"Rows taken from earlier runs in runs/ (same data, seed and budget; not fitted again): "
            f"{', '.join(taken)}.")
    if earlier:
        line += f" Not named by this command, kept because their runs are whole: {', '.join(earlier)}."
    return [line, ""]


def write_report(comparison, out: str | Path, title: str = "Comparison", command: str | None = None) -> dict:
    """Write the comparison's six files into the folder ``out`` (made if needed); returns their paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    results = comparison.results.drop(columns=[c for c in ("traceback",) if c in comparison.results])
    names = ("results.csv", "traces.csv", "traces.png", "reliability.csv", "calibration.png", "report.md")
    paths = {name: out / name for name in names}
    atomic_write_text(paths["results.csv"], results.to_csv(index=False))
    atomic_write_text(paths["traces.csv"], comparison.traces.to_csv(index=False))
    atomic_write_text(paths["reliability.csv"], comparison.reliability.to_csv(index=False))
    _figure(results, comparison.traces, title, paths["traces.png"])
    _calibration_figure(comparison.reliability, title, paths["calibration.png"])
    lines = [f"# {title}", ""]
    if command:
        lines += ["```bash", command, "```", ""]
    lines += _earlier_lines(results, list(getattr(comparison, "earlier", None) or []))
    lines += [table_text(results, markdown=True), ""]
    lines += [PROBABILITY_NOTE, "", probability_table_text(results, markdown=True), ""]
    lines += best_lines(results, comparison.rows) + [""]
    lines += ["Settings (parameters that differ from each class's defaults):", ""]
    lines += [f"- **{r['family']}** ({r['estimator']}): {r['settings'] or 'defaults'}" for _, r in results.iterrows()]
    lines += ["", "![traces](traces.png)", "", "![calibration](calibration.png)", ""]
    atomic_write_text(paths["report.md"], "\n".join(lines))
    return paths
