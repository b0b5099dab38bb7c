"""Tests of the XC-format reader and writer (mlgp.data.io.xc)."""

from __future__ import annotations

import gzip
import math
import re
import tempfile
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlgp.data import read_xc, write_xc
from mlgp.data.io import xc
from mlgp.errors import ArgumentError, DataFormatError, MLGPError, ShapeError

VALID = """4 6 3
0,2 0:1.000000 3:-2.500000
 1:0.125000 5:3.000000
1
0,1,2 2:1e-3 4:+4.
"""


def _write(tmp_path: Path, text: str, name: str = "f.txt") -> Path:
    p = tmp_path / name
    if name.endswith(".gz"):
        with gzip.open(p, "wb") as fh:
            fh.write(text.encode("latin-1"))
    else:
        p.write_bytes(text.encode("latin-1"))
    return p


def _assert_same(A: sp.spmatrix, B: sp.spmatrix) -> None:
    assert A.shape == B.shape
    A, B = sp.csr_matrix(A), sp.csr_matrix(B)
    assert (A != B).nnz == 0


def test_read_small(tmp_path):
    X, Y = read_xc(_write(tmp_path, VALID))
    assert isinstance(X, sp.csr_matrix) and isinstance(Y, sp.csr_matrix)
    assert X.shape == (4, 6) and Y.shape == (4, 3)
    assert X.dtype == np.float64 and Y.dtype == np.int8
    assert X.has_sorted_indices and Y.has_sorted_indices
    expected = np.zeros((4, 6))
    expected[0, [0, 3]] = [1.0, -2.5]
    expected[1, [1, 5]] = [0.125, 3.0]
    expected[3, [2, 4]] = [1e-3, 4.0]
    np.testing.assert_array_equal(X.toarray(), expected)
    np.testing.assert_array_equal(Y.toarray(), [[1, 0, 1], [0, 0, 0], [0, 1, 0], [1, 1, 1]])


def test_labels_unsorted_are_sorted(tmp_path):
    _, Y = read_xc(_write(tmp_path, "1 2 5\n4,0,2 1:1\n"))
    assert Y.indices.tolist() == [0, 2, 4]


def test_empty_label_and_feature_lines(tmp_path):
    text = "3 4 2\n \n1\n 0:2.0\n"
    X, Y = read_xc(_write(tmp_path, text))
    assert X.nnz == 1 and Y.nnz == 1
    assert X[2, 0] == 2.0 and Y[1, 1] == 1


def test_float32_dtype(tmp_path):
    X, _ = read_xc(_write(tmp_path, VALID), dtype=np.float32)
    assert X.dtype == np.float32
    with pytest.raises(ArgumentError, match="dtype must be a floating dtype, got int64"):
        read_xc(_write(tmp_path, VALID), dtype=np.int64)


def test_explicit_zeros_are_dropped_after_checking(tmp_path):
    X, _ = read_xc(_write(tmp_path, "1 3 1\n0 0:0.0 1:1.0 2:-0.0\n"))
    assert X.nnz == 1 and X[0, 1] == 1.0
    with pytest.raises(DataFormatError, match=r"line 2: feature index 7 outside \[0, 3\)"):
        read_xc(_write(tmp_path, "1 3 1\n0 0:0.0 7:0.0\n"))


def test_crlf_and_trailing_space_tolerated(tmp_path):
    X, Y = read_xc(_write(tmp_path, "2 3 2\r\n0 1:1.5 \r\n1\r\n"))
    assert X.nnz == 1 and Y.nnz == 2


def test_no_final_newline(tmp_path):
    X, Y = read_xc(_write(tmp_path, VALID.rstrip("\n")))
    assert X.shape == (4, 6) and Y.nnz == 6


@pytest.mark.parametrize("suffix", [".txt", ".txt.gz"])
def test_round_trip(tmp_path, rng, suffix):
    X = sp.random(50, 30, density=0.2, random_state=1, format="csr")
    X.data = np.round(X.data * 20 - 10, 6)
    X.eliminate_zeros()
    Y = sp.random(50, 7, density=0.3, random_state=2, format="csr")
    Y.data[:] = 1
    Y = Y.astype(np.int8)
    p = tmp_path / f"rt{suffix}"
    write_xc(p, X, Y)
    if suffix.endswith(".gz"):
        assert p.read_bytes()[:2] == b"\x1f\x8b"
    X2, Y2 = read_xc(p)
    _assert_same(X, X2)
    _assert_same(Y, Y2)


