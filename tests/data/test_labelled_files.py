"""Tests of the labelled data files of the command-line tools (mlgp.data.io: the dispatcher, LIBSVM and npz)."""

from __future__ import annotations

import gzip
import io
import re

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file, load_svmlight_file

from mlgp.data import read_labelled, write_labelled, write_labelled_npz
from mlgp.data.io import FORMATS, format_of
from mlgp.errors import ArgumentError, DataFormatError, DatasetNotFoundError, FileAccessError, ShapeError

NAMES = ["d.txt", "d.txt.gz", "d.xc", "d.svm", "d.libsvm.gz", "d.svmlight", "d.npz"]


def _problem(seed: int = 0, n: int = 7, d: int = 6, k: int = 4):
    rng = np.random.default_rng(seed)
    X = np.where(rng.random((n, d)) < 0.4, rng.normal(size=(n, d)) * 10, 0.0)
    X[:, 0] = 1.0  # every point has a feature (LIBSVM cannot hold an empty point)
    X[0, :3] = [0.1 + 0.2, 1e-300, -5e300]  # needs 17 digits, tiny, huge
    Y = (rng.random((n, k)) < 0.4).astype(np.int8)
    Y[0, k - 1] = Y[2, 0] = 1  # the last label is used, so a LIBSVM file knows K; label 0 too (it counts from 0)
    Y[1] = 0  # an unlabelled point
    return sp.csr_matrix(X), sp.csr_matrix(Y)


def _text(tmp_path, text: str, name: str = "f.svm"):
    p = tmp_path / name
    data = text.encode("latin-1")
    p.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    return p


def _same(A, B):
    assert A.shape == B.shape and (A != B).nnz == 0


@pytest.mark.parametrize("name", NAMES)
def test_round_trip(tmp_path, name):
    X, Y = _problem()
    write_labelled(tmp_path / name, X, Y)
    X2, Y2 = read_labelled(tmp_path / name, num_features=X.shape[1], num_labels=Y.shape[1])
    assert type(X2) is sp.csr_matrix and type(Y2) is sp.csr_matrix
    assert X2.dtype == np.float64 and Y2.dtype == np.int8
    assert X2.has_canonical_format and Y2.has_canonical_format and np.all(X2.data != 0)
    _same(X2, X)  # exact: values are written as the shortest text of the same float64
    _same(Y2, Y)
    X3, Y3 = read_labelled(tmp_path / name)  # the file's own D and K (here the same)
    _same(X3, X)
    _same(Y3, Y)


@pytest.mark.parametrize("name", NAMES)
def test_smaller_file_padded_larger_refused(tmp_path, name):
    X, Y = _problem()
    write_labelled(tmp_path / name, X, Y)
    X2, Y2 = read_labelled(tmp_path / name, num_features=9, num_labels=5)
    assert X2.shape == (7, 9) and Y2.shape == (7, 5)
    _same(X2[:, :6], X)
    with pytest.raises(ShapeError, match=r"D = 6.*D = 5|D = 5.*D = 6"):
        read_labelled(tmp_path / name, num_features=5)
    with pytest.raises(ShapeError, match=r"K = 4.*K = 3|K = 3.*K = 4"):
        read_labelled(tmp_path / name, num_labels=3)


def test_libsvm_feature_beyond_num_features_names_line(tmp_path):
    p = _text(tmp_path, "0 1:1\n1 2:1 7:2\n")
    with pytest.raises(ShapeError, match=r"f\.svm, line 2: feature index 7 does not fit D = 5"):
        read_labelled(p, num_features=5)
    with pytest.raises(ShapeError, match=r"line 2: label 1 does not fit K = 1"):
        read_labelled(p, num_labels=1)


def test_libsvm_conventions(tmp_path):
    p = _text(tmp_path, "# header comment\n\n2,0 1:0.5 3:-2   # a point\n 2:4\n1\t1:1e-3\n")
    X, Y = read_labelled(p)  # one-based by default: feature 1 is column 0
    np.testing.assert_array_equal(X.toarray(), [[0.5, 0, -2], [0, 4, 0], [1e-3, 0, 0]])
    np.testing.assert_array_equal(Y.toarray(), [[1, 0, 1], [0, 0, 0], [0, 1, 0]])
    X0, _ = read_labelled(p, zero_based=True)
    assert X0.shape == (3, 4) and X0[0, 1] == 0.5
    Xa, _ = read_labelled(p, zero_based="auto")  # no index 0: taken as one-based
    _same(Xa, X)


