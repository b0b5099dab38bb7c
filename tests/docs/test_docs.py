"""The documentation runs: every ``{code-cell}`` of ``docs/notebooks/*.md`` is executed, and so
are the ```python examples of the pages in ``PAGES_RUN`` (README.md's quick start among them).

The notebooks are MyST-NB text notebooks (jupytext "md:myst" format). Their code cells are
extracted with a small parser (no jupytext needed, so this runs under the ``test`` extra alone)
and run in order in a fresh Python process with ``MPLBACKEND=Agg``, like a notebook kernel would:
a cell whose last statement is an expression prints its value. When jupytext is installed, the
parser is checked against it.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((REPO / "docs" / "notebooks").glob("*.md"))
#: Pages whose ```python examples are run as one script (the others' examples train for minutes).
PAGES_RUN = [REPO / "README.md", REPO / "docs" / "data_and_metrics.md", REPO / "docs" / "mllspc.md",
             REPO / "docs" / "q_families.md", REPO / "docs" / "fastxml.md", REPO / "docs" / "reliability.md"]

_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def code_cells(text: str) -> list[str]:
    """Sources of the ``{code-cell}`` blocks of a MyST-NB text notebook, in order.

    Cell options — a leading ``---`` YAML block or ``:key: value`` lines — are removed; cells
    tagged ``skip-execution`` are left out.
    """
    cells = []
    for match in _CELL.finditer(text):
        lines = match.group(1).split("\n")
        options: list[str] = []
        if lines and lines[0].strip() == "---":
            end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
            options, lines = lines[1:end], lines[end + 1:]
        else:
            while lines and re.match(r"^:[\w-]+:", lines[0]):
                options.append(lines.pop(0))
        if any("skip-execution" in o for o in options):
            continue
        cells.append("\n".join(lines).strip("\n"))
    return cells


_PYTHON_BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def python_blocks(text: str) -> list[str]:
    """Sources of the ```python blocks of a Markdown page, in order."""
    return [m.group(1).strip("\n") for m in _PYTHON_BLOCK.finditer(text)]


def test_notebooks_exist() -> None:
    assert NOTEBOOKS, "no notebooks under docs/notebooks"
    for path in NOTEBOOKS:
        assert code_cells(path.read_text(encoding="utf-8")), f"{path.name} has no code cells"


def test_parser_agrees_with_jupytext() -> None:
    import jupytext  # in the test extra
    for path in NOTEBOOKS:
        nb = jupytext.read(path)
        theirs = [c.source.strip("\n") for c in nb.cells if c.cell_type == "code"]
        assert code_cells(path.read_text(encoding="utf-8")) == theirs, path.name


def _run_cells(name: str, cells: list[str], data_home: Path, tmp_path: Path, monkeypatch) -> None:
    """Run the cells in order in one fresh namespace, as a kernel would, in this process (the
    libraries are imported once per test worker), in ``tmp_path`` with the data home set."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.setenv("MLGP_DATA", str(data_home))
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__main__"}
    try:
        for number, source in enumerate(cells, 1):
            tree = ast.parse(source, filename=f"<{name} cell {number}>")
            last = None
            if tree.body and isinstance(tree.body[-1], ast.Expr):
                last = ast.Expression(tree.body.pop().value)
            try:
                exec(compile(tree, f"<{name} cell {number}>", "exec"), namespace)
                if last is not None:
                    eval(compile(last, f"<{name} cell {number}>", "eval"), namespace)
            except Exception as exc:
                raise AssertionError(f"{name}, cell {number} failed: {type(exc).__name__}: {exc}\n{source}") from exc
    finally:
        plt.close("all")


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(notebook: Path, data_home: Path, tmp_path: Path, monkeypatch) -> None:
    _run_cells(notebook.name, code_cells(notebook.read_text(encoding="utf-8")), data_home, tmp_path, monkeypatch)


@pytest.mark.parametrize("page", PAGES_RUN, ids=[p.stem for p in PAGES_RUN])
def test_page_examples_run(page: Path, data_home: Path, tmp_path: Path, monkeypatch) -> None:
    blocks = python_blocks(page.read_text(encoding="utf-8"))
    assert blocks, f"{page.name} has no python examples"
    _run_cells(page.name, blocks, data_home, tmp_path, monkeypatch)


def test_sphinx_build_has_no_warnings(tmp_path: Path) -> None:
    """The HTML build is clean: Sphinx with -W (warnings are errors), --keep-going to list them all.

    Run in this process (the modules autodoc imports are loaded once per test worker). The docs'
    own build executes the notebooks (``nb_execution_mode = "cache"`` in docs/conf.py); here
    ``-D nb_execution_mode=off`` keeps them unexecuted, so the suite runs each notebook's code once,
    in ``test_notebook_runs``, and not a second time in a kernel."""
    if importlib.util.find_spec("sphinx") is None:
        pytest.skip("sphinx is not installed (it is in the test extra: pip install -e '.[test]')")
    import io
    from contextlib import redirect_stderr, redirect_stdout

    import matplotlib
    from sphinx.cmd.build import build_main

    matplotlib.use("Agg")
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        status = build_main(["-W", "--keep-going", "-b", "html", "-q", "-D", "nb_execution_mode=off",
                             str(REPO / "docs"), str(tmp_path / "html"), "-d", str(tmp_path / "doctrees")])
    warnings = [line for line in err.getvalue().splitlines() if "WARNING:" in line or "ERROR:" in line]
    assert status == 0, (
        f"sphinx -W failed (exit {status}) with {len(warnings)} warning(s):\n" + "\n".join(warnings)
        + f"\n\nstderr:\n{err.getvalue()[-5000:]}"
    )
    assert (tmp_path / "html" / "index.html").is_file()
    assert (tmp_path / "html" / "notebooks" / "mlgpf_intro.html").is_file()
