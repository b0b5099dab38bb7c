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
from mlgp.errors import ArgumentError, DataFormatError, MLGPError

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
