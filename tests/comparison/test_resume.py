"""Resuming a comparison from ``out/runs/<family>.json`` (:mod:`mlgp.comparison.resume`): what is
taken from a run file, and what is fitted again — other data, a family that failed, a broken file."""

from __future__ import annotations

import copy
import dataclasses
import json
import math

import pytest
from _compare_stubs import tiny

import mlgp
from mlgp.baselines import LabelFrequency
from mlgp.comparison.rows import save_rows


def _compare(ds, out, lines=None, models="frequency"):
    """One in-process comparison into ``out``; ``lines`` collects what it echoes."""
    return mlgp.compare(models, dataset=ds, out=out, isolate=False,
                        echo=None if lines is None else lines.append).results.set_index("family")


def _run_file(out, name="frequency"):
    return out / "runs" / f"{name}.json"


@pytest.fixture(scope="module")
def good_folder(tmp_path_factory):
    """The folder of a comparison of frequency on :func:`tiny`."""
    out = tmp_path_factory.mktemp("good")
    _compare(tiny(), out)
    return out


@pytest.fixture(scope="module")
def good_file(good_folder) -> dict:
    """The run file of frequency on :func:`tiny`, as written by a comparison."""
    return json.loads(_run_file(good_folder).read_text())


@pytest.fixture(scope="module")
def good_rows(good_folder) -> dict:
    """The per-test-row values of frequency on :func:`tiny`, as written beside its run file."""
    from mlgp.files import read_npz

    return read_npz(good_folder / "runs" / "frequency.rows.npz")


def test_a_whole_run_file_is_taken_without_fitting(tmp_path) -> None:
    ds, out = tiny(), tmp_path / "c"
    first = _compare(ds, out, models="frequency,lspc,mlknn,geneml")
    stamps = {p.name: p.stat().st_mtime_ns for p in (out / "runs").iterdir()}
    lines: list[str] = []
    again = _compare(ds, out, lines, models="frequency,lspc,mlknn,geneml")
    assert again["resumed"].all() and not first["resumed"].any()
    assert all("taken from" in line for line in lines)
    assert {p.name: p.stat().st_mtime_ns for p in (out / "runs").iterdir()} == stamps
    assert again.drop(columns="resumed").equals(first.drop(columns="resumed"))


def test_the_data_fingerprint_is_part_of_the_key(tmp_path) -> None:
    """Same family, settings, budget and seed on other data (one test label flipped): fitted again."""
    ds, out = tiny(), tmp_path / "c"
    flipped = ds.test.Y.tolil()
    flipped[0, 0] = 1 - flipped[0, 0]
    other = dataclasses.replace(ds, test=dataclasses.replace(ds.test, Y=flipped.tocsr()))
    _compare(ds, out)
    assert _compare(ds, out).loc["frequency", "resumed"]  # the same data: taken from the file
    recorded = json.loads(_run_file(out).read_text())["config"]["data"]
    assert not _compare(other, out).loc["frequency", "resumed"]
    assert json.loads(_run_file(out).read_text())["config"]["data"] != recorded


def test_a_family_that_failed_is_fitted_again(tmp_path, monkeypatch) -> None:
    ds, out = tiny(), tmp_path / "c"

    def broken(self, X, Y):
        raise RuntimeError("planted failure")

    with monkeypatch.context() as patch:
        patch.setattr(LabelFrequency, "fit", broken)
        failed = _compare(ds, out)
    assert "planted failure" in failed.loc["frequency", "error"]
    assert "planted failure" in json.loads(_run_file(out).read_text())["row"]["error"]
    again = _compare(ds, out)
    assert not again.loc["frequency", "resumed"]
    assert again.loc["frequency", "error"] == "" and again.loc["frequency", "P@1"] > 0
    assert json.loads(_run_file(out).read_text())["row"]["error"] == ""


