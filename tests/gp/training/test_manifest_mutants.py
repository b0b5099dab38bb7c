"""Gaps found by mutation testing of :mod:`mlgp.training.manifest`, on hand-made records (no model
is trained): the recorded settings, the words of a variable difference, the format check of
:func:`manifest_problem` and :func:`mismatch`, and a spec-only difference on equal (not identical)
data."""

from __future__ import annotations

import copy
import json

import pytest

from mlgp.training.manifest import FORMAT, manifest_problem, mismatch, training_settings


def _settings(**changes) -> dict:
    args = dict(batch_size=8, negatives=2, learning_rate=0.01, optimizer="adam", natgrad_gamma=0.1, seed=0,
                batch_growth=None)
    args.update(changes)
    return training_settings(**args)


def _var(name: str, shape=(3,), dtype: str = "float64") -> dict:
    return {"name": name, "shape": list(shape), "dtype": dtype}


def _record(variables=None, spec=None) -> dict:
    return {"format": FORMAT,
            "model": {"class": "m.Model", "variables": variables or [_var("a"), _var("b")], "spec": spec or {"k": 2}},
            "data": {"N": 10, "D": 3, "K": 4, "nnz_X": 5, "nnz_Y": 6, "fingerprint": "abcdef0123456789"},
            "settings": _settings()}


def _parsed(record: dict) -> dict:
    """As read back from the manifest file: equal, no object shared."""
    return json.loads(json.dumps(record))


@pytest.mark.parametrize("optimizer, name", [(None, "adam"), ("adam", "adam"), ("sgd", "sgd"), ("natgrad", "natgrad")])
def test_the_optimizer_name_is_recorded_with_adam_for_none(optimizer, name) -> None:
    assert _settings(optimizer=optimizer)["optimizer"] == name


@pytest.mark.parametrize("kl_weight, recorded", [(1.0, False), (1, False), (2.0, True), (0.5, True)])
def test_kl_weight_is_recorded_exactly_when_it_is_not_one(kl_weight, recorded) -> None:
    settings = _settings(kl_weight=kl_weight)
    assert ("kl_weight" in settings) == recorded and settings.get("kl_weight", kl_weight) == kl_weight


@pytest.mark.parametrize("position", [0, 1])
def test_a_renamed_variable_is_counted_from_one(position) -> None:
    saved, now = _parsed(_record()), _record()
    now["model"]["variables"][position] = _var("renamed")
    old = "ab"[position]
    assert (f"variable {position + 1} is {old} (3,) there, renamed (3,) now"
            in mismatch(saved, now))


@pytest.mark.parametrize("there, now_dtype", [("float32", "float64"), ("float64", "float32")])
def test_a_dtype_difference_is_found_in_either_direction(there, now_dtype) -> None:
    saved, now = _record([_var("a", dtype=there)]), _record([_var("a", dtype=now_dtype)])
    assert f"a is {there} there, {now_dtype} now" in mismatch(_parsed(saved), now)


def test_more_variables_now_name_the_first_unmatched_one_of_now() -> None:
    saved, now = _record([_var("a")]), _record([_var("a"), _var("b", (5,))])
    assert "1 variables there, 2 now (first unmatched: b (5,))" in mismatch(_parsed(saved), now)
    assert "2 variables there, 1 now (first unmatched: b (5,))" in mismatch(_parsed(now), saved)


@pytest.mark.parametrize("fmt", ["mlgp.checkpoint/0", "mlgp.checkpoint/2", "another/1"])
def test_another_format_needs_only_be_an_object_and_mismatch_names_it(fmt) -> None:
    saved = {"format": fmt, "model": 3}
    assert manifest_problem(saved) is None
    assert mismatch(saved, _record()) == f"the manifest has format {fmt!r}, not {FORMAT!r}"


def test_a_manifest_of_this_format_is_checked_even_when_its_tag_is_the_same_object() -> None:
    assert "'model' must be an object" in manifest_problem({"format": FORMAT, "model": 3})
    assert "'model' must be an object" in manifest_problem(_parsed({"format": FORMAT, "model": 3}))


def test_a_spec_difference_on_equal_data_is_another_model() -> None:
    """The data read back equal, not the same object: the spec difference says another model."""
    saved, now = _parsed(_record(spec={"k": 2})), _record(spec={"k": 3})
    assert saved["data"] == now["data"] and saved["data"] is not now["data"]
    assert mismatch(saved, now) == "the checkpoints were written for another model (k: 2 there, 3 now)"
    assert mismatch(_parsed(now), copy.deepcopy(now)) is None
