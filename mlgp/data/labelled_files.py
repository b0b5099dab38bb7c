"""Labelled data files for the command-line tools (``mlgp fit --train FILE``, ``mlgp predict
--data FILE``): one reader and one writer for three formats.

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
    The XC repository's text format, read and written by :mod:`mlgp.data.xc`.
``"libsvm"`` (``.svm``, ``.libsvm``, ``.svmlight``, each also ``.gz``)
    Multi-label LIBSVM / SVMlight text, one point per line: ``l1,l2,... f1:v1 f2:v2 ...  # comment``.
    Labels are indices 0..K-1 written as digits, separated by single commas (a point without labels
    starts with its first pair); feature indices rise strictly along a line. Feature indices are
    **one-based by default** (``zero_based=False``), as LIBSVM, LIBLINEAR and the LIBSVM data sets
    write them: feature 1 is column 0, and an index 0 is an error. ``zero_based=True`` reads
    zero-based files (scikit-learn's ``dump_svmlight_file`` default); ``"auto"`` is scikit-learn's
    guess (one-based unless some index is 0), which can read a training and a test file differently,
    so it is never the default. Labels are never shifted. The file does not store D and K: they are
    the largest column + 1 and label + 1 unless ``num_features`` / ``num_labels`` give them. Blank
    lines and ``#`` comments are skipped, tokens are separated by spaces or tabs, ``qid:`` is
    refused, indices and labels are at most 2**31 - 2. Every line is checked against this grammar,
    then scikit-learn's ``load_svmlight_file`` parses the file; its errors do not say where, so each
    is located and reported by line. The writer is ours (``dump_svmlight_file`` writes ``%.16g``,
    which does not round-trip float64) and refuses a point with neither labels nor features (a blank
    line, which readers skip).
``"npz"`` (``.npz``)
    A ``.npz`` (stored or deflated) of exactly eight plain arrays, the CSR parts of X and Y:
    ``X_data`` (nnz,) numeric, ``X_indices`` (nnz,) int, ``X_indptr`` (N+1,) int, ``X_shape`` (2,)
    int, and ``Y_data`` (0/1), ``Y_indices``, ``Y_indptr``, ``Y_shape`` alike; read with
    :func:`mlgp.files.read_npz` (no pickle, CRCs checked), rebuilt with
    :func:`mlgp.files.csr_from_parts` (indices in range, in any order within a row, no entry stored
    twice); stored zeros are dropped. :func:`write_labelled_npz` writes one.
"""

from __future__ import annotations

import gzip
import io
import itertools
import re

import numpy as np
import scipy.sparse as sp

from .. import arguments
from ..errors import ArgumentError, DataFormatError, DatasetNotFoundError, FileAccessError, ShapeError
from ..files import as_path, atomic_write, csr_from_parts, read_npz
from ..validation import check_labels
from .xc import _read_text, read_xc, write_xc

__all__ = ["FORMATS", "format_of", "read_labelled", "write_labelled", "write_labelled_npz"]

#: the formats :func:`read_labelled` and :func:`write_labelled` know
FORMATS = ("xc", "libsvm", "npz")
_EXTENSIONS = {".txt": "xc", ".txt.gz": "xc", ".xc": "xc", ".xc.gz": "xc",
               ".svm": "libsvm", ".svm.gz": "libsvm", ".libsvm": "libsvm", ".libsvm.gz": "libsvm",
               ".svmlight": "libsvm", ".svmlight.gz": "libsvm", ".npz": "npz"}
