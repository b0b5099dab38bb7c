"""``compare_datasets``: the issue-63 targets computed from a hand-made summary (ties, a family worse
than the label prior, failed families, a skipped data set, the thresholds' edges), the data sets'
order, the summary's extra columns, and the ``--quick`` run end to end (slow tier)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from _scripts import load_script

NAN = np.nan
FAMILIES = ("frequency", "fastxml", "mlknn", "mlgpf")
#: data set -> test rows, then per family (P@1, LPD, NLL, ECE, ECE@5, seconds); None: the family failed.
CELLS = {
    # P@1: fastxml and mlknn tie for the best, MLGPF exactly 2 below; LPD: fastxml and MLGPF tie
    "scene": (1000, {"frequency": (40.0, -3.0, 0.30, 0.05, 0.10, 1.0), "fastxml": (60.0, -2.0, 0.25, 0.04, 0.08, 2.0),
                     "mlknn": (60.0, -3.5, 0.35, 0.09, 0.20, 3.0), "mlgpf": (58.0, -2.0, 0.28, 0.01, 0.02, 4.0)}),
    # MLGPF 2.5 below on P@1, exactly 1 % short on LPD, its NLL equal to the prior's (not worse)
    "enron": (1200, {"frequency": (30.0, -100.0, 0.50, 0.05, 0.10, 1.0), "fastxml": (50.0, -110.0, 0.55, 0.04, 0.08, 2.0),
                     "mlknn": (45.0, -105.0, 0.60, 0.09, 0.20, 3.0), "mlgpf": (47.5, -101.0, 0.50, 0.02, 0.04, 8.0)}),
    # 999 test rows: no ECE target; ML-kNN failed (no NLL: not counted against the prior)
    "bibtex": (999, {"frequency": (20.0, -50.0, 0.10, 0.05, 0.10, 1.0), "fastxml": (70.0, -60.0, 0.12, 0.04, 0.08, 2.0),
                     "mlknn": None, "mlgpf": (65.0, -50.75, 0.09, 0.03, 0.06, 16.0)}),
    # MLGPF failed: no value, so neither target is met there
    "flags": (100, {"frequency": (50.0, -5.0, 0.20, 0.05, 0.10, 1.0), "fastxml": (55.0, -4.0, 0.15, 0.04, 0.08, 2.0),
                    "mlknn": (52.0, -6.0, 0.25, 0.09, 0.20, 3.0), "mlgpf": None}),
}


def _summary(cells: dict = CELLS) -> pd.DataFrame:
    """A frame like ``targets_frame``'s, with a skipped data set at the end."""
    rows = []
    for dataset, (test_rows, families) in cells.items():
        for family, values in families.items():
            if values is None:
                rows.append(dict(dataset=dataset, family=family, **{c: NAN for c in ("P@1", "P@5", "LPD", "NLL", "ECE")},
                                 error="MemoryError: planted", **{"ECE@5": NAN, "seconds": 0.5, "test rows": test_rows}))
                continue
            p1, lpd, nll, ece, ece5, seconds = values
            rows.append(dict(dataset=dataset, family=family, **{"P@1": p1, "P@5": p1 / 2, "LPD": lpd, "NLL": nll, "ECE": ece},
                             error="", **{"ECE@5": ece5, "seconds": seconds, "test rows": test_rows}))
    rows.append(dict(dataset="gone", family="", **{c: NAN for c in ("P@1", "P@5", "LPD", "NLL", "ECE", "ECE@5", "seconds",
                                                                       "test rows")}, error="dataset not read: planted"))
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def script():
    return load_script("compare_datasets")


def test_p1_gap_to_the_best_with_ties_and_a_failed_family(script):
    table = script.p1_gaps(_summary()).set_index("dataset")
    assert list(table.index) == ["scene", "enron", "bibtex", "flags"]  # the skipped data set is not a row
    assert table["best by P@1"].tolist() == ["fastxml, mlknn", "fastxml", "fastxml", "fastxml"]
    np.testing.assert_array_equal(table["P@1 − best"], [-2.0, -2.5, -5.0, NAN])
    assert table["P@1 within 2"].tolist() == [True, False, False, False]  # exactly 2 below is within
    assert script.p1_gaps(_summary(), within=2.5)["P@1 within 2.5"].tolist() == [True, True, False, False]
    other = script.p1_gaps(_summary(), family="fastxml")  # the best itself: gap 0
    assert other["P@1 − best"].tolist() == [0.0] * 4 and other["P@1 within 2"].all()


def test_lpd_shortfall_relative_to_the_best(script):
    table = script.lpd_gaps(_summary()).set_index("dataset")
    assert table["best by LPD"].tolist() == ["fastxml, mlgpf", "frequency", "frequency", "fastxml"]
    np.testing.assert_allclose(table["LPD short %"], [0.0, 1.0, 1.5, NAN])  # (best − own) / |best|
    assert table["LPD within 1 %"].tolist() == [True, True, False, False]
    worst = script.lpd_gaps(_summary(), family="mlknn").set_index("dataset")
    np.testing.assert_allclose(worst["LPD short %"], [75.0, 5.0, NAN, 50.0])  # failed on bibtex: no value


