"""The modules of :mod:`mlgp.comparison` meet through public names: none imports another's private
(``_``) name, and :mod:`mlgp.comparison.run` re-exports nothing it does not use (``QUIET`` is gone,
``MAX_TRACE_STEPS`` lives in :mod:`mlgp.comparison.traces`)."""

from __future__ import annotations

import ast
from pathlib import Path

import mlgp.comparison

FOLDER = Path(mlgp.comparison.__file__).parent


def test_no_module_imports_a_private_name_of_another() -> None:
    private = []
    for path in sorted(FOLDER.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                private += [f"{path.name}: from .{node.module} import {a.name}" for a in node.names
                            if a.name.startswith("_") and not a.name.startswith("__")]
    assert private == []


def test_run_holds_no_stray_re_exports() -> None:
    import mlgp.comparison.isolation as isolation
    import mlgp.comparison.run as run

    assert not hasattr(run, "QUIET") and not hasattr(run, "MAX_TRACE_STEPS") and not hasattr(isolation, "QUIET")
    assert set(run.__all__) <= set(dir(run))
