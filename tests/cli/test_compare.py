"""``mlgp compare`` and ``mlgp.compare``: one split, every family, tables, traces, a figure, resuming."""

from __future__ import annotations


import numpy as np
import pandas as pd
import pytest

import mlgp
from mlgp.cli import main
from mlgp.errors import ArgumentError

SETS = ["--set", "geneml.n_components=3", "--set", "mlgpf.num_inducing=10", "--set", "mlgpf.num_latent_gps=3"]


@pytest.mark.slow
def test_compare_writes_tables_traces_figure_and_resumes(home, tmp_path, capsys) -> None:
    out = tmp_path / "cmp"
    argv = ["compare", "--dataset", "tiny", "--data-home", str(home), "--models", "frequency,geneml,mlgpf",
            "--budget", "0.5", *SETS, "--out", str(out), "--in-process"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    for name in ("frequency", "geneml", "mlgpf", "P@1", "PSP@5", "fit s"):
        assert name in printed
    results = pd.read_csv(out / "results.csv")
    assert list(results["family"]) == ["frequency", "geneml", "mlgpf"]
    for column in ("P@1", "P@3", "P@5", "nDCG@1", "nDCG@5", "PSP@1", "PSP@3", "PSP@5", "fit_seconds",
                   "predict_seconds", "peak_memory_mb", "settings"):
        assert results[column].notna().all(), column
    assert results["P@1"].between(0, 100).all()
    assert "max_seconds=0.5" in results.set_index("family").loc["mlgpf", "settings"]
    traces = pd.read_csv(out / "traces.csv")
    quantities = traces.groupby("family")["quantity"].unique()
    assert {"objective", "P@1"} <= set(quantities["mlgpf"])
    assert {"objective", "P@1"} <= set(quantities["geneml"])
    assert set(traces["family"]) == {"geneml", "mlgpf"}  # the families that train in steps
    mlgpf_p1 = traces[(traces["family"] == "mlgpf") & (traces["quantity"] == "P@1")]
    assert mlgpf_p1["seconds"].is_monotonic_increasing
    assert (out / "traces.png").stat().st_size > 10_000
    assert results["peak_memory_mb"].gt(0).all()
    assert "| family" in (out / "report.md").read_text()
    # the probability columns: every family here has predict_proba
    K = 12
    for column in ("LPD", "NLL", "Brier", "ECE", "MCE", "ECE@1", "ECE@5", "ECE_low", "ECE_high", "microF1@0.5",
                   "macroF1@0.5", "microF1_tuned", "macroF1_tuned", "proba_seconds"):
        assert results[column].notna().all(), column
    np.testing.assert_allclose(results["LPD"], -K * results["NLL"], rtol=1e-12)
    assert (results["ECE_low"] <= results["ECE_high"]).all() and results["ECE"].between(0, 1).all()
    reliability = pd.read_csv(out / "reliability.csv")
    assert set(map(tuple, reliability[["family", "entries"]].drop_duplicates().to_numpy())) == \
        {(f, e) for f in ("frequency", "geneml", "mlgpf") for e in ("all", "top5")}
    counts = reliability[reliability["entries"] == "all"].groupby("family")["count"].sum()
    assert (counts == 80 * K).all()  # every test entry in one bin
    assert (out / "calibration.png").stat().st_size > 10_000
    report = (out / "report.md").read_text()
    best = results.loc[results["LPD"].idxmax(), "family"]
    named = (f"- LPD: best **{best}** (", f"- LPD: no single best; tied within the test split's noise: {best} ")
    assert any(line.startswith(named) for line in report.splitlines()), report
    assert "![calibration](calibration.png)" in report
    for name in ("LPD", "ECE@5", "macroF1_tuned", "- P@1: "):
        assert name in printed

    # a second run takes every family from out/runs/ without fitting (the run files stay as they were)
    stamps = {p.name: p.stat().st_mtime_ns for p in (out / "runs").iterdir()}
    assert main(argv) == 0
    again = pd.read_csv(out / "results.csv")
    assert again["resumed"].all()
    assert {p.name: p.stat().st_mtime_ns for p in (out / "runs").iterdir()} == stamps
    pd.testing.assert_frame_equal(again.drop(columns="resumed"), results.drop(columns="resumed"))
    # other settings for one family: that family alone is fitted again
    assert main([*argv[:-3], "--set", "geneml.lambda_v=2.0", "--out", str(out), "--in-process"]) == 0
    third = pd.read_csv(out / "results.csv").set_index("family")
    assert not third.loc["geneml", "resumed"] and "lambda_v=2.0" in third.loc["geneml", "settings"]
    assert third.drop(index="geneml")["resumed"].all()
    assert (out / "runs" / "geneml.json").stat().st_mtime_ns != stamps["geneml.json"]


@pytest.mark.slow
def test_a_failing_family_is_recorded_and_the_others_go_on(home, tmp_path) -> None:
    settings = {"mllspccv": {"cv": 1000}}  # more folds than training points: fails in fit
    result = mlgp.compare("mllspccv,frequency", dataset="tiny", data_home=home, settings=settings, out=tmp_path / "c")
    table = result.results.set_index("family")
    # the exception's class and first line (ValueError or its subclass ShapeError, as MLLSPCCV words it)
    assert table.loc["mllspccv", "error"].split(":")[0].endswith("Error") and "1000" in table.loc["mllspccv", "error"]
    assert table.loc["frequency", "error"] == "" and table.loc["frequency", "P@1"] > 0
    assert isinstance(result.traces, pd.DataFrame)
    # fitted in this process: the same rows (the fits are deterministic)
    inline = mlgp.compare("mllspccv,frequency,mlgpf", dataset="tiny", data_home=home,
                          settings={**settings, "mlgpf": {"num_latent_gps": 50, "epochs": 1}},
                          isolate=False).results.set_index("family")
    assert inline.loc["frequency", "P@1"] == table.loc["frequency", "P@1"]
    assert inline.loc["mllspccv", "error"] == table.loc["mllspccv", "error"]
    assert "ShapeError" in inline.loc["mlgpf", "error"] and "num_latent_gps" in inline.loc["mlgpf", "error"]


class _DiesWhenUnpickled:
    """Pickles to a call of os._exit(3): the worker process dies before it fits anything."""

    def __reduce__(self):
        import os

        return (os._exit, (3,))


def test_long_traces_are_thinned_evenly() -> None:
    from mlgp.comparison import traces

    steps = np.arange(1, 2001)
    trace = pd.DataFrame({"family": "mlgpf", "step": np.repeat(steps, 2), "seconds": np.repeat(steps * 0.1, 2),
                          "quantity": ["P@1", "objective"] * 2000, "value": np.arange(4000.0)})
    thin = traces.thinned(trace)
    kept = np.unique(thin["step"])
    assert kept.size == traces.MAX_TRACE_STEPS and kept[0] == 1 and kept[-1] == 2000
    assert len(thin) == 2 * kept.size and np.all(np.diff(kept) >= 3)
    assert len(traces.thinned(trace.iloc[:20])) == 20


def test_a_worker_that_dies_is_recorded(home, monkeypatch) -> None:
    from mlgp.comparison import isolation

    monkeypatch.setattr(isolation, "_settings_text", lambda est: "n/a")
    row, trace = isolation.run_isolated("boom", _DiesWhenUnpickled(), None, None, False)
    assert "exit status 3" in row["error"] and len(trace) == 0


def test_compare_refuses_bad_requests_before_any_work(home, tmp_path, capsys) -> None:
    with pytest.raises(ArgumentError, match="twice"):
        mlgp.compare(["frequency", "frequency"], dataset="tiny", data_home=home)
    for budget in (0, -1.0, float("nan")):
        with pytest.raises(ArgumentError, match="budget"):
            mlgp.compare(["frequency"], dataset="tiny", data_home=home, budget=budget)
    with pytest.raises(ArgumentError, match="nosuch"):
        mlgp.compare(["frequency", "nosuch"], dataset="tiny", data_home=home)
    with pytest.raises(ArgumentError, match="n_trees"):
        mlgp.compare(["fastxml"], dataset="tiny", data_home=home, settings={"fastxml": {"n_trees": 2}})
    with pytest.raises(ArgumentError, match="mlknn"):
        mlgp.compare(["fastxml"], dataset="tiny", data_home=home, settings={"mlknn": {"n_neighbors": 2}})
    base = ["compare", "--dataset", "tiny", "--data-home", str(home), "--out", str(tmp_path / "x")]
    for extra in (["--models", "frequency,frequency"], ["--models", "frequency", "--budget", "0"],
                  ["--models", "frequency", "--set", "n_estimators=2"],
                  ["--models", "frequency,fastxml", "--set", "fastxml.threshold=1.5"],
                  ["--models", "lspc", "--set", "lspc.threshold=-0.1"]):
        try:
            status = main([*base, *extra])
        except SystemExit as exc:
            status = exc.code
        assert status == 2
        assert capsys.readouterr().err.strip().splitlines()[-1].startswith("mlgp: error:")
    assert not (tmp_path / "x").exists()


#: results.csv of families with probabilities on ``tiny`` (K = 12, 80 test rows), in order.
RESULTS_COLUMNS = ["family", "estimator", "settings", "error", "fit_seconds", "peak_memory_mb", "predict_seconds",
                   "P@1", "P@3", "P@5", "nDCG@1", "nDCG@3", "nDCG@5", "PSP@1", "PSP@3", "PSP@5", "proba_seconds",
                   "LPD", "NLL", "Brier", "ECE", "MCE", "ECE@1", "ECE@5", "ECE@1 (10 uniform)", "ECE@5 (10 uniform)",
                   "ECE_debiased", "ECE_low", "ECE_high", "microF1@0.5", "macroF1@0.5", "microF1_tuned", "macroF1_tuned",
                   "resumed"]


@pytest.mark.slow
@pytest.mark.parametrize("models", ["frequency,lspc,mlknn", "mllspccv,frequency"], ids=["all ran", "first failed"])
def test_results_csv_has_its_columns_in_order(home, tmp_path, models) -> None:
    """The same columns in the same order whichever family comes first (here one that fails in fit)."""
    fails = "mllspccv" in models  # more folds than training points: fails in fit
    argv = ["compare", "--dataset", "tiny", "--data-home", str(home), "--models", models,
            *(["--set", "mllspccv.cv=1000"] if fails else []), "--out", str(tmp_path / "c"), "--in-process"]
    assert main(argv) == (1 if fails else 0)
    assert list(pd.read_csv(tmp_path / "c" / "results.csv").columns) == RESULTS_COLUMNS


def test_a_run_file_with_a_bad_value_is_fitted_again(home, tmp_path, capsys) -> None:
    """A run file whose settings match but whose P@1 is not a number: refitted, said in one line,
    and nothing written with the bad value (once: a traceback after rewriting results.csv)."""
    import json

    out = tmp_path / "c"
    argv = ["compare", "--dataset", "tiny", "--data-home", str(home), "--models", "frequency", "--out", str(out),
            "--in-process"]
    assert main(argv) == 0
    good = pd.read_csv(out / "results.csv")
    saved = json.loads((out / "runs" / "frequency.json").read_text())
    saved["row"]["P@1"] = "abc"
    (out / "runs" / "frequency.json").write_text(json.dumps(saved))
    capsys.readouterr()
    assert main(argv) == 0
    err = capsys.readouterr().err
    said = [line for line in err.splitlines() if "not resuming" in line]
    assert said == [f"frequency: not resuming from {out / 'runs' / 'frequency.json'}: row field 'P@1' is 'abc', "
                    "not a number; fitting again"]
    again = pd.read_csv(out / "results.csv")
    assert not again.loc[0, "resumed"] and again.loc[0, "P@1"] == good.loc[0, "P@1"]
    assert json.loads((out / "runs" / "frequency.json").read_text())["row"]["P@1"] == good.loc[0, "P@1"]
