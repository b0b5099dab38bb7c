"""A scores file is an output file like any other (:func:`mlgp.files.check_output_file`): a
missing folder is made, a file where the folder should be or a folder named as the file is refused
before any work."""

from __future__ import annotations

import numpy as np
import pytest

from mlgp.errors import MLGPError
from mlgp.scores import check_score_file_path, load_scores, save_scores, topk


def test_a_missing_folder_is_made(tmp_path) -> None:
    scores = topk(np.array([[0.1, 0.9, 0.5]]), 2)
    path = save_scores(tmp_path / "new" / "deeper" / "s.npz", scores)
    np.testing.assert_array_equal(load_scores(path).indices, scores.indices)


def test_a_file_in_the_way_or_a_folder_as_the_name_is_refused(tmp_path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(MLGPError, match="is a file, not a folder"):
        check_score_file_path(tmp_path / "f" / "s.npz", what="--save-scores")
    (tmp_path / "d.npz").mkdir()
    with pytest.raises(MLGPError, match="is a folder, not a file name"):
        check_score_file_path(tmp_path / "d.npz", what="--save-scores")
    with pytest.raises(MLGPError, match="must end in"):
        check_score_file_path(tmp_path / "s.csv")
