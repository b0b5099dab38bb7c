"""A comparison over many data sets (:func:`mlgp.comparison.compare_many`): the summary of given
results by hand, the files of a run on two tiny data sets, and the bad inputs — checked before any
work, or skipped and said."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import mlgp
from mlgp.comparison import Comparison, compare_many
from mlgp.comparison.many import summarise
from mlgp.comparison.traces import empty_trace
from mlgp.data import write_xc
from mlgp.data.synthetic import mlgpf_prior
from mlgp.errors import ArgumentError, DatasetNotFoundError

#: Training points of each tiny data set (MLkNN with 50 neighbours fails on "two" alone).
SIZES = {"one": 60, "two": 40}


def make_home(root, sizes: dict[str, int] = SIZES):
    """A data home of tiny XC data sets (D = 5, K = 8, 20 test points each)."""
    for i, (name, n) in enumerate(sizes.items()):
        ds = mlgpf_prior(num_train=n, num_test=20, num_features=5, num_labels=8, num_latent=2, seed=i)
        (root / name).mkdir(parents=True)
        write_xc(root / name / "train.txt.gz", ds.train.X, ds.train.Y)
        write_xc(root / name / "test.txt.gz", ds.test.X, ds.test.Y)
    return root


@pytest.fixture()
def quick(monkeypatch) -> None:
    """No bootstrap interval of ECE (the slowest part of scoring a family; not looked at here)."""
    import mlgp.comparison.probabilities as probabilities

    monkeypatch.setattr(probabilities, "MAX_BOOTSTRAP_ENTRIES", 0)


def _comparison(rows: dict[str, dict]) -> Comparison:
    """A :class:`Comparison` of the given result columns per family (an ``error`` where it failed)."""
    results = pd.DataFrame([{"family": f, "error": "", **r} for f, r in rows.items()])
    return Comparison(results, empty_trace())


def test_the_summary_of_given_results_by_hand() -> None:
    nan = np.nan
    comparisons = {
        "d1": _comparison({"a": {"P@1": 50.0, "LPD": -3.0}, "b": {"P@1": 40.0, "LPD": -2.0},
                           "c": {"P@1": 99.0, "LPD": nan, "error": "ValueError: planted"}}),  # failed after P@k
        "d2": _comparison({"a": {"P@1": 30.0, "LPD": -1.0}, "b": {"P@1": 30.0, "LPD": -4.0},
                           "c": {"P@1": 20.0, "LPD": nan, "proba_note": "no predict_proba"}}),
        "d3": _comparison({"a": {"P@1": 10.0, "LPD": -5.0}, "b": {"P@1": 20.0, "LPD": -6.0},
                           "c": {"P@1": 30.0, "LPD": nan, "proba_note": "no predict_proba"}}),
    }
    many = summarise(comparisons, {"d4": "DataFormatError: bad line"}, ["a", "b", "c"], alpha=0.05)
    # P@1: d1 a 1, b 2, c (failed) 3; d2 a and b tie for 1.5, c 3; d3 a 3, b 2, c 1
    assert many.ranks.loc[["a", "b", "c"], "P@1"].tolist() == pytest.approx([5.5 / 3, 5.5 / 3, 7 / 3])
    # LPD: c has no probabilities and is not ranked; d1 b, d2 a, d3 a
    assert many.ranks.loc[["a", "b"], "LPD"].tolist() == pytest.approx([4 / 3, 5 / 3])
    assert np.isnan(many.ranks.loc["c", "LPD"])
    tests = many.tests.set_index("measure")
    assert tests.loc["P@1", ["families", "datasets"]].tolist() == [3, 3]
    assert tests.loc["LPD", ["families", "datasets"]].tolist() == [2, 3]
    assert tests.loc["P@1", "critical_difference"] == pytest.approx(2.3437 * np.sqrt(3 * 4 / 18), abs=1e-4)
    summary = many.summary
    assert len(summary) == 10  # three data sets × three families, and the skipped one
    failed = summary[(summary["dataset"] == "d1") & (summary["family"] == "c")].iloc[0]
    assert failed["error"] == "ValueError: planted" and np.isnan(failed["P@1"])
    skipped = summary[summary["dataset"] == "d4"].iloc[0]
    assert skipped["family"] == "" and skipped["error"] == "dataset not read: DataFormatError: bad line"
    assert many.bootstrap.empty  # no per-row values given


def test_two_data_sets_each_as_its_own_comparison_and_a_summary(tmp_path, quick, monkeypatch) -> None:
    import mlgp.comparison.report as report

    for figure in ("_figure", "_calibration_figure"):  # each data set's figures: tested with the report
        monkeypatch.setattr(report, figure, lambda *args: args[-1].write_bytes(b"PNG"))
    home, out = make_home(tmp_path / "home"), tmp_path / "out"
    lines: list[str] = []
    many = compare_many("frequency,mlknn", "one,two", data_home=home, out=out, isolate=False, echo=lines.append,
                        n_resamples=200)
    assert list(many.comparisons) == ["one", "two"] and many.skipped == {}
    assert any(line.startswith("two: mlknn: fitting") for line in lines)
    single = mlgp.compare("frequency,mlknn", dataset="two", data_home=home, out=tmp_path / "single", isolate=False)
    assert {p.name for p in (out / "two").iterdir()} == {p.name for p in (tmp_path / "single").iterdir()} | {
        "results.csv", "traces.csv", "traces.png", "reliability.csv", "calibration.png", "report.md"}
    timing = ["fit_seconds", "predict_seconds", "proba_seconds", "peak_memory_mb"]
    pd.testing.assert_frame_equal(many.comparisons["two"].results.drop(columns=timing),
                                  single.results.drop(columns=timing))
    for name in ("summary.csv", "ranks.csv", "friedman.csv", "bootstrap.csv", "cd_P1.png", "cd_LPD.png", "summary.md"):
        assert (out / name).is_file(), name
    assert set(many.files) >= {"summary.csv", "summary.md", "cd_P1.png"}
    bootstrap = pd.read_csv(out / "bootstrap.csv")
    assert len(bootstrap) == 2 * 2 * 2  # data sets × measures × families
    assert set(bootstrap["best"]) <= {"frequency", "mlknn"}
    p1 = many.summary.pivot(index="dataset", columns="family", values="P@1")
    for name, result in many.comparisons.items():
        assert 100 * result.rows["mlknn"]["P@1"].mean() == pytest.approx(p1.loc[name, "mlknn"])
    # the bootstrap's means are the summary's columns: P@1 in percent, LPD in nats per test point
    means = bootstrap.pivot_table(index=["dataset", "family"], columns="measure", values="mean")
    summary = many.summary.set_index(["dataset", "family"])
    for measure in ("P@1", "LPD"):
        np.testing.assert_allclose(means[measure], summary.loc[means.index, measure], rtol=1e-9)


def _no_work(monkeypatch) -> list:
    """Records every dataset loaded."""
    import mlgp.data

    loaded = []
    real = mlgp.data.load
    monkeypatch.setattr(mlgp.data, "load", lambda name, *a, **k: loaded.append(name) or real(name, *a, **k))
    return loaded


@pytest.mark.parametrize("datasets, message", [
    ("one,one", "dataset listed twice: one"), (["two", "one", "two"], "dataset listed twice: two"),
    ("one,,two", "'' is not a dataset name"), ("all,one", "give it alone"), ([], "at least one dataset"),
    (3, "compare: datasets takes"),
])
def test_bad_data_set_lists_are_refused_before_any_work(tmp_path, monkeypatch, datasets, message) -> None:
    loaded = _no_work(monkeypatch)
    with pytest.raises(ArgumentError, match=message):
        compare_many("frequency", datasets, data_home=make_home(tmp_path / "home"), out=tmp_path / "out")
    assert loaded == [] and not (tmp_path / "out").exists()


def test_a_data_set_not_in_the_home_is_refused_before_any_work(tmp_path, monkeypatch) -> None:
    home = make_home(tmp_path / "home")
    loaded = _no_work(monkeypatch)
    with pytest.raises(DatasetNotFoundError, match="'three' not found.*Present in .*: one, two"):
        compare_many("frequency", "one,three", data_home=home, out=tmp_path / "out")
    assert loaded == ["three"] and not (tmp_path / "out").exists()  # only the missing one was asked for


def test_all_in_an_empty_data_home(tmp_path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(ArgumentError, match="holds no dataset"):
        compare_many("frequency", "all", data_home=tmp_path / "empty")


def test_an_unreadable_data_set_is_skipped_and_said(tmp_path, quick) -> None:
    home = make_home(tmp_path / "home", {"one": 60})
    (home / "broken").mkdir()
    (home / "broken" / "train.txt").write_text("2 5 8\n0 1:0.5\nnot a line\n")
    (home / "broken" / "test.txt").write_text("1 5 8\n0 1:0.5\n")
    lines: list[str] = []
    many = compare_many("frequency", "all", data_home=home, out=tmp_path / "out", isolate=False, echo=lines.append)
    assert list(many.comparisons) == ["one"] and list(many.skipped) == ["broken"]
    assert "DataFormatError" in many.skipped["broken"]
    assert [line for line in lines if line.startswith("broken: skipped")] == [
        f"broken: skipped, it cannot be read: {many.skipped['broken']}"]
    summary = pd.read_csv(tmp_path / "out" / "summary.csv", keep_default_na=False)
    assert summary.loc[summary["dataset"] == "broken", "error"].tolist() == [f"dataset not read: {many.skipped['broken']}"]
    assert "broken" in (tmp_path / "out" / "summary.md").read_text()
    assert not (tmp_path / "out" / "broken").exists()


def test_a_family_that_fails_on_one_data_set_ranks_last_there(tmp_path, quick) -> None:
    many = compare_many("frequency,mlknn", "one,two", data_home=make_home(tmp_path / "home"), isolate=False,
                        settings={"mlknn": {"n_neighbors": 50}}, n_resamples=100)  # "two" has 40 training points
    summary = many.summary.set_index(["dataset", "family"])
    assert summary.loc[("two", "mlknn"), "error"].startswith("ShapeError: MLkNN with n_neighbors=50")
    assert summary.loc[("one", "mlknn"), "error"] == ""
    ranks = many.rank_tables["P@1"]
    assert ranks.loc["two"].tolist() == [1.0, 2.0]  # frequency, mlknn: the failed family last
    assert set(many.bootstrap.loc[many.bootstrap["dataset"] == "two", "family"]) == {"frequency"}
