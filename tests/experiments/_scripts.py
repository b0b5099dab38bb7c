"""Importing one script of ``experiments/`` as a module, for the tests of its functions."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"


def load_script(stem: str) -> ModuleType:
    """``experiments/<stem>.py`` executed as a module named ``_script_<stem>`` (not registered in
    ``sys.modules``)."""
    spec = importlib.util.spec_from_file_location(f"_script_{stem}", EXPERIMENTS / f"{stem}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
