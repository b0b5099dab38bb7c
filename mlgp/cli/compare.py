"""``mlgp compare (--dataset NAME[,NAME...] | --dataset all | --train FILE --test FILE) --models a,b,c
[--budget SECONDS] [--params FAMILY=FILE.json ...] [--set FAMILY.NAME=VALUE ...] [--seed N] --out DIR``.

Fits each family on the same split and scores it on the test split (:func:`mlgp.compare`), prints
the ranking and probability tables and writes ``DIR/results.csv``, ``DIR/traces.csv``,
``DIR/traces.png``, ``DIR/reliability.csv``, ``DIR/calibration.png`` and ``DIR/report.md``
(:func:`mlgp.comparison.write_report`). Each finished family is kept in
``DIR/runs/``; running the same command again takes finished families from there, so a killed run
resumes. A family that fails is reported with its error and the others go on; the exit status is
then 1. ``--params FAMILY=FILE`` reads that family's parameters from a JSON file (as ``mlgp params
FAMILY`` writes it; :mod:`mlgp.cli.params`) with the meaning of ``mlgp fit --params``: the file wins
over ``--seed`` and ``--budget``, ``--set FAMILY.NAME=VALUE`` wins over the file.

Several data sets (``--dataset a,b,c``, or ``--dataset all``: every data set of the data home) are
compared one after the other into ``DIR/<dataset>/`` (each folder exactly what ``--dataset <dataset>``
writes into ``DIR``, resumable alike) by :func:`mlgp.comparison.compare_many`, which writes the
summary into ``DIR`` (:mod:`mlgp.comparison.summary`: ``summary.csv``, ``ranks.csv``,
``friedman.csv``, ``bootstrap.csv``, ``cd_P1.png``, ``cd_LPD.png``, ``summary.md``); the command
prints each data set's ranking table, the mean ranks and the tests. A data set named twice is a
usage error before any work; one that cannot be read is skipped with its reason (on stderr and in
the summary) and the exit status is then 1, as when a family failed. A single name keeps the
one-data-set layout above.

A warning a family raises while it is fitted (in its worker process or in this one) reaches the
shell as the one line ``mlgp: warning: <message>`` (:func:`mlgp.errors.one_line_warnings`, which
every ``mlgp`` command uses).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from .common import seconds, seed_number
from .inputs import LABELS_FROM, ZERO_BASED, add_format_option, add_labels_from_option, add_zero_based_option

__all__ = ["add_parser", "run"]


def add_parser(sub, home_kw: dict) -> argparse.ArgumentParser:
    """Register the subcommand on ``sub`` (from ``add_subparsers``)."""
    from ..families import FAMILIES

    p = sub.add_parser("compare", help="fit several families on one split and compare them",
                       description="Fit each family on the same training split, score the test split, print "
                                   "the tables (ranking, held-out likelihood, calibration, F1) and write results.csv, "
                                   "traces.csv, traces.png, reliability.csv, calibration.png and report.md. "
                                   "With several datasets (--dataset a,b,c or --dataset all), each is compared into "
                                   "DIR/<dataset>/ and DIR gets the summary over the datasets: summary.csv, ranks.csv "
                                   "(mean rank by P@1 and by LPD), friedman.csv (Friedman and Iman-Davenport tests, "
                                   "Nemenyi critical difference), bootstrap.csv (each family against the best per "
                                   "dataset, paired bootstrap over test rows), cd_P1.png, cd_LPD.png and summary.md. "
                                   f"Families: {' '.join(FAMILIES)}.")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--dataset", metavar="NAME[,NAME...]|all",
                        help="a dataset of the data home; several, comma-separated, or 'all' (every dataset of the "
                             "data home) for a comparison over datasets with its summary")
    source.add_argument("--train", type=Path, metavar="FILE", help="a labelled training file (with --test)")
    p.add_argument("--test", type=Path, metavar="FILE", help="a labelled test file (with --train)")
    add_format_option(p)
    add_zero_based_option(p)
    add_labels_from_option(p)
    p.add_argument("--models", required=True, metavar="a,b,c", help="comma-separated family names")
    p.add_argument("--budget", type=seconds, default=None, metavar="SECONDS",
                   help=f"wall seconds of each fit from its start, for the families that have a budget "
                        f"({', '.join(n for n, f in FAMILIES.items() if f.budget)}): training stops after the "
                        "step (optimiser step, EM iteration, minibatch, sweep or tree) that reaches it")
    p.add_argument("--params", action="append", metavar="FAMILY=FILE.json",
                   help="one family's parameters from a JSON file (as 'mlgp params FAMILY' writes; repeatable); "
                        "they override --seed and --budget, and --set overrides them")
    p.add_argument("--set", action="append", metavar="FAMILY.NAME=VALUE", help="a parameter of one family (repeatable)")
    p.add_argument("--seed", type=seed_number, default=0, metavar="N", help="seed of every family (default 0)")
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="output folder")
    p.add_argument("--in-process", action="store_true",
                   help="fit every family in this process (default: each in a fresh one, so that its peak memory "
                        "is its own and a crash is recorded)")
    p.add_argument("--data-home", **home_kw)
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Compare, print the table, write the files; 1 when a family failed."""
    from ..comparison import compare, probability_table_text, table_text, write_report
    from ..comparison.report import best_lines
    from ..errors import ArgumentError
    from .params import compare_settings

    if (args.train is None) != (args.test is None):
        raise ArgumentError("--train and --test go together")
    settings = compare_settings(args)  # the options first: no data home is needed to check them
    home = _home(args)
    if args.dataset is not None and ("," in args.dataset or args.dataset.strip() == "all"):
        return _run_many(args, settings, home)
    read_options = None if args.train is None else {
        "zero_based": ZERO_BASED[args.zero_based], "zero_based_option": "--zero-based yes",
        "labels_from": args.labels_from, "labels_option": LABELS_FROM}
    result = compare(args.models, dataset=args.dataset, train=args.train, test=args.test,
                     data_format=args.data_format, budget=args.budget, settings=settings,
                     seed=args.seed, out=args.out, data_home=home, progress=True,
                     echo=lambda line: print(line, file=sys.stderr, flush=True),
                     isolate=not args.in_process, read_options=read_options)
    command = "mlgp " + shlex.join(args.argv) if getattr(args, "argv", None) else None
    title = f"mlgp compare: {args.dataset or args.train.name}"
    paths = write_report(result, args.out, title=title, command=command)
    print(table_text(result.results))
    print()
    print(probability_table_text(result.results))
    print("\n".join(best_lines(result.results, result.rows)))
    print(f"written: {', '.join(str(p) for p in paths.values())}")
    return 1 if result.results["error"].astype(bool).any() else 0


