"""Smoke test: every experiment script runs end to end in its ``--quick`` mode and writes its
tables (CSV with the expected columns, finite numbers) and figures (PNG files)."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

# what each script must write, beside this file
from _smoke_expected import BENCH_STEPS, EXPECTED, FASTXML_METHODS, LSPC_METHODS, METRICS, XC_COLUMNS

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p for p in (REPO / "experiments").glob("*.py") if not p.name.startswith("_"))
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def test_every_script_has_its_expected_outputs_listed() -> None:
    assert sorted(EXPECTED) == [p.stem for p in SCRIPTS]


def _read_table(folder: Path, name: str, columns: list[str], may_be_nan: set[str]) -> pd.DataFrame:
    csv = folder / f"{name}.csv"
    assert csv.is_file(), f"{csv} was not written; the folder has {sorted(p.name for p in folder.iterdir())}"
    assert (folder / f"{name}.md").is_file()
    df = pd.read_csv(csv)
    assert len(df) > 0, f"{csv} has no rows"
    missing = [c for c in columns if c not in df.columns]
    assert not missing, f"{csv} lacks the columns {missing}; it has {list(df.columns)}"
    for c in df.columns:
        if pd.api.types.is_numeric_dtype(df[c]) and c not in may_be_nan:
            values = df[c].to_numpy(dtype=np.float64)
            assert np.all(np.isfinite(values)), f"{csv}: column {c!r} has non-finite values {values}"
    return df


def _check_png(path: Path) -> None:
    assert path.is_file(), f"{path} was not written"
    data = path.read_bytes()
    assert len(data) > 1000 and data[:8] == PNG_SIGNATURE, f"{path} is not a PNG image"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")  # IHDR
    assert data[12:16] == b"IHDR" and width > 100 and height > 100


def _check_contents(name: str, tables: dict[str, pd.DataFrame]) -> None:
    """What the numbers must say, beyond their being there and finite."""
    if name == "table2_subspace":
        runs = tables["table2_runs"]
        assert list(runs["variant"]) == ["s-LINEAR", "f-SE"]
        assert runs["R"].isna().tolist() == [False, True]  # subspace, then full inducing inputs
        assert (runs[["bound+grad s", "KL+grad s", "min/epoch"]] > 0).all().all()
        assert list(tables["table2_subspace"]["paper P@1"]) == [59.31]
        np.testing.assert_allclose(tables["table2_subspace"]["diff P@1"],
                                   tables["table2_subspace"]["P@1"] - tables["table2_subspace"]["paper P@1"])
        assert list(tables["table4_fixed"]["paper P@1"]) == [36.43]
    elif name == "mlgpf_paper_gap":
        assert list(tables["runs"]["method"]) == ["default", "kl-half"]  # the script's default methods, seed 0
        summary = tables["summary"].set_index("method")
        np.testing.assert_allclose(summary["P@1 − paper"], summary["P@1 mean"] - 66.46)
        assert (tables["runs"]["epochs"] <= 3).all()  # --quick's epochs
    elif name == "mlgpf_seed_ensemble":
        members, groups = tables["members"], tables["groups"]
        assert list(members["seed"]) == [0, 1] and (members["epochs"] <= 2).all()  # --quick: 2 seeds, 2 epochs
        assert list(groups["seeds"]) == ["0 1"] and list(groups["members"]) == [2]
        np.testing.assert_allclose(groups["fit s"], members["fit s"].sum())
    elif name == "mlgpf_defaults":
        runs = tables["runs"].set_index("method")
        assert sorted(runs.index) == ["20 epochs", "default"]
        # 90 training rows: one step per epoch, so "auto" runs up to 200 epochs and 20 epochs are 20 steps
        assert runs.loc["20 epochs", "epochs"] == runs.loc["20 epochs", "steps"] <= 20
        assert 100 < runs.loc["default", "steps"] <= 200  # early stopping waits 100 steps past the best
    elif name == "mlgpf_informative":
        runs = tables["runs"].set_index("method")
        assert sorted(runs.index) == sorted(["oracle", "LabelFrequency", "MLLSPC", "MLGPF default", "MLGPF without the refit",
                                             "MLGPF 100 epochs", "MLGPF 100 epochs, no early stopping"])
        off = runs.loc["MLGPF 100 epochs, no early stopping"]
        assert off["best epoch"] == 0 and off["epochs"] == 6  # --quick caps the epochs at 6
        stopped = runs.loc["MLGPF default"]
        assert 1 <= stopped["best epoch"] <= stopped["epochs"] <= 6
        assert np.isnan(runs.loc["oracle", "LPD"]) and np.isfinite(runs.loc["MLLSPC", "LPD"])
        summary = tables["summary"].set_index("method")
        assert summary.loc["MLLSPC", "P@1 − MLLSPC"] == 0 and summary.loc["LabelFrequency", "P@1 − LabelFrequency"] == 0
    elif name == "geneml_missing_labels":
        df = tables["missing_labels"]
        assert set(zip(df["hiding"], df["fraction"])) == {("none", 0.0), ("uniform", 0.4), ("propensity", 0.4)}
        # em at two exposure starts, online EM, Gibbs, no exposure, label frequency
        assert df.groupby(["hiding", "fraction"]).size().tolist() == [6, 6, 6]
        summary = tables["summary"]
        assert (summary["seeds"] == 1).all() and len(summary) == 18
        assert (summary.loc[summary["fraction"] == 0, "P@1 drop"] == 0).all()
    elif name == "geneml_benchmarks":
        df = tables["benchmarks"]
        assert df["method"].tolist() == ["em", "online-em", "gibbs", "no-exposure", "label-frequency"]
        assert df["iterations"].tolist()[:4] == [2, 3, 4, 2]  # online EM: its final pass; Gibbs: burn-in + kept
        conv = tables["convergence"]
        assert sorted(set(conv["method"])) == ["em", "no-exposure", "online-em"]
        assert (conv.groupby("method")["seconds"].diff().dropna() > 0).all()  # cumulative seconds
    elif name == "geneml_synthetic":
        df = tables["precision"]
        assert len(df) == 5 and df["method"].iloc[-1] == "LabelFrequency"
        assert df["corr(μ, true μ)"].notna().sum() == 3  # the three inferences with exposure
    elif name == "amazoncat_scale":
        phases = tables["phases"]["phase"].tolist()
        assert phases[0] == "generate" and sum(p.startswith("svd (") for p in phases) == 2
        assert tables["accuracy"]["method"].tolist()[1] == "LabelFrequency"
        assert tables["accuracy"][["P@1", "P@3", "P@5"]].stack().between(0, 100).all()
    elif name == "fastxml_scale":
        phases = tables["phases"]
        assert phases["phase"].tolist() == ["generate", "fit", "predict test", "predict at scale"]
        assert "grown_now 3, resumed_from 0" in phases["detail"][1] and (phases["peak_GB"] > 0.05).all()
        assert "fifty_is extrapolated" in phases["detail"][1]
        assert "topk_shape (2000, 5)" in phases["detail"][3]
        acc = tables["accuracy"]
        assert acc["method"].tolist() == ["FastXML (3 trees)", "LabelFrequency"]
        assert acc[["P@1", "P@3", "P@5"]].stack().between(0, 100).all() and acc["P@1"][0] > acc["P@1"][1]
    elif name == "bench_subspace":
        df = tables["bench_subspace"]
        assert set(zip(df["D"], df["method"])) == {(2000, "full"), (2000, "subspace")}
        assert (df["s per step"] > 0).all()
    elif name == "bench_mlgpf":
        df = tables["bench_mlgpf"]
        # every step mode timed, each beside GPflow's stock route
        assert set(zip(df["q(u)"], df["mlgpf step"])) == BENCH_STEPS
        for col in ("mlgpf s/epoch", "stock s/epoch", "mlgpf peak MB", "stock peak MB", "mlgpf GFLOP/s", "numpy matmul GFLOP/s"):
            assert (df[col] > 0).all(), col
        np.testing.assert_allclose(df["speed-up (stock/mlgpf)"], df["stock s/epoch"] / df["mlgpf s/epoch"], rtol=1e-9)
    elif name == "bench_data_metrics":
        df = tables["bench_data_metrics"]
        assert (df["min s"] <= df["median s"]).all() and (df["median s"] <= df["max s"]).all()
        assert (df["throughput"] > 0).all()
        assert any(t.startswith("read_xc") for t in df["task"])  # the data home is set: parsing was timed
    elif name == "fig1_mllspc_toy":
        runs, timing = tables["toy_runs"], tables["fig1b_solver_time"]
        assert set(runs["method"]) == LSPC_METHODS and set(runs["T"]) == {2, 5} and len(runs) == 2 * 2 * 3
        assert runs["error"].between(0, 1).all() and runs["cv_error"].between(0, 1).all()
        # T = 2: the two labels are exact opposites, W = 0, so coupling changes nothing
        t2 = runs[runs["T"] == 2].pivot(index="run", columns="method", values="error")
        np.testing.assert_allclose(t2["ML-LSPC"], t2["LSPC"], atol=1e-12)
        assert set(timing["solver"]) == {"dense", "cg", "eig", "sylvester"} and (timing["median_seconds"] > 0).all()
        assert (timing["rel_diff_vs_eig"] < 1e-4).all()  # every solver finds the same model
        assert (timing.loc[timing["solver"] == "cg", "cg_iterations"] >= 1).all()
    elif name == "fig1_elbo_traces":
        df = tables["elbo_traces"]
        assert set(df["inducing"]) == {"Z optimised", "Z fixed"}
        assert (df["elbo"] < 0).all() and df["final test P@1"].between(0, 100).all()
    elif name == "table4_mlgpf":
        df = tables["table4_mlgpf"]
        assert set(df["dataset"]) == {"bibtex"} and set(df["kernel"]) == {"se+linear", "se"}
        assert set(df["metric"]) == METRICS and set(df["k"]) == {1, 3, 5}
        assert df["mean"].between(0, 100).all() and (df["count"] >= 1).all()
        published = df["paper"].notna()
        assert published.any() and set(df.loc[published, "metric"]) == {"P"}
        np.testing.assert_allclose(df.loc[published, "difference"], (df["mean"] - df["paper"])[published])
        assert (tables["elbo_traces"]["elbo"] < 0).all()
    elif name == "table_enron_mllspc":
        runs, agg, tests = tables["enron_runs"], tables["enron_mllspc"], tables["enron_ttest"]
        # quick: Mulan's split and 2 random 1000/702 splits, each with the three methods once
        assert len(runs) == 9 and not runs.duplicated(["split", "method"]).any()
        assert set(runs["split"]) == {"mulan", "random-0", "random-1"} and set(runs["method"]) == LSPC_METHODS
        assert runs[["f1_example", "f1_micro", "f1_macro", "hamming", "cv_f1_example"]].stack().between(0, 1).all()
        assert runs[["P@1", "P@3", "P@5"]].stack().between(0, 100).all()
        assert (runs["fit_seconds"] > 0).all() and (runs["select_seconds"] > 0).all()
        assert (runs.loc[runs["method"] == "ML-kNN", "params"].str.match(r"^n_neighbors=\d+$")).all()
        assert runs.loc[runs["method"] == "LSPC", "params"].str.contains("kernel_width=").all()
        assert not runs.loc[runs["method"] == "LSPC", "params"].str.contains("coupling").any()
        # ML-LSPC is the coupled model: its grid has only couplings > 0
        couplings = runs.loc[runs["method"] == "ML-LSPC", "params"].str.extract(r"coupling=([0-9.e-]+)")[0].astype(float)
        assert (couplings > 0).all()
        by = runs.set_index(["split", "method"])
        assert set(agg["method"]) == LSPC_METHODS and (agg["splits"] == 2).all()
        paper = agg.set_index("method")
        assert paper.loc["ML-LSPC", "paper F"] == 0.561 and paper.loc["ML-kNN", "paper seconds"] == 9.6
        for m in LSPC_METHODS:
            random = runs[(runs["method"] == m) & (runs["split"] != "mulan")]
            np.testing.assert_allclose(paper.loc[m, "f1_example mean"], random["f1_example"].mean())
            np.testing.assert_allclose(paper.loc[m, "mulan f1_example"], by.loc[("mulan", m), "f1_example"])
        assert set(tests["comparison"]) == {"ML-LSPC vs LSPC", "ML-LSPC vs ML-kNN"} and (tests["splits"] == 2).all()
        for col in ("p (two-sided)", "p (one-sided, ML-LSPC greater)"):
            p = tests[col].dropna()
            assert p.between(0, 1).all(), col
    elif name == "mllspc_xc_metrics":
        runs, long, wide = tables["xc_runs"], tables["mllspc_xc_metrics"], tables["mllspc_xc_metrics_wide"]
        assert set(runs["dataset"]) == {"enron"} and sorted(runs["method"]) == sorted(LSPC_METHODS)
        assert set(long["metric"]) == METRICS and set(long["k"]) == {1, 3, 5} and len(long) == 3 * 4 * 3
        assert long["value"].between(0, 100).all() and runs["cv P@1"].between(0, 100).all()
        for col in ("select_seconds", "fit_seconds", "predict_seconds"):
            assert (runs[col] > 0).all(), col
        # at k = 1 nDCG is P and PSnDCG is PSP; every method ranks far above chance on Enron
        np.testing.assert_allclose(runs["nDCG@1"], runs["P@1"])
        np.testing.assert_allclose(runs["PSnDCG@1"], runs["PSP@1"])
        assert (runs["P@1"] > 40).all() and (runs["P@1"] >= runs["P@5"]).all()
        merged = long.merge(wide.melt(["dataset", "metric", "method"], var_name="at", value_name="wide"), on=["dataset", "metric", "method"])
        merged = merged[merged["at"] == "@" + merged["k"].astype(str)]
        assert len(merged) == len(long)
        np.testing.assert_allclose(merged["value"], merged["wide"])
    elif name == "time_to_accuracy":
        table = tables["time_to_accuracy_bibtex"]
        assert set(table["combo"]) == {"whitened-b500-f32-warm-lr0.005"}
        assert table[["best P@1", "best P@5", "best PSP@1"]].stack().between(0, 100).all()
        assert (table["peak MB"] > 100).all() and (table["final ELBO"] < 0).all()
    elif name == "bench_fastxml":
        df = tables["bench_fastxml"].set_index("tool")
        fx = df.loc["mlgp FastXML"]
        assert fx["status"] == "ok" and fx["fit s"] > 0 and fx["peak MB"] > fx["data MB"] > 10
        assert fx["fit s / FastXML"] == 1.0 and 40 < fx["P@1"] <= 100 and fx["seed"] == 0
        for peer in ("omikuji", "napkinXC"):  # measured when installed, marked when not
            assert df.loc[peer, "status"] in {"ok", "not installed"}
    elif name == "fig1_fastxml_trees":
        runs = tables["fastxml_trees_runs"]
        assert set(runs["trees"]) == {1, 2, 3, 4} and set(runs["order"]) == {0, 1}
        # every order ends with the same ensemble (the script checks the scores; rounding may break
        # exact ties differently, so P@5 may differ slightly)
        last = runs[runs["trees"] == 4]
        assert np.ptp(last["P@5"]) < 1.0 and runs[["P@1", "P@3", "P@5"]].stack().between(0, 100).all()
    elif name == "table2_fastxml":
        runs = tables["fastxml_runs"]
        assert set(runs["method"]) == FASTXML_METHODS and set(runs["seed"]) == {0, 1} and len(runs) == 6
        assert runs[XC_COLUMNS].stack().between(0, 100).all() and (runs["P@1"] > 40).all()
        np.testing.assert_allclose(runs["nDCG@1"], runs["P@1"])
        # PfastXML is PfastreXML's fit with re-ranking off: the same trees, so the same fit time
        by = runs.set_index(["method", "seed"])
        for seed in (0, 1):
            assert by.loc[("PfastXML", seed), "fit_seconds"] == by.loc[("PfastreXML", seed), "fit_seconds"]
        assert (runs["balance"] >= 1).all() and (runs["labels_per_leaf"] >= 1).all()
    elif name == "table7_fastxml_loss":
        runs = tables["loss_runs"]
        assert set(runs["loss"]) == {"nDCG@L", "P@5", "nDCG@5"} and runs[XC_COLUMNS].stack().between(0, 100).all()
    elif name == "table7_kernels":
        runs, agg = tables["table7_runs"], tables["table7_kernels"]
        assert set(runs["variant"]) == set(agg["variant"]) == {"LR", "SE", "SE-F"}
        assert set(runs["dataset"]) == set(agg["dataset"]) == {"bibtex"}  # --quick trains Bibtex only
        assert runs[["P@1", "P@3", "P@5"]].stack().between(0, 100).all()
        assert (tables["elbo_traces"]["elbo"] < 0).all()


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_quick_mode_runs(script: Path, data_home: Path, tmp_path: Path, monkeypatch) -> None:
    """Each script's ``main(["--quick"])`` in this process (TensorFlow is imported once per test
    worker instead of once per script; ``bench_mlgpf`` still measures in a child process)."""
    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.setenv("MLGP_DATA", str(data_home))
    monkeypatch.setenv("MLGP_RESULTS", str(tmp_path))
    monkeypatch.chdir(REPO)
    spec = importlib.util.spec_from_file_location(f"_smoke_{script.stem}", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(["--quick"])

    folder = tmp_path / script.stem / "quick"
    record = json.loads((folder / "run.json").read_text())
    assert record["status"] == "ok" and record["quick"] is True
    expected = EXPECTED[script.stem]
    tables = {name: _read_table(folder, name, cols, nan_ok) for name, (cols, nan_ok) in expected["tables"].items()}
    for name in expected["figures"]:
        _check_png(folder / f"{name}.png")
    written = {f"{t}.{ext}" for t in expected["tables"] for ext in ("csv", "md")} | {f"{f}.png" for f in expected["figures"]}
    assert written <= set(record["files"]), f"run.json lists {record['files']}"
    _check_contents(script.stem, tables)


def test_bench_configs_option_parses_pairs_and_rejects_the_rest() -> None:
    import argparse
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_mlgpf", REPO / "experiments" / "bench_mlgpf.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.parse_configs("159:400,30:100") == [(159, 400), (30, 100)]
    for bad in ("159", "159:x", "0:400", "159:400:2", ""):
        with pytest.raises(argparse.ArgumentTypeError,
                           match=r"^expected P:M pairs of positive integers such as 159:400,30:100, got " + re.escape(repr(bad)) + "$"):
            bench.parse_configs(bad)
