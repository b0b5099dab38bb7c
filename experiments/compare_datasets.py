"""Defaults that hold on any data set (issue 63): every family at its defaults on every data set.

Every family of ``--models`` (default: all ten) at its defaults on each data set of the data home,
and the issue's targets computed from the summary over the data sets.

The comparison is :func:`mlgp.comparison.compare_many` (what ``mlgp compare --dataset a,b,c|all``
runs): each data set compared into ``<out>/<dataset>/`` (each family in its own process, within
``--budget`` wall seconds where it has a budget; resumable per family and data set), and the
summary files (``summary.csv``, ``ranks.csv``, ``friedman.csv``, ``bootstrap.csv``, the CD
diagrams) beside them. From the summary, for the family of ``--family`` (default MLGPF):

- per data set its test P@1 minus the best family's (target: within 2 points) and its test LPD's
  shortfall from the best, relative to the best's size (target: within 1 %);
- the (family, data set) cells whose NLL per entry is worse than the label prior's (the
  ``frequency`` family's), how many and which;
- each family's mean rank by P@1 and by LPD (1 = best; a failed family ranks last);
- its ECE on the data sets with at least 1,000 test rows and its ECE@5 on Bibtex, Enron, Delicious;
- the total seconds of every cell (fit, predict and scoring; resumed cells with their recorded
  seconds).

Writes ``targets`` (one row per target), ``targets_by_dataset``, ``worse_than_prior`` and
``mean_ranks``. Default data sets: every one of the data home, in :data:`ORDER` (others after).

    python experiments/compare_datasets.py                               # all data sets, 10 families, 60 s
    python experiments/compare_datasets.py --datasets emotions,enron --models frequency,mlknn,mlgpf
    python experiments/compare_datasets.py --quick   # two tiny synthetic data sets, 4 fast families
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from mlgp.comparison import ManyComparison

#: The data sets in the order of the comparison (smallest first), where the data home has them.
ORDER = ("flags", "foodtruck", "emotions", "birds", "genbase", "cal500", "yeast", "scene", "enron", "bibtex",
         "delicious")
PRIOR = "frequency"  # the label prior's family
P1_WITHIN = 2.0  # points of P@1 below the best
LPD_WITHIN = 1.0  # percent of the best LPD's size
ECE_MIN_ROWS = 1000  # test rows from which a data set's ECE is a target
ECE5_DATASETS = ("bibtex", "enron", "delicious")
SECONDS = ("fit_seconds", "predict_seconds", "proba_seconds")
#: --quick: the fast families on two tiny data sets; ML-kNN with its own probabilities, which are worse
#: than the label prior's there, so that every table has rows.
QUICK = dict(models=["frequency", "fastxml", "mlknn", "lspc"], family="fastxml", budget=5.0,
             settings={"fastxml": {"n_estimators": 3, "n_jobs": 1}, "mlknn": {"calibration": None}},
             sizes={"tiny-a": 80, "tiny-b": 60})


def dataset_order(present: list[str]) -> list[str]:
    """The data sets of the data home in :data:`ORDER`, those not in it after (sorted)."""
    return [d for d in ORDER if d in present] + sorted(set(present) - set(ORDER))


def targets_frame(many: ManyComparison) -> pd.DataFrame:
    """``many.summary`` (a :class:`~mlgp.comparison.ManyComparison`'s) with, per cell, ``ECE@5``,
    ``seconds`` (fit + predict + scoring) and the data set's ``test rows``."""
    extra = []
    for name, result in many.comparisons.items():
        counts = [len(r["P@1"]) for r in result.rows.values() if "P@1" in r]
        for _, r in result.results.iterrows():
            failed = isinstance(r.get("error"), str) and bool(r["error"])
            ece5 = r.get("ECE@5", np.nan)
            extra.append({"dataset": name, "family": r["family"],
                          "ECE@5": np.nan if failed or pd.isna(ece5) else float(ece5),
                          "seconds": float(sum(r[c] for c in SECONDS if c in r and pd.notna(r[c]))),
                          "test rows": counts[0] if counts else np.nan})
    extra = pd.DataFrame(extra, columns=["dataset", "family", "ECE@5", "seconds", "test rows"])
    return many.summary.merge(extra, on=["dataset", "family"], how="left")


def _ran(summary: pd.DataFrame) -> pd.DataFrame:
    """The cells of families (a skipped data set's row has an empty family)."""
    return summary[summary["family"] != ""]


def _against_best(summary: pd.DataFrame, measure: str, family: str) -> pd.DataFrame:
    """Per data set: ``family``'s ``measure``, the best value of any family and who has it (ties:
    every one, comma-separated)."""
    rows = []
    for dataset, cells in _ran(summary).groupby("dataset", sort=False):
        values = cells.set_index("family")[measure]
        best = values.max()  # NaN (failed, no probabilities) left out
        leaders = ", ".join(values.index[values == best]) if pd.notna(best) else ""
        rows.append({"dataset": dataset, measure: values.get(family, np.nan), f"best {measure}": best,
                     f"best by {measure}": leaders})
    return pd.DataFrame(rows, columns=["dataset", measure, f"best {measure}", f"best by {measure}"])


def p1_gaps(summary: pd.DataFrame, family: str = "mlgpf", within: float = P1_WITHIN) -> pd.DataFrame:
    """Per data set ``family``'s P@1 minus the best family's, in points, and whether it is at most
    ``within`` below (not when the family has no P@1 there)."""
    table = _against_best(summary, "P@1", family)
    table["P@1 − best"] = table["P@1"] - table["best P@1"]
    table[f"P@1 within {within:g}"] = table["P@1 − best"] >= -within
    return table


def lpd_gaps(summary: pd.DataFrame, family: str = "mlgpf", within: float = LPD_WITHIN) -> pd.DataFrame:
    """Per data set how far ``family``'s test LPD falls short of the best family's, in percent of the
    best's size, and whether by at most ``within`` percent (not when the family has no LPD there)."""
    table = _against_best(summary, "LPD", family)
    short = table["best LPD"] - table["LPD"]
    size = table["best LPD"].abs()
    table["LPD short %"] = np.where(short == 0, 0.0, 100 * short / size.where(size > 0))
    table[f"LPD within {within:g} %"] = table["LPD short %"] <= within
    return table


def worse_than_prior(summary: pd.DataFrame, prior: str = PRIOR) -> pd.DataFrame:
    """The (data set, family) cells whose NLL per entry is above the ``prior`` family's on that data
    set (cells without an NLL, and data sets without the prior's, are not compared)."""
    cells = _ran(summary)
    base = cells[cells["family"] == prior].set_index("dataset")["NLL"].rename("prior NLL")
    table = cells.join(base, on="dataset")
    table = table[table["NLL"] > table["prior NLL"]]  # never the prior itself; NaN: not compared
    return table.assign(excess=table["NLL"] - table["prior NLL"])[["dataset", "family", "NLL", "prior NLL", "excess"]]


def mean_ranks(summary: pd.DataFrame) -> pd.DataFrame:
    """Each family's mean rank over the data sets by P@1 and by LPD
    (:func:`mlgp.comparison.ranks.rank_table`: 1 = best, ties share, a failed family ranks last)."""
    from mlgp.comparison.ranks import rank_table

    cells = _ran(summary)
    families = list(dict.fromkeys(cells["family"]))
    out = pd.DataFrame({"family": families})
    for measure in ("P@1", "LPD"):
        values = cells.pivot(index="dataset", columns="family", values=measure)
        failed = cells.assign(failed=cells["error"] != "").pivot(index="dataset", columns="family", values="failed")
        means = rank_table(values, failed=failed).mean(axis=0)
        out[f"mean rank {measure}"] = out["family"].map(means)
    return out


def calibration_targets(summary: pd.DataFrame, family: str = "mlgpf", min_rows: int = ECE_MIN_ROWS,
                        ece5_datasets: tuple[str, ...] = ECE5_DATASETS) -> pd.DataFrame:
    """Per data set ``family``'s ECE where the data set has at least ``min_rows`` test rows and its
    ECE@5 on ``ece5_datasets`` (NaN where the target does not apply)."""
    cells = _ran(summary)
    own = cells[cells["family"] == family].set_index("dataset")
    table = pd.DataFrame({"dataset": list(dict.fromkeys(cells["dataset"]))})
    rows = cells.groupby("dataset", sort=False)["test rows"].max()
    table["test rows"] = table["dataset"].map(rows)
    table["ECE"] = np.where(table["test rows"] >= min_rows, table["dataset"].map(own["ECE"]), np.nan)
    table["ECE@5"] = np.where(table["dataset"].isin(ece5_datasets), table["dataset"].map(own["ECE@5"]), np.nan)
    return table


def total_seconds(summary: pd.DataFrame) -> float:
    """Seconds of every cell together (fit, predict and scoring)."""
    return float(_ran(summary)["seconds"].sum())


def by_dataset(summary: pd.DataFrame, family: str = "mlgpf") -> pd.DataFrame:
    """The per-data-set targets side by side, with the cells worse than the prior and the seconds."""
    worse = worse_than_prior(summary).groupby("dataset").size()
    table = (p1_gaps(summary, family).merge(lpd_gaps(summary, family), on="dataset")
             .merge(calibration_targets(summary, family), on="dataset"))
    table["cells worse than prior"] = table["dataset"].map(worse).fillna(0).astype(int)
    table["seconds"] = table["dataset"].map(_ran(summary).groupby("dataset")["seconds"].sum())
    return table


def overview(summary: pd.DataFrame, family: str = "mlgpf") -> pd.DataFrame:
    """One row per target: what it asks, the value and the detail."""
    p1, lpd, calib = p1_gaps(summary, family), lpd_gaps(summary, family), calibration_targets(summary, family)
    worse, ranks = worse_than_prior(summary), mean_ranks(summary).set_index("family")

    def misses(table: pd.DataFrame, ok: str, gap: str) -> str:
        return "; ".join(f"{d} {g:+.2f}" if pd.notna(g) else f"{d} (no value)"
                         for d, g, hit in zip(table["dataset"], table[gap], table[ok]) if not hit)

    def listed(table: pd.DataFrame, column: str) -> str:
        return "; ".join(f"{d} {v:.4f}" for d, v in zip(table["dataset"], table[column]) if pd.notna(v))

    def rank(measure: str) -> str:
        if family not in ranks.index or pd.isna(ranks.loc[family, f"mean rank {measure}"]):
            return "—"
        return f"{ranks.loc[family, f'mean rank {measure}']:.2f} of {ranks[f'mean rank {measure}'].notna().sum()}"

    ok1, okl = f"P@1 within {P1_WITHIN:g}", f"LPD within {LPD_WITHIN:g} %"
    rows = [
        (f"{family} P@1 within {P1_WITHIN:g} points of the best", f"{p1[ok1].sum()} of {len(p1)}",
         "missed: " + (misses(p1, ok1, "P@1 − best") or "none")),
        (f"{family} test LPD within {LPD_WITHIN:g} % of the best", f"{lpd[okl].sum()} of {len(lpd)}",
         "missed (% short): " + (misses(lpd, okl, "LPD short %") or "none")),
        (f"cells with NLL per entry worse than the label prior's ({PRIOR})", str(len(worse)),
         "; ".join(f"{f} on {d}" for d, f in zip(worse["dataset"], worse["family"])) or "none"),
        (f"{family} mean rank by P@1", rank("P@1"), "1 = best, over the families ranked"),
        (f"{family} mean rank by LPD", rank("LPD"), "1 = best, over the families with probabilities"),
        (f"{family} ECE, data sets with ≥ {ECE_MIN_ROWS:,} test rows", listed(calib, "ECE") or "—", ""),
        (f"{family} ECE@5 on {', '.join(ECE5_DATASETS)}", listed(calib, "ECE@5") or "—", ""),
        ("total seconds (every cell: fit, predict, scoring)", f"{total_seconds(summary):.1f}", ""),
    ]
    return pd.DataFrame(rows, columns=["target", "value", "detail"])


def write_quick_home(root: Path) -> Path:
    """A data home of :data:`QUICK`'s tiny synthetic data sets (D = 5, K = 8, 30 test rows each)."""
    from mlgp.data import write_xc
    from mlgp.data.synthetic import mlgpf_prior

    for i, (name, n) in enumerate(QUICK["sizes"].items()):
        ds = mlgpf_prior(num_train=n, num_test=30, num_features=5, num_labels=8, num_latent=2, seed=i)
        (root / name).mkdir(parents=True, exist_ok=True)
        write_xc(root / name / "train.txt.gz", ds.train.X, ds.train.Y)
        write_xc(root / name / "test.txt.gz", ds.test.X, ds.test.Y)
    return root


def main(argv: list[str] | None = None) -> None:
    from mlgp.arguments import is_seconds
    from mlgp.experiment import add_argparse_args, choice_list
    from mlgp.families import FAMILIES

    parser = add_argparse_args(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    parser.add_argument("--datasets", default=None, help="comma-separated data sets (default: all of the data home)")
    parser.add_argument("--models", default=",".join(FAMILIES), help="comma-separated families (default: all ten)")
    parser.add_argument("--family", default=None, help="the family the targets are about (default mlgpf; "
                                                       f"--quick: {QUICK['family']})")
    parser.add_argument("--budget", type=float, default=60.0, help="wall seconds per budgeted fit (default 60)")
    args = parser.parse_args(argv)
    if args.quick:
        args.models, args.budget = list(QUICK["models"]), QUICK["budget"]
    else:
        args.models = choice_list(parser, args.models, FAMILIES, "family")
    args.family = args.family or (QUICK["family"] if args.quick else "mlgpf")
    if len(set(args.models)) < len(args.models):
        parser.error("a family is named twice in --models")
    if args.family not in args.models:
        parser.error(f"--family {args.family} is not among the families compared ({', '.join(args.models)})")
    if not is_seconds(args.budget):  # the one budget rule (mlgp.arguments)
        parser.error(f"--budget must be a positive number of seconds (finite), got {args.budget}")
    if args.seeds is not None and len(args.seeds) != 1:
        parser.error("give one seed")
    args.seed = args.seeds[0] if args.seeds else 0
    args.command = " ".join(["python", "experiments/compare_datasets.py", *(sys.argv[1:] if argv is None else argv)])
    if args.quick:
        with tempfile.TemporaryDirectory() as home:
            run(args, write_quick_home(Path(home)), list(QUICK["sizes"]), QUICK["settings"])
        return
    from mlgp.data import available, data_home

    home = data_home(None)
    present = available(home)
    datasets = choice_list(parser, args.datasets, present, "dataset") if args.datasets else dataset_order(present)
    if not datasets or len(set(datasets)) < len(datasets):
        parser.error(f"no data set in the data home {home}" if not datasets else "a data set is named twice")
    run(args, home, datasets, {})


def run(args: argparse.Namespace, home: Path, datasets: list[str], settings: dict) -> None:
    from mlgp.comparison import compare_many
    from mlgp.experiment import Experiment

    record = {"datasets": datasets, "models": args.models, "family": args.family, "budget": args.budget,
              "settings": settings, "data_home": None if args.quick else str(home)}
    with Experiment("compare_datasets", quick=args.quick, settings=record, seeds=[args.seed], out=args.out) as exp:
        many = compare_many(args.models, datasets, budget=args.budget, settings=settings, seed=args.seed,
                            out=exp.folder, data_home=home, echo=lambda line: print(line, flush=True),
                            progress=sys.stderr.isatty(), isolate=not args.quick,
                            n_resamples=200 if args.quick else 1000, command=args.command)
        summary = targets_frame(many)
        exp.table("targets", overview(summary, args.family), show=True)
        exp.table("targets_by_dataset", by_dataset(summary, args.family), floatfmt=".4g")
        exp.table("worse_than_prior", worse_than_prior(summary), floatfmt=".4g")
        exp.table("mean_ranks", mean_ranks(summary), floatfmt=".2f")
        exp.note("skipped", many.skipped)
        exp.note("total_seconds", total_seconds(summary))


if __name__ == "__main__":
    main()
