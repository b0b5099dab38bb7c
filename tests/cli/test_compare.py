"""``mlgp compare`` and ``mlgp.compare``: one split, every family, tables, traces, a figure, resuming."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import mlgp
from mlgp.cli import main
from mlgp.data import write_xc
from mlgp.data.synthetic import mlgpf_prior
from mlgp.errors import ArgumentError

SETS = ["--set", "fastxml.n_estimators=2", "--set", "geneml.n_components=3", "--set", "mlgpf.num_inducing=10",
        "--set", "mlgpf.num_latent_gps=3"]


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("home")
    ds = mlgpf_prior(num_train=150, num_test=80, num_features=8, num_labels=12, num_latent=3, seed=4)
    (root / "tiny").mkdir()
    write_xc(root / "tiny" / "train.txt.gz", ds.train.X, ds.train.Y)
    write_xc(root / "tiny" / "test.txt.gz", ds.test.X, ds.test.Y)
    return root


def test_compare_writes_tables_traces_figure_and_resumes(home, tmp_path, capsys, monkeypatch) -> None:
    out = tmp_path / "cmp"
    argv = ["compare", "--dataset", "tiny", "--data-home", str(home), "--models", "frequency,fastxml,geneml,mlgpf",
            "--budget", "0.5", *SETS, "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    for name in ("frequency", "fastxml", "geneml", "mlgpf", "P@1", "PSP@5", "fit s"):
        assert name in printed
    results = pd.read_csv(out / "results.csv")
    assert list(results["family"]) == ["frequency", "fastxml", "geneml", "mlgpf"]
    for column in ("P@1", "P@3", "P@5", "nDCG@1", "nDCG@5", "PSP@1", "PSP@3", "PSP@5", "fit_seconds",
                   "predict_seconds", "peak_memory_mb", "settings"):
        assert results[column].notna().all(), column
    assert results["P@1"].between(0, 100).all()
    assert "max_seconds=0.5" in results.set_index("family").loc["mlgpf", "settings"]
    traces = pd.read_csv(out / "traces.csv")
    quantities = traces.groupby("family")["quantity"].unique()
    assert {"elbo_per_point", "P@1"} <= set(quantities["mlgpf"])
    assert {"log_posterior_per_point", "P@1"} <= set(quantities["geneml"])
    assert set(traces["family"]) == {"geneml", "mlgpf"}  # the families that train in steps
    mlgpf_p1 = traces[(traces["family"] == "mlgpf") & (traces["quantity"] == "P@1")]
    assert mlgpf_p1["seconds"].is_monotonic_increasing
    assert (out / "traces.png").stat().st_size > 10_000
    assert "| family" in (out / "report.md").read_text()

    # a second run takes every family from out/runs/ without fitting
    from mlgp.baselines import FastXML

    monkeypatch.setattr(FastXML, "fit", lambda *a, **k: (_ for _ in ()).throw(AssertionError("refitted")))
    assert main(argv) == 0
    again = pd.read_csv(out / "results.csv")
    assert again["resumed"].all()
    pd.testing.assert_frame_equal(again.drop(columns="resumed"), results.drop(columns="resumed"))
    # other settings for one family: that family alone is fitted again (and here fails, recorded)
    assert main([*argv[:-2], "--set", "fastxml.max_leaf=3", "--out", str(out)]) == 1
    third = pd.read_csv(out / "results.csv").set_index("family")
    assert "refitted" in third.loc["fastxml", "error"] and not third.loc["fastxml", "resumed"]
    assert third.drop(index="fastxml")["resumed"].all()


def test_a_failing_family_is_recorded_and_the_others_go_on(home, tmp_path) -> None:
    result = mlgp.compare("frequency,mlgpf,mlknn", dataset="tiny", data_home=home,
                          settings={"mlgpf": {"num_latent_gps": 50, "epochs": 1}}, out=tmp_path / "c")
    table = result.results.set_index("family")
    assert "ShapeError" in table.loc["mlgpf", "error"] and "num_latent_gps" in table.loc["mlgpf", "error"]
    assert table.loc["frequency", "error"] == "" and table.loc["mlknn", "error"] == ""
    assert table.loc["mlknn", "P@1"] > 0
    assert isinstance(result.traces, pd.DataFrame)


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
                  ["--models", "frequency", "--set", "n_estimators=2"]):
        try:
            status = main([*base, *extra])
        except SystemExit as exc:
            status = exc.code
        assert status == 2
        assert capsys.readouterr().err.strip().splitlines()[-1].startswith("mlgp: error:")
    assert not (tmp_path / "x").exists()