def test_cells_worse_than_the_label_prior(script):
    table = script.worse_than_prior(_summary())
    # enron's MLGPF equals the prior (not worse); bibtex's failed ML-kNN and flags' MLGPF have no NLL
    assert list(zip(table["dataset"], table["family"])) == [("scene", "mlknn"), ("enron", "fastxml"), ("enron", "mlknn"),
                                                           ("bibtex", "fastxml"), ("flags", "mlknn")]
    np.testing.assert_allclose(table["excess"], [0.05, 0.05, 0.10, 0.02, 0.05])
    np.testing.assert_allclose(table["prior NLL"], [0.30, 0.50, 0.50, 0.10, 0.20])
    without_prior = _summary().query("not (family == 'frequency' and dataset == 'scene')")
    assert "scene" not in set(script.worse_than_prior(without_prior)["dataset"])  # nothing to compare against


def test_mean_ranks_share_ties_and_put_a_failed_family_last(script):
    ranks = script.mean_ranks(_summary()).set_index("family")
    assert list(ranks.index) == list(FAMILIES)
    # P@1 ranks per data set: scene 4, 1.5, 1.5, 3; enron 4, 1, 3, 2; bibtex 3, 1, 4 (failed), 2; flags 3, 1, 2, 4
    np.testing.assert_allclose(ranks["mean rank P@1"], [3.5, 1.125, 2.625, 2.75])
    # LPD: scene 3, 1.5, 4, 1.5; enron 1, 4, 3, 2; bibtex 1, 3, 4, 2; flags 2, 1, 3, 4
    np.testing.assert_allclose(ranks["mean rank LPD"], [1.75, 2.375, 3.5, 2.375])
    summary = _summary()
    summary.loc[summary["family"] == "fastxml", "LPD"] = NAN  # no probabilities: not ranked by LPD
    failing = summary["family"] == "mlknn"
    summary.loc[failing, ["P@1", "LPD"]] = NAN
    summary.loc[failing, "error"] = "ValueError: planted"  # failed everywhere: last everywhere
    ranks = script.mean_ranks(summary).set_index("family")
    assert np.isnan(ranks.loc["fastxml", "mean rank LPD"]) and ranks.loc["fastxml", "mean rank P@1"] == 1.0
    # last, but sharing the last places on flags with the failed MLGPF: (4 + 4 + 4 + 3.5) / 4 and (3 + 3 + 3 + 2.5) / 4
    assert ranks.loc["mlknn", "mean rank P@1"] == 3.875 and ranks.loc["mlknn", "mean rank LPD"] == 2.875


def test_calibration_targets_apply_by_test_rows_and_by_name(script):
    table = script.calibration_targets(_summary()).set_index("dataset")
    assert table["test rows"].tolist() == [1000, 1200, 999, 100]
    np.testing.assert_array_equal(table["ECE"], [0.01, 0.02, NAN, NAN])  # from 1,000 test rows on
    np.testing.assert_array_equal(table["ECE@5"], [NAN, 0.04, 0.06, NAN])  # enron and bibtex only
    other = script.calibration_targets(_summary(), family="frequency", min_rows=100, ece5_datasets=("flags",))
    np.testing.assert_array_equal(other["ECE"], [0.05] * 4)
    np.testing.assert_array_equal(other["ECE@5"], [NAN, NAN, NAN, 0.10])


def test_total_seconds_and_the_tables_side_by_side(script):
    assert script.total_seconds(_summary()) == pytest.approx(4 * 1 + 4 * 2 + 3 * 3 + 4 + 8 + 16 + 2 * 0.5)
    table = script.by_dataset(_summary()).set_index("dataset")
    assert table["cells worse than prior"].tolist() == [1, 2, 1, 1]
    np.testing.assert_allclose(table["seconds"], [10.0, 14.0, 19.5, 6.5])
    assert table["P@1 within 2"].tolist() == [True, False, False, False]


def test_the_overview_states_each_target(script):
    out = script.overview(_summary()).set_index("target")["value"]
    details = script.overview(_summary()).set_index("target")["detail"]
    assert out["mlgpf P@1 within 2 points of the best"] == "1 of 4"
    assert details["mlgpf P@1 within 2 points of the best"] == "missed: enron -2.50; bibtex -5.00; flags (no value)"
    assert out["mlgpf test LPD within 1 % of the best"] == "2 of 4"
    assert details["mlgpf test LPD within 1 % of the best"] == "missed (% short): bibtex +1.50; flags (no value)"
    worse = "cells with NLL per entry worse than the label prior's (frequency)"
    assert out[worse] == "5" and details[worse].startswith("mlknn on scene; fastxml on enron")
    assert out["mlgpf mean rank by P@1"] == "2.75 of 4"
    no_proba = _summary()
    no_proba.loc[no_proba["family"] == "fastxml", "LPD"] = NAN  # three families ranked by LPD: 1, 2, 2, 3
    assert script.overview(no_proba).set_index("target")["value"]["mlgpf mean rank by LPD"] == "2.00 of 3"
    assert out["mlgpf ECE, data sets with ≥ 1,000 test rows"] == "scene 0.0100; enron 0.0200"
    assert out["mlgpf ECE@5 on bibtex, enron, delicious"] == "enron 0.0400; bibtex 0.0600"
    assert out["total seconds (every cell: fit, predict, scoring)"] == "50.0"


