"""A top-k ranking as text (``mlgp predict --format txt``): written and read back exactly, in the
file's order, and every malformed file refused naming its line."""

from __future__ import annotations

import numpy as np
import pytest

from mlgp.errors import DataFormatError, MLGPError
from mlgp.scores import TopK, load_scores, save_scores


def _ranking() -> TopK:
    rng = np.random.default_rng(0)
    scores = -np.sort(-rng.normal(size=(6, 3)), axis=1)
    scores[0] = [0.1 + 0.2, 1e-300, -5e300]  # needs 17 digits, tiny, huge
    indices = np.array([rng.permutation(9)[:3] for _ in range(6)])
    return TopK(indices, scores)


def test_a_written_ranking_reads_back_exactly(tmp_path) -> None:
    top = _ranking()
    path = save_scores(tmp_path / "r.txt", top)
    back = load_scores(path)
    assert isinstance(back, TopK)
    np.testing.assert_array_equal(back.indices, top.indices)
    np.testing.assert_array_equal(back.scores, top.scores)  # exact: the shortest text of the same float64
    assert path.read_text().splitlines()[1] == " ".join(f"{i}:{s!r}" for i, s in zip(top.indices[1].tolist(),
                                                                                    top.scores[1].tolist()))


def test_the_files_order_is_the_ranking(tmp_path) -> None:
    path = tmp_path / "r.txt"
    path.write_text("4:0.1 2:0.9\r\n0:3 1:-2\n")  # not sorted by score; Windows line ends
    top = load_scores(path)
    np.testing.assert_array_equal(top.indices, [[4, 2], [0, 1]])
    np.testing.assert_array_equal(top.scores, [[0.1, 0.9], [3.0, -2.0]])


@pytest.mark.parametrize("text, line, words", [
    ("1:0.5 2:0.25\n3:0.5\n", 2, "1 label:score pairs where line 1 has 2"),
    ("1:0.5\n\n2:0.5\n", 2, "empty line"),
    ("1:0.5 1:0.25\n", 1, "a label appears twice"),
    ("1:0.5\n-1:0.5\n", 2, "malformed pair '-1:0.5'"),
    ("1:0.5\n2:nan\n", 2, "malformed pair '2:nan'"),
    ("1:0.5\n2:1e999\n", 2, "not finite"),
    ("1:0.5\n2\n", 2, "malformed pair '2'"),
    ("1:0.5\n99999999999:1\n", 2, "malformed pair"),
    ("1:0.5\n2147483647:1\n", 2, "too large"),
    ("1:0.5\n2:0.5 \xe9\n", 2, "not ASCII"),
])
def test_malformed_files_are_refused_naming_the_line(tmp_path, text, line, words) -> None:
    path = tmp_path / "r.txt"
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(DataFormatError, match=rf"r\.txt, line {line}: .*{words}" if line else words):
        load_scores(path)


def test_an_empty_file_and_a_folder_are_refused(tmp_path) -> None:
    (tmp_path / "e.txt").write_text("")
    with pytest.raises(DataFormatError, match="empty file"):
        load_scores(tmp_path / "e.txt")
    (tmp_path / "d.txt").mkdir()
    with pytest.raises(MLGPError, match="is a folder"):
        load_scores(tmp_path / "d.txt")


def test_only_a_ranking_is_written_as_text(tmp_path) -> None:
    with pytest.raises(MLGPError, match=r"must end in \.npz or \.npy"):
        save_scores(tmp_path / "d.txt", np.zeros((2, 3)))