def test_writer_format(tmp_path):
    X = sp.csr_matrix(np.array([[0, 1.5, 0], [0, 0, 0], [2, 0, 3]]))
    Y = sp.csr_matrix(np.array([[1, 0], [0, 0], [1, 1]]))
    p = tmp_path / "w.txt"
    write_xc(p, X, Y, decimals=2)
    assert p.read_text() == "3 3 2\n0 1:1.50\n \n0,1 0:2.00 2:3.00\n"


def test_writer_leaves_the_callers_matrices_alone(tmp_path):
    # unsorted indices, a duplicate (two stored 0.5 labels summing to 1) and an explicit zero
    X = sp.csr_matrix((np.array([3.0, 0.0, 1.0]), np.array([2, 1, 0]), np.array([0, 3])), shape=(1, 3))
    Y = sp.csr_matrix((np.array([0.5, 1.0, 0.5, 0.0]), np.array([1, 0, 1, 2]), np.array([0, 4])), shape=(1, 3))
    before = [(m.data.copy(), m.indices.copy(), m.indptr.copy()) for m in (X, Y)]
    write_xc(tmp_path / "w.txt", X, Y, decimals=1)
    assert (tmp_path / "w.txt").read_text() == "1 3 3\n0,1 0:1.0 2:3.0\n"
    for m, (data, indices, indptr) in zip((X, Y), before):
        np.testing.assert_array_equal(m.data, data)
        np.testing.assert_array_equal(m.indices, indices)
        np.testing.assert_array_equal(m.indptr, indptr)


def test_writer_rejects_bad_input(tmp_path):
    with pytest.raises(ShapeError, match=r"X has 2 rows but Y has 3"):
        write_xc(tmp_path / "a.txt", np.ones((2, 2)), np.ones((3, 2)))
    with pytest.raises(ShapeError, match=r"Y must contain only 0 and 1"):
        write_xc(tmp_path / "a.txt", np.ones((2, 2)), 2 * np.ones((2, 2)))
    with pytest.raises(ShapeError, match=r"X has non-finite values"):
        write_xc(tmp_path / "a.txt", np.array([[np.nan, 1.0]]), np.ones((1, 2)))
    with pytest.raises(ArgumentError, match=r"decimals must be a non-negative integer, got -1"):
        write_xc(tmp_path / "a.txt", np.ones((2, 2)), np.ones((2, 2)), decimals=-1)


BAD_CASES = [
    # (text, line, message fragment)
    ("", 1, "empty file"),
    ("\n\n", 1, "empty file"),
    ("2 3\n0 1:1\n0\n", 1, "header"),
    ("2 3 x\n0 1:1\n0\n", 1, "header"),
    ("2 3 -1\n0 1:1\n0\n", 1, "header"),
    ("2 3 2 1\n0 1:1\n0\n", 1, "header"),
    ("2 3 2\n0 1:1\n2\n", 3, "label index 2"),
    ("2 3 2\n0 1:1\n0 3:1\n", 3, "feature index 3"),
    ("2 3 2\n0 1:1\n0 1-1\n", 3, "malformed feature:value pair"),
    ("2 3 2\n0 1:1\n0 1:2:3\n", 3, "malformed feature:value pair"),
    ("2 3 2\n0 1:1\n0 :1\n", 3, "malformed"),
    ("2 3 2\n0 1:1\n0 1:abc\n", 3, "non-numeric"),
    ("2 3 2\n0 1:1\n0 1:nan\n", 3, "non-numeric"),
    ("2 3 2\n0 1:1\n0 1:\n", 3, "non-numeric"),
    ("2 3 2\n0 1:1\n0 1:1e999\n", 3, "not finite"),
    ("2 3 2\n0 1:1\n1,1 1:1\n", 3, "duplicate label"),
    ("2 3 2\n0 1:1\n1 1:1 1:2\n", 3, "duplicate feature"),
    ("2 3 2\n0 1:1\n1 2:1 1:2\n", 3, "out of order"),
    ("2 3 2\n0 1:1\n1,,0 1:1\n", 3, "label list"),
    ("2 3 2\n0 1:1\n1, 1:1\n", 3, "label list"),
    ("2 3 2\na 1:1\n1\n", 2, "label list"),
    ("2 3 2\n0 1:1\n", 3, "has 1 data lines"),
    ("2 3 2\n0 1:1\n1\n0\n", 4, "has 3 data lines"),
    ("2 3 2\n0 1:1\n\n1\n", 4, "has 3 data lines"),
    ("2 3 2\n0 1:1\n0 1:1_0\n", 3, "non-numeric"),
    ("2 3 2\n0 1:1\n0 1_0:1\n", 3, "malformed"),
    ("2 3 2\n0 1:1\n0\t1:1\n", 3, "label list"),
    ("2 3 2\n0 1:1\n0 99999999999999999999999:1\n", 3, "feature index"),
    ("2 3 2\n0 1:1\n99999999999999999999999\n", 3, "label index"),
    ("2 3 2\n0 1:1\n0 1:\u00e9\n", 3, "non-ASCII"),
    # a small label index written with more digits than any index may have
    ("2 3 2\n0 1:1\n0000000000000000000001\n", 3, "label index"),
    # files whose only two feature entries are a duplicate, or out of order
    ("1 3 2\n1 1:1 1:2\n", 2, "duplicate feature"),
    ("1 3 2\n1 2:1 1:2\n", 2, "out of order"),
]


