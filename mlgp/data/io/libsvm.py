"""Reader and writer for multi-label LIBSVM / SVMlight text, one point per line::

    l1,l2,... f1:v1 f2:v2 ...  # comment

Labels are indices 0..K-1 written as digits, separated by single commas (a point without labels
starts with its first pair); feature indices rise strictly along a line. Feature indices are
**one-based by default** (``zero_based=False``), as LIBSVM, LIBLINEAR and the LIBSVM data sets
write them: feature 1 is column 0, and an index 0 is an error. ``zero_based=True`` reads
zero-based files (scikit-learn's ``dump_svmlight_file`` default); ``"auto"`` is scikit-learn's
guess (one-based unless some index is 0), which can read a training and a test file differently,
so it is never the default. Labels count from 0 (as in the XC format and scikit-learn) unless
``labels_from=1`` says that they count from 1 (as many papers write them; label 1 is then column
0, and a label 0 is an error). By default (``labels_from=None``) a file whose labels never use 0
is refused, naming the option, where the count of labels is read from the file (a file counting
from 1 would otherwise gain a label 0 that never occurs), or where the largest label is exactly K
(``num_labels``); ``labels_from=0`` reads such a file as it is. The file does not store D and K:
they are the largest column + 1 and label + 1 unless ``num_features`` / ``num_labels`` give them. Blank
lines and ``#`` comments are skipped, tokens are separated by spaces or tabs, ``qid:`` is
refused, indices and labels are at most 2**31 - 2. Every line is checked against this grammar,
then scikit-learn's ``load_svmlight_file`` parses the file; its errors do not say where, so each
is located and reported by line. The writer is ours (``dump_svmlight_file`` writes ``%.16g``,
which does not round-trip float64) and refuses a point with neither labels nor features (a blank
line, which readers skip).
"""

from __future__ import annotations

import gzip
import io
import itertools
import re
from pathlib import Path
from typing import NamedTuple, NoReturn

import numpy as np
import scipy.sparse as sp

from ...errors import DataFormatError, ShapeError
from ...files import atomic_write
from .canonical import canonical_pair
from .text import VALUE, VALUE_RE, entry_rows, first_bad_row, is_uint, read_text

__all__ = ["read_libsvm", "write_libsvm"]

#: largest feature index or label in a LIBSVM file (scikit-learn reads indices as C ints)
_MAX_INDEX = 2**31 - 2
_INT = r"0*[0-9]{1,10}"
_PAIR = rf"{_INT}:{VALUE}"
_LINE_RE = re.compile(rf"[ \t]*(?:(?:{_INT}(?:,{_INT})*|{_PAIR})(?:[ \t]+{_PAIR})*)?[ \t\r]*(?:#.*)?", re.ASCII)
_SPACES_RE = re.compile(r"[ \t]+")


def _too_large(tok: str) -> bool:
    digits = tok.lstrip("0") or "0"
    return len(digits) > 10 or int(digits) > _MAX_INDEX


def _label_problem(tok: str) -> str | None:
    if is_uint(tok):
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
        if not is_uint(idx):
            return (f"malformed feature:value pair {tok[:80]!r} (expected index:value with a non-negative integer"
                    " index; a label list must come first, written without spaces)")
        if _too_large(idx):
            return f"feature index {idx} too large (at most {_MAX_INDEX})"
        f = int(idx)
        if f == 0 and not zero_based:
            return f"feature index 0 in a one-based file (read with {option} if its indices start at 0)"
        if VALUE_RE.fullmatch(val) is None:
            return f"non-numeric value {val[:80]!r} for feature {f}"
        if not np.isfinite(float(val)):
            return f"value {val[:80]} for feature {f} is not finite in float64"
        if f <= last:
            return f"feature index {f} after {last}: indices must rise strictly along a line"
        last = f
    return None if _LINE_RE.fullmatch(line) else f"malformed line {line[:80]!r}"


class _Lines(NamedTuple):
    """A LIBSVM file's lines (``lines[i]`` is line i + 1 of the file) and ``option``, how to ask for
    zero-based reading (named by the error for an index 0 in a one-based file)."""

    path: Path
    lines: list[str]
    option: str

    def reject(self, i: int, zero_based) -> NoReturn:
        """Raise the :class:`DataFormatError` that names line index ``i`` (the first bad one) and its
        first problem."""
        line = self.lines[i]
        problem = _line_problem(line, zero_based, self.option) or f"cannot read the line {line[:80]!r}"
        raise DataFormatError(problem, self.path, i + 1)


def _data_rows(src: _Lines, zero_based) -> np.ndarray:
    """The line indices (int64) of the data lines, every line being checked against the grammar
    first (the first line off it is rejected); an empty file is rejected."""
    for i in (i for i, line in enumerate(src.lines) if _LINE_RE.fullmatch(line) is None):
        src.reject(i, zero_based)  # raises: the first line off the grammar
    rows = np.array([i for i, line in enumerate(src.lines) if line.partition("#")[0].strip(" \t\r")], np.int64)
    if rows.size == 0:
        raise DataFormatError("empty file: no data lines (only blank lines or comments)", src.path)
    return rows


