"""The pieces of read_xc (mlgp.data.io.xc), one at a time: the data lines, the syntax check,
the tokens, the long-index check, the entries, the first invalid row and the canonical matrices."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from mlgp.data.io import xc
from mlgp.errors import DataFormatError

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
