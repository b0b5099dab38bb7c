"""Lists of families kept outside the family table (:mod:`tests._family_settings`) must still name
every family: an eleventh family would otherwise be skipped silently by the floor's save/load and
fuzz tests (``tests/estimator/_small.py``) and by the saved-files check across versions
(``experiments/_saved_models.py``)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import mlgp.baselines as baselines
from mlgp.families import FAMILIES

REPO = Path(__file__).resolve().parents[1]


def test_the_floors_small_estimators_cover_every_baseline_class() -> None:
    sys.path.insert(0, str(REPO / "tests" / "estimator"))
    try:
        from _small import SMALL
    finally:
        sys.path.remove(str(REPO / "tests" / "estimator"))
    classes = {name for name in baselines.__all__ if isinstance(getattr(baselines, name), type)}
    assert classes - set(SMALL) == set(), f"tests/estimator/_small.py SMALL lacks {sorted(classes - set(SMALL))}"


def test_the_saved_models_check_covers_every_family() -> None:
    spec = importlib.util.spec_from_file_location("_saved_models_cases", REPO / "experiments" / "_saved_models.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    covered = {family for family, _ in module.CASES.values()}
    assert set(FAMILIES) - covered == set(), f"experiments/_saved_models.py CASES lacks {sorted(set(FAMILIES) - covered)}"
