"""``mlgp datasets`` on a data home holding a known dataset, one of the user's own and a broken one:
the table of the readable two, the known datasets it lacks, one error line for the broken one,
exit status 2."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

from mlgp.cli import main


def test_a_broken_dataset_is_reported_after_the_table_of_the_others(data_home: Path, tmp_path: Path, capsys) -> None:
    home = tmp_path / "home"
    shutil.copytree(data_home / "emotions", home / "emotions")
    shutil.copytree(data_home / "emotions", home / "mine")  # not a known dataset: listed, never "lacking"
    (home / "enron").mkdir()
    for split in ("train", "test"):
        with gzip.open(home / "enron" / f"{split}.txt.gz", "wt") as f:
            f.write("not an XC header\n")
    assert main(["datasets", "--data-home", str(home)]) == 2
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    for name in ("emotions", "mine"):
        row = next(line for line in lines if line.startswith(f"{name} "))
        assert row.split()[1:5] == ["391", "202", "72", "6"]
    assert ("Known datasets not in this data home: bibtex, birds, cal500, delicious, flags, foodtruck, genbase, "
            "scene, yeast.") in lines
    errors = captured.err.strip().splitlines()
    assert len(errors) == 1 and errors[0].startswith("mlgp: error: enron: ") and "Traceback" not in captured.err
