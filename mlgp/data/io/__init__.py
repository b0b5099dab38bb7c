"""Labelled data files for the command-line tools (``mlgp fit --train FILE``, ``mlgp predict
--data FILE``): one reader and one writer for three formats, each format in its own module.

Contract: :func:`read_labelled` returns ``(X, Y)``, X a canonical float64 CSR matrix (N, D) (column
indices sorted and unique in every row, values finite, exact zeros removed) and Y an int8 0/1 CSR
matrix (N, K) with sorted indices, N ≥ 1, at least one label. Whatever bytes the file holds, it
returns or raises, never reading out of bounds nor hanging: :class:`~mlgp.errors.DataFormatError`
naming the file and the 1-based line (text formats) or the entry (npz);
:class:`~mlgp.errors.DatasetNotFoundError` for a missing file, :class:`~mlgp.errors.FileAccessError`
for an unreadable one. Given ``num_features`` (``num_labels``), a file with more features (labels)
raises :class:`~mlgp.errors.ShapeError` naming both numbers, and one with fewer gets empty columns
up to it (a test file read with the model's D and K). :func:`write_labelled` writes each format
atomically (:func:`mlgp.files.atomic_write`), values as the shortest text of the same float64, so
a write then a read gives back X and Y exactly; the caller's arrays are never changed.

Formats, chosen by ``format`` or by the name's ending (:func:`format_of`):

``"xc"`` (``.txt``, ``.xc``, each also ``.gz``)
    The XC repository's text format, read and written by :mod:`mlgp.data.io.xc`.
``"libsvm"`` (``.svm``, ``.libsvm``, ``.svmlight``, each also ``.gz``)
    Multi-label LIBSVM / SVMlight text, ``l1,l2,... f1:v1 f2:v2 ...  # comment``, feature indices
    **one-based by default**; the grammar is :mod:`mlgp.data.io.libsvm`'s.
``"npz"`` (``.npz``)
    The CSR parts of X and Y as eight plain arrays (:mod:`mlgp.data.io.npz`);
    :func:`write_labelled_npz` writes one.

The text layer that the two text readers share is :mod:`mlgp.data.io.text`; the canonical form of
(X, Y) that every reader's result is brought to, and every writer's input checked against, is
:mod:`mlgp.data.io.canonical`.
"""

from __future__ import annotations

import scipy.sparse as sp

from ... import arguments
from ...errors import ArgumentError, DatasetNotFoundError, FileAccessError
from ...files import as_path
from .canonical import conformed
from .libsvm import read_libsvm, write_libsvm
from .npz import read_labelled_npz, write_labelled_npz
from .xc import read_xc, write_xc

__all__ = ["FORMATS", "format_of", "read_labelled", "read_xc", "write_labelled", "write_labelled_npz", "write_xc"]

#: the formats :func:`read_labelled` and :func:`write_labelled` know
FORMATS = ("xc", "libsvm", "npz")
_EXTENSIONS = {".txt": "xc", ".txt.gz": "xc", ".xc": "xc", ".xc.gz": "xc",
               ".svm": "libsvm", ".svm.gz": "libsvm", ".libsvm": "libsvm", ".libsvm.gz": "libsvm",
               ".svmlight": "libsvm", ".svmlight.gz": "libsvm", ".npz": "npz"}


def format_of(path) -> str:
    """The format (one of :data:`FORMATS`) that the name of ``path`` stands for.

    Raises
    ------
    ArgumentError
        For a name with none of the accepted endings, naming the file and the endings.
    """
    name = as_path(path).name
    for ext, fmt in _EXTENSIONS.items():
        if name.endswith(ext):
            return fmt
    raise ArgumentError(f"{path}: unknown data file type; the name must end in one of "
                        f"{', '.join(_EXTENSIONS)} (or give the format: one of {', '.join(FORMATS)})")


def _resolve_format(path, format) -> str:
    if format is None:
        return format_of(path)
    if format not in FORMATS:
        raise ArgumentError(f"format must be one of {', '.join(FORMATS)} or None, got {format!r}")
    return format


