"""Which family of one comparison is best by each measure, beyond the test split's noise.

Contract: for each measure of :data:`MEASURES` that at least one family has (P@k, nDCG@k, PSP@k in
percent, LPD in nats per test point), :func:`best_table` takes the families' per-test-row values
(:mod:`mlgp.comparison.rows`) and runs the paired bootstrap of
:func:`mlgp.comparison.ranks.paired_bootstrap`: the family with the highest mean leads, and every
other family's difference from it gets a percentile interval over the same resampled test rows. The
leader is named *best* only when every other family's interval lies below 0; otherwise the families
whose interval includes 0 tie with it (each interval at its own level, not corrected for the number
of families). A family with a value but no per-row values of that measure is listed as untested.
:func:`best_lines` words the table for ``report.md`` and the command's output.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd

from .ranks import paired_bootstrap

__all__ = ["MEASURES", "best_lines", "best_table", "method_sentence"]

#: The measures judged, in the order of the report (higher is better for each).
MEASURES = tuple(f"{m}@{k}" for m in ("P", "nDCG", "PSP") for k in (1, 3, 5)) + ("LPD",)
#: Bootstrap resamples of the test rows.
N_RESAMPLES = 1000


def best_table(results: pd.DataFrame, rows: Mapping[str, Mapping[str, np.ndarray]] | None, *,
               n_resamples: int = N_RESAMPLES, level: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """The best family, or the tied set, per measure.

    Parameters
    ----------
    results : pandas.DataFrame
        :attr:`mlgp.comparison.Comparison.results`.
    rows : mapping of str to mapping of str to numpy.ndarray, or None
        Family → measure → (N_test,) values (:attr:`mlgp.comparison.Comparison.rows`).
    n_resamples, level, seed
        As :func:`mlgp.comparison.ranks.paired_bootstrap`.

    Returns
    -------
    pandas.DataFrame
        One row per measure: ``measure``, ``leader`` (highest value), ``families`` (the leader and
        those tied with it, best first; the leader alone when it is best beyond the noise),
        ``values`` (their values in the results), ``tested`` (whether the bootstrap ran: two or more
        families with per-row values), ``untested`` (families with a value but no per-row values)
        and ``num_rows`` (N_test).
    """
    rows = rows or {}
    ran = results[results["error"].fillna("") == ""] if "error" in results else results
    out = []
    for measure in MEASURES:
        if measure not in ran or not ran[measure].notna().any():
            continue
        have = ran[ran[measure].notna()].set_index("family")[measure]
        values = {f: rows[f][measure] for f in have.index if measure in rows.get(f, {})}
        untested = [f for f in have.index if f not in values]
        if len(values) >= 2:
            test = paired_bootstrap(values, n_resamples=n_resamples, level=level, seed=seed)
            tied = test[~test["excludes_zero"]].sort_values("mean", ascending=False, kind="stable")
            leader, families, num_rows = test["best"].iloc[0], list(tied["family"]), len(next(iter(values.values())))
        else:
            leader = have.idxmax()
            families, num_rows = [leader], len(next(iter(values.values()))) if values else 0
        out.append({"measure": measure, "leader": leader, "families": families,
                    "values": [float(have[f]) for f in families], "tested": len(values) >= 2,
                    "untested": untested, "num_rows": num_rows})
    return pd.DataFrame(out, columns=["measure", "leader", "families", "values", "tested", "untested", "num_rows"])


def method_sentence(table: pd.DataFrame, n_resamples: int = N_RESAMPLES, level: float = 0.95) -> str:
    """The sentence that says how :func:`best_table` decided."""
    n = int(table["num_rows"].max()) if len(table) else 0
    return (f"Best family per measure, by a paired bootstrap over the {n} test rows ({n_resamples} resamples of the "
            f"rows, the same for every family): a family is named best only when every other family's difference "
            f"from it has a {100 * level:g} % percentile interval below 0; otherwise the families whose interval "
            f"includes 0 are listed as tied with it (each interval at {100 * level:g} %, not corrected for the number "
            "of families). P@k, nDCG@k and PSP@k in percent, LPD in nats per test point.")


def _value(measure: str, value: float) -> str:
    return f"{value:.3f}" if measure == "LPD" else f"{value:.2f}"


def best_lines(results: pd.DataFrame, rows: Mapping[str, Mapping[str, np.ndarray]] | None = None, *,
               n_resamples: int = N_RESAMPLES, level: float = 0.95, seed: int = 0) -> list[str]:
    """The test sentence and one line per measure: the best family beyond the noise, or the tied
    families; then which families are worse than the label prior and what a family chose while
    fitting (``chosen``)."""
    table = best_table(results, rows, n_resamples=n_resamples, level=level, seed=seed)
    lines = [method_sentence(table, n_resamples, level), ""] if table["tested"].any() else []
    for _, t in table.iterrows():
        shown = ", ".join(f"{f} {_value(t['measure'], v)}" for f, v in zip(t["families"], t["values"]))
        if not t["tested"]:
            line = f"- {t['measure']}: highest **{t['leader']}** ({shown.split(' ', 1)[1]}); not tested (no per-row values)"
        elif len(t["families"]) == 1:
            line = f"- {t['measure']}: best **{t['leader']}** ({shown.split(' ', 1)[1]}), beyond the test split's noise"
        else:
            line = f"- {t['measure']}: no single best; tied within the test split's noise: {shown}"
        lines.append(line + (f" (untested: {', '.join(t['untested'])})." if t["untested"] and t["tested"] else "."))
    if "NLL" in results and "family" in results and (results["family"] == "frequency").any():
        prior = results.loc[results["family"] == "frequency", "NLL"].iloc[0]
        worse = results.loc[results["NLL"] > prior, "family"].tolist() if pd.notna(prior) else []
        lines.append(f"- Worse than the label prior (NLL per entry above frequency's {prior:.4f}): "
                     + (", ".join(worse) if worse else "none") + ".")
    if "chosen" in results:
        lines += [f"- {row['family']} chose {row['chosen']}." for _, row in results.iterrows()
                  if isinstance(row["chosen"], str) and row["chosen"]]
    return lines
