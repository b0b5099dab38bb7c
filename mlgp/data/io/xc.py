"""Reader and writer for the Extreme Classification (XC) repository text format.

Format
------
Line 1 is ``N D K`` (points, features, labels). Each of the following ``N``
lines is one point::

    l1,l2,... f1:v1 f2:v2 ...

with 0-based label indices separated by commas, then space-separated 0-based
``feature:value`` pairs in strictly increasing feature order. A point without
labels starts with a space; a point without non-zero features has only its
label list. Files whose name ends in ``.gz`` are gzip-compressed.

The reader is strict: anything that does not follow the format raises
:class:`~mlgp.errors.DataFormatError` naming the file and the 1-based line.
Nothing is silently dropped or renumbered, with one documented exception:
feature values that are exactly zero are valid input, are checked like any
other value, and are then removed from the sparse structure
(``eliminate_zeros``), because a sparse matrix does not distinguish a stored
zero from an absent entry. Trailing spaces, tabs and carriage returns at the end
of a line are tolerated; one final newline at the end of the file is optional.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path
from typing import NamedTuple, NoReturn

import numpy as np
import scipy.sparse as sp

from ... import arguments
from ...errors import ArgumentError, DataFormatError, ShapeError
from ...files import atomic_write
from .text import VALUE, VALUE_RE, entry_rows, first_bad_row, is_uint, read_text

__all__ = ["read_xc", "write_xc"]

_INT = r"[0-9]+"
_LINE_RE = re.compile(
    rf"(?:{_INT}(?:,{_INT})*)?(?: +{_INT}:{VALUE})*[ \t\r]*", re.ASCII
)
# Longest index accepted before conversion (keeps int64 conversion overflow-free).
_MAX_DIGITS = 18


def _parse_header(line: str, path: Path) -> tuple[int, int, int]:
    toks = line.split()
    if len(toks) != 3 or not all(is_uint(t) and len(t) <= _MAX_DIGITS for t in toks):
        raise DataFormatError(
            f"header must be 'N D K' (three non-negative integers), got {line[:80]!r}", path, 1
        )
    n, d, k = (int(t) for t in toks)
    return n, d, k


def _check_line(line: str, lineno: int, num_features: int, num_labels: int,
                dtype: np.dtype, path: Path) -> None:
    """Validate one data line strictly, raising DataFormatError on the first problem."""

    def fail(msg: str) -> None:
        raise DataFormatError(msg, path, lineno)

    body = line.rstrip(" \t\r")
    lab, sep, rest = body.partition(" ")
    if lab:
        seen: set[int] = set()
        for tok in lab.split(","):
            if not is_uint(tok):
                fail(f"malformed label list {lab[:80]!r}: labels must be comma-separated "
                     "non-negative integers (a point without labels starts with a space)")
            j = int(tok)
            if j >= num_labels or len(tok) > _MAX_DIGITS:
                fail(f"label index {tok} outside [0, {num_labels})")
            if j in seen:
                fail(f"duplicate label {j}")
            seen.add(j)
    last = -1
    for tok in rest.split(" "):
        if tok == "":
            continue  # runs of spaces between pairs are allowed
        if tok.count(":") != 1:
            fail(f"malformed feature:value pair {tok[:80]!r}")
        fs, vs = tok.split(":")
        if not is_uint(fs):
            fail(f"malformed feature:value pair {tok[:80]!r}: feature index is not a "
                 "non-negative integer")
        f = int(fs)
        if f >= num_features or len(fs) > _MAX_DIGITS:
            fail(f"feature index {fs} outside [0, {num_features})")
        if VALUE_RE.fullmatch(vs) is None:
            fail(f"non-numeric value {vs[:80]!r} for feature {f}")
        v = dtype.type(float(vs))
        if not np.isfinite(v):
            fail(f"value {vs[:80]!r} for feature {f} is not finite in {dtype.name}")
        if f == last:
            fail(f"duplicate feature index {f}")
        if f < last:
            fail(f"feature indices out of order ({f} after {last}); they must be increasing")
        last = f
    if _LINE_RE.fullmatch(line) is None:  # anything the token checks above missed
        fail(f"malformed line {line[:80]!r}")


class _DataLines(NamedTuple):
    """An XC file's data lines (header and final newline removed: line ``row`` of ``lines`` is line
    row + 2 of the file) and what checking them needs: the header's D and K and the dtype."""

    path: Path
    lines: list[str]
    num_features: int
    num_labels: int
    dtype: np.dtype

    def reject(self, row: int) -> NoReturn:
        """Raise the :class:`DataFormatError` that names data line ``row`` (0-based), known to be
        invalid, and its first problem."""
        _check_line(self.lines[row], row + 2, self.num_features, self.num_labels, self.dtype, self.path)
        raise DataFormatError("invalid line", self.path, row + 2)  # pragma: no cover (guard)


