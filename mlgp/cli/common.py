"""What the ``mlgp`` subcommands share: the parser class, the option types (each checked by
:mod:`mlgp.arguments`, the one check of a number), data-home resolution, the metric table's text
form and the CSV output's writing (its path is checked as every output file is,
:func:`mlgp.files.check_output_file`). No model code."""

from __future__ import annotations

import argparse
import difflib
import math
import re
import sys
from pathlib import Path

from .. import arguments
from ..arguments import argparse_type
from ..files import atomic_write

__all__ = [
    "PROG",
    "Parser",
    "VALUE_OPTIONS",
    "join_negative_values",
    "positive_int",
    "seconds",
    "seed_number",
    "int_list",
    "propensity_pair",
    "resolve_home",
    "no_home_message",
    "required_home",
    "format_metrics",
    "write_csv",
]

PROG = "mlgp"

#: argparse type: a whole number ≥ 1 (:func:`mlgp.arguments.positive_int`).
positive_int = argparse_type(arguments.positive_int, int, "a positive integer", "option")


def _as_converted(value: float | int, name: str) -> float | int:
    """The option's number as ``float`` or ``int`` made it: a budget's and a seed's ranges are
    checked once, by :func:`mlgp.families.make_estimator`, which every subcommand with ``--budget``
    or ``--seed`` calls."""
    return value


#: argparse type: a budget's text as a float (``make_estimator`` checks it by the one rule of a
#: budget, :func:`mlgp.arguments.is_seconds`).
seconds = argparse_type(_as_converted, float, "a number of seconds", "budget")
#: argparse type: a seed's text as an int (``make_estimator`` checks that it is from 0 to
#: :data:`~mlgp.arguments.MAX_SEED`).
seed_number = argparse_type(_as_converted, int, "a whole number", "seed")


#: the options (of every parser built from :class:`Parser`) that take a value
VALUE_OPTIONS: set[str] = set()


class Parser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` whose usage errors read ``mlgp: error: …`` (exit status 2), and
    which records its options that take a value (:data:`VALUE_OPTIONS`, for :func:`join_negative_values`)."""

    def error(self, message: str):  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(2, f"{PROG}: error: {message}{_did_you_mean(message)}\n")

    def add_argument(self, *args, **kwargs):
        action = super().add_argument(*args, **kwargs)
        if action.option_strings and action.nargs != 0:
            VALUE_OPTIONS.update(action.option_strings)
        return action


def _did_you_mean(message: str) -> str:
    """``"; did you mean 'fastxml'?"`` for argparse's ``invalid choice: 'fastxm' (choose from …)``
    when one choice is close to the word given; else ``""``."""
    match = re.match(r"argument .*: invalid choice: '(.*)' \(choose from (.*)\)$", message)
    if match is None:
        return ""
    choices = re.findall(r"'([^']*)'", match.group(2))
    close = difflib.get_close_matches(match.group(1), choices, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def join_negative_values(argv: list[str]) -> list[str]:
    """``argv`` with each value that starts with a minus sign attached to the option before it
    (``--propensity -1,2`` → ``--propensity=-1,2``), when that option takes a value: argparse
    would read ``-1,2`` as an option and say only "expected one argument", where the option's own
    check says what is wrong with the value."""
    out: list[str] = []
    for arg in argv:
        if out and out[-1] in VALUE_OPTIONS and len(arg) > 1 and arg[0] == "-" and (arg[1].isdigit() or arg[1] == "."):
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    return out


def int_list(text: str) -> list[int]:
    """argparse type: ``"1,3,5"`` → ``[1, 3, 5]`` (positive, sorted, distinct)."""
    try:
        ks = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not ks or min(ks) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return sorted(set(ks))


def propensity_pair(text: str) -> tuple[float, float]:
    """argparse type: ``"0.55,1.5"`` → ``(0.55, 1.5)``, finite with A > 0 and B ≥ 0."""
    try:
        a, b = (float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected two comma-separated numbers A,B, got {text!r}") from None
    if not (math.isfinite(a) and math.isfinite(b) and a > 0 and b >= 0):
        raise argparse.ArgumentTypeError(f"expected finite A > 0 and B ≥ 0, got {text!r}")
    return a, b


def resolve_home(path: str | None) -> Path | None:
    """The data home from ``--data-home`` or ``$MLGP_DATA``; None when neither is set.

    A folder that is named but does not exist is an error
    (:class:`~mlgp.errors.DatasetNotFoundError`, naming ``--data-home`` or ``$MLGP_DATA``).
    """
    from ..data import data_home

    return data_home(path, required=False, option="--data-home")


def required_home(path: str | None) -> Path:
    """The data home of a command that needs one (:func:`resolve_home`); when none is set, a
    :class:`~mlgp.errors.DatasetNotFoundError` saying how to set it, on one line."""
    from ..errors import DatasetNotFoundError

    home = resolve_home(path)
    if home is None:
        raise DatasetNotFoundError(" ".join(no_home_message().split()))
    return home


def no_home_message() -> str:
    """How to set a data home, and the known datasets."""
    from ..data import DATASETS
    from ..data.registry import ENV_VAR

    return (
        f"No data home: set the environment variable {ENV_VAR} (or pass --data-home) to a folder "
        "holding one sub-folder per dataset, each with train.txt.gz and test.txt.gz in the "
        "Extreme Classification (XC) sparse text format and optionally labels.txt, e.g.\n"
        f"    export {ENV_VAR}=/path/to/data      # then: /path/to/data/bibtex/train.txt.gz ...\n"
        f"Known datasets: {', '.join(sorted(DATASETS))}."
    )


def format_metrics(table) -> str:
    """A metric table of :func:`mlgp.metrics.evaluate` as text, in percent, two decimals."""
    if not table.attrs.get("percent", False):
        table = table * 100.0
    shown = table.copy()
    shown.columns = [f"@{k}" for k in shown.columns]
    shown.index.name = "metric (%)"
    return shown.to_string(float_format=lambda v: f"{v:.2f}")


def write_csv(table, path: Path) -> None:
    """Write a metric table as CSV (columns ``@k``)."""
    out = table.copy()
    out.columns = [f"@{k}" for k in out.columns]
    out.index.name = "metric"
    text = out.to_csv()
    atomic_write(path, lambda f: f.write(text.encode()))  # a failed write is a FileAccessError naming the file
