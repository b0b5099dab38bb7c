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

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p for p in (REPO / "experiments").glob("*.py") if not p.name.startswith("_"))
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

TRACE_COLUMNS = ["epoch", "elbo", "elbo_std", "seconds", "batch_size"]
METRICS = {"P", "nDCG", "PSP", "PSnDCG"}
BENCH_STEPS = {("non-whitened", "tf.function"), ("whitened", "XLA"), ("whitened", "XLA except chol(K_ZZ)")}

#: What each script's ``--quick`` run writes: table name -> (columns it must have, numeric columns
#: that may hold NaN), and the figure names. The numbers of every other numeric column must be finite.
EXPECTED: dict[str, dict] = {
    "bench_data_metrics": dict(
        tables={"bench_data_metrics": (["task", "size", "repeats", "median s", "min s", "max s", "throughput", "unit"], set())},
        figures=[],
    ),
    "bench_mlgpf": dict(
        tables={"bench_mlgpf": (["P", "M", "batch", "q(u)", "mlgpf step", "timing", "mlgpf s/epoch", "mlgpf peak MB",
                                 "mlgpf GFLOP/s", "numpy matmul GFLOP/s", "fraction of matmul rate", "stock s/epoch",
                                 "stock peak MB", "speed-up (stock/mlgpf)", "dataset", "N"], set())},
        figures=[],
    ),
    "fig1_elbo_traces": dict(
        tables={"elbo_traces": (["epoch", "elbo", "inducing", "final test P@1"], set())},
        figures=["elbo_traces"],
    ),
    "table4_mlgpf": dict(
        tables={
            # one seed: no std; the paper's numbers exist for P@k of some (dataset, kernel) only
            "table4_mlgpf": (["dataset", "kernel", "metric", "k", "mean", "std", "count", "paper", "difference",
                              "test rows without labels (kept)"], {"std", "paper", "difference"}),
            "elbo_traces": (TRACE_COLUMNS + ["dataset", "kernel", "seed"], set()),
        },
        figures=["elbo_traces"],
    ),
    "table7_kernels": dict(
        tables={
            "table7_runs": (["dataset", "variant", "seed", "epochs", "P@1", "P@3", "P@5", "train_s"], set()),
            # one run per variant: no std
            "table7_kernels": (["dataset", "variant", "runs", "epochs", "P@1 mean", "P@1 std", "P@3 mean", "P@3 std",
                                "P@5 mean", "P@5 std", "train_s mean", "train_s std"],
                               {"P@1 std", "P@3 std", "P@5 std", "train_s std"}),
            "elbo_traces": (TRACE_COLUMNS + ["dataset", "variant", "seed"], set()),
        },
        figures=["elbo_traces_bibtex", "elbo_traces_delicious"],
    ),
}


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
    if name == "bench_mlgpf":
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
    elif name == "fig1_elbo_traces":
        df = tables["elbo_traces"]
        assert set(df["inducing"]) == {"Z optimised", "Z fixed"}
        assert (df["elbo"] < 0).all() and df["final test P@1"].between(0, 100).all()
    elif name == "table4_mlgpf":
        df = tables["table4_mlgpf"]
        assert set(df["dataset"]) == {"bibtex", "delicious"} and set(df["kernel"]) == {"se+linear", "se"}
        assert set(df["metric"]) == METRICS and set(df["k"]) == {1, 3, 5}
        assert df["mean"].between(0, 100).all() and (df["count"] >= 1).all()
        published = df["paper"].notna()
        assert published.any() and set(df.loc[published, "metric"]) == {"P"}
        np.testing.assert_allclose(df.loc[published, "difference"], (df["mean"] - df["paper"])[published])
        assert (tables["elbo_traces"]["elbo"] < 0).all()
    elif name == "table7_kernels":
        runs, agg = tables["table7_runs"], tables["table7_kernels"]
        assert set(runs["variant"]) == set(agg["variant"]) == {"LR", "SE", "SE-F"}
        assert set(runs["dataset"]) == set(agg["dataset"]) == {"bibtex", "delicious"}
        assert runs[["P@1", "P@3", "P@5"]].stack().between(0, 100).all()
        assert (tables["elbo_traces"]["elbo"] < 0).all()


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