class _Entries(NamedTuple):
    """The non-zeros of a file's label and feature matrices, in file order, not yet range-checked.

    ``lab_counts`` (N,) int64: labels per point; ``lab_row``, ``lab_idx`` (L,) int64: each label's
    point and label index; ``feat_counts`` (N,) int64: pairs per point; ``feat_row``, ``feat_idx``
    (F,) int64: each pair's point and feature index; ``vals`` (F,) the file's dtype: its value
    (±inf where the value overflows the dtype).
    """

    lab_counts: np.ndarray
    lab_row: np.ndarray
    lab_idx: np.ndarray
    feat_counts: np.ndarray
    feat_row: np.ndarray
    feat_idx: np.ndarray
    vals: np.ndarray


def _data_lines(text: str, path: Path, dtype: np.dtype) -> _DataLines:
    """Split a file's text into its header, read, and its data lines, whose number must be the
    header's N; the final newline is optional."""
    if text.strip() == "":
        raise DataFormatError("empty file (expected a header line 'N D K')", path, 1)
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the final newline
    n, d, k = _parse_header(lines[0], path)
    data = lines[1:]
    if len(data) != n:
        where = len(data) + 2 if len(data) < n else n + 2
        raise DataFormatError(
            f"header says N={n} points but the file has {len(data)} data lines", path, where
        )
    return _DataLines(path, data, d, k, dtype)


def _check_syntax(src: _DataLines) -> None:
    """Reject the first data line that does not match the line grammar (one compiled regex per
    line, at C speed)."""
    fullmatch = _LINE_RE.fullmatch
    for i, line in enumerate(src.lines):
        if fullmatch(line) is None:
            src.reject(i)


def _tokens(src: _DataLines) -> tuple[np.ndarray, list[str], np.ndarray, list[str], list[str]]:
    """Split syntactically valid data lines into tokens: (labels per point (N,) int64, the label
    tokens, pairs per point (N,) int64, the feature-index tokens, the value tokens), in file order."""
    n = len(src.lines)
    labs: list[str] = []
    rests: list[str] = []
    for line in src.lines:
        lab, _, rest = line.rstrip(" \t\r").partition(" ")
        labs.append(lab)
        rests.append(rest)
    lab_counts = np.fromiter((s.count(",") + 1 if s else 0 for s in labs), np.int64, count=n)
    lab_toks = ",".join(s for s in labs if s).split(",") if lab_counts.sum() else []
    feat_counts = np.fromiter((r.count(":") for r in rests), np.int64, count=n)
    pair_toks = " ".join(rests).replace(":", " ").split()
    if len(pair_toks) != 2 * int(feat_counts.sum()):  # cannot happen after the regex
        raise DataFormatError("malformed feature:value pairs", src.path)  # pragma: no cover
    return lab_counts, lab_toks, feat_counts, pair_toks[0::2], pair_toks[1::2]


def _reject_long_indices(src: _DataLines, toks: list[str], counts: np.ndarray) -> None:
    """Reject the point of the first index token longer than ``_MAX_DIGITS`` digits (too long for
    int64), ``toks`` being the points' tokens in order, ``counts`` (N,) how many each point has."""
    if toks and max(map(len, toks)) > _MAX_DIGITS:
        pos = next(i for i, t in enumerate(toks) if len(t) > _MAX_DIGITS)
        src.reject(int(np.searchsorted(np.cumsum(counts), pos, side="right")))