def _home(args: argparse.Namespace):
    """The data home of ``--dataset`` (``--data-home`` or ``$MLGP_DATA``, errors worded for the
    shell); None with ``--train``."""
    from .common import required_home

    return None if args.dataset is None else required_home(args.data_home)


def _run_many(args: argparse.Namespace, settings: dict, home) -> int:
    """Compare on several data sets, print the tables and the summary; 1 when a family failed or a
    data set could not be read."""
    from ..comparison import compare_many, table_text
    from ..comparison.summary import ranks_text, tests_text

    command = "mlgp " + shlex.join(args.argv) if getattr(args, "argv", None) else None
    many = compare_many(args.models, args.dataset, budget=args.budget, settings=settings,
                        seed=args.seed, out=args.out, data_home=home, progress=True,
                        echo=lambda line: print(line, file=sys.stderr, flush=True),
                        isolate=not args.in_process, command=command)
    for name, result in many.comparisons.items():
        print(f"== {name} ==")
        print(table_text(result.results))
        print()
    for name, why in many.skipped.items():
        print(f"== {name} == skipped, it cannot be read: {why}")
    print("mean ranks over the datasets (1 = best; a family that failed on a dataset ranks last there):")
    print(ranks_text(many))
    print()
    print(tests_text(many))
    print(f"written: {', '.join(str(args.out / name) + '/' for name in many.comparisons)}"
          + "".join(f", {p}" for p in many.files.values()))
    failed = any(result.results["error"].astype(bool).any() for result in many.comparisons.values())
    return 1 if failed or many.skipped else 0
