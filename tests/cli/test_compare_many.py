"""``mlgp compare --dataset a,b`` and ``--dataset all``: each data set compared into its own folder,
the summary over the data sets (ranks, tests, bootstrap, diagrams), resuming, and the bad inputs."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pandas as pd
import pytest
from scipy.stats import rankdata

from mlgp.cli import main
from mlgp.data import write_xc
from mlgp.data.synthetic import mlgpf_prior

MODELS = ["--models", "frequency,mlknn,fastxml", "--set", "fastxml.n_estimators=2", "--set", "fastxml.n_jobs=1"]
SUMMARY = ("summary.csv", "ranks.csv", "friedman.csv", "bootstrap.csv", "cd_P1.png", "cd_LPD.png", "summary.md")


def _home(root, sizes: dict[str, int]):
    """A data home of tiny XC data sets (D = 5, K = 8, 20 test points each)."""
    for i, (name, n) in enumerate(sizes.items()):
        ds = mlgpf_prior(num_train=n, num_test=20, num_features=5, num_labels=8, num_latent=2, seed=10 + i)
        (root / name).mkdir(parents=True)
        write_xc(root / name / "train.txt.gz", ds.train.X, ds.train.Y)
        write_xc(root / name / "test.txt.gz", ds.test.X, ds.test.Y)
    return root


@pytest.fixture(scope="module")
def quick():
    """No bootstrap interval of ECE (the slowest part of scoring a family; not looked at here)."""
    import mlgp.comparison.probabilities as probabilities

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(probabilities, "MAX_BOOTSTRAP_ENTRIES", 0)
        yield


@pytest.fixture(scope="module")
def ran(tmp_path_factory, quick) -> dict:
    """``mlgp compare`` on two tiny data sets, in this process: its folders, status and output."""
    root = tmp_path_factory.mktemp("many")
    home, out = _home(root / "home", {"alpha": 60, "beta": 40}), root / "out"
    argv = ["compare", "--dataset", "alpha,beta", *MODELS, "--in-process", "--data-home", str(home), "--out", str(out)]
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        status = main(argv)
    return {"home": home, "out": out, "argv": argv, "status": status, "stdout": stdout.getvalue(),
            "stderr": stderr.getvalue()}


def test_each_data_set_in_its_folder_and_the_summary_beside(ran) -> None:
    out = ran["out"]
    assert ran["status"] == 0, ran["stderr"]
    for name in ("alpha", "beta"):
        for file in ("results.csv", "traces.csv", "traces.png", "reliability.csv", "calibration.png", "report.md"):
            assert (out / name / file).is_file(), (name, file)
        for family in ("frequency", "mlknn", "fastxml"):
            assert (out / name / "runs" / f"{family}.json").is_file()
            assert (out / name / "runs" / f"{family}.rows.npz").is_file()
        assert "mlgp compare: " + name in (out / name / "report.md").read_text()
    for file in SUMMARY:
        assert (out / file).is_file(), file
    assert (out / "cd_P1.png").stat().st_size > 5_000
    summary = pd.read_csv(out / "summary.csv", keep_default_na=False)
    assert list(summary.columns) == ["dataset", "family", "P@1", "P@5", "LPD", "NLL", "ECE", "error"]
    assert summary[["dataset", "family"]].values.tolist() == [
        [d, f] for d in ("alpha", "beta") for f in ("frequency", "mlknn", "fastxml")]
    results = pd.read_csv(out / "beta" / "results.csv").set_index("family")
    beta = summary[summary["dataset"] == "beta"].set_index("family")
    for column in ("P@1", "P@5", "LPD", "NLL", "ECE"):
        np.testing.assert_allclose(beta[column].astype(float), results.loc[beta.index, column], rtol=1e-12)
    printed = ran["stdout"]
    assert "== alpha ==" in printed and "== beta ==" in printed and "Iman-Davenport F" in printed
    assert "beta: fastxml: fitting" in ran["stderr"]


def test_the_ranks_and_tests_by_hand(ran) -> None:
    out = ran["out"]
    summary = pd.read_csv(out / "summary.csv")
    ranks = pd.read_csv(out / "ranks.csv").set_index("family")
    tests = pd.read_csv(out / "friedman.csv").set_index("measure")
    for measure in ("P@1", "LPD"):
        table = summary.pivot(index="dataset", columns="family", values=measure)
        rounded = table.apply(lambda c: c.map(lambda v: float(f"{v:.10g}")))
        by_hand = pd.DataFrame(rankdata(-rounded.to_numpy(), axis=1), index=table.index, columns=table.columns)
        np.testing.assert_allclose(ranks.loc[table.columns, measure], by_hand.mean(), rtol=1e-12)
        assert tests.loc[measure, "families"] == 3 and tests.loc[measure, "datasets"] == 2
        # k = 3, N = 2: q = 2.343 (Demšar's Table 5), CD = q √(3·4/12)
        assert tests.loc[measure, "critical_difference"] == pytest.approx(2.343, abs=1e-3)
    bootstrap = pd.read_csv(out / "bootstrap.csv")
    assert len(bootstrap) == 2 * 2 * 3
    p1 = bootstrap[bootstrap["measure"] == "P@1"]
    for dataset, part in p1.groupby("dataset"):
        best = summary[summary["dataset"] == dataset].set_index("family")["P@1"].idxmax()
        assert (part["best"] == best).all()
        assert (part["difference"] <= 0).all() and (part["low"] <= part["high"]).all()


def test_a_second_run_refits_nothing(ran, capsys) -> None:
    runs = [p for name in ("alpha", "beta") for p in (ran["out"] / name / "runs").iterdir()]
    stamps = {p: p.stat().st_mtime_ns for p in runs}
    argv = ["compare", "--dataset", "all", *ran["argv"][3:]]  # "all": the same two data sets
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "fitting" not in err and err.count("taken from") == 6
    assert {p: p.stat().st_mtime_ns for p in runs} == stamps
    for name in ("alpha", "beta"):
        assert pd.read_csv(ran["out"] / name / "results.csv")["resumed"].all()


def test_one_data_set_keeps_the_layout_of_one(ran, tmp_path) -> None:
    out = tmp_path / "one"
    assert main(["compare", "--dataset", "alpha", "--models", "frequency", "--in-process", "--data-home",
                 str(ran["home"]), "--out", str(out)]) == 0
    assert (out / "results.csv").is_file() and (out / "runs" / "frequency.json").is_file()
    assert not (out / "summary.csv").exists() and not (out / "alpha").exists()


def test_a_data_set_named_twice_is_a_usage_error(ran, tmp_path, capsys) -> None:
    out = tmp_path / "twice"
    assert main(["compare", "--dataset", "alpha,beta,alpha", "--models", "frequency", "--data-home", str(ran["home"]),
                 "--out", str(out)]) == 2
    assert capsys.readouterr().err.strip() == "mlgp: error: dataset listed twice: alpha"
    assert not out.exists()


def test_all_in_an_empty_data_home_is_a_usage_error(tmp_path, capsys) -> None:
    (tmp_path / "empty").mkdir()
    assert main(["compare", "--dataset", "all", "--models", "frequency", "--data-home", str(tmp_path / "empty"),
                 "--out", str(tmp_path / "out")]) == 2
    assert "holds no dataset" in capsys.readouterr().err


def test_an_unreadable_data_set_is_listed_and_the_others_run(tmp_path, quick, capsys) -> None:
    home = _home(tmp_path / "home", {"alpha": 60, "beta": 40})
    (home / "beta" / "test.txt.gz").write_bytes(b"\x1f\x8b broken gzip")
    out = tmp_path / "out"
    assert main(["compare", "--dataset", "all", "--models", "frequency,mlknn", "--in-process", "--data-home", str(home),
                 "--out", str(out)]) == 1
    captured = capsys.readouterr()
    said = [line for line in captured.err.splitlines() if line.startswith("beta: skipped, it cannot be read: ")]
    assert len(said) == 1
    summary = pd.read_csv(out / "summary.csv", keep_default_na=False)
    assert summary.loc[summary["dataset"] == "beta", "error"].str.startswith("dataset not read: ").tolist() == [True]
    assert (out / "alpha" / "results.csv").is_file() and not (out / "beta").exists()
    assert "beta" in (out / "summary.md").read_text().split("## P@1")[0]


def test_a_family_failing_on_one_data_set(ran, tmp_path, quick, capsys) -> None:
    """MLkNN with 50 neighbours fails on beta (40 training points) alone: its cell says why, it ranks
    last there, and the exit status is 1."""
    out = tmp_path / "out"
    assert main(["compare", "--dataset", "alpha,beta", "--models", "frequency,mlknn", "--set", "mlknn.n_neighbors=50",
                 "--in-process", "--data-home", str(ran["home"]), "--out", str(out)]) == 1
    capsys.readouterr()
    summary = pd.read_csv(out / "summary.csv", keep_default_na=False).set_index(["dataset", "family"])
    assert summary.loc[("beta", "mlknn"), "error"].startswith("ShapeError: MLkNN with n_neighbors=50")
    assert summary.loc[("alpha", "mlknn"), "error"] == ""
    assert "failed: ShapeError: MLkNN" in (out / "summary.md").read_text()
    ranks = pd.read_csv(out / "ranks.csv").set_index("family")
    alpha = summary.xs("alpha", level="dataset")["P@1"].astype(float)
    alpha_ranks = rankdata(-alpha.to_numpy())
    expected_mlknn = (alpha_ranks[list(alpha.index).index("mlknn")] + 2.0) / 2  # last (2) on beta
    assert ranks.loc["mlknn", "P@1"] == pytest.approx(expected_mlknn)