def _entries(src: _DataLines) -> _Entries:
    """The labels and feature pairs of syntactically valid data lines as arrays; a label or
    feature index too long for int64 is rejected here (labels first), the rest is checked by
    :func:`_first_invalid_row`."""
    lab_counts, lab_toks, feat_counts, idx_toks, val_toks = _tokens(src)
    for toks, counts in ((lab_toks, lab_counts), (idx_toks, feat_counts)):
        _reject_long_indices(src, toks, counts)
    lab_idx = np.array(lab_toks, dtype=np.int64) if lab_toks else np.zeros(0, np.int64)
    feat_idx = np.array(idx_toks, dtype=np.int64) if idx_toks else np.zeros(0, np.int64)
    with np.errstate(over="ignore", invalid="ignore"):
        vals = np.array(val_toks, dtype=np.float64).astype(src.dtype) if val_toks \
            else np.zeros(0, src.dtype)
    lab_row = entry_rows(lab_counts)
    feat_row = entry_rows(feat_counts)
    return _Entries(lab_counts, lab_row, lab_idx, feat_counts, feat_row, feat_idx, vals)


def _first_invalid_row(e: _Entries, label_order: np.ndarray, num_features: int,
                       num_labels: int) -> int | None:
    """The first point (0-based) with a label ≥ ``num_labels``, a feature ≥ ``num_features``, a
    non-finite value, feature indices not strictly increasing or a repeated label; ``None`` when
    there is none. ``label_order`` (L,) sorts the labels by point, then label index."""
    bad_rows: list[np.ndarray] = []
    bad_rows.append(e.lab_row[e.lab_idx >= num_labels])
    bad_rows.append(e.feat_row[e.feat_idx >= num_features])
    bad_rows.append(e.feat_row[~np.isfinite(e.vals)])
    if e.feat_idx.size > 1:
        same = e.feat_row[1:] == e.feat_row[:-1]
        bad_rows.append(e.feat_row[1:][same & (e.feat_idx[1:] <= e.feat_idx[:-1])])
    lab_row_s, lab_idx_s = e.lab_row[label_order], e.lab_idx[label_order]
    if lab_idx_s.size > 1:
        dup = (lab_row_s[1:] == lab_row_s[:-1]) & (lab_idx_s[1:] == lab_idx_s[:-1])
        bad_rows.append(lab_row_s[1:][dup])
    return first_bad_row(bad_rows)


def _matrices(e: _Entries, label_order: np.ndarray, num_features: int, num_labels: int,
              dtype: np.dtype) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """X (N, D) of ``dtype``, exact zeros removed, and the 0/1 Y (N, K) int8 of valid entries,
    both CSR with sorted indices; ``label_order`` (L,) sorts the labels by point, then index."""
    n = e.lab_counts.size
    indptr_x = np.concatenate([[0], np.cumsum(e.feat_counts)])
    X = sp.csr_matrix((e.vals, e.feat_idx, indptr_x), shape=(n, num_features), dtype=dtype)
    X.eliminate_zeros()
    X.has_sorted_indices = True
    lab_idx_s = e.lab_idx[label_order]
    indptr_y = np.concatenate([[0], np.cumsum(e.lab_counts)])
    Y = sp.csr_matrix((np.ones(lab_idx_s.size, np.int8), lab_idx_s, indptr_y),
                      shape=(n, num_labels), dtype=np.int8)
    Y.has_sorted_indices = True
    return X, Y


def read_xc(path: str | Path, dtype=np.float64) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """Read an XC-format file (``.txt`` or gzip-compressed ``.txt.gz``).

    Parameters
    ----------
    path
        The file. A name ending in ``.gz`` is read as gzip.
    dtype
        Floating dtype of the feature matrix.

    Returns
    -------
    X : scipy.sparse.csr_matrix, shape (N, D), ``dtype``
        Features, sorted indices, exact zeros removed.
    Y : scipy.sparse.csr_matrix, shape (N, K), int8
        0/1 label matrix, sorted indices.

    Raises
    ------
    DataFormatError
        On any deviation from the format, naming the file and 1-based line.
    """
    path = Path(path)
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        raise ArgumentError(f"dtype must be a floating dtype, got {dtype}")
    src = _data_lines(read_text(path), path, dtype)
    _check_syntax(src)
    entries = _entries(src)
    label_order = np.lexsort((entries.lab_idx, entries.lab_row))
    bad = _first_invalid_row(entries, label_order, src.num_features, src.num_labels)
    if bad is not None:
        src.reject(bad)
    return _matrices(entries, label_order, src.num_features, src.num_labels, dtype)