def _parse(src: _Lines, rows: np.ndarray, zero_based) -> tuple[sp.csr_matrix, list]:
    """scikit-learn's parse of lines on the grammar: X (N, file's D) with the file's indices, and the
    label tuples; a failure is reported at the first line the slow check finds wrong."""
    from sklearn.datasets import load_svmlight_file

    try:  # zero-based: sklearn keeps the file's indices; the shift is done by the caller
        X, labels = load_svmlight_file(io.BytesIO("\n".join(src.lines).encode("ascii")), dtype=np.float64,
                                       multilabel=True, zero_based=True)
    except Exception as exc:  # out of order or duplicate indices, an index beyond a C int
        for i in rows.tolist():
            if _line_problem(src.lines[i], zero_based, src.option):
                src.reject(i, zero_based)
        raise DataFormatError(f"cannot parse ({type(exc).__name__}: {exc})", src.path) from exc
    if X.shape[0] != rows.size:  # pragma: no cover (the grammar above rules it out)
        raise DataFormatError(f"parsed {X.shape[0]} points from {rows.size} data lines", src.path)
    return sp.csr_matrix(X), labels


def _check_fits(path, rows, offset, entries) -> None:
    """Raise :class:`ShapeError` at the first index that does not fit the D (K) asked for;
    ``entries``: for features, then labels, (D or K the file needs, the one asked for or None, the
    0-based indices, their points)."""
    for (have, want, values, where), what, letter in zip(entries, ("feature index", "label"), "DK"):
        if want is not None and have > want:
            first = np.flatnonzero(values >= want)[0]
            shown = values[first] + (offset if letter == "D" else 0)  # as written in the file
            raise ShapeError(f"{path}, line {rows[where[first]] + 1}: {what} {shown} does not fit {letter} = {want} "
                             f"(the file needs {letter} = {have}, {letter} = {want} is expected)")


def read_libsvm(path: Path, zero_based: bool | str, num_features: int | None, num_labels: int | None,
                option: str, labels_from: int | None = None,
                labels_option: str = "labels_from={}") -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """X (N, D) float64 and Y (N, K) int8 0/1 of a LIBSVM file, as the module docstring says; D
    (K) is ``num_features`` (``num_labels``) when given, else the file's. ``zero_based``: ``False``,
    ``True`` or ``"auto"``; ``option``: how the error for an index 0 in a one-based file tells to
    read zero-based; ``labels_from``: ``None`` (from 0, checked), 0 or 1; ``labels_option``: how
    the errors about where labels count from name that choice (a template for its value). Raises :class:`DataFormatError`
    naming the line, or :class:`ShapeError`."""
    src = _Lines(path, read_text(path).split("\n"), option)
    rows = _data_rows(src, zero_based)
    X, labels = _parse(src, rows, zero_based)
    cols = X.indices.astype(np.int64)
    if zero_based == "auto":
        zero_based = not (cols.size and cols.min() > 0)
    offset = 0 if zero_based else 1
    counts = np.fromiter(map(len, labels), np.int64, count=len(labels))
    flat = np.fromiter(itertools.chain.from_iterable(labels), np.float64, count=int(counts.sum()))
    label_row = entry_rows(counts)
    feat_row = entry_rows(np.diff(X.indptr))
    same = label_row[1:] == label_row[:-1]
    bad = first_bad_row([feat_row[~np.isfinite(X.data) | (cols > _MAX_INDEX) | (cols < offset)],
                         label_row[flat > _MAX_INDEX], label_row[1:][same & (flat[1:] == flat[:-1])]])
    if bad is not None:
        src.reject(int(rows[bad]), zero_based)
    cols -= offset
    labs = _labels_counted(flat.astype(np.int64), labels_from, num_labels, path, rows, label_row, labels_option)
    d = int(cols.max()) + 1 if cols.size else 0
    k = int(labs.max()) + 1 if labs.size else 0
    _check_fits(path, rows, offset, ((d, num_features, cols, feat_row), (k, num_labels, labs, label_row)))
    X = sp.csr_matrix((X.data, cols, X.indptr), shape=(rows.size, d))
    Y = sp.csr_matrix((np.ones(labs.size, np.int8), labs, np.concatenate([[0], np.cumsum(counts)])),
                      shape=(rows.size, k))
    return X, Y


def _labels_counted(labs: np.ndarray, labels_from: int | None, num_labels: int | None, path: Path,
                    rows: np.ndarray, label_row: np.ndarray, option: str) -> np.ndarray:
    """The file's labels ``labs`` as 0-based column indices, by ``labels_from`` (module docstring);
    ``rows``/``label_row`` locate a label's line for an error."""
    if labels_from == 1:
        zero = np.flatnonzero(labs == 0)
        if zero.size:
            raise DataFormatError(f"label 0 in a file read with {option.format(1)} (its labels count from 1)", path,
                                  int(rows[label_row[zero[0]]]) + 1)
        return labs - 1
    if labels_from is None and labs.size and labs.min() > 0 and (num_labels is None or labs.max() == num_labels):
        seen = "no point has label 0" if num_labels is None else f"no point has label 0 and one has label {num_labels}"
        raise DataFormatError(f"{seen}: labels count from 0 here (as in the XC format and scikit-learn); if this "
                              f"file's labels count from 1, read it with {option.format(1)} (or with {option.format(0)} "
                              "if label 0 just never occurs)", path)
    return labs


def write_libsvm(path: Path, X, Y, zero_based: bool) -> None:
    """Write X (N, D) and Y (N, K, 0/1) as LIBSVM text (gzip when the name ends in ``.gz``),
    atomically, values as the shortest text of the same float64; feature indices from 0 when
    ``zero_based``, else from 1. Raises :class:`ShapeError` as :func:`canonical_pair` does, and for
    a row with neither labels nor features."""
    X, Y = canonical_pair(X, Y)  # copies
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
