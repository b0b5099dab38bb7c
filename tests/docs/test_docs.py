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
import configparser
import importlib.metadata
import importlib.util
import re
import sys
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


def _requirements(extra: str) -> list:
    """``setup.cfg``'s ``install_requires`` and its extra ``extra``, as ``packaging`` requirements
    (what ``pip install -e ".[extra]"`` asks for)."""
    from packaging.requirements import Requirement

    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg", encoding="utf-8")
    text = cfg["options"]["install_requires"] + "\n" + cfg["options.extras_require"][extra]
    lines = (line.strip() for line in text.splitlines())
    return [Requirement(line) for line in lines if line and not line.startswith("#")]


def _installed_by(requirements: list) -> set[str]:
    """The normalised names of the distributions that installing ``requirements`` installs: each,
    with its extras, and what it requires in turn (read from the installed distributions' metadata)."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    seen: set[tuple[str, frozenset]] = set()
    todo = list(requirements)
    while todo:
        req = todo.pop()
        key = (canonicalize_name(req.name), frozenset(req.extras))
        if key in seen:
            continue
        seen.add(key)
        try:
            needs = importlib.metadata.requires(req.name) or []
        except importlib.metadata.PackageNotFoundError:
            continue  # not installed here: its own requirements are unknown
        for text in needs:
            need = Requirement(text)
            if need.marker is None or any(need.marker.evaluate({"extra": e}) for e in {"", *req.extras}):
                todo.append(need)
    return {name for name, _ in seen}


def _imported_modules(source: str) -> set[str]:
    """The absolute module names that ``source`` imports."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module)
    return names


def _docs_imports() -> dict[str, set[str]]:
    """Every module the documentation imports, with the files importing it: the code cells of the
    notebooks, the ```python examples of every page, and docs/conf.py with its Sphinx extensions."""
    found: dict[str, set[str]] = {}
    for page in sorted(p for p in (REPO / "docs").rglob("*.md") if "_build" not in p.parts):
        text = page.read_text(encoding="utf-8")
        for source in code_cells(text) + python_blocks(text):
            for name in _imported_modules(source):
                found.setdefault(name, set()).add(page.name)
    conf = (REPO / "docs" / "conf.py").read_text(encoding="utf-8")
    extensions = next(ast.literal_eval(node.value) for node in ast.parse(conf).body if isinstance(node, ast.Assign)
                      and any(getattr(t, "id", None) == "extensions" for t in node.targets))
    for name in _imported_modules(conf) | set(extensions):
        found.setdefault(name, set()).add("conf.py")
    return found


def _distributions_of(module: str, owners: dict[str, list[str]]) -> set[str]:
    """The distributions that importing ``module`` needs: the one providing its top-level package,
    and for a submodule named after a distribution that the package requires only through an extra
    (``dask.distributed`` imports ``distributed``, in ``dask[distributed]``), that one too."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    top, *rest = module.split(".")
    dists = {canonicalize_name(d) for d in owners.get(top, [])}
    if rest and rest[0] in owners:
        for dist in list(dists):
            optional = {canonicalize_name(Requirement(r).name) for r in importlib.metadata.requires(dist) or []
                        if "extra" in str(Requirement(r).marker or "")}
            dists |= optional & {canonicalize_name(d) for d in owners[rest[0]]}
    return dists


def test_docs_extra_installs_every_import_of_the_docs() -> None:
    """``pip install -e ".[docs]"`` then Sphinx (README's documentation command) runs every
    notebook: each third-party module that a notebook, a page's example or docs/conf.py imports
    comes from a distribution the ``docs`` extra (with ``install_requires``) installs."""
    from packaging.utils import canonicalize_name

    installed = _installed_by(_requirements("docs")) | {canonicalize_name("mlgp")}
    owners = importlib.metadata.packages_distributions()
    missing = []
    for module, pages in sorted(_docs_imports().items()):
        if module.split(".")[0] in sys.stdlib_module_names:
            continue
        dists = _distributions_of(module, owners)
        if not dists or dists - installed:
            missing.append(f"{module} ({', '.join(sorted(dists - installed)) or 'no installed distribution'}; "
                           f"imported by {', '.join(sorted(pages))})")
    assert not missing, "the docs extra of setup.cfg does not install: " + "; ".join(missing)


def test_installed_by_follows_extras() -> None:
    from packaging.requirements import Requirement

    assert "distributed" in _installed_by([Requirement("dask[distributed]")])
    assert "distributed" not in _installed_by([Requirement("dask")])
    owners = importlib.metadata.packages_distributions()
    assert _distributions_of("dask.distributed", owners) == {"dask", "distributed"}
    assert _distributions_of("sklearn.preprocessing", owners) == {"scikit-learn"}


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


@pytest.mark.slow
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(notebook: Path, data_home: Path, tmp_path: Path, monkeypatch) -> None:
    _run_cells(notebook.name, code_cells(notebook.read_text(encoding="utf-8")), data_home, tmp_path, monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES_RUN, ids=[p.stem for p in PAGES_RUN])
def test_page_examples_run(page: Path, data_home: Path, tmp_path: Path, monkeypatch) -> None:
    blocks = python_blocks(page.read_text(encoding="utf-8"))
    assert blocks, f"{page.name} has no python examples"
    _run_cells(page.name, blocks, data_home, tmp_path, monkeypatch)


@pytest.mark.slow
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


#: words of a quantity measured in time, which a notebook may print but never assert on
_TIMING = re.compile(r"second|\bs per\b|elapsed|time|speedup|ms\b", re.IGNORECASE)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebooks_assert_no_timings(notebook: Path) -> None:
    """A page built on a busy machine must not fail on how long something took: timings are printed,
    and measured ratios stated in prose from the results folders."""
    asserts = [line.strip() for cell in code_cells(notebook.read_text()) for line in cell.splitlines()
               if line.strip().startswith("assert") and _TIMING.search(line)]
    assert asserts == [], asserts


def test_a_relative_data_home_is_taken_from_where_the_build_starts(tmp_path: Path) -> None:
    """README's documentation command gives ``MLGP_DATA=../shared/data``; the notebooks run in their
    own folders, so ``docs/conf.py`` makes the path absolute from the build's starting folder."""
    import os
    import subprocess

    code = ("import os, runpy; runpy.run_path(os.environ['CONF']); print(os.environ['MLGP_DATA'])")
    env = {**os.environ, "MLGP_DATA": "../shared/data", "CONF": str(REPO / "docs" / "conf.py"), "PWD": str(tmp_path)}
    # Sphinx reads conf.py from inside docs/, while the shell that started the build was elsewhere ($PWD)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd=REPO / "docs", timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == os.path.abspath(tmp_path / "../shared/data"), proc.stdout