@pytest.mark.parametrize("text,line,fragment", BAD_CASES)
@pytest.mark.parametrize("name", ["bad.txt", "bad.txt.gz"])
def test_bad_input(tmp_path, text, line, fragment, name):
    p = _write(tmp_path, text, name)
    with pytest.raises(DataFormatError, match=f"line {line}: ") as info:
        read_xc(p)
    msg = str(info.value)
    assert str(p) in msg
    assert f"line {line}:" in msg, msg
    assert fragment in msg, msg
    assert info.value.line == line


def test_first_error_is_reported(tmp_path):
    text = "4 3 2\n0 1:1\n0 2:1 1:1\n5\n0 9:1\n"
    with pytest.raises(DataFormatError, match="line 3: feature indices out of order"):
        read_xc(_write(tmp_path, text))


def test_gzip_errors(tmp_path):
    p = tmp_path / "x.txt.gz"
    p.write_bytes(b"not gzip at all")
    with pytest.raises(DataFormatError, match="cannot decompress gzip data"):
        read_xc(p)
    good = gzip.compress(VALID.encode())
    p.write_bytes(good[: len(good) // 2])
    with pytest.raises(DataFormatError, match="cannot decompress gzip data"):
        read_xc(p)
    q = tmp_path / "y.txt"
    q.write_bytes(good)
    with pytest.raises(DataFormatError, match=r"line 1: non-ASCII byte 0x8b .*name must end in \.gz"):
        read_xc(q)


def test_missing_file(tmp_path):
    # The OS error passes through unchanged (not wrapped in a DataFormatError).
    with pytest.raises(FileNotFoundError, match="nope.txt") as info:
        read_xc(tmp_path / "nope.txt")
    assert not isinstance(info.value, DataFormatError)


# ---------------------------------------------------------------- hypothesis fuzz

@st.composite
def sparse_problem(draw):
    n = draw(st.integers(0, 12))
    d = draw(st.integers(1, 15))
    k = draw(st.integers(1, 8))
    xmask = draw(st.lists(st.lists(st.booleans(), min_size=d, max_size=d), min_size=n, max_size=n))
    ymask = draw(st.lists(st.lists(st.booleans(), min_size=k, max_size=k), min_size=n, max_size=n))
    ints = st.integers(-(10**9), 10**9).filter(lambda v: v != 0)
    X = np.zeros((n, d))
    for i in range(n):
        for j in range(d):
            if xmask[i][j]:
                X[i, j] = draw(ints) / 1e6  # representable with 6 decimals
    Y = np.array(ymask, dtype=np.int8).reshape(n, k)
    return X, Y


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sparse_problem(), st.sampled_from([".txt", ".txt.gz"]))
def test_fuzz_round_trip(problem, suffix):
    X, Y = problem
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / f"f{suffix}"
        write_xc(p, sp.csr_matrix(X), sp.csr_matrix(Y))
        X2, Y2 = read_xc(p)
    np.testing.assert_array_equal(X2.toarray(), X)
    np.testing.assert_array_equal(Y2.toarray(), Y)
    assert X2.has_sorted_indices and Y2.has_sorted_indices


_REF_VALUE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _reference_parse(text: str):
    """Tiny independent strict parser: dense arrays, or None if the text is invalid."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines = lines[:-1]
    if not lines:
        return None
    head = lines[0].split()
    if len(head) != 3 or not all(re.fullmatch("[0-9]+", h) for h in head):
        return None
    n, d, k = map(int, head)
    if len(lines) - 1 != n or d > 10**6 or k > 10**6:
        return None
    X = np.zeros((n, d))
    Y = np.zeros((n, k), dtype=np.int8)
    for i, line in enumerate(lines[1:]):
        line = re.sub(r"[ \t\r]+$", "", line)
        m = re.fullmatch(r"([0-9]+(?:,[0-9]+)*)?((?: +[0-9]+:\S+)*)", line)
        if m is None:
            return None
        if m.group(1):
            labs = [int(s) for s in m.group(1).split(",")]
            if len(set(labs)) != len(labs) or max(labs) >= k:
                return None
            Y[i, labs] = 1
        last = -1
        for pair in m.group(2).split():
            f, v = pair.split(":", 1)
            if _REF_VALUE.fullmatch(v) is None:
                return None
            f, v = int(f), float(v)
            if f >= d or f <= last or not math.isfinite(v):
                return None
            last = f
            X[i, f] = v
    return X, Y


_CORRUPT_CHARS = list("0123456789 ,:.-+eE\n\t\rx_") + ["\u00e9", "\x00", "\x0c"]


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 10**6), st.sampled_from(_CORRUPT_CHARS),
       st.sampled_from(["replace", "insert", "delete"]))
def test_fuzz_corruption(pos, char, op):
    text = VALID
    pos = pos % len(text)
    if op == "replace":
        bad = text[:pos] + char + text[pos + 1:]
    elif op == "insert":
        bad = text[:pos] + char + text[pos:]
    else:
        bad = text[:pos] + text[pos + 1:]
    ref = _reference_parse(bad)
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "c.txt"
        p.write_bytes(bad.encode("utf-8"))
        try:
            X, Y = read_xc(p)
        except DataFormatError as exc:
            assert str(p) in str(exc)
            assert ref is None, f"rejected valid text {bad!r}: {exc}"
            return
    assert ref is not None, f"accepted invalid text {bad!r}"
    np.testing.assert_array_equal(X.toarray(), ref[0])
    np.testing.assert_array_equal(Y.toarray(), ref[1])


# ---------------------------------------------------------------- the pieces of read_xc

_PATH = Path("pieces.txt")


def _lines(*lines: str, d: int = 5, k: int = 3, dtype=np.float64) -> xc._DataLines:
    return xc._DataLines(_PATH, list(lines), d, k, np.dtype(dtype))


def _entries(lab_counts, lab_idx, feat_counts, feat_idx, vals, dtype=np.float64) -> xc._Entries:
    lab_counts, feat_counts = np.array(lab_counts, np.int64), np.array(feat_counts, np.int64)
    n = lab_counts.size
    return xc._Entries(lab_counts, np.repeat(np.arange(n), lab_counts), np.array(lab_idx, np.int64),
                       feat_counts, np.repeat(np.arange(n), feat_counts), np.array(feat_idx, np.int64),
                       np.array(vals, dtype))


def test_data_lines_splits_off_the_header_and_one_final_newline():
    src = xc._data_lines("2 5 3\n0 1:1\n \n", _PATH, np.dtype(np.float32))
    assert src == (_PATH, ["0 1:1", " "], 5, 3, np.dtype(np.float32))
    assert xc._data_lines("2 5 3\n0 1:1\n ", _PATH, np.dtype(np.float64)).lines == ["0 1:1", " "]
    assert xc._data_lines("1 5 3\n\n", _PATH, np.dtype(np.float64)).lines == [""]  # a point with nothing
    assert xc._data_lines("0 5 3", _PATH, np.dtype(np.float64)).lines == []
    with pytest.raises(DataFormatError, match=r"pieces.txt, line 4: header says N=2 points but the file has 3"):
        xc._data_lines("2 5 3\n0 1:1\n \n\n", _PATH, np.dtype(np.float64))
    with pytest.raises(DataFormatError, match=r"line 3: header says N=2 points but the file has 1"):
        xc._data_lines("2 5 3\n0 1:1\n", _PATH, np.dtype(np.float64))
    with pytest.raises(DataFormatError, match=r"line 1: empty file"):
        xc._data_lines(" \n\t\n", _PATH, np.dtype(np.float64))


def test_reject_names_the_data_line_and_its_first_problem():
    src = _lines("0 1:1", "0 3:1 2:1", "7 9:1")
    for row, fragment in ((1, "out of order"), (2, "label index 7")):
        with pytest.raises(DataFormatError, match=fragment) as info:
            src.reject(row)
        assert info.value.line == row + 2 and info.value.path == str(_PATH)


def test_check_syntax_rejects_the_first_line_off_the_grammar_only():
    xc._check_syntax(_lines("0 1:1", "9 9:1", "1,1 4:1 2:1"))  # ranges, repeats, order: not syntax
    with pytest.raises(DataFormatError, match=r"line 3: malformed label list") as info:
        xc._check_syntax(_lines("0 1:1", "x 1:1", "0 1-1"))
    assert info.value.line == 3


def test_tokens_split_labels_and_pairs_in_file_order():
    src = _lines("0,2 0:1.5 3:-2", " 1:0.125", "1", "", "4 2:1e-3  \r")
    lab_counts, lab_toks, feat_counts, idx_toks, val_toks = xc._tokens(src)
    assert lab_counts.tolist() == [2, 0, 1, 0, 1] and lab_counts.dtype == np.int64
    assert lab_toks == ["0", "2", "1", "4"]
    assert feat_counts.tolist() == [2, 1, 0, 0, 1] and feat_counts.dtype == np.int64
    assert idx_toks == ["0", "3", "1", "2"] and val_toks == ["1.5", "-2", "0.125", "1e-3"]
    empty = xc._tokens(_lines(" ", ""))
    assert empty[0].tolist() == [0, 0] and empty[1] == [] and empty[3] == [] and empty[4] == []


def test_reject_long_indices_names_the_point_of_the_first_long_index():
    long = "9" * 19  # one digit over the limit
    src = _lines("0 1:1 2:1", "", f"0 {long}:1 3:1", f"0 {long}:1")
    xc._reject_long_indices(src, ["1", "2", "3"], np.array([2, 0, 1, 0]))  # none too long
    with pytest.raises(DataFormatError, match=rf"line 4: feature index {long} outside") as info:
        xc._reject_long_indices(src, ["1", "2", long, "3", long], np.array([2, 0, 2, 1]))
    assert info.value.line == 4  # the empty point before it is counted, the later one not reported
    with pytest.raises(DataFormatError, match=rf"line 3: label index {long} outside"):
        xc._reject_long_indices(_lines("0", f"{long},1"), ["0", long, "1"], np.array([1, 2]))


def test_entries_are_the_points_arrays():
    e = xc._entries(_lines("0,2 0:1.5 3:-2", " 1:1e39", "1", d=4, dtype=np.float32))
    assert e.lab_counts.tolist() == [2, 0, 1] and e.lab_row.tolist() == [0, 0, 2] and e.lab_idx.tolist() == [0, 2, 1]
    assert e.feat_counts.tolist() == [2, 1, 0] and e.feat_row.tolist() == [0, 0, 1]
    assert e.feat_idx.tolist() == [0, 3, 1]
    assert e.vals.dtype == np.float32 and e.vals[:2].tolist() == [1.5, -2.0] and e.vals[2] == np.inf  # overflows
    for arr in (e.lab_counts, e.lab_row, e.lab_idx, e.feat_counts, e.feat_row, e.feat_idx):
        assert arr.dtype == np.int64
    none = xc._entries(_lines("", " "))
    assert none.lab_idx.size == 0 and none.feat_idx.size == 0 and none.vals.dtype == np.float64


@pytest.mark.parametrize("entries, row", [
    (([1, 1, 1], [0, 2, 1], [1, 1, 1], [0, 4, 1], [1.0, 2.0, 3.0]), None),
    (([1, 1, 1], [0, 2, 3], [1, 1, 1], [0, 4, 1], [1.0, 2.0, 3.0]), 2),   # label 3 ≥ K
    (([1, 1, 1], [0, 2, 1], [1, 1, 1], [0, 5, 1], [1.0, 2.0, 3.0]), 1),   # feature 5 ≥ D
    (([1, 1, 1], [0, 2, 1], [1, 1, 1], [0, 4, 1], [1.0, np.inf, 3.0]), 1),
    (([1, 1, 1], [0, 2, 1], [1, 2, 1], [0, 4, 4, 1], [1.0, 2.0, 3.0, 4.0]), 1),  # feature 4 twice
    (([1, 1, 1], [0, 2, 1], [1, 2, 1], [0, 4, 3, 1], [1.0, 2.0, 3.0, 4.0]), 1),  # 3 after 4
    (([0, 3, 1], [2, 0, 2, 1], [1, 1, 1], [0, 4, 1], [1.0, 2.0, 3.0]), 1),        # label 2 twice, apart
    (([1, 1, 2], [0, 2, 1, 1], [1, 1, 1], [0, 4, 1], [1.0, 2.0, 3.0]), 2),
    (([1, 1, 1], [0, 2, 9], [2, 0, 1], [3, 1, 9], [1.0, 2.0, 3.0]), 0),           # the earliest of three
    (([0, 0], [], [0, 0], [], []), None),
])
def test_first_invalid_row_is_the_earliest_point_with_any_problem(entries, row):
    e = _entries(*entries)
    order = np.lexsort((e.lab_idx, e.lab_row))
    assert xc._first_invalid_row(e, order, 5, 3) == row


def test_matrices_are_canonical_csr():
    e = _entries([2, 0, 3], [2, 0, 2, 0, 1], [2, 1, 0], [0, 3, 1], [1.5, 0.0, -2.0], dtype=np.float32)
    X, Y = xc._matrices(e, np.lexsort((e.lab_idx, e.lab_row)), 5, 3, np.dtype(np.float32))
    assert isinstance(X, sp.csr_matrix) and isinstance(Y, sp.csr_matrix)
    assert X.shape == (3, 5) and X.dtype == np.float32 and Y.shape == (3, 3) and Y.dtype == np.int8
    np.testing.assert_array_equal(X.toarray(), [[1.5, 0, 0, 0, 0], [0, -2, 0, 0, 0], [0, 0, 0, 0, 0]])
    assert X.nnz == 2  # the stored 0.0 is dropped
    assert Y.indices.tolist() == [0, 2, 0, 1, 2] and Y.indptr.tolist() == [0, 2, 2, 5]
    assert np.all(Y.data == 1)
    assert X.has_canonical_format and Y.has_canonical_format


# ---------------------------------------------------------------- real data

def test_matches_sklearn_reference(data_home):
    sklearn_datasets = pytest.importorskip("sklearn.datasets")
    path = data_home / "enron" / "train.txt.gz"
    X, Y = read_xc(path)
    with gzip.open(path, "rb") as fh:
        n, d, k = map(int, fh.readline().split())
        Xr, yr = sklearn_datasets.load_svmlight_file(
            fh, multilabel=True, n_features=d, zero_based=True)
    assert X.shape == (n, d) and Y.shape == (n, k)
    _assert_same(X, Xr)
    Yr = np.zeros((n, k), dtype=np.int8)
    for i, labs in enumerate(yr):
        Yr[i, [int(j) for j in labs]] = 1
    np.testing.assert_array_equal(Y.toarray(), Yr)


def test_real_round_trip(data_home, tmp_path):
    X, Y = read_xc(data_home / "emotions" / "test.txt.gz")
    p = tmp_path / "e.txt.gz"
    write_xc(p, X, Y)
    X2, Y2 = read_xc(p)
    _assert_same(X, X2)
    _assert_same(Y, Y2)
    # With the file's own six decimals, the written file is byte-identical in content to it.
    write_xc(p, X, Y, decimals=6)
    with gzip.open(data_home / "emotions" / "test.txt.gz", "rt") as a, gzip.open(p, "rt") as b:
        assert a.read().rstrip("\n") == b.read().rstrip("\n")


def test_reads_the_largest_benchmark_split(data_home):
    """Delicious's training split (12,920 × 500, 983 labels): shapes, canonical CSR, 0/1 labels.
    Its parse time is measured by experiments/bench_data_metrics.py, not asserted here."""
    X, Y = read_xc(data_home / "delicious" / "train.txt.gz")
    assert X.shape == (12920, 500) and Y.shape == (12920, 983)
    assert X.has_canonical_format and Y.has_canonical_format
    assert np.all(Y.data == 1) and np.isfinite(X.data).all() and Y.nnz > 12920


def test_errors_are_mlgp_errors():
    assert issubclass(DataFormatError, MLGPError)
