"""Where a LIBSVM file's labels count from: a file counting from 1 is refused by default (it would
gain a label 0 that never occurs), read right with ``labels_from=1``, as it is with ``labels_from=0``."""

from __future__ import annotations

import numpy as np
import pytest

from mlgp.data import read_labelled
from mlgp.errors import ArgumentError, DataFormatError, ShapeError

ONE_BASED = "1,3 1:0.5 2:1\n2 3:1\n3 1:2\n"  # K = 3 labels, counted from 1


def _file(tmp_path, text: str, name: str = "f.svm"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_file_that_never_uses_label_0_is_refused_naming_the_choice(tmp_path) -> None:
    with pytest.raises(DataFormatError, match=r"f\.svm: no point has label 0: .*labels_from=1 .*labels_from=0"):
        read_labelled(_file(tmp_path, ONE_BASED))


def test_labels_counted_from_1_are_read_as_columns_from_0(tmp_path) -> None:
    _, Y = read_labelled(_file(tmp_path, ONE_BASED), labels_from=1)
    np.testing.assert_array_equal(Y.toarray(), [[1, 0, 1], [0, 1, 0], [0, 0, 1]])
    _, Y = read_labelled(_file(tmp_path, ONE_BASED), labels_from=1, num_labels=5)  # a model's K
    assert Y.shape == (3, 5) and Y[:, 3:].nnz == 0


def test_label_0_in_a_file_counted_from_1_names_its_line(tmp_path) -> None:
    with pytest.raises(DataFormatError, match=r"f\.svm, line 3: label 0 in a file read with labels_from=1"):
        read_labelled(_file(tmp_path, "1 1:1\n\n2,0 2:1\n"), labels_from=1)


def test_labels_from_0_reads_the_file_as_it_is(tmp_path) -> None:
    _, Y = read_labelled(_file(tmp_path, ONE_BASED), labels_from=0)
    assert Y.shape == (3, 4) and Y[:, 0].nnz == 0


def test_with_a_models_k_only_a_label_k_tells_the_file_counts_from_1(tmp_path) -> None:
    """A test file may lack label 0; it is refused only where its largest label is exactly K."""
    _, Y = read_labelled(_file(tmp_path, "1 1:1\n2 2:1\n"), num_labels=4)
    assert Y.shape == (2, 4)
    with pytest.raises(DataFormatError, match="no point has label 0 and one has label 3"):
        read_labelled(_file(tmp_path, ONE_BASED), num_labels=3)
    with pytest.raises(ShapeError, match="label 3 does not fit K = 3"):
        read_labelled(_file(tmp_path, ONE_BASED), num_labels=3, labels_from=0)


def test_a_file_using_label_0_and_other_formats_are_unchanged(tmp_path) -> None:
    _, Y = read_labelled(_file(tmp_path, "0,2 1:1\n1 2:1\n"))
    np.testing.assert_array_equal(Y.toarray(), [[1, 0, 1], [0, 1, 0]])


@pytest.mark.parametrize("bad", [2, -1, True, "1", 1.0])
def test_labels_from_must_be_none_0_or_1(tmp_path, bad) -> None:
    with pytest.raises(ArgumentError, match="labels_from must be None, 0 or 1"):
        read_labelled(_file(tmp_path, ONE_BASED), labels_from=bad)
