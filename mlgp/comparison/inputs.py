"""Where a fit's data come from and where its results go, checked before any work: a dataset of the
data home or a labelled file (:func:`mlgp.data.read_labelled`: XC text, LIBSVM
multi-label or ``.npz`` of CSR X and Y, by extension or ``data_format``; a file that does not parse
raises :class:`~mlgp.errors.DataFormatError` naming the file and the line), and output files and
folders that can be written. Used by :func:`mlgp.compare` and the ``mlgp`` subcommands.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import FileAccessError

__all__ = ["check_output_file", "check_output_folder", "load_dataset", "read_file"]


def load_dataset(name: str, data_home: str | None):
    """The dataset ``name`` of the data home (``--data-home`` or ``$MLGP_DATA``)."""
    from ..data import load

    return load(name, data_home)


def read_file(path: Path, data_format: str | None, num_features: int | None = None):
    """``(X, Y)`` of a labelled data file (``num_features``: the width expected, e.g. a model's D)."""
    from ..data.io import read_labelled

    return read_labelled(path, data_format, num_features=num_features)


def check_output_file(path: Path, option: str = "--out") -> None:
    """Before any work: ``path`` must name a file (not a folder) in an existing, writable folder."""
    if path.is_dir():
        raise FileAccessError(f"{option} {path}: is a folder, not a file name")
    folder = path.parent
    if not folder.is_dir():
        raise FileAccessError(f"{option} {path}: folder {str(folder)!r} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise FileAccessError(f"{option} {path}: folder {str(folder)!r} is not writable")


def check_output_folder(path: Path, option: str = "--out") -> None:
    """Before any work: ``path`` must be a writable folder or a new one in a writable folder."""
    if path.exists() and not path.is_dir():
        raise FileAccessError(f"{option} {path}: is a file, not a folder")
    existing = path if path.is_dir() else path.parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise FileAccessError(f"{option} {path}: folder {str(existing)!r} is not writable")
