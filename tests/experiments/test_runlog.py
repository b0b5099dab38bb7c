"""mlgp.experiment.RunLog: rows survive a stop, a cut-off line is dropped, other settings are refused."""

from __future__ import annotations

import pytest

from mlgp.experiment import RunLog

COLUMNS = ["split", "method", "score", "params"]


def test_rows_are_kept_and_resumed(tmp_path) -> None:
    log = RunLog(tmp_path, "runs", COLUMNS, ["split", "method"], {"grid": [1, 2]}, fresh=False)
    assert not log.done("a", "LSPC")
    log.append({"split": "a", "method": "LSPC", "score": 0.5, "params": "alpha=0.1"})
    log.append({"split": "b", "method": "LSPC", "score": float("nan"), "params": None})  # NaN values are kept
    assert log.done("a", "LSPC") and not log.done("a", "ML-LSPC")
    # a run killed while writing its row leaves a cut-off line: it is dropped on reopening
    with open(tmp_path / "runs.csv", "a") as fh:
        fh.write("c,LSPC,0.7")
    again = RunLog(tmp_path, "runs", COLUMNS, ["split", "method"], {"grid": [1, 2]}, fresh=False)
    assert list(again.rows["split"]) == ["a", "b"] and again.done("b", "LSPC") and not again.done("c", "LSPC")
    assert again.get("a", "LSPC")["score"] == 0.5 and len(again.rows) == 2
    assert (tmp_path / "runs.csv").read_text().endswith("\n")


def test_other_settings_are_refused_and_fresh_starts_again(tmp_path) -> None:
    log = RunLog(tmp_path, "runs", COLUMNS, ["split"], {"n_basis": 1000}, fresh=False)
    log.append({"split": "a", "method": "LSPC", "score": 0.5, "params": ""})
    with pytest.raises(SystemExit, match=r"holds runs made with other settings"):
        RunLog(tmp_path, "runs", COLUMNS, ["split"], {"n_basis": 200}, fresh=False)
    assert RunLog(tmp_path, "runs", COLUMNS, ["split"], {"n_basis": 1000}, fresh=False).done("a")
    fresh = RunLog(tmp_path, "runs", COLUMNS, ["split"], {"n_basis": 200}, fresh=True)
    assert fresh.rows.empty and not (tmp_path / "runs.csv").exists()