def test_libsvm_writer_one_based_and_readable_by_sklearn(tmp_path):
    X, Y = _problem()
    write_labelled(tmp_path / "d.svm", X, Y)
    first = (tmp_path / "d.svm").read_text().splitlines()[0]
    assert first.startswith(",".join(map(str, Y[0].indices)) + f" {X[0].indices[0] + 1}:")
    Xs, ys = load_svmlight_file(str(tmp_path / "d.svm"), n_features=6, multilabel=True, zero_based=False)
    _same(sp.csr_matrix(Xs), X)
    assert [list(map(int, t)) for t in ys] == [list(r.indices) for r in Y]
    write_labelled(tmp_path / "z.svm", X, Y, zero_based=True)
    _same(read_labelled(tmp_path / "z.svm", zero_based=True, num_features=6)[0], X)
    _same(read_labelled(tmp_path / "z.svm", zero_based="auto", num_features=6)[0], X)


def test_reads_sklearn_dump(tmp_path):
    X = sp.csr_matrix(np.array([[0, 1.5, 0], [2.25, 0, -4]]))
    Y = sp.csr_matrix(np.array([[1, 0, 1], [0, 1, 0]]))
    with open(tmp_path / "s.svm", "wb") as f:
        dump_svmlight_file(X, Y, f, multilabel=True, zero_based=True, comment="made by sklearn")
    X2, Y2 = read_labelled(tmp_path / "s.svm", zero_based=True)
    _same(X2, X)
    _same(Y2, Y)


def test_format_of_and_explicit_format(tmp_path):
    expected = {"a.txt": "xc", "a.txt.gz": "xc", "a.xc": "xc", "a.xc.gz": "xc", "a.svm": "libsvm",
                "a.svm.gz": "libsvm", "a.libsvm": "libsvm", "a.libsvm.gz": "libsvm", "a.svmlight": "libsvm",
                "a.svmlight.gz": "libsvm", "a.npz": "npz"}
    assert {name: format_of(name) for name in expected} == expected
    assert FORMATS == ("xc", "libsvm", "npz")
    for bad in ("a.csv", "a.gz", "a.npz.gz", "a"):
        with pytest.raises(ArgumentError, match=re.escape(bad) + r": unknown data file type.*\.svmlight\.gz"):
            format_of(bad)
        with pytest.raises(ArgumentError, match="unknown data file type"):
            read_labelled(tmp_path / bad)
    X, Y = _problem()
    for fmt in FORMATS:
        write_labelled(tmp_path / "data.bin", X, Y, format=fmt)
        X2, Y2 = read_labelled(tmp_path / "data.bin", fmt, num_features=6, num_labels=4)
        _same(X2, X)
        _same(Y2, Y)
    with pytest.raises(DataFormatError, match=r"data\.bin"):  # an npz read as text
        read_labelled(tmp_path / "data.bin", "libsvm")
    with pytest.raises(ArgumentError, match="format must be one of xc, libsvm, npz"):
        read_labelled(tmp_path / "data.bin", "csv")
    with pytest.raises(ArgumentError, match="format must be one of"):
        write_labelled(tmp_path / "data.bin", X, Y, format="svm")