_NPZ_KEYS = tuple(f"{m}_{part}" for m in "XY" for part in ("data", "indices", "indptr", "shape"))
#: largest feature index or label in a LIBSVM file (scikit-learn reads indices as C ints)
_MAX_INDEX = 2**31 - 2
_INT = r"0*[0-9]{1,10}"
_VALUE = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_PAIR = rf"{_INT}:{_VALUE}"
_LINE_RE = re.compile(rf"[ \t]*(?:(?:{_INT}(?:,{_INT})*|{_PAIR})(?:[ \t]+{_PAIR})*)?[ \t\r]*(?:#.*)?", re.ASCII)
_VALUE_RE = re.compile(_VALUE, re.ASCII)
_SPACES_RE = re.compile(r"[ \t]+")


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
                  zero_based_option: str = "zero_based=True") -> tuple[sp.csr_matrix, sp.csr_matrix]:
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
    _check_readable(path)
    if fmt == "xc":
        X, Y = read_xc(path)
    elif fmt == "npz":
        X, Y = _read_npz(path)
    else:
        X, Y = _read_libsvm(path, zero_based, num_features, num_labels, zero_based_option)
    n, d = X.shape
    if n == 0:
        raise DataFormatError("no data points in the file", path)
    for have, want, what, letter in ((d, num_features, "features", "D"), (Y.shape[1], num_labels, "labels", "K")):
        if want is not None and have > want:
            raise ShapeError(f"{path}: the file has {letter} = {have} {what} but {letter} = {want} is expected")
    X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(n, num_features or d), dtype=np.float64)
    Y = sp.csr_matrix((Y.data.astype(np.int8), Y.indices, Y.indptr), shape=(n, num_labels or Y.shape[1]))
    for A in (X, Y):
        A.sum_duplicates()  # sorts the npz reader's indices; marks the others' canonical
        A.eliminate_zeros()
    if Y.nnz == 0:
        raise DataFormatError("no labels: every point in the file is unlabelled", path)
    return X, Y


def _check_readable(path) -> None:
    try:
        with open(path, "rb"):
            pass
    except FileNotFoundError:
        raise DatasetNotFoundError(f"{path}: no such file") from None
    except OSError as exc:
        raise FileAccessError(f"cannot read {path}: {exc.strerror or exc}") from None


# ------------------------------------------------------------------------------------ LIBSVM --
def _is_uint(tok: str) -> bool:
    return tok.isascii() and tok.isdigit()


def _too_large(tok: str) -> bool:
    digits = tok.lstrip("0") or "0"
    return len(digits) > 10 or int(digits) > _MAX_INDEX


def _label_problem(tok: str) -> str | None:
    if _is_uint(tok):
        return f"label {tok} too large (at most {_MAX_INDEX})" if _too_large(tok) else None
    try:
        value = float(tok)
    except ValueError:
        return f"malformed label {tok[:80]!r}: labels are non-negative integers separated by single commas"
    if value < 0:
        return f"negative label {tok[:80]}: labels are indices 0..K-1"
    if np.isfinite(value) and value != int(value):
        return f"non-integer label {tok[:80]}: labels are indices 0..K-1"
    return f"label {tok[:80]!r} is not written as a non-negative integer (digits only)"


def _line_problem(line: str, zero_based: bool, option: str) -> str | None:
    """What is wrong with one LIBSVM line, or None (the slow path, run only to name an error)."""
    body = line.partition("#")[0].strip(" \t\r")
    toks = [t for t in _SPACES_RE.split(body) if t]
    if not toks:
        return None if _LINE_RE.fullmatch(line) else f"malformed line {line[:80]!r}"
    pairs = toks
    if ":" not in toks[0]:
        labels = toks[0].split(",")
        for tok in labels:
            problem = _label_problem(tok)
            if problem:
                return problem
        if len(set(map(int, labels))) < len(labels):
            return f"duplicate label in {toks[0][:80]}"
        pairs = toks[1:]
    last = -1
    for tok in pairs:
        idx, _, val = tok.partition(":")
        if not _is_uint(idx):
            return (f"malformed feature:value pair {tok[:80]!r} (expected index:value with a non-negative integer"
                    " index; a label list must come first, written without spaces)")
        if _too_large(idx):
            return f"feature index {idx} too large (at most {_MAX_INDEX})"
        f = int(idx)
        if f == 0 and not zero_based:
            return f"feature index 0 in a one-based file (read with {option} if its indices start at 0)"
        if _VALUE_RE.fullmatch(val) is None:
            return f"non-numeric value {val[:80]!r} for feature {f}"
        if not np.isfinite(float(val)):
            return f"value {val[:80]} for feature {f} is not finite in float64"
        if f <= last:
            return f"feature index {f} after {last}: indices must rise strictly along a line"
        last = f
    return None if _LINE_RE.fullmatch(line) else f"malformed line {line[:80]!r}"


