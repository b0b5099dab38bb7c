"""What ``mlgp fit``, ``mlgp predict`` and ``mlgp compare`` share on the command line: the data-format
and ``--zero-based`` options, the reading of a labelled file with them, and ``--set`` parsing; where
a dataset of the data home (:func:`load_dataset`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import ArgumentError

__all__ = ["DATA_FORMATS", "ZERO_BASED", "add_format_option", "add_zero_based_option", "load_dataset", "read_file",
           "sets"]

DATA_FORMATS = ("xc", "libsvm", "npz")
#: ``--zero-based`` choices → :func:`mlgp.data.read_labelled`'s ``zero_based``
ZERO_BASED = {"no": False, "yes": True, "auto": "auto"}


def add_format_option(p: argparse.ArgumentParser, flag: str = "--format") -> None:
    """The option naming the format of the data files (``args.data_format``)."""
    p.add_argument(flag, dest="data_format", choices=DATA_FORMATS, default=None,
                   help="format of the data files (default: from the extension: .txt/.txt.gz XC, "
                        ".svm/.libsvm LIBSVM multi-label, .npz CSR X and Y)")


def add_zero_based_option(p: argparse.ArgumentParser) -> None:
    """``--zero-based {no,yes,auto}``: where the feature indices of a LIBSVM file start
    (``args.zero_based``)."""
    p.add_argument("--zero-based", dest="zero_based", choices=tuple(ZERO_BASED), default="no",
                   help="LIBSVM files: feature indices start at 1 (no: the default, as LIBSVM writes them), at 0 "
                        "(yes: scikit-learn's dump_svmlight_file default) or at 0 where some index is 0 (auto: "
                        "a training and a test file may then be read differently)")


def read_file(path: Path, data_format: str | None, zero_based: str = "no", num_features: int | None = None):
    """``(X, Y)`` of a labelled data file (:func:`mlgp.data.read_labelled`).

    Parameters
    ----------
    path
        The file.
    data_format
        ``--format``'s value (``None``: from the name).
    zero_based
        ``--zero-based``'s value (a key of :data:`ZERO_BASED`); an error about an index 0 names
        the option.
    num_features
        The width expected (a model's D): narrower files are padded, wider ones refused.
    """
    from ..data.io import read_labelled

    return read_labelled(path, data_format, num_features=num_features, zero_based=ZERO_BASED[zero_based],
                         zero_based_option="--zero-based yes")


def sets(values: list[str] | None, prefix: bool = False) -> dict:
    """``--set NAME=VALUE`` options as ``{NAME: value}``; with ``prefix``, ``FAMILY.NAME=VALUE`` as
    ``{FAMILY: {NAME: value}}``. A name given twice is an :class:`ArgumentError`."""
    from ..families import parse_assignment

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


def load_dataset(name: str, data_home: str | None):
    """The dataset ``name`` of the data home (``--data-home`` or ``$MLGP_DATA``)."""
    from ..data import load

    return load(name, data_home)