@pytest.mark.parametrize("text, line, message", [
    ("0 1:1\n0,1.5 2:1\n", 2, "non-integer label 1.5"),
    ("0 1:1\n\n-1 2:1\n", 3, "negative label -1"),
    ("0,-2 1:1\n", 1, "negative label -2"),
    ("1.0 1:1\n", 1, "label '1.0' is not written as a non-negative integer"),
    ("0 1:1\n0,,1 2:1\n", 2, "malformed label ''"),
    ("0 1:1\n0, 1 2:1\n", 2, "malformed label ''"),
    ("a 1:1\n", 1, "malformed label 'a'"),
    ("0,0 1:1\n", 1, "duplicate label"),
    ("1 1:1\n0 2:1 x\n", 2, r"malformed feature:value pair 'x'"),
    ("1 1:1\n0 qid:3 2:1\n", 2, r"malformed feature:value pair 'qid:3'"),
    ("0 1:1\n0 2:abc\n", 2, "non-numeric value 'abc' for feature 2"),
    ("0 1:1\n0 2:nan\n", 2, "non-numeric value 'nan'"),
    ("0 1:1\n0 2:1e999\n", 2, "value 1e999 for feature 2 is not finite"),
    ("0 1:1\n0 2147483648:1e999\n", 2, "feature index 2147483648 too large"),  # both wrong
    ("0 1:1\n0 2:1" + "0" * 99 + "e999\n", 2, "value 1" + "0" * 79 + " for feature 2 is not finite"),  # cut to 80
    ("0 1:1\n# ok\n0 3:1 2:1\n", 3, "feature index 2 after 3"),
    ("0 1:1\n0 3:1 3:1\n", 2, "feature index 3 after 3"),
    ("0 1:1\n0 0:1\n", 2, "feature index 0 in a one-based file"),
    ("0 1:1\n0 -1:1\n", 2, r"malformed feature:value pair '-1:1'"),
    ("0 1:1\n0 2:1:1\n", 2, "non-numeric value '1:1'"),
    ("0 1:1\n0 99999999999999999999999:1\n", 2, "feature index 99999999999999999999999 too large"),
    ("0 1:1\n0 2147483648:1\n", 2, "feature index 2147483648 too large"),
    ("0 1:1\n3000000000 1:1\n", 2, "label 3000000000 too large"),
    ("0 1:1\n0 1:1\x0b2:1\n", 2, r"non-numeric value '1\\x0b2:1' for feature 1"),
    ("0 1:1\n0 1:1\x00\n", 2, r"non-numeric value '1\\x00' for feature 1"),
    ("0 1:1\n0 1:1 \x00\n", 2, r"malformed feature:value pair '\\x00'"),
    ("0 1:1\n0 1:1\xe9\n", 2, "non-ASCII byte 0xe9"),
])
def test_libsvm_bad_line_named(tmp_path, text, line, message):
    for name in ("f.svm", "f.svm.gz"):
        with pytest.raises(DataFormatError, match=re.escape(name) + f", line {line}: " + message) as info:
            read_labelled(_text(tmp_path, text, name))
        assert info.value.line == line and info.value.path.endswith(name)


@pytest.mark.parametrize("text, message", [
    ("", "empty file"), ("\n\n  \n", "empty file"), ("# only a comment\n", "empty file"),
    (" 1:1\n 2:3\n", "no labels"),
])
def test_libsvm_empty_or_unlabelled(tmp_path, text, message):
    with pytest.raises(DataFormatError, match=message):
        read_labelled(_text(tmp_path, text))


def test_xc_unlabelled_or_empty(tmp_path):
    with pytest.raises(DataFormatError, match="no labels"):
        read_labelled(_text(tmp_path, "2 3 2\n 0:1\n 1:1\n", "f.txt"))
    with pytest.raises(DataFormatError, match="no data points"):
        read_labelled(_text(tmp_path, "0 3 2\n", "f.txt"))
    with pytest.raises(DataFormatError, match=r"f\.txt, line 1: empty file"):
        read_labelled(_text(tmp_path, "", "f.txt"))


def _npz(tmp_path, **changes):
    X, Y = _problem()
    arrays = {"X_data": X.data, "X_indices": X.indices, "X_indptr": X.indptr, "X_shape": np.array(X.shape),
              "Y_data": Y.data, "Y_indices": Y.indices, "Y_indptr": Y.indptr, "Y_shape": np.array(Y.shape)}
    arrays.update(changes)
    p = tmp_path / "f.npz"
    np.savez(p, **{k: v for k, v in arrays.items() if v is not None})
    return p


def test_npz_layout_read_without_the_writer(tmp_path):
    X, Y = read_labelled(_npz(tmp_path, Y_data=np.ones_like(_problem()[1].data, dtype=bool)))
    _same(X, _problem()[0])
    _same(Y, _problem()[1])
    X, Y = read_labelled(_npz(tmp_path, Y_data=np.where(np.arange(_problem()[1].nnz) % 2, 1.0, 0.0)))
    assert Y.nnz == _problem()[1].nnz // 2 and Y.dtype == np.int8  # stored zeros are no labels


