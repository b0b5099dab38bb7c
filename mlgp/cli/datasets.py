"""``mlgp datasets [--data-home PATH]``: statistics of the datasets in the data home.

Without a data home: how to set one, and the published statistics of the known datasets. A data
home that is set but does not exist is an error (exit status 2).
"""

from __future__ import annotations

import argparse
import sys

from ..errors import MLGPError
from .common import PROG, no_home_message, resolve_home

__all__ = ["add_parser", "run"]


def add_parser(sub, home_kw: dict) -> argparse.ArgumentParser:
    """Register the subcommand on ``sub`` (from ``add_subparsers``)."""
    p = sub.add_parser("datasets", help="statistics of the datasets in the data home",
                       description="Table of the datasets in the data home with N train/test, "
                                   "D, K, labels per point and points per label.")
    p.add_argument("--data-home", **home_kw)
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Print the table; 2 when a dataset in the home cannot be read."""
    import pandas as pd

    from ..data import DATASETS, available, load, statistics

    home = resolve_home(args.data_home)
    if home is None:
        print(no_home_message())
        print()
        rows = [
            dict(dataset=i.name, N_train=i.n_train, N_test=i.n_test, D=i.num_features,
                 K=i.num_labels, labels_per_point=i.labels_per_point, source=i.url)
            for i in sorted(DATASETS.values(), key=lambda i: i.name)
        ]
        print("Published statistics of the known datasets:")
        print(pd.DataFrame(rows).set_index("dataset").to_string(float_format=lambda v: f"{v:.4f}"))
        return 0
    names = available(home)
    print(f"data home: {home}")
    if not names:
        print(f"No datasets found (a dataset is a sub-folder with train.txt.gz and test.txt.gz).\n"
              f"Known datasets: {', '.join(sorted(DATASETS))}.")
        return 0
    rows, failed = [], []
    for name in names:
        try:
            s = statistics(load(name, home))
        except MLGPError as exc:
            failed.append(f"{name}: {exc}")
            continue
        rows.append(dict(
            dataset=name, N_train=s["N_train"], N_test=s["N_test"], D=s["D"], K=s["K"],
            labels_per_point=float(s["labels_per_point"]),
            points_per_label=float(s["points_per_label"]),
        ))
    if rows:
        table = pd.DataFrame(rows).set_index("dataset")
        print(table.to_string(float_format=lambda v: f"{v:.2f}"))
        print("(labels_per_point and points_per_label over train and test together)")
    missing = sorted(set(DATASETS) - set(names))
    if missing:
        print(f"Known datasets not in this data home: {', '.join(missing)}.")
    for msg in failed:
        print(f"{PROG}: error: {msg}", file=sys.stderr)
    return 2 if failed else 0
