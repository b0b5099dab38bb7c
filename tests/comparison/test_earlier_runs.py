"""A comparison naming fewer families than an earlier one into the same folder: the results and the
report keep every whole run of ``runs/`` made on this split, say which rows come from earlier runs,
and fit nothing again."""

from __future__ import annotations

import pandas as pd
from _compare_stubs import tiny

import mlgp
from mlgp.comparison import write_report


def test_fewer_models_keep_every_valid_run_and_fit_nothing_again(tmp_path) -> None:
    ds, out = tiny(), tmp_path / "c"
    mlgp.compare("frequency,mlknn,lspc", dataset=ds, out=out, isolate=False)
    stamps = {p.name: p.stat().st_mtime_ns for p in (out / "runs").iterdir()}
    lines: list[str] = []
    again = mlgp.compare("mlknn", dataset=ds, out=out, isolate=False, echo=lines.append)
    assert again.results["family"].tolist() == ["mlknn", "frequency", "lspc"]  # the named family first
    assert again.results["resumed"].all() and again.earlier == ["frequency", "lspc"]
    assert {p.name: p.stat().st_mtime_ns for p in (out / "runs").iterdir()} == stamps  # nothing refitted
    assert not any("fitting" in line for line in lines)
    assert set(again.rows) == {"mlknn", "frequency", "lspc"}
    write_report(again, out)
    assert pd.read_csv(out / "results.csv")["family"].tolist() == ["mlknn", "frequency", "lspc"]
    report = (out / "report.md").read_text()
    assert "Rows taken from earlier runs in runs/" in report
    assert "Not named by this command, kept because their runs are whole: frequency, lspc." in report


def test_runs_on_other_data_or_with_another_seed_are_left_out(tmp_path) -> None:
    out = tmp_path / "c"
    mlgp.compare("frequency,mlknn", dataset=tiny(seed=4), out=out, isolate=False)  # other data
    assert mlgp.compare("mlknn", dataset=tiny(), out=out, isolate=False).results["family"].tolist() == ["mlknn"]
    mlgp.compare("frequency,lspc", dataset=tiny(), out=out, isolate=False, seed=1)
    named = mlgp.compare("mlknn", dataset=tiny(), out=out, isolate=False, seed=0)
    assert named.results["family"].tolist() == ["mlknn"] and named.earlier == []


def test_a_family_without_a_budget_is_not_fitted_again_for_another_budget(tmp_path) -> None:
    ds, out = tiny(), tmp_path / "c"
    mlgp.compare("frequency", dataset=ds, out=out, isolate=False, budget=5)
    assert mlgp.compare("frequency", dataset=ds, out=out, isolate=False, budget=9).results["resumed"].all()
