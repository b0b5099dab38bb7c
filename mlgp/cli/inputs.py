"""What ``mlgp fit``, ``mlgp predict``, ``mlgp evaluate`` and ``mlgp compare`` share on the command
line: the data-format, ``--zero-based`` and ``--labels-from`` options, the reading of a labelled file with them, and ``--set`` parsing; where
a dataset of the data home (:func:`load_dataset`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import ArgumentError

__all__ = ["DATA_FORMATS", "LABELS_FROM", "ZERO_BASED", "add_format_option", "add_labels_from_option",
           "add_zero_based_option", "load_dataset", "read_file", "sets"]

DATA_FORMATS = ("xc", "libsvm", "npz")
#: ``--zero-based`` choices → :func:`mlgp.data.read_labelled`'s ``zero_based``
ZERO_BASED = {"no": False, "yes": True, "auto": "auto"}
#: how the errors of :func:`mlgp.data.read_labelled` name ``--labels-from`` (a template for its value)
LABELS_FROM = "--labels-from {}"


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


def add_labels_from_option(p: argparse.ArgumentParser) -> None:
    """``--labels-from {0,1}``: where a LIBSVM file's labels count from (``args.labels_from``; None
    when not given: from 0, and a file that never uses label 0 is refused, naming the option)."""
    p.add_argument("--labels-from", dest="labels_from", type=int, choices=(0, 1), default=None,
                   help="LIBSVM files: labels count from 0 (as XC and scikit-learn write them) or from 1 (as many "
                        "papers do). Default: from 0, and a file that never uses label 0 is refused")


def read_file(path: Path, data_format: str | None, zero_based: str = "no", num_features: int | None = None,
              labels_from: int | None = None, num_labels: int | None = None):
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
    num_features, num_labels
        The width expected (a model's D; scores' K): narrower files are padded, wider ones refused.
    labels_from
        ``--labels-from``'s value (None, 0 or 1); an error about where labels count from names it.
    """
    from ..data.io import read_labelled

    return read_labelled(path, data_format, num_features=num_features, num_labels=num_labels,
                         zero_based=ZERO_BASED[zero_based], zero_based_option="--zero-based yes",
                         labels_from=labels_from, labels_option=LABELS_FROM)


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

    return load(name, data_home, option="--data-home")