@pytest.mark.parametrize("changes, message", [
    ({"Y_shape": None}, "missing: Y_shape; unexpected: -"),
    ({"extra": np.zeros(2)}, "missing: -; unexpected: extra"),
    ({"X_data": np.array([1.0, None] * 8, dtype=object)}, "X_data.npy holds Python objects"),
    ({"Y_data": np.full(_problem()[1].nnz, 2.0)}, r"Y_data: labels must be 0 or 1, found \[2\.\]"),
    ({"Y_shape": np.array([6, 4]), "Y_indptr": _problem()[1].indptr[:-1], "Y_data": _problem()[1][:6].data,
      "Y_indices": _problem()[1][:6].indices}, "X_shape says 7 rows but Y_shape says 6"),
    ({"X_shape": np.array([7.0, 6.0])}, "X_shape must hold two non-negative integers"),
    ({"X_shape": np.array([7, -6])}, "X_shape must hold two non-negative integers"),
    ({"X_shape": np.array([7])}, "X_shape must hold two non-negative integers"),
    ({"X_shape": np.array([7, 2])}, r"X_data, X_indices, X_indptr, X_shape do not form a CSR matrix: a column index"),
    ({"X_indptr": _problem()[0].indptr[::-1].copy()}, "do not form a CSR matrix: indptr"),
    ({"X_indices": np.zeros(_problem()[0].nnz, np.int64)}, "do not form a CSR matrix"),
    ({"X_indices": _problem()[0].indices.astype(float)}, "do not form a CSR matrix: integer indices"),
    ({"X_data": np.full(_problem()[0].nnz, np.inf)}, r"X_data: a value that is not finite in float64 \(row 0\)"),
    ({"X_data": np.where(np.arange(_problem()[0].nnz) == _problem()[0].indptr[3], np.nan, 1.0)},
     r"X_data: a value that is not finite in float64 \(row 3\)"),
    ({"Y_data": -np.ones(_problem()[1].nnz)}, r"Y_data: labels must be 0 or 1, found \[-1\.\]"),
    ({"Y_data": np.zeros(_problem()[1].nnz)}, "no labels"),
])
def test_npz_bad(tmp_path, changes, message):
    with pytest.raises(DataFormatError, match=r"f\.npz: .*" + message):
        read_labelled(_npz(tmp_path, **changes))


