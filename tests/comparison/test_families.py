"""The family registry (:mod:`mlgp.families`): what each family's ``fit`` takes is declared, not
inspected; the one budget reaches every family that has one; a subclass belongs to its family."""

from __future__ import annotations

import dataclasses
import inspect
import re
import subprocess
import sys

import numpy as np
import pytest

from _family_settings import SETTINGS
from mlgp.baselines import FastXML, LabelFrequency, PfastXML
from mlgp.errors import ArgumentError
from mlgp.families import (FAMILIES, Family, family, family_of, fit_arguments, make_estimator, parse_assignment,
                           parse_value, uses_tensorflow)
from mlgp.geneml import GenEML


def test_the_tests_family_table_names_every_family_and_no_other() -> None:
    """``tests/_family_settings.py`` has one entry per family of ``FAMILIES``, in its order: a new
    family without small settings (so left out of the tests that go through every family) fails
    here, and so does an entry naming no family."""
    missing = [name for name in FAMILIES if name not in SETTINGS]
    unknown = [name for name in SETTINGS if name not in FAMILIES]
    assert not missing, f"no entry in tests/_family_settings.py for the families {missing}"
    assert not unknown, f"tests/_family_settings.py names {unknown}, not families of mlgp.families.FAMILIES"
    assert list(SETTINGS) == list(FAMILIES)


@pytest.mark.parametrize("name", list(FAMILIES))
def test_every_family_loads_its_class_and_declares_what_fit_takes(name) -> None:
    """The declaration agrees with each class: ``validation`` / ``progress`` are ``fit`` arguments
    where declared so, ``progress`` a parameter where declared so, ``max_seconds`` a parameter of
    exactly the families with a budget (as the test table expects: all but frequency, whose fit is
    one pass of counting)."""
    f = FAMILIES[name]
    cls = f.estimator_class
    fit = inspect.signature(cls.fit).parameters
    params = f.parameters()
    assert ("validation" in fit) == f.validation, name
    assert ("progress" in fit) == (f.progress == "fit"), name
    assert ("progress" in params) == (f.progress == "parameter"), name
    assert ("max_seconds" in params) == f.budget, name
    assert f.seed is None or f.seed in params, name
    assert f.budget == SETTINGS[name].budget, name


def test_fit_arguments_follow_the_declaration() -> None:
    est = make_estimator("geneml", {"n_components": 2})
    assert fit_arguments(est, True, validation=("X", "Y")) == {"validation": ("X", "Y")} and est.progress is True
    assert fit_arguments(FastXML(), True, validation=("X", "Y")) == {"progress": True}
    assert fit_arguments(LabelFrequency(), True, validation=("X", "Y")) == {}


def test_the_budget_and_the_seed_reach_their_parameters_and_set_values_win() -> None:
    assert make_estimator("fastxml", budget=7.5, seed=3).get_params()["max_seconds"] == 7.5
    assert make_estimator("fastxml", budget=7.5, seed=3).random_state == 3
    clf = make_estimator("mlgpf", {"epochs": 2, "seed": 9}, seed=3, budget=5.0)
    assert (clf.epochs, clf.seed, clf.max_seconds) == (2, 9, 5.0)
    assert make_estimator("mlgpf", seed=3, budget=5.0).epochs == 100000
    plain = make_estimator("mlgpf", seed=3)  # no budget: neither max_seconds nor the budget's epochs
    assert plain.epochs == type(plain)().epochs != 100000 and plain.max_seconds is None
    for name in FAMILIES:  # every family with a budget, and none other
        if SETTINGS[name].budget:
            assert make_estimator(name, budget=5.0).get_params()["max_seconds"] == 5.0, name
            assert make_estimator(name, {"max_seconds": 2.0}, budget=5.0).max_seconds == 2.0, name
        else:
            assert "max_seconds" not in make_estimator(name, budget=5.0).get_params(), name
    with pytest.raises(ArgumentError, match="fastxml: unknown parameter.*'epochs'"):
        make_estimator("fastxml", {"epochs": 2})


def test_a_subclass_is_of_its_nearest_family() -> None:
    class Mine(FastXML):
        pass

    assert family_of(Mine()).name == "fastxml" and family_of(PfastXML()).name == "pfastxml"
    with pytest.raises(ArgumentError, match="str is not one of the families"):
        family_of("FastXML")


