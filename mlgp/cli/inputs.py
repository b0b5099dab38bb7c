"""What ``mlgp fit``, ``mlgp predict`` and ``mlgp compare`` share on the command line: the data-format
option and ``--set`` parsing; where the data come from and the output checks are
:mod:`mlgp.comparison.inputs`'s (re-exported here).
"""

from __future__ import annotations

import argparse

from ..comparison.inputs import check_output_file, check_output_folder, load_dataset, read_file
from ..errors import ArgumentError

__all__ = ["DATA_FORMATS", "add_format_option", "check_output_file", "check_output_folder", "load_dataset",
           "read_file", "sets"]

DATA_FORMATS = ("xc", "libsvm", "npz")


def add_format_option(p: argparse.ArgumentParser, flag: str = "--format") -> None:
    """The option naming the format of the data files (``args.data_format``)."""
    p.add_argument(flag, dest="data_format", choices=DATA_FORMATS, default=None,
                   help="format of the data files (default: from the extension: .txt/.txt.gz XC, "
                        ".svm/.libsvm LIBSVM multi-label, .npz CSR X and Y)")


def sets(values: list[str] | None, prefix: bool = False) -> dict:
    """``--set NAME=VALUE`` options as ``{NAME: value}``; with ``prefix``, ``FAMILY.NAME=VALUE`` as
    ``{FAMILY: {NAME: value}}``. A name given twice is an :class:`ArgumentError`."""
    from ..comparison.families import parse_assignment

    out: dict = {}
    for text in values or []:
        name, value = parse_assignment(text)
        target = out
        if prefix:
            fam, dot, name = name.partition(".")
            if not dot or not name:
                raise ArgumentError(f"--set takes FAMILY.NAME=VALUE here, got {text!r}")
            target = out.setdefault(fam, {})
        if name in target:
            raise ArgumentError(f"--set {text!r}: {name!r} is set twice")
        target[name] = value
    return out