def test_a_family_without_probabilities_resumes(tmp_path, good_file, good_rows) -> None:
    """A row with a ``proba_note`` and no probability columns or reliability bins is whole."""
    saved = copy.deepcopy(good_file)
    row = saved["row"]
    for field in [f for f in row if f not in ("family", "estimator", "settings", "error", "fit_seconds",
                                               "peak_memory_mb", "predict_seconds", "resumed") and "@" not in f]:
        del row[field]
    for field in [f for f in row if f.startswith(("ECE@", "microF1", "macroF1"))]:
        del row[field]
    row.update({"proba_note": "LabelFrequency has no predict_proba", "_reliability": {}})
    (tmp_path / "c" / "runs").mkdir(parents=True)
    _run_file(tmp_path / "c").write_text(json.dumps(saved))
    save_rows(tmp_path / "c", "frequency", {m: v for m, v in good_rows.items() if m != "LPD"})  # no LPD rows
    resumed = _compare(tiny(), tmp_path / "c")
    assert resumed.loc["frequency", "resumed"]
    assert resumed.loc["frequency", "proba_note"] == "LabelFrequency has no predict_proba"


def _set(path: str, value):
    """A change to a run file: the field at ``path`` (keys separated by ``/``) set to ``value``."""
    def change(saved: dict) -> None:
        *outer, last = path.split("/")
        target = saved
        for key in outer:
            target = target[key]
        target[last] = value
    return change


def _drop(section: str, field: str):
    return lambda saved: saved[section].pop(field)


_TRACE = {"family": ["frequency"], "step": [1], "seconds": [0.5], "quantity": ["P@1"], "value": [40.0]}

BROKEN = {
    "P@1 a text": _set("row/P@1", "abc"),
    "P@1 null": _set("row/P@1", None),
    "P@1 a bool": _set("row/P@1", True),
    "P@1 over 100": _set("row/P@1", 250.0),
    "nDCG@5 negative": _set("row/nDCG@5", -1.0),
    "PSP@3 infinite": _set("row/PSP@3", math.inf),
    "fit seconds NaN": _set("row/fit_seconds", math.nan),
    "LPD positive": _set("row/LPD", 0.5),
    "ECE over 1": _set("row/ECE", 1.5),
    "tuned F1 a text": _set("row/microF1_tuned", "high"),
    "peak memory a list": _set("row/peak_memory_mb", [1.0]),
    "P@3 missing": _drop("row", "P@3"),
    "Brier missing": _drop("row", "Brier"),
    "an unknown field": _set("row/surprise", 1.0),
    "another family's row": _set("row/family", "lspc"),
    "another class": _set("row/estimator", "LSPC"),
    "settings a number": _set("row/settings", 3),
    "resumed a text": _set("row/resumed", "yes"),
    "the row a list": _set("row", [1, 2]),
    "bins of two lengths": _set("row/_reliability/all/count", [1]),
    "a bin count negative": lambda saved: saved["row"]["_reliability"]["all"]["count"].__setitem__(0, -1),
    "a bin probability over 1": lambda saved: saved["row"]["_reliability"]["top5"]["mean_probability"].__setitem__(
        0, 2.0),
    "the top5 bins missing": lambda saved: saved["row"]["_reliability"].pop("top5"),
    "the trace a list": _set("trace", [1, 2, 3]),
    "a trace column missing": _set("trace", {k: v for k, v in _TRACE.items() if k != "value"}),
    "trace columns of two lengths": _set("trace", {**_TRACE, "seconds": [0.5, 1.0]}),
    "a trace value a text": _set("trace", {**_TRACE, "value": ["x"]}),
    "a trace step fractional": _set("trace", {**_TRACE, "step": [1.5]}),
    "a trace of another family": _set("trace", {**_TRACE, "family": ["lspc"]}),
    "a trace seconds negative": _set("trace", {**_TRACE, "seconds": [-1.0]}),
    "the config lacks the data": _drop("config", "data"),
    "the file another object": lambda saved: saved.clear() or saved.update({"rows": []}),
    "the file a list": lambda saved: saved.clear() or saved.update({"config": [], "row": [], "trace": []}),
}


@pytest.mark.slow
@pytest.mark.parametrize("change", list(BROKEN.values()), ids=list(BROKEN))
def test_a_broken_run_file_is_fitted_again_and_said_so(tmp_path, good_file, change) -> None:
    saved = copy.deepcopy(good_file)
    change(saved)
    out = tmp_path / "c"
    (out / "runs").mkdir(parents=True)
    _run_file(out).write_text(json.dumps(saved))
    lines: list[str] = []
    result = _compare(tiny(), out, lines)
    assert not result.loc["frequency", "resumed"]
    assert isinstance(result.loc["frequency", "P@1"], float) and 0 < result.loc["frequency", "P@1"] <= 100
    said = [line for line in lines if "not resuming" in line]
    assert len(said) == 1 and "frequency.json" in said[0] and said[0].endswith("fitting again")
    assert "\n" not in said[0]
    rewritten = json.loads(_run_file(out).read_text())
    assert rewritten["row"]["P@1"] == result.loc["frequency", "P@1"]
    assert _compare(tiny(), out).loc["frequency", "resumed"]  # the refitted file is whole