def test_tensorflow_as_declared() -> None:
    assert uses_tensorflow(GenEML(inference="gibbs")) and not uses_tensorflow(GenEML())
    assert uses_tensorflow(make_estimator("mlgpf")) and not uses_tensorflow(FastXML())


def test_the_registry_imports_no_tensorflow() -> None:
    code = ("import sys, mlgp.families as f; f.make_estimator('fastxml'); f.make_estimator('geneml'); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('tensorflow', 'gpflow')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr[-500:]


# ------------------------------------------------------------------ what the registry pins --
def test_a_family_is_frozen() -> None:
    """A :class:`Family` cannot be changed in place (the registry is shared by every caller)."""
    f = FAMILIES["fastxml"]
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'budget'"):
        f.budget = False
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'name'"):
        f.name = "other"
    assert f.budget is True and f.name == "fastxml"


def test_a_family_declared_with_nothing_has_the_plain_defaults() -> None:
    """``Family(name, load)``: seeded by ``random_state``, no budget, no changes to the defaults, no
    validation, no progress bar, no TensorFlow."""
    f = Family("x", lambda: LabelFrequency)
    assert (f.seed, f.budget, f.defaults, f.budget_defaults, f.validation, f.progress, f.tensorflow) == \
        ("random_state", False, {}, {}, False, None, False)
    assert f.estimator_class is LabelFrequency


def test_parameters_are_the_constructor_parameters_in_order() -> None:
    """``parameters()``: the full list of the constructor's parameters (``self`` left out), in the
    signature's order; as a set, exactly the keys of ``get_params``."""
    assert FAMILIES["frequency"].parameters() == ["smoothing", "threshold"]
    assert FAMILIES["lspc"].parameters() == ["kernel_width", "n_basis", "alpha", "prior_weight", "threshold",
                                             "random_state", "calibration", "max_seconds"]
    for name in FAMILIES:
        f = FAMILIES[name]
        params = f.parameters()
        assert "self" not in params and len(params) == len(set(params)), name
        assert set(params) == set(f.estimator_class().get_params()), name


def test_the_command_lines_defaults() -> None:
    """Trees run on every core (``n_jobs=-1``, the class's own default being None); GenEML and the
    rest keep the class's defaults (GenEML's preprocessing chosen from the features, rank 100); only
    MLGPF changes its defaults under a budget (the test table's ``defaults`` / ``budget_defaults``)."""
    for name, f in FAMILIES.items():
        expected = SETTINGS[name]
        assert (f.defaults, f.budget_defaults) == (expected.defaults, expected.budget_defaults), name
        own = f.estimator_class().get_params()
        assert all(own[key] != value for key, value in f.defaults.items()), name  # each default a change
        assert make_estimator(name).get_params() == {**own, **f.defaults}, name
    assert make_estimator("fastxml").n_jobs == -1 and FAMILIES["fastxml"].estimator_class().n_jobs is None
    est = make_estimator("geneml")
    assert (est.preprocessing, est.normalize_rows, est.n_components) == ("auto", None, 100)
    assert make_estimator("geneml", {"normalize_rows": False, "n_components": 3}).n_components == 3


def test_no_budget_and_no_seed_leave_the_defaults() -> None:
    """Without ``budget``, ``max_seconds`` keeps the class's default; a seed is dropped by a
    family that takes none (no error), and without one the class's seed is kept."""
    assert make_estimator("fastxml").max_seconds is None and make_estimator("fastxml").random_state is None
    assert make_estimator("geneml").max_seconds is None
    assert make_estimator("frequency", seed=3, budget=5.0).get_params() == LabelFrequency().get_params()
    assert make_estimator("mlknn", seed=3).get_params() == make_estimator("mlknn").get_params()


def test_seed_and_budget_are_keyword_only() -> None:
    """``make_estimator(name, changes, *, seed, budget)``: ``changes`` by name or position, the
    seed and the budget by name only (a positional number is refused, not taken as a seed)."""
    assert make_estimator("fastxml", changes={"n_estimators": 3}).n_estimators == 3
    assert make_estimator(name="fastxml", changes={"n_estimators": 4}, seed=1).random_state == 1
    with pytest.raises(TypeError, match=r"make_estimator\(\) takes from 1 to 2 positional arguments but 3 were given"):
        make_estimator("fastxml", {}, 3)


def test_a_value_outside_the_constraints_is_an_argument_error_naming_the_family() -> None:
    with pytest.raises(ArgumentError, match=r"^fastxml: The 'n_estimators' parameter of FastXML must be an int"):
        make_estimator("fastxml", {"n_estimators": -1})
    with pytest.raises(ArgumentError, match=r"^frequency: unknown parameter\(s\) 'abc', 'bogus', 'c', 'd', 'e'; "
                                            r"LabelFrequency takes smoothing, threshold$"):
        make_estimator("frequency", {"e": 0, "bogus": 1, "d": 0, "abc": 2, "c": 0})  # named sorted


def test_family_by_name() -> None:
    assert family("geneml") is FAMILIES["geneml"]
    assert all(name == f.name for name, f in FAMILIES.items())
    every = re.escape(", ".join(SETTINGS))
    with pytest.raises(ArgumentError, match=f"^unknown family 'nope'; the families are {every}$"):
        family("nope")


def test_geneml_uses_tensorflow_only_for_gibbs_as_set_when_asked() -> None:
    """GenEML's declaration is a function of the estimator: its ``inference`` when asked (changed
    after construction too), ``gibbs`` only; the answer is a bool."""
    est = GenEML(inference="online-em")
    assert uses_tensorflow(est) is False
    assert uses_tensorflow(GenEML(inference="em")) is False
    est.set_params(inference="gibbs")
    assert uses_tensorflow(est) is True
    assert uses_tensorflow(make_estimator("geneml", {"inference": "gibbs"})) is True
    assert uses_tensorflow(GenEML(inference="".join(["gib", "bs"]))) is True  # compared by value, not identity
    for name, f in FAMILIES.items():  # the others: True or False, as the test table expects
        expected = SETTINGS[name].tensorflow
        assert callable(f.tensorflow) if expected is None else f.tensorflow is expected, name
    assert FAMILIES["mlgpf"].tensorflow is True and callable(FAMILIES["geneml"].tensorflow)


@pytest.mark.parametrize("text, value", [
    ("TRUE", True), (" false ", False), ("True", True), ("tRuE", True), ("\tFalse\n", False), ("true", True),
    ("None", None), ("  none ", None), ("NULL", None), ("null", None),
    ("10", 10), (" 0.5 ", 0.5), (" \n 7 ", 7), ("\v8", 8), ("-3", -3), ("(1, 2)", (1, 2)), ("[0.1, 1]", [0.1, 1]),
    ("'x'", "x"),
    ("abc", "abc"), (" abc ", " abc "), ("", ""), ("x=1", "x=1"), ("1 +", "1 +"), ("yes", "yes")])
def test_parse_value(text, value) -> None:
    """``true``/``false``/``none``/``null`` in any case and with surrounding blanks; Python literals
    (stripped); anything else is the text itself, unstripped."""
    parsed = parse_value(text)
    assert parsed == value and type(parsed) is type(value)


def test_parse_assignment() -> None:
    """``NAME=VALUE`` split at the first ``=``, the name stripped; no ``=`` or no name refused."""
    assert parse_assignment(" n_jobs = 2 ") == ("n_jobs", 2)
    assert parse_assignment("a=b=c") == ("a", "b=c")
    assert parse_assignment("x=") == ("x", "")
    for bad in ("n_jobs", "=3", "  =3", ""):
        with pytest.raises(ArgumentError, match="--set takes NAME=VALUE, got "):
            parse_assignment(bad)


def test_load_model_in_a_fresh_process(tmp_path) -> None:
    """:func:`load_model` registers every family's class itself: a new process that imports only
    ``mlgp.families`` reads a saved model and predicts what this process does."""
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.5, 0.0]])
    Y = np.array([[1, 0, 1], [0, 1, 0], [1, 1, 0], [1, 0, 0]])
    est = make_estimator("frequency", {"smoothing": 0.5}).fit(X, Y)
    est.save(tmp_path / "m.npz")
    code = ("import sys, numpy as np; from mlgp.families import load_model; "
            f"m = load_model({str(tmp_path / 'm.npz')!r}); "
            "print(type(m).__name__, np.round(m.predict_proba(np.ones((1, 2))), 6).tolist())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-800:]
    expected = np.round(est.predict_proba(np.ones((1, 2))), 6).tolist()
    assert out.stdout.strip() == f"LabelFrequency {expected}"