@pytest.mark.parametrize("name", ["d.txt.gz", "d.svm.gz", "d.npz"])
def test_truncated_files(tmp_path, name):
    X, Y = _problem(n=40)
    write_labelled(tmp_path / name, X, Y)
    data = (tmp_path / name).read_bytes()
    for cut in (1, 10, len(data) // 2, len(data) - 1):
        (tmp_path / name).write_bytes(data[:cut])
        with pytest.raises(DataFormatError, match=re.escape(name)):
            read_labelled(tmp_path / name)


@pytest.mark.parametrize("name", ["d.txt", "d.svm", "d.npz", "d.svm.gz"])
def test_random_bytes_parse_or_raise_data_format_error(tmp_path, name):
    rng = np.random.default_rng(1)
    X, Y = _problem()
    write_labelled(tmp_path / name, X, Y)
    valid = (tmp_path / name).read_bytes()
    alphabet = np.frombuffer(b"0123456789,: .-+eE#\n\t\r\x00\xff", np.uint8)
    for trial in range(120):
        if trial % 3 == 0:
            data = rng.integers(0, 256, rng.integers(0, 200), dtype=np.uint8).tobytes()
        else:
            buf = np.frombuffer(valid, np.uint8).copy()
            pos = rng.integers(0, buf.size, rng.integers(1, 6))
            buf[pos] = alphabet[rng.integers(0, alphabet.size, pos.size)] if trial % 3 == 1 \
                else rng.integers(0, 256, pos.size, dtype=np.uint8)
            data = buf.tobytes()
        (tmp_path / name).write_bytes(data)
        try:
            X2, Y2 = read_labelled(tmp_path / name)
        except (DataFormatError, ShapeError):
            continue
        assert X2.has_canonical_format and np.all(np.isfinite(X2.data)) and set(Y2.data) == {1}
        assert X2.shape[0] == Y2.shape[0] >= 1


def test_long_adversarial_lines_are_refused_without_hanging(tmp_path):
    """Lines of 10⁵ characters built to make a parser backtrack or go quadratic are refused by line.
    Not a speed test (speed is experiments/bench_data_metrics.py's): the 60 s bound only catches a
    hang — the four reads take about 2 s on a 2-core machine."""
    import time

    for text in ("0 " + "1:1 " * 20000 + "x\n", "0" * 100000 + "x\n", "0," * 50000 + "\n",
                 "1 " + " ".join(f"{i}:{'9' * 50}" for i in range(1, 5000)) + " 1:1\n"):
        start = time.perf_counter()
        with pytest.raises(DataFormatError, match="line 1"):
            read_labelled(_text(tmp_path, text))
        assert time.perf_counter() - start < 60.0, "super-linear parsing of a long line"


def test_missing_or_unreadable_file(tmp_path):
    for name in NAMES:
        with pytest.raises(DatasetNotFoundError, match=re.escape(name)):
            read_labelled(tmp_path / name)
    (tmp_path / "dir.svm").mkdir()
    with pytest.raises(FileAccessError, match=r"dir\.svm"):
        read_labelled(tmp_path / "dir.svm")


def test_write_leaves_callers_arrays_alone(tmp_path):
    # non-canonical X: duplicates, unsorted indices, an explicit zero; Y unsorted with a stored zero
    X = sp.csr_matrix((np.array([1.0, 2.0, 0.0, 0.5]), np.array([2, 0, 1, 2]), np.array([0, 3, 4])), shape=(2, 3))
    Y = sp.csr_matrix((np.array([1, 0, 1], np.int8), np.array([1, 2, 0]), np.array([0, 2, 3])), shape=(2, 3))
    dense_X = X.toarray()
    parts = [a.copy() for a in (X.data, X.indices, X.indptr, Y.data, Y.indices, Y.indptr)]
    for name in NAMES:
        write_labelled(tmp_path / name, X, Y)
        for a, b in zip(parts, (X.data, X.indices, X.indptr, Y.data, Y.indices, Y.indptr)):
            np.testing.assert_array_equal(a, b)
        X2, Y2 = read_labelled(tmp_path / name, num_features=3, num_labels=3)
        np.testing.assert_array_equal(X2.toarray(), dense_X)
        np.testing.assert_array_equal(Y2.toarray(), Y.toarray())
    dense_Y = Y.toarray()
    write_labelled(tmp_path / "dense.npz", dense_X, dense_Y)
    np.testing.assert_array_equal(read_labelled(tmp_path / "dense.npz")[0].toarray(), dense_X)


def test_writer_refusals(tmp_path):
    X, Y = _problem()
    with pytest.raises(ShapeError, match="Y has 6 rows but the features have 7"):
        write_labelled(tmp_path / "a.npz", X, Y[:6])
    with pytest.raises(ShapeError, match="must hold 0/1 labels"):
        write_labelled_npz(tmp_path / "a.npz", X, Y * 2)
    Xn = X.copy()
    Xn.data[0] = np.nan
    with pytest.raises(ShapeError, match="non-finite"):
        write_labelled(tmp_path / "a.svm", Xn, Y)
    Y0, X0 = Y.tolil(), X.tolil()
    Y0[3], X0[3] = 0, 0
    with pytest.raises(ShapeError, match="row 3 has neither labels nor features"):
        write_labelled(tmp_path / "a.svm", X0, Y0)
    with pytest.raises(ArgumentError, match="zero_based must be True or False"):
        write_labelled(tmp_path / "a.svm", X, Y, zero_based="auto")
    with pytest.raises(FileAccessError, match="no_dir"):
        write_labelled(tmp_path / "no_dir" / "a.npz", X, Y)
    assert not (tmp_path / "a.svm").exists() and not (tmp_path / "a.npz").exists()


def test_bad_keywords(tmp_path):
    X, Y = _problem()
    write_labelled(tmp_path / "a.svm", X, Y)
    with pytest.raises(ArgumentError, match="zero_based must be True, False or 'auto'"):
        read_labelled(tmp_path / "a.svm", zero_based="yes")
    with pytest.raises(ArgumentError, match="num_features must be a positive integer"):
        read_labelled(tmp_path / "a.svm", num_features=0)
    with pytest.raises(ArgumentError, match="a file path must be"):
        read_labelled(io.BytesIO(b""))


#: five lines before the data line under test: a comment, a blank line, a good point, spaces, a comment
_PREAMBLE = "# header\n\n0 1:1\n   \t\n# a note\n"


@pytest.mark.parametrize("bad, message", [
    ("0 x:1", r"malformed feature:value pair 'x:1'"),  # refused by the grammar, line by line
    ("0 3:1 2:1", "feature index 2 after 3"),  # refused by scikit-learn's parser, then located
    ("0 0:1", "feature index 0 in a one-based file"),  # found in the parsed arrays, then located
    ("0,0 1:1", "duplicate label in 0,0"),
])
def test_libsvm_line_numbers_count_blank_and_comment_lines(tmp_path, bad, message):
    path = _text(tmp_path, _PREAMBLE + bad + "\n1 2:1\n")
    with pytest.raises(DataFormatError, match=r"f\.svm, line 6: " + message) as info:
        read_labelled(path)
    assert info.value.line == 6


def test_libsvm_width_errors_count_blank_and_comment_lines(tmp_path):
    with pytest.raises(ShapeError, match=r"f\.svm, line 6: feature index 3 does not fit D = 2"):
        read_labelled(_text(tmp_path, _PREAMBLE + "1 3:1\n"), num_features=2)
    with pytest.raises(ShapeError, match=r"f\.svm, line 6: label 4 does not fit K = 2"):
        read_labelled(_text(tmp_path, _PREAMBLE + "4 1:1\n"), num_labels=2)


def test_zero_based_option_named_by_the_index_0_error(tmp_path):
    path = _text(tmp_path, "0 1:1\n1 0:2\n")
    with pytest.raises(DataFormatError, match=r"line 2: .*\(read with zero_based=True if its indices start at 0\)"):
        read_labelled(path)
    with pytest.raises(DataFormatError, match=r"line 2: .*\(read with --zero-based yes if its indices start at 0\)"):
        read_labelled(path, zero_based_option="--zero-based yes")
    assert read_labelled(path, zero_based=True, zero_based_option="--zero-based yes")[0].shape == (2, 2)


@pytest.mark.parametrize("zero_based, last", [(False, 4), (True, 3)])
def test_libsvm_largest_index_that_fits_num_features(tmp_path, zero_based, last):
    """With D = 4, the largest feature index is 4 in a one-based file and 3 in a zero-based one;
    one more is refused. The same for labels (always zero-based) with K = 3."""
    X, Y = read_labelled(_text(tmp_path, f"2 {last}:7.5\n0 {last - 3}:1\n"), num_features=4, num_labels=3,
                         zero_based=zero_based)
    np.testing.assert_array_equal(X.toarray(), [[0, 0, 0, 7.5], [1, 0, 0, 0]])
    np.testing.assert_array_equal(Y.toarray(), [[0, 0, 1], [1, 0, 0]])
    too_wide = rf"line 2: feature index {last + 1} does not fit D = 4 \(the file needs D = 5,"
    with pytest.raises(ShapeError, match=too_wide):
        read_labelled(_text(tmp_path, f"0 1:1\n1 {last + 1}:1\n"), num_features=4, zero_based=zero_based)
    with pytest.raises(ShapeError, match=r"line 1: label 3 does not fit K = 3 \(the file needs K = 4"):
        read_labelled(_text(tmp_path, f"3 {last}:1\n"), num_labels=3, zero_based=zero_based, labels_from=0)
    with pytest.raises(DataFormatError, match=r"no point has label 0 and one has label 3: .* labels_from=1"):
        read_labelled(_text(tmp_path, f"3 {last}:1\n"), num_labels=3, zero_based=zero_based)


def test_npz_rows_out_of_column_order_come_back_canonical(tmp_path):
    """CSR parts written by hand, with the columns of a row in any order, read back canonical
    (sorted indices); an entry stored twice is refused (module docstring: "no entry stored twice")."""
    parts = {"X_data": np.array([3.0, 1.0, 2.0, 5.0, 4.0]), "X_indices": np.array([3, 0, 1, 2, 0]),
             "X_indptr": np.array([0, 3, 5]), "X_shape": np.array([2, 4]),
             "Y_data": np.array([1, 1, 1], np.int8), "Y_indices": np.array([2, 0, 1]),
             "Y_indptr": np.array([0, 2, 3]), "Y_shape": np.array([2, 3])}
    np.savez(tmp_path / "f.npz", **parts)
    X, Y = read_labelled(tmp_path / "f.npz")
    assert X.has_canonical_format and Y.has_canonical_format
    assert X.indices.tolist() == [0, 1, 3, 0, 2] and Y.indices.tolist() == [0, 2, 1]
    np.testing.assert_array_equal(X.toarray(), [[1, 2, 0, 3], [4, 0, 5, 0]])
    np.testing.assert_array_equal(Y.toarray(), [[1, 0, 1], [0, 1, 0]])
    np.savez(tmp_path / "f.npz", **{**parts, "X_indices": np.array([3, 0, 3, 2, 0])})
    with pytest.raises(DataFormatError, match=r"f\.npz: X_data, X_indices, .* CSR matrix: an entry stored twice"):
        read_labelled(tmp_path / "f.npz")
