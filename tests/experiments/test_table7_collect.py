"""experiments/table7_kernels.py: the aggregate table and ``--collect`` (merging separate runs)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _scripts import load_script


@pytest.fixture(scope="module")
def table7():
    return load_script("table7_kernels")


def _run_folder(root: Path, name: str, variant: str, seeds, epochs: int, with_epochs_column: bool = True) -> Path:
    rng = np.random.default_rng(len(name) + 7 * len(seeds))
    folder = root / name
    folder.mkdir()
    rows = [dict(dataset="bibtex", variant=variant, seed=s, epochs=epochs, **{f"P@{k}": float(rng.uniform(20, 70)) for k in (1, 3, 5)}, train_s=float(rng.uniform(10, 20))) for s in seeds]
    runs = pd.DataFrame(rows)
    if not with_epochs_column:
        runs = runs.drop(columns="epochs")
    runs.to_csv(folder / "table7_runs.csv", index=False)
    traces = pd.DataFrame([dict(epoch=e, elbo=-1000.0 / e, seconds=1.0, batch_size=100, **{"P@1": 10.0 * e}, dataset="bibtex", variant=variant, seed=s) for s in seeds for e in range(1, epochs + 1)])
    traces.to_csv(folder / "elbo_traces.csv", index=False)
    (folder / "run.json").write_text(json.dumps(dict(status="ok", settings=dict(epochs=epochs), command=["table7_kernels.py"], wall_seconds=1.0)))
    return folder


def test_aggregate_matches_direct_statistics(table7) -> None:
    runs = pd.DataFrame(
        dict(dataset=["bibtex"] * 4, variant=["LR", "LR", "LR", "SE"], seed=[0, 1, 2, 0], epochs=[50, 50, 20, 50], **{"P@1": [60.0, 62.0, 67.0, 55.0], "P@3": [1.0, 2.0, 3.0, 4.0], "P@5": [5.0, 5.0, 5.0, 5.0]}, train_s=[1.0, 2.0, 3.0, 4.0])
    )
    agg = table7.aggregate(runs).set_index("variant")
    assert agg.loc["LR", "runs"] == 3 and agg.loc["SE", "runs"] == 1
    assert agg.loc["LR", "epochs"] == "20/50" and agg.loc["SE", "epochs"] == "50"
    assert agg.loc["LR", "P@1 mean"] == pytest.approx(63.0)
    assert agg.loc["LR", "P@1 std"] == pytest.approx(np.std([60.0, 62.0, 67.0], ddof=1))
    assert np.isnan(agg.loc["SE", "P@1 std"])


def test_collect_merges_separate_runs(table7, tmp_path: Path) -> None:
    a = _run_folder(tmp_path, "lr", "LR", [0, 1], 3)
    b = _run_folder(tmp_path, "se", "SE", [0], 4, with_epochs_column=False)  # older layout: epochs from run.json
    out = tmp_path / "merged"
    table7.main(["--collect", str(a), str(b), "--out", str(out)])
    runs = pd.read_csv(out / "table7_runs.csv")
    expected = pd.concat([pd.read_csv(a / "table7_runs.csv"), pd.read_csv(b / "table7_runs.csv")], ignore_index=True)
    assert len(runs) == 3
    np.testing.assert_allclose(runs["P@1"], expected["P@1"])
    assert runs["epochs"].tolist() == [3, 3, 4]
    agg = pd.read_csv(out / "table7_kernels.csv").set_index("variant")
    assert agg.loc["LR", "P@1 mean"] == pytest.approx(expected["P@1"][:2].mean())
    traces = pd.read_csv(out / "elbo_traces.csv")
    assert len(traces) == 2 * 3 + 4
    assert (out / "elbo_traces_bibtex.png").is_file()
    record = json.loads((out / "run.json").read_text())
    assert record["status"] == "ok" and [s["folder"] for s in record["notes"]["sources"]] == [str(a), str(b)]


def test_collect_rejects_duplicates_and_non_result_folders(table7, tmp_path: Path) -> None:
    a = _run_folder(tmp_path, "a", "LR", [0], 2)
    b = _run_folder(tmp_path, "b", "LR", [0], 2)
    with pytest.raises(ValueError, match=r"--collect: the same \(dataset, variant, seed\) appears in more than one run"):
        table7.main(["--collect", str(a), str(b), "--out", str(tmp_path / "m1")])
    with pytest.raises(FileNotFoundError, match=r"--collect: .*nowhere is not a table7_kernels results folder \(missing .*table7_runs\.csv"):
        table7.main(["--collect", str(a), str(tmp_path / "nowhere"), "--out", str(tmp_path / "m2")])
    c = _run_folder(tmp_path, "c", "SE", [1], 2)
    pd.read_csv(c / "table7_runs.csv").drop(columns="P@5").to_csv(c / "table7_runs.csv", index=False)
    with pytest.raises(ValueError, match=r"--collect: .*table7_runs\.csv lacks the columns \['P@5'\]"):
        table7.main(["--collect", str(a), str(c), "--out", str(tmp_path / "m3")])


def test_unknown_variant_is_refused(table7, capsys) -> None:
    with pytest.raises(SystemExit, match="^2$") as info:
        table7.main(["--variants", "LR,RBF"])
    assert info.value.code == 2  # argparse's usage error
    assert "unknown variant(s) ['RBF']; choose from LR, SE, SE-F" in capsys.readouterr().err