def read_labelled(path, format: str | None = None, *, num_features: int | None = None,
                  num_labels: int | None = None, zero_based: bool | str = False,
                  zero_based_option: str = "zero_based=True", labels_from: int | None = None,
                  labels_option: str = "labels_from={}") -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """Read features and labels from a data file (see the module docstring for the formats).

    Parameters
    ----------
    path
        The file.
    format
        ``"xc"``, ``"libsvm"``, ``"npz"``, or ``None`` to choose by the name (:func:`format_of`).
    num_features, num_labels
        The D and K the result must have (a model's); ``None``: the file's.
    zero_based
        LIBSVM files only: ``False`` (default) for one-based feature indices, ``True`` for
        zero-based ones, ``"auto"`` for scikit-learn's guess.
    zero_based_option
        How to ask for zero-based reading, named by the error for an index 0 in a one-based file.
    labels_from
        LIBSVM files only: where labels count from. ``None`` (default): from 0, and a file whose
        labels never use 0 (where K is read from it, or whose largest label is ``num_labels``) is
        refused, naming ``labels_option``; ``0``: from 0, unchecked; ``1``: from 1 (label 1 is
        column 0).
    labels_option
        How to choose ``labels_from``, as a template for ``str.format`` of its value, named by those
        errors (``"--labels-from {}"`` on the command line).

    Returns
    -------
    X : scipy.sparse.csr_matrix, shape (N, D), float64
        Canonical features, exact zeros removed.
    Y : scipy.sparse.csr_matrix, shape (N, K), int8
        0/1 labels, sorted indices.

    Raises
    ------
    DataFormatError, ShapeError, DatasetNotFoundError, FileAccessError
        As the module docstring says.
    ArgumentError
        For an unknown format or name ending, or a bad keyword.
    """
    path = as_path(path)
    fmt = _resolve_format(path, format)
    num_features = arguments.positive_int(num_features, "num_features", optional=True)
    num_labels = arguments.positive_int(num_labels, "num_labels", optional=True)
    if not (isinstance(zero_based, bool) or (isinstance(zero_based, str) and zero_based == "auto")):
        raise ArgumentError(f"zero_based must be True, False or 'auto', got {zero_based!r}")
    if not (labels_from is None or (type(labels_from) is int and labels_from in (0, 1))):
        raise ArgumentError(f"labels_from must be None, 0 or 1, got {labels_from!r}")
    _check_readable(path)
    if fmt == "xc":
        X, Y = read_xc(path)
    elif fmt == "npz":
        X, Y = read_labelled_npz(path)
    else:
        X, Y = read_libsvm(path, zero_based, num_features, num_labels, zero_based_option, labels_from, labels_option)
    return conformed(X, Y, path, num_features, num_labels)


def _check_readable(path) -> None:
    try:
        with open(path, "rb"):
            pass
    except FileNotFoundError:
        raise DatasetNotFoundError(f"{path}: no such file") from None
    except OSError as exc:
        raise FileAccessError(f"cannot read {path}: {exc.strerror or exc}") from None


def write_labelled(path, X, Y, format: str | None = None, *, zero_based: bool = False) -> None:
    """Write X (N, D) and Y (N, K, 0/1) in ``format`` (or the one the name stands for), atomically.

    Parameters
    ----------
    path
        The file; for xc and libsvm a name ending in ``.gz`` is gzip-compressed.
    X : array-like or sparse, shape (N, D)
        Finite features; only the non-zero entries are written.
    Y : array-like or sparse, shape (N, K)
        0/1 labels.
    format
        ``"xc"``, ``"libsvm"``, ``"npz"`` or ``None`` (:func:`format_of`).
    zero_based
        LIBSVM only: write zero-based feature indices (default: one-based, as :func:`read_labelled`
        reads them by default).

    Raises
    ------
    ShapeError
        When X and Y disagree on N, Y is not 0/1, X has non-finite values, or (libsvm) a row has
        neither labels nor features.
    ArgumentError, FileAccessError
        For an unknown format or name ending; when the file cannot be written.
    """
    path = as_path(path)
    fmt = _resolve_format(path, format)
    if fmt == "xc":
        write_xc(path, X, Y)
    elif fmt == "npz":
        write_labelled_npz(path, X, Y)
    else:
        write_libsvm(path, X, Y, arguments.flag(zero_based, "zero_based"))
