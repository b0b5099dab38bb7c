"""LIBSVM files at their limits: the largest index scikit-learn can read is accepted and the next
refused; an index that does not fit the expected width is shown as written in the file."""

from __future__ import annotations

import pytest

from mlgp.data import read_labelled
from mlgp.errors import DataFormatError, ShapeError

LARGEST = 2**31 - 2  # scikit-learn reads indices as C ints


def test_the_largest_index_is_accepted(tmp_path) -> None:
    path = tmp_path / "big.svm"
    path.write_text(f"{LARGEST} {LARGEST}:1.5\n0 1:1\n")
    X, Y = read_labelled(path, zero_based=False)
    assert X.shape == (2, LARGEST) and X[0, LARGEST - 1] == 1.5  # one-based: the last column
    assert Y.shape == (2, LARGEST + 1) and Y[0, LARGEST] == 1


@pytest.mark.parametrize("line, message", [(f"0 {LARGEST + 1}:1", f"feature index {LARGEST + 1} too large"),
                                           (f"{LARGEST + 1} 1:1", f"label {LARGEST + 1} too large")])
def test_the_next_index_is_refused(tmp_path, line, message) -> None:
    path = tmp_path / "over.svm"
    path.write_text(f"0 1:1\n{line}\n")
    with pytest.raises(DataFormatError, match=rf"over\.svm, line 2: {message} \(at most {LARGEST}\)"):
        read_labelled(path, zero_based=False)


@pytest.mark.parametrize("zero_based, written", [(False, 4), (True, 3)])
def test_an_index_past_the_width_is_shown_as_written(tmp_path, zero_based, written) -> None:
    """One-based: index 4 is column 3, which does not fit D = 3 (shown as 4, as written)."""
    path = tmp_path / "wide.svm"
    path.write_text(f"0 1:1\n1 {written}:2\n")
    with pytest.raises(ShapeError, match=rf"wide\.svm, line 2: feature index {written} does not fit D = 3 "
                                         r"\(the file needs D = 4, D = 3 is expected\)"):
        read_labelled(path, zero_based=zero_based, num_features=3)