def _canonical(X, Y) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """Copies of X as float64 CSR, duplicates summed, zeros removed, indices sorted, and of Y as
    sorted CSR; raises :class:`ShapeError` when they disagree on N, X has a non-finite value or Y
    holds anything but 0 and 1."""
    X = sp.csr_matrix(X, dtype=np.float64, copy=True)
    Y = sp.csr_matrix(Y, copy=True)
    if X.shape[0] != Y.shape[0]:
        raise ShapeError(f"X has {X.shape[0]} rows but Y has {Y.shape[0]}")
    X.sum_duplicates()  # first: two stored 1e308 are an inf
    if not np.all(np.isfinite(X.data)):
        raise ShapeError("X has non-finite values")
    X.eliminate_zeros()
    X.sort_indices()
    Y.sum_duplicates()
    Y.eliminate_zeros()
    Y.sort_indices()
    if Y.nnz and not np.all(Y.data == 1):
        raise ShapeError("Y must contain only 0 and 1")
    return X, Y


def _text(X: sp.csr_matrix, Y: sp.csr_matrix, fmt) -> str:
    """The XC text of canonical X and Y, each pair written by ``fmt(index, value)``."""
    n, dfeat = X.shape
    out = [f"{n} {dfeat} {Y.shape[1]}"]
    xi, xd, xp = X.indices.tolist(), X.data.tolist(), X.indptr.tolist()
    yi, yp = Y.indices.tolist(), Y.indptr.tolist()
    for r in range(n):
        lab = ",".join(map(str, yi[yp[r]:yp[r + 1]]))
        a, b = xp[r], xp[r + 1]
        if a == b:
            out.append(lab if lab else " ")
        else:
            out.append(lab + " " + " ".join(map(fmt, xi[a:b], xd[a:b])))
    return "\n".join(out) + "\n"


def write_xc(path: str | Path, X, Y, decimals: int | None = None) -> None:
    """Write features and labels in XC format (gzip when the name ends in ``.gz``), atomically
    (:func:`mlgp.files.atomic_write`: an earlier file of that name stays whole until the new one is).

    Parameters
    ----------
    path
        Output file.
    X : array-like or sparse, shape (N, D)
        Features; only non-zero entries are written, in increasing feature order.
    Y : array-like or sparse, shape (N, K)
        0/1 labels.
    decimals
        ``None`` (default): each value as the shortest text that reads back as the same float64
        (``1e-07``, ``0.25``). A number: fixed-point with this many decimals (smaller files);
        values exactly representable with them read back identically, and a non-zero value that
        would round to 0 (and so vanish from the file) is refused.

    Raises
    ------
    ShapeError
        When X and Y disagree on N, Y is not 0/1, or X has non-finite values.
    ArgumentError
        For a bad ``decimals``, or one that would write a non-zero value as 0.
    FileAccessError
        When the file cannot be written (no such folder, no permission).
    """
    path = Path(path)
    if decimals is not None:
        decimals = arguments.non_negative_int(decimals, "decimals")
    X, Y = _canonical(X, Y)
    if decimals is None:
        fmt = "{}:{!r}".format
    else:
        fmt = f"{{}}:{{:.{decimals}f}}".format
        vanishing = X.data[np.abs(X.data) < 0.5 * 10.0**-decimals]
        if vanishing.size:
            raise ArgumentError(f"decimals={decimals} would write {vanishing[0]:.3g} as 0 (the feature would vanish "
                                "on reading back); use more decimals or decimals=None")
    data = _text(X, Y, fmt).encode("ascii")
    if path.name.endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    atomic_write(path, lambda fh: fh.write(data))  # a failed write is a FileAccessError naming the file
