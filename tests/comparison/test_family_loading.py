"""One registry of estimators (:data:`mlgp.families.FAMILIES`): a saved model names its class, and
:func:`mlgp.families.load_model` imports only the family that defines it (through the table
:func:`mlgp.families.saved_classes` derived from the families), not every family."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import mlgp.families as families
from mlgp.baselines import LabelFrequency

X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.5, 0.0]])
Y = np.array([[1, 0, 1], [0, 1, 0], [1, 1, 0], [1, 0, 0]])


@pytest.fixture
def loaded(monkeypatch) -> list[str]:
    """The names of the families whose ``load`` (their module's import) was called, in order."""
    called: list[str] = []

    def recording(f):
        def load():
            called.append(f.name)
            return f.load()
        return dataclasses.replace(f, load=load)

    monkeypatch.setattr(families, "FAMILIES", {name: recording(f) for name, f in families.FAMILIES.items()})
    monkeypatch.setattr(families, "_BY_CLASS", {})  # the classes' families as this test finds them
    return called


@pytest.mark.parametrize("estimator, name", [(LabelFrequency(), "frequency"), (None, "geneml")])
def test_loading_a_saved_model_imports_only_its_family(tmp_path, loaded, estimator, name) -> None:
    if estimator is None:
        from mlgp.geneml import GenEML

        estimator = GenEML(n_components=2, max_iter=2, calibration=None)
    path = estimator.fit(X, Y).save(tmp_path / "model")
    model = families.load_model(path)
    assert type(model) is type(estimator) and loaded == [name]
    np.testing.assert_array_equal(model.predict_proba(X), estimator.predict_proba(X))


def test_a_subclass_finds_its_family_by_name_without_importing_the_others(loaded) -> None:
    class Mine(LabelFrequency):
        pass

    assert families.family_of(Mine()).name == "frequency" and loaded == ["frequency"]


def test_the_table_is_derived_from_the_families_and_complete() -> None:
    """Each family names its own class first; every estimator class the families' modules define
    (a class registered on the floor outside ``mlgp.estimator``) is in the table, under the family
    that defines it."""
    from mlgp.estimator import registered

    table = families.saved_classes()
    for name, f in families.FAMILIES.items():
        assert f.class_names and f.class_names[0] == f.estimator_class.__name__, name
        assert all(table[c] is f for c in f.class_names), name
    defined = {n for n, cls in registered().items()
               if cls.__module__.startswith("mlgp.") and not cls.__module__.startswith("mlgp.estimator")}
    assert defined == set(table)


def test_the_class_name_is_read_from_the_header_alone(tmp_path) -> None:
    """:func:`saved_class_name` reads only ``__header__``: a file whose arrays are damaged still
    names its class (loading it then says what is wrong); no file, or not a saved estimator: None."""
    import zipfile

    from mlgp.estimator.persistence import saved_class_name

    path = LabelFrequency().fit(X, Y).save(tmp_path / "m")
    with zipfile.ZipFile(path) as archive:
        members = {i.filename: archive.read(i) for i in archive.infolist()}
    with zipfile.ZipFile(tmp_path / "damaged.npz", "w") as archive:
        for member, data in members.items():
            archive.writestr(member, data if member == "__header__.npy" else b"not an array")
    assert saved_class_name(path) == saved_class_name(tmp_path / "damaged.npz") == "LabelFrequency"
    assert saved_class_name(tmp_path / "m") == "LabelFrequency"  # .npz appended, as load does
    (tmp_path / "text.npz").write_text("no zip")
    assert saved_class_name(tmp_path / "missing.npz") is None and saved_class_name(tmp_path / "text.npz") is None
