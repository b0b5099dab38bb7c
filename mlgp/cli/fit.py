"""``mlgp fit FAMILY (--dataset NAME | --train FILE) --out MODEL [--params FILE.json] [--set NAME=VALUE ...]
[--seed N] [--budget SECONDS]``.

Fits one family (:data:`mlgp.comparison.FAMILIES`) on a dataset's training split or a labelled file
(``--zero-based yes`` for a LIBSVM file whose feature indices start at 0) with the seed 0 unless
``--seed`` says otherwise, prints the parameters that differ from the class's defaults, and saves the estimator
in the floor's format (:meth:`mlgp.estimator.MultiLabelEstimator.save`: one ``.npz``, written
atomically), which ``mlgp predict`` reads. Everything is checked before any data are read or any
training starts: the family, the ``--params`` file (:mod:`mlgp.cli.params`; what ``mlgp params
FAMILY`` writes), each ``--set`` name against the estimator's parameters and each value against its
constraints, the seed, the budget and the output path (a folder that does not exist yet is made when the model
is saved). Precedence, weakest first: the class's
defaults, the family's command-line defaults, ``--budget`` and ``--seed``, the ``--params`` file,
``--set``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from ..errors import DataFormatError
from .common import seconds, seed_number
from ..families import fit_arguments
from ..files import check_output_file, make_folder
from .inputs import add_format_option, add_labels_from_option, add_zero_based_option, load_dataset, read_file, sets

__all__ = ["add_parser", "build_estimator", "run"]


def add_parser(sub, home_kw: dict) -> argparse.ArgumentParser:
    """Register the subcommand on ``sub`` (from ``add_subparsers``)."""
    from ..families import FAMILIES

    p = sub.add_parser("fit", help="fit a model family and save it",
                       description="Fit FAMILY on a dataset's training split or a labelled file and save the "
                                   "estimator (one .npz) for 'mlgp predict'. --set NAME=VALUE changes any "
                                   "constructor parameter (values are Python literals or text).")
    p.add_argument("family", choices=list(FAMILIES), metavar="FAMILY", help=f"one of: {' '.join(FAMILIES)}")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--dataset", metavar="NAME", help="a dataset of the data home (its train split)")
    source.add_argument("--train", type=Path, metavar="FILE", help="a labelled data file")
    add_format_option(p)
    add_zero_based_option(p)
    add_labels_from_option(p)
    p.add_argument("--out", type=Path, required=True, metavar="MODEL", help="model file (.npz added when missing)")
    p.add_argument("--params", type=Path, default=None, metavar="FILE.json",
                   help="constructor parameters from a JSON file (as 'mlgp params FAMILY' writes); they override "
                        "--seed and --budget, and --set overrides them")
    p.add_argument("--set", action="append", metavar="NAME=VALUE", help="a constructor parameter (repeatable)")
    p.add_argument("--seed", type=seed_number, default=0, metavar="N",
                   help="seed of the family's randomness (default 0, as in 'mlgp compare')")
    p.add_argument("--budget", type=seconds, default=None, metavar="SECONDS",
                   help=f"wall seconds of the fit from its start, for the families that have a budget "
                        f"({', '.join(n for n, f in FAMILIES.items() if f.budget)}): training stops after the "
                        "step (optimiser step, EM iteration, minibatch, sweep or tree) that reaches it")
    p.add_argument("--data-home", **home_kw)
    p.set_defaults(func=run)
    return p


def build_estimator(args: argparse.Namespace):
    """The unfitted estimator of ``mlgp fit``'s ``args``, its parameters checked; no data are read.

    ``args.params`` (a file of :mod:`mlgp.cli.params`) and ``args.set`` change the family's
    command-line defaults, ``args.budget`` and ``args.seed``, ``--set`` winning over the file.
    """
    from ..families import make_estimator
    from .params import file_changes

    changes = file_changes(args.family, args.params, sets(args.set), seed=args.seed, budget=args.budget)
    return make_estimator(args.family, changes, seed=args.seed, budget=args.budget)


def run(args: argparse.Namespace) -> int:
    """Fit and save; prints the estimator with the parameters that differ from the class's defaults
    (scikit-learn's form, e.g. ``FastXML(n_estimators=10, random_state=0)``) before the fit, and one
    line saying what was fitted, in how long and where it went after it."""
    from sklearn import config_context

    from ..estimator.persistence import npz_path

    estimator = build_estimator(args)
    out = npz_path(args.out)
    check_output_file(out)
    if args.dataset is not None:
        ds = load_dataset(args.dataset, args.data_home)
        X, Y, source = ds.train.X, ds.train.Y, f"{ds.name} (train)"
    else:
        X, Y = read_file(args.train, args.data_format, args.zero_based, labels_from=args.labels_from)
        source = str(args.train)
    if Y.nnz == 0:
        raise DataFormatError(f"{source}: the training data have no labels")
    print(f"fitting {estimator!r} on {source}", flush=True)
    t0 = time.perf_counter()
    with config_context(skip_parameter_validation=True):  # build_estimator checked them, once
        estimator.fit(X, Y, **fit_arguments(estimator, True))  # a bar on a terminal, else a line every 10 s
    seconds = time.perf_counter() - t0
    make_folder(out.parent)
    path = estimator.save(out)
    print(f"{type(estimator).__name__} fitted on {source}: N={X.shape[0]}, D={X.shape[1]}, K={Y.shape[1]} in "
          f"{seconds:.1f} s; saved to {path}")
    return 0