def test_data_sets_in_the_issue_order_then_the_others(script):
    assert script.dataset_order(["yeast", "zoo", "bibtex", "abc", "flags"]) == ["flags", "yeast", "bibtex", "abc", "zoo"]
    assert script.dataset_order([]) == []


def test_the_summary_gains_ece5_seconds_and_test_rows(script):
    from types import SimpleNamespace

    from mlgp.comparison import Comparison
    from mlgp.comparison.many import summarise
    from mlgp.comparison.traces import empty_trace

    results = pd.DataFrame([
        {"family": "frequency", "error": "", "fit_seconds": 1.0, "predict_seconds": 0.5, "proba_seconds": 0.25,
         "P@1": 50.0, "LPD": -2.0, "ECE@5": 0.1},
        {"family": "mlgpf", "error": "ValueError: planted", "fit_seconds": 2.0, "predict_seconds": NAN,
         "proba_seconds": NAN, "P@1": 99.0, "LPD": -1.0, "ECE@5": 0.2},  # failed after scoring
    ])
    rows = {"frequency": {"P@1": np.zeros(7), "LPD": np.zeros(7)}}
    many = summarise({"d": Comparison(results, empty_trace(), rows=rows)}, {"e": "bad"}, ["frequency", "mlgpf"])
    frame = script.targets_frame(SimpleNamespace(summary=many.summary, comparisons=many.comparisons)).set_index("family")
    assert frame.loc["frequency", "ECE@5"] == 0.1 and np.isnan(frame.loc["mlgpf", "ECE@5"])
    assert frame.loc["frequency", "seconds"] == 1.75 and frame.loc["mlgpf", "seconds"] == 2.0
    assert frame.loc["frequency", "test rows"] == 7 and np.isnan(frame.loc["", "test rows"])  # the skipped one


@pytest.mark.parametrize("argv, message", [
    (["--models", "frequency,mlknn"], "--family mlgpf is not among the families compared (frequency, mlknn)"),
    (["--models", "frequency,nope"], "unknown family(s) ['nope']"),
    (["--models", "mlgpf,frequency,mlgpf"], "a family is named twice in --models"),
    (["--budget", "0"], "--budget must be a positive number of seconds"),
    (["--budget", "inf"], "--budget must be a positive number of seconds"),
    (["--seeds", "0,1"], "give one seed"),
    (["--quick", "--family", "mlgpf"], "--family mlgpf is not among the families compared"),
])
def test_bad_options_are_refused_before_any_work(script, argv, message, capsys, tmp_path):
    with pytest.raises(SystemExit, match="^2$"):
        script.main([*argv, "--out", str(tmp_path / "out")])
    assert message in capsys.readouterr().err and not (tmp_path / "out").exists()


@pytest.mark.slow
def test_quick_run_writes_the_target_tables(script, tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.setenv("MLGP_RESULTS", str(tmp_path / "results"))
    script.main(["--quick", "--out", str(tmp_path / "out")])
    out = tmp_path / "out"
    record = json.loads((out / "run.json").read_text())
    assert record["status"] == "ok" and record["settings"]["models"] == ["frequency", "fastxml", "mlknn", "lspc"]
    for name in ("tiny-a", "tiny-b"):
        assert (out / name / "results.csv").is_file() and (out / name / "report.md").is_file()
    assert (out / "summary.csv").is_file() and (out / "ranks.csv").is_file()
    targets = pd.read_csv(out / "targets.csv")
    assert len(targets) == 8 and targets["target"][0] == "fastxml P@1 within 2 points of the best"
    by = pd.read_csv(out / "targets_by_dataset.csv")
    assert by["dataset"].tolist() == ["tiny-a", "tiny-b"] and (by["test rows"] == 30).all()
    worse = pd.read_csv(out / "worse_than_prior.csv")
    assert set(worse["family"]) == {"mlknn"}  # its own probabilities (calibration=None in --quick)
    ranks = pd.read_csv(out / "mean_ranks.csv").set_index("family")
    stored = pd.read_csv(out / "ranks.csv").set_index("family")  # compare_many's own mean ranks
    np.testing.assert_allclose(ranks.loc[stored.index, "mean rank P@1"], stored["P@1"])
    np.testing.assert_allclose(ranks.loc[stored.index, "mean rank LPD"], stored["LPD"])
    script.main(["--quick", "--out", str(tmp_path / "out")])  # resumed: every family taken from its run file
    results = pd.read_csv(out / "tiny-a" / "results.csv")
    assert results["resumed"].all()
