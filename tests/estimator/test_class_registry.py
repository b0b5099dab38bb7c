"""Tests of mlgp.estimator.registry: defining a subclass registers it by name, loading resolves a
file's class through it (a subclass's file loads as that subclass through any base), a taken name
is refused and redefining the same class replaces it; the floor imports no model family."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mlgp.baselines.fastxml
from mlgp.baselines import LSPC, MLLSPC, MLLSPCCV, FastXML, LabelFrequency, MLkNN, PfastreXML, PfastXML
from mlgp.errors import ArgumentError, DataFormatError
from mlgp.estimator import MultiLabelEstimator, register, registered, resolve


def test_every_baseline_is_registered_by_name() -> None:
    for cls in (LabelFrequency, LSPC, MLLSPC, MLLSPCCV, MLkNN, FastXML, PfastXML, PfastreXML):
        assert resolve(cls.__name__) is cls and registered()[cls.__name__] is cls
    assert resolve("NoSuchEstimator") is None and "MultiLabelEstimator" not in registered()


def test_a_new_subclass_is_registered_when_defined(tmp_path) -> None:
    class RegistryProbe(LabelFrequency):
        pass

    assert resolve("RegistryProbe") is RegistryProbe
    est = RegistryProbe().fit(np.zeros((3, 1)), np.eye(3, 2, dtype=int))
    path = est.save(tmp_path / "probe")
    for base in (RegistryProbe, LabelFrequency, MultiLabelEstimator):
        assert type(base.load(path)) is RegistryProbe
    with pytest.raises(DataFormatError, match="holds a RegistryProbe, not a FastXML"):
        FastXML.load(path)


def test_fastxml_load_resolves_subclasses_without_importing_them(fitted, tmp_path) -> None:
    """FastXML.load of a PfastreXML file returns a PfastreXML; PfastXML.load of a FastXML file
    raises; mlgp.baselines.fastxml does not import mlgp.baselines.pfastxml."""
    path = fitted("PfastreXML").save(tmp_path / "re.npz")
    assert type(FastXML.load(path)) is PfastreXML
    plain = fitted("FastXML").save(tmp_path / "plain.npz")
    with pytest.raises(DataFormatError, match="plain.npz: holds a FastXML, not a PfastXML"):
        PfastXML.load(plain)
    assert FastXML.load.__func__ is MultiLabelEstimator.load.__func__  # one load, on the base
    source = Path(mlgp.baselines.fastxml.__file__).read_text()
    imported = {n.module for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ImportFrom)}
    assert not any("pfastxml" in (m or "") for m in imported)


def test_a_taken_name_makes_files_of_that_name_refused_and_a_redefinition_replaces(tmp_path, monkeypatch) -> None:
    import mlgp.estimator.registry as registry

    monkeypatch.setattr(registry, "_CLASSES", dict(registry._CLASSES))  # this test's own registry
    monkeypatch.setattr(registry, "_AMBIGUOUS", {})
    path = FastXML(n_estimators=1, random_state=0).fit(np.eye(4), np.eye(4, 2, dtype=int)).save(tmp_path / "f")
    mine = type("FastXML", (FastXML,), {"__module__": "somewhere.else"})  # defining it is allowed
    assert isinstance(mine(n_estimators=1), FastXML)
    with pytest.raises(TypeError, match=r"several estimator classes are named 'FastXML' \(mlgp\.baselines"):
        resolve("FastXML")
    with pytest.raises(ArgumentError, match="several estimator classes are named 'FastXML'"):
        FastXML.load(path)

    def define():
        class Redefined(MultiLabelEstimator):
            pass
        return Redefined

    first, second = define(), define()
    assert first is not second and resolve("Redefined") is second
    assert register(second) is second


def test_a_class_that_is_not_the_registered_one_cannot_be_saved(tmp_path) -> None:
    class Shadow(LabelFrequency):
        pass

    shadow = Shadow().fit(np.zeros((3, 1)), np.eye(3, 2, dtype=int))

    class Shadow(LabelFrequency):  # noqa: F811 - the same qualified name: replaces the first in the registry
        pass

    with pytest.raises(ArgumentError, match="is not the estimator class registered as 'Shadow'"):
        shadow.save(tmp_path / "s")


def test_the_floor_imports_no_tensorflow_and_no_family() -> None:
    code = ("import sys, mlgp.estimator; print(sorted({m.split('.')[0] for m in sys.modules "
            "if m.split('.')[0] in ('tensorflow', 'gpflow')} | {m for m in sys.modules if m.startswith('mlgp.') "
            "and m.split('.')[1] in ('baselines', 'geneml', 'models', 'kernels', 'training', 'inducing')}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]", out.stdout[:500]