def _read_libsvm(path, zero_based, num_features, num_labels, option):
    from sklearn.datasets import load_svmlight_file

    lines = _read_text(path).split("\n")

    def fail(i: int, auto_zero_based) -> None:
        """Raise the error of line index ``i`` (the first bad one)."""
        problem = _line_problem(lines[i], auto_zero_based, option) or f"cannot read the line {lines[i][:80]!r}"
        raise DataFormatError(problem, path, i + 1)

    for i in (i for i, line in enumerate(lines) if _LINE_RE.fullmatch(line) is None):
        fail(i, zero_based)  # raises: the first line off the grammar
    rows = np.array([i for i, line in enumerate(lines) if line.partition("#")[0].strip(" \t\r")], np.int64)
    if rows.size == 0:
        raise DataFormatError("empty file: no data lines (only blank lines or comments)", path)
    try:  # zero-based: sklearn keeps the file's indices; the shift is done below
        X, labels = load_svmlight_file(io.BytesIO("\n".join(lines).encode("ascii")), dtype=np.float64,
                                       multilabel=True, zero_based=True)
    except Exception as exc:  # out of order or duplicate indices, an index beyond a C int
        for i in rows.tolist():
            if _line_problem(lines[i], zero_based, option):
                fail(i, zero_based)
        raise DataFormatError(f"cannot parse ({type(exc).__name__}: {exc})", path) from exc
    if X.shape[0] != rows.size:  # pragma: no cover (the grammar above rules it out)
        raise DataFormatError(f"parsed {X.shape[0]} points from {rows.size} data lines", path)
    X = sp.csr_matrix(X)
    cols = X.indices.astype(np.int64)
    if zero_based == "auto":
        zero_based = not (cols.size and cols.min() > 0)
    offset = 0 if zero_based else 1
    counts = np.fromiter(map(len, labels), np.int64, count=len(labels))
    flat = np.fromiter(itertools.chain.from_iterable(labels), np.float64, count=int(counts.sum()))
    label_row = np.repeat(np.arange(rows.size), counts)
    feat_row = np.repeat(np.arange(rows.size), np.diff(X.indptr))
    same = label_row[1:] == label_row[:-1]
    bad = np.concatenate([feat_row[~np.isfinite(X.data) | (cols > _MAX_INDEX) | (cols < offset)],
                          label_row[flat > _MAX_INDEX], label_row[1:][same & (flat[1:] == flat[:-1])]])
    if bad.size:
        fail(int(rows[bad.min()]), zero_based)
    cols -= offset
    labs = flat.astype(np.int64)
    d = int(cols.max()) + 1 if cols.size else 0
    k = int(labs.max()) + 1 if labs.size else 0
    for have, want, values, where, what, letter in ((d, num_features, cols, feat_row, "feature index", "D"),
                                                    (k, num_labels, labs, label_row, "label", "K")):
        if want is not None and have > want:
            first = np.flatnonzero(values >= want)[0]
            shown = values[first] + (offset if letter == "D" else 0)  # as written in the file
            raise ShapeError(f"{path}, line {rows[where[first]] + 1}: {what} {shown} does not fit {letter} = {want} "
                             f"(the file needs {letter} = {have}, {letter} = {want} is expected)")
    X = sp.csr_matrix((X.data, cols, X.indptr), shape=(rows.size, d))
    Y = sp.csr_matrix((np.ones(labs.size, np.int8), labs, np.concatenate([[0], np.cumsum(counts)])),
                      shape=(rows.size, k))
    return X, Y


# --------------------------------------------------------------------------------------- npz --
def _npz_matrix(arrays: dict, m: str, path) -> sp.csr_matrix:
    shape = arrays[f"{m}_shape"]
    if shape.shape != (2,) or shape.dtype.kind not in "iu" or shape.min() < 0 or shape.max() > 2**62:
        raise DataFormatError(f"{m}_shape must hold two non-negative integers (rows, columns), got "
                              f"{shape.dtype} array of shape {shape.shape}", path)
    parts = [arrays[f"{m}_{part}"] for part in ("data", "indices", "indptr")]
    try:
        return csr_from_parts(*parts, tuple(int(s) for s in shape))
    except (ValueError, TypeError, OverflowError) as err:
        raise DataFormatError(f"{m}_data, {m}_indices, {m}_indptr, {m}_shape do not form a CSR matrix: {err}",
                              path) from None