def test_a_run_file_that_is_not_json_is_fitted_again(tmp_path) -> None:
    out = tmp_path / "c"
    (out / "runs").mkdir(parents=True)
    _run_file(out).write_text('{"config": ')
    lines: list[str] = []
    assert not _compare(tiny(), out, lines).loc["frequency", "resumed"]
    assert any("does not read as JSON" in line for line in lines)


# ------------------------------------------------- the checks, one by one (found by mutation testing)
def test_a_long_value_is_shown_cut_to_forty_characters() -> None:
    from mlgp.comparison.resume import _show

    assert _show("x" * 10) == repr("x" * 10)
    assert _show("y" * 100) == repr("y" * 100)[:37] + "..." and len(_show("y" * 100)) == 40
    assert _show("z" * 38) == repr("z" * 38)  # 40 characters with its quotes: shown whole


@pytest.mark.parametrize("field, value, whole", [
    ("P@1", 100.0, True), ("P@1", 0.0, True), ("P@1", 100.0 + 1e-9, False),
    ("microF1_tuned", 100.0, True), ("microF1_tuned", 100.5, False), ("microF1_tuned", math.nan, True),
    ("macroF1_tuned", 100.5, False), ("ECE", 1.0, True), ("LPD", 0.0, True), ("NLL", -0.1, False),
])
def test_each_bound_of_a_row_is_inclusive_and_holds(good_file, field, value, whole) -> None:
    from mlgp.comparison.resume import _Bad, _check_row

    row = dict(copy.deepcopy(good_file["row"]), **{field: value})
    if whole:
        _check_row(row, "frequency", "LabelFrequency", 6)
    else:
        with pytest.raises(_Bad, match=f"row field '{field}'"):
            _check_row(row, "frequency", "LabelFrequency", 6)


def test_a_row_has_every_cut_off_up_to_the_number_of_labels() -> None:
    """With K = 5 the row has P@5 and ECE@5 (k = K counts); with K = 4 neither."""
    from mlgp.comparison.resume import _expected_fields

    five, four = _expected_fields({}, 5), _expected_fields({}, 4)
    assert {"P@5", "nDCG@5", "PSP@5", "ECE@5"} <= set(five)
    assert not {"P@5", "ECE@5"} & set(four) and {"P@3", "ECE@1"} <= set(four)


@pytest.mark.parametrize("quantity", [5, "", None])
def test_a_trace_quantity_must_be_a_name(quantity) -> None:
    from mlgp.comparison.resume import _Bad, _trace_frame

    _trace_frame(dict(_TRACE), "frequency")
    with pytest.raises(_Bad, match="a trace 'quantity' is"):
        _trace_frame({**_TRACE, "quantity": [quantity]}, "frequency")


@pytest.mark.parametrize("kept", ["ECE_low", "ECE_high"])
def test_an_ece_interval_needs_both_ends(kept) -> None:
    """A row with one end of ECE's interval lacks the other (the interval is expected once either is there)."""
    from mlgp.comparison.resume import _expected_fields

    assert {"ECE_low", "ECE_high"} <= set(_expected_fields({kept: 0.1}, 6))
    assert not {"ECE_low", "ECE_high"} & set(_expected_fields({}, 6))
    assert not {"ECE_low", "ECE_high"} & set(_expected_fields({kept: 0.1, "proba_note": "none"}, 6))


def test_a_row_may_say_what_the_family_chose_as_text(good_file) -> None:
    from mlgp.comparison.resume import _Bad, _check_row

    row = dict(copy.deepcopy(good_file["row"]), chosen="kernel se (held-out LPD -1.000)")
    _check_row(row, "frequency", "LabelFrequency", 6)
    with pytest.raises(_Bad, match="row field 'chosen'"):
        _check_row(dict(row, chosen=3), "frequency", "LabelFrequency", 6)
