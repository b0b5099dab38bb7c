"""The family registry (:mod:`mlgp.families`): what each family's ``fit`` takes is declared, not
inspected; the one budget reaches every family that has one; a subclass belongs to its family."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

from mlgp.baselines import FastXML, LabelFrequency, PfastXML
from mlgp.errors import ArgumentError
from mlgp.families import FAMILIES, family_of, fit_arguments, make_estimator, uses_tensorflow
from mlgp.geneml import GenEML


def test_every_family_loads_its_class_and_declares_what_fit_takes() -> None:
    """The declaration agrees with each class: ``validation`` / ``progress`` are ``fit`` arguments
    where declared so, ``progress`` a parameter where declared so, ``max_seconds`` a parameter of
    exactly the families with a budget."""
    for name, f in FAMILIES.items():
        cls = f.estimator_class
        fit = inspect.signature(cls.fit).parameters
        params = f.parameters()
        assert ("validation" in fit) == f.validation, name
        assert ("progress" in fit) == (f.progress == "fit"), name
        assert ("progress" in params) == (f.progress == "parameter"), name
        assert ("max_seconds" in params) == f.budget, name
        assert f.seed is None or f.seed in params, name
    assert {n for n, f in FAMILIES.items() if f.budget} == {"fastxml", "pfastxml", "pfastrexml", "geneml", "mlgpf"}


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
    assert "max_seconds" not in make_estimator("lspc", budget=5.0).get_params()
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
