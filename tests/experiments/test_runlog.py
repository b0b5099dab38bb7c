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


def test_each_dataset_and_method_fits_what_is_missing_on_the_first_rows(tmp_path, data_home, monkeypatch) -> None:
    """Every (data set, method) not in the log is fitted once on the first ``max_train`` training
    rows with its parameters, scored and appended with its seconds; a second pass fits nothing."""
    from mlgp.experiment import each_dataset_and_method

    monkeypatch.setenv("MLGP_DATA", str(data_home))
    log = RunLog(tmp_path, "runs", ["dataset", "method", "rows", "alpha", "fit s"], ["dataset", "method"], {}, fresh=False)
    log.append({"dataset": "emotions", "method": "b", "rows": -1, "alpha": -1, "fit s": 0.0})  # done before
    fitted = []

    clock = iter([10.0, 12.5])  # the fit starts at 10 s and ends at 12.5 s
    monkeypatch.setattr("mlgp.experiment.runlog._clock", lambda: next(clock))

    def fit(params, X, Y):
        fitted.append(params["alpha"])
        assert X.shape[0] == Y.shape[0] == 7
        return {"rows": X.shape[0], **params}

    each_dataset_and_method(log, ["emotions"], {"a": {"alpha": 1}, "b": {"alpha": 2}}, fit,
                            lambda est, ds: {"rows": est["rows"], "alpha": est["alpha"]}, max_train=7)
    assert fitted == [1]
    row = log.get("emotions", "a")
    assert (row["rows"], row["alpha"]) == (7, 1) and row["fit s"] == 2.5
    each_dataset_and_method(log, ["emotions"], {"a": {"alpha": 1}}, fit, lambda est, ds: {}, max_train=7)
    assert fitted == [1] and len(log.rows) == 2