def _read_npz(path):
    arrays = read_npz(path, "labelled data file")
    missing = [k for k in _NPZ_KEYS if k not in arrays]
    extra = sorted(set(arrays) - set(_NPZ_KEYS))
    if missing or extra:
        raise DataFormatError(f"expected the entries {', '.join(_NPZ_KEYS)}; missing: {', '.join(missing) or '-'}; "
                              f"unexpected: {', '.join(extra) or '-'}", path)
    X, Y = _npz_matrix(arrays, "X", path), _npz_matrix(arrays, "Y", path)
    if X.shape[0] != Y.shape[0]:
        raise DataFormatError(f"X_shape says {X.shape[0]} rows but Y_shape says {Y.shape[0]}", path)
    X = sp.csr_matrix(X, dtype=np.float64, copy=True)
    if not np.all(np.isfinite(X.data)):
        row = np.searchsorted(X.indptr, np.flatnonzero(~np.isfinite(X.data))[0], side="right") - 1
        raise DataFormatError(f"X_data: a value that is not finite in float64 (row {row})", path)
    Y = sp.csr_matrix(Y, copy=True)
    wrong = (Y.data != 0) & (Y.data != 1)
    if wrong.any():
        raise DataFormatError(f"Y_data: labels must be 0 or 1, found {np.unique(Y.data[wrong])[:5]}", path)
    return X, Y


# ------------------------------------------------------------------------------------ writing --
def _checked(X, Y) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """Copies of X as canonical float64 CSR without zeros and of Y as sorted int8 0/1 CSR."""
    X = sp.csr_matrix(X, dtype=np.float64, copy=True)
    X.sum_duplicates()
    if not np.all(np.isfinite(X.data)):
        raise ShapeError("X has non-finite values")
    X.eliminate_zeros()
    return X, sp.csr_matrix(check_labels(Y, num_points=X.shape[0]), dtype=np.int8)


def write_labelled_npz(path, X, Y) -> None:
    """Write X (N, D) and Y (N, K, 0/1) as the eight-array ``.npz`` of the module docstring, atomically.
    Raises what :func:`write_labelled` raises."""
    X, Y = _checked(X, Y)
    arrays = {f"{m}_{part}": value for m, A in (("X", X), ("Y", Y))
              for part, value in (("data", A.data), ("indices", A.indices), ("indptr", A.indptr),
                                  ("shape", np.array(A.shape, np.int64)))}
    atomic_write(as_path(path), lambda fh: np.savez_compressed(fh, **arrays))


def _write_libsvm(path, X, Y, zero_based: bool) -> None:
    X, Y = _checked(X, Y)  # copies
    empty = np.flatnonzero((np.diff(X.indptr) == 0) & (np.diff(Y.indptr) == 0))
    if empty.size:
        raise ShapeError(f"row {empty[0]} has neither labels nor features: LIBSVM cannot hold it (a blank "
                         "line is skipped); use the xc or npz format")
    offset = 0 if zero_based else 1
    xi, xd, xp = (X.indices.astype(np.int64) + offset).tolist(), X.data.tolist(), X.indptr.tolist()
    yi, yp = Y.indices.tolist(), Y.indptr.tolist()
    out = []
    for r in range(X.shape[0]):
        lab = ",".join(map(str, yi[yp[r]:yp[r + 1]]))
        pairs = " ".join(f"{i}:{v!r}" for i, v in zip(xi[xp[r]:xp[r + 1]], xd[xp[r]:xp[r + 1]]))
        out.append(f"{lab} {pairs}" if pairs else lab)
    data = ("\n".join(out) + "\n").encode("ascii")
    data = gzip.compress(data, mtime=0) if path.name.endswith(".gz") else data
    atomic_write(path, lambda fh: fh.write(data))


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
        _write_libsvm(path, X, Y, arguments.flag(zero_based, "zero_based"))
