"""The summary files of a comparison over many data sets (:func:`mlgp.comparison.compare_many`),
each written atomically into its folder, and its tables as text.

Files: ``summary.csv`` (long form: data set, family, P@1, P@5, LPD, NLL, ECE, error; a data set that
could not be read is one row with an empty family and its reason), ``ranks.csv`` (each family's mean
rank over the data sets by P@1 and by LPD), ``friedman.csv`` (per measure: the Friedman test, its
Iman–Davenport form and the Nemenyi critical difference), ``bootstrap.csv`` (per data set and
measure, each family's difference to the best family and its paired bootstrap interval),
``cd_P1.png`` and ``cd_LPD.png`` (the critical-difference diagrams, :mod:`mlgp.comparison.cd_diagram`;
only for a measure by which at least two families are ranked) and ``summary.md`` (all of these as
tables, failed cells showing the error).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..files import atomic_write_text
from .cd_diagram import write_cd_diagram

__all__ = ["bootstrap_text", "figure_name", "ranks_text", "tests_text", "write_summary"]

#: Decimals of each summary column in the tables.
_DIGITS = {"P@1": 2, "P@5": 2, "LPD": 3, "NLL": 4, "ECE": 4}
_UNITS = {"P@1": "P@1 (%)", "P@5": "P@5 (%)", "LPD": "LPD (nats per test point)", "NLL": "NLL per (point, label) entry",
          "ECE": "ECE (all entries, 15 equal-mass bins)"}
_RULE = ("Rank 1 = best; tied families share the mean of their ranks; a family that failed on a data set ranks "
         "last there (tied with the others that failed); a family without probabilities is not ranked by LPD; "
         "a data set on which every family failed is left out.")


def figure_name(measure: str) -> str:
    """The file of the critical-difference diagram of ``measure``: ``cd_P1.png``, ``cd_LPD.png``."""
    return "cd_" + "".join(c for c in measure if c.isalnum()) + ".png"


def _fmt(value: float, digits: int) -> str:
    return "" if pd.isna(value) else f"{value:.{digits}f}"


def _measure_table(summary: pd.DataFrame, measure: str, markdown: bool) -> str:
    """Data sets × families of one measure; a failed cell says ``failed: <error>``."""
    ran = summary[summary["family"] != ""]
    cells = [_fmt(v, _DIGITS[measure]) if not e else "failed: " + (e if len(e) <= 60 else e[:57] + "...")
             for v, e in zip(ran[measure], ran["error"])]
    shown = ran.assign(cell=cells).pivot(index="dataset", columns="family", values="cell")
    shown = shown.reindex(index=list(dict.fromkeys(ran["dataset"])), columns=list(dict.fromkeys(ran["family"])))
    shown = shown.reset_index()
    return shown.to_markdown(index=False, disable_numparse=True) if markdown else shown.to_string(index=False)


def ranks_text(many, markdown: bool = False) -> str:
    """The mean ranks (family × measure), best by the first measure first."""
    shown = many.ranks.sort_values(list(many.ranks.columns), kind="stable", na_position="last")
    shown = shown.apply(lambda c: c.map(lambda v: _fmt(v, 2))).reset_index()
    return shown.to_markdown(index=False, disable_numparse=True) if markdown else shown.to_string(index=False)


def tests_text(many, markdown: bool = False) -> str:
    """Per measure: k, N, the Friedman χ² and p, the Iman–Davenport F and p, and the critical difference."""
    t = many.tests
    shown = pd.DataFrame({"measure": t["measure"], "families": t["families"], "data sets": t["datasets"],
                          "Friedman chi2": t["chi2"].map(lambda v: _fmt(v, 3)),
                          "p": t["p_value"].map(lambda v: "" if pd.isna(v) else f"{v:.3g}"),
                          "Iman-Davenport F": t["iman_davenport"].map(lambda v: _fmt(v, 3)),
                          "F p": t["iman_davenport_p"].map(lambda v: "" if pd.isna(v) else f"{v:.3g}"),
                          "q_alpha": t["q_alpha"].map(lambda v: _fmt(v, 3)),
                          "CD": t["critical_difference"].map(lambda v: _fmt(v, 3))})
    return shown.to_markdown(index=False, disable_numparse=True) if markdown else shown.to_string(index=False)


def bootstrap_text(many, markdown: bool = False) -> str:
    """Per data set and measure, each family's difference to the best family, its interval and
    whether the interval excludes 0."""
    b = many.bootstrap
    if not len(b):
        return "(no family has per-row values)"
    digits = b["measure"].map(lambda m: _DIGITS.get(m, 3))
    shown = pd.DataFrame({
        "data set": b["dataset"], "measure": b["measure"], "family": b["family"], "best": b["best"],
        "difference": [_fmt(v, d) for v, d in zip(b["difference"], digits)],
        "95 % interval": [f"[{_fmt(lo, d)}, {_fmt(hi, d)}]" for lo, hi, d in zip(b["low"], b["high"], digits)],
        "beyond noise": np.where(b["family"] == b["best"], "(best)", np.where(b["excludes_zero"], "yes", "no"))})
    return shown.to_markdown(index=False, disable_numparse=True) if markdown else shown.to_string(index=False)


def write_summary(many, out: str | Path, command: str | None = None) -> dict[str, Path]:
    """Write the summary files of ``many`` (a :class:`mlgp.comparison.many.ManyComparison`) into the
    folder ``out`` (made if needed); returns their paths by name."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = {name: out / name for name in ("summary.csv", "ranks.csv", "friedman.csv", "bootstrap.csv")}
    atomic_write_text(paths["summary.csv"], many.summary.to_csv(index=False))
    atomic_write_text(paths["ranks.csv"], many.ranks.reset_index().to_csv(index=False))
    atomic_write_text(paths["friedman.csv"], many.tests.to_csv(index=False))
    atomic_write_text(paths["bootstrap.csv"], many.bootstrap.to_csv(index=False))
    figures = {}
    for _, test in many.tests.iterrows():
        measure = test["measure"]
        if test["families"] >= 2:
            name = figure_name(measure)
            title = f"{measure}: mean rank over {test['datasets']} data set(s), Nemenyi CD at alpha = {test['alpha']:g}"
            paths[name] = write_cd_diagram(out / name, many.ranks[measure].dropna(), test["critical_difference"], title)
            figures[measure] = name
    paths["summary.md"] = out / "summary.md"
    atomic_write_text(paths["summary.md"], _markdown(many, figures, command))
    return paths


