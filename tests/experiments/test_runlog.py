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

    clock = iter([2.0, 7.5])  # the fit starts at 2 s and ends at 7.5 s
    monkeypatch.setattr("mlgp.experiment.runlog._clock", lambda: next(clock))

    def fit(params, X, Y):
        fitted.append(params["alpha"])
        assert X.shape[0] == Y.shape[0] == 7
        return {"rows": X.shape[0], **params}

    # "b", done before, comes first: it is passed over and "a" still runs
    each_dataset_and_method(log, ["emotions"], {"b": {"alpha": 2}, "a": {"alpha": 1}}, fit,
                            lambda est, ds: {"rows": est["rows"], "alpha": est["alpha"]}, max_train=7)
    assert fitted == [1]
    row = log.get("emotions", "a")
    assert (row["rows"], row["alpha"]) == (7, 1) and row["fit s"] == 5.5
    each_dataset_and_method(log, ["emotions"], {"a": {"alpha": 1}}, fit, lambda est, ds: {}, max_train=7)
    assert fitted == [1] and len(log.rows) == 2


def test_the_file_holds_one_header_and_the_rows_exactly(tmp_path) -> None:
    """Appended rows land in the CSV as written (one header, no index column), a cut-off line is
    dropped to the byte, and reopening keeps the rows, their order and a plain 0-based index."""
    folder = tmp_path / "new" / "nested"  # made with its parents
    log = RunLog(folder, "runs", COLUMNS, ["split", "method"], {}, fresh=True)  # fresh with nothing there
    log.append({"split": "a", "method": "LSPC", "score": 0.5, "params": "x=2"})
    log.append({"split": "b", "method": "LSPC", "score": 0.25, "params": "x=1"})
    expected = "split,method,score,params\na,LSPC,0.5,x=2\nb,LSPC,0.25,x=1\n"
    assert (folder / "runs.csv").read_text() == expected
    assert list(log.rows.index) == [0, 1]
    with open(folder / "runs.csv", "a") as fh:
        fh.write("c,LSPC,0.7")
    again = RunLog(folder, "runs", COLUMNS, ["split", "method"], {}, fresh=False)
    assert (folder / "runs.csv").read_text() == expected
    assert list(again.rows.columns) == COLUMNS and list(again.rows.index) == [0, 1]
    assert again.rows.to_dict("records") == [{"split": "a", "method": "LSPC", "score": 0.5, "params": "x=2"},
                                             {"split": "b", "method": "LSPC", "score": 0.25, "params": "x=1"}]
    # ``get`` matches its key exactly ("a" is not "b"), and a prefix of it gives the first such row
    assert again.get("b", "LSPC")["params"] == "x=1" and again.get("a", "LSPC")["params"] == "x=2"
    again.append({"split": "b", "method": "ML-LSPC", "score": 0.75, "params": "x=3"})
    assert again.get("b")["params"] == "x=1" and again.get("b", "ML-LSPC")["params"] == "x=3"
    # a file emptied behind the log's back gets its header again
    (folder / "runs.csv").write_text("")
    again.append({"split": "c", "method": "LSPC", "score": 1.0, "params": "x=4"})
    assert (folder / "runs.csv").read_text() == "split,method,score,params\nc,LSPC,1.0,x=4\n"


def test_a_header_cut_off_by_a_kill_leaves_an_empty_log(tmp_path) -> None:
    """A run killed while writing the first row's header leaves a file without a whole line: it
    holds no runs, so reopening starts empty (not a pandas error) and the next row gets a header."""
    RunLog(tmp_path, "runs", COLUMNS, ["split"], {}, fresh=False)
    (tmp_path / "runs.csv").write_text("split,meth")
    log = RunLog(tmp_path, "runs", COLUMNS, ["split"], {}, fresh=False)
    assert log.rows.empty and not log.done("a")
    log.append({"split": "a", "method": "LSPC", "score": 0.5, "params": ""})
    assert (tmp_path / "runs.csv").read_text() == "split,method,score,params\na,LSPC,0.5,\n"