def _markdown(many, figures: dict[str, str], command: str | None) -> str:
    """The text of ``summary.md``."""
    names = list(many.comparisons)
    lines = [f"# mlgp compare: {len(names)} data set(s)", ""]
    if command:
        lines += ["```bash", command, "```", ""]
    lines += [f"Data sets compared: {', '.join(names) or 'none'} (each in its own folder, with its report.md)."]
    if many.skipped:
        lines += ["", "Data sets skipped (they could not be read):", ""]
        lines += [f"- **{name}**: {why}" for name, why in many.skipped.items()]
    lines += [""]
    if names:
        for measure in _DIGITS:
            lines += [f"## {_UNITS[measure]}", "", _measure_table(many.summary, measure, markdown=True), ""]
    lines += ["## Mean ranks", "", _RULE, "", ranks_text(many, markdown=True), "",
              "## Friedman test and Nemenyi critical difference", "",
              "Friedman's chi-square (tie-corrected) and its Iman-Davenport F over the ranks of each data set; two "
              "families differ significantly by the Nemenyi test when their mean ranks differ by at least CD "
              "(Demšar 2006).", "", tests_text(many, markdown=True), ""]
    for measure, name in figures.items():
        lines += [f"![critical differences by {measure}]({name})", ""]
    lines += ["## Differences from the best family on each data set", "",
              "Paired bootstrap over the test rows (the same resampled rows for every family): each family's mean "
              "minus the best family's (P@1 in percentage points, LPD in nats per test point), a 95 % percentile "
              "interval, and whether it excludes 0 (a difference larger than the test split's noise).", "",
              bootstrap_text(many, markdown=True), ""]
    return "\n".join(lines)
