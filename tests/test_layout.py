"""The package's rooms: which parts may import which, and what importing the light parts costs.

The model families (the GP modules, ``geneml``, ``baselines``) never import one another; they meet
only in the shared floor (``errors``, ``validation``, ``floats``, ``blocks``, ``files``, ``fingerprint``, ``estimator``,
``data``, ``scores``, ``metrics``, ``parallel``), which imports no family and no TensorFlow (the package root's
lazy ``mlgp.compare`` is the one named exception); ``recipes``, ``comparison``, ``cli`` and
``experiment`` may combine anything, and ``families`` (the registry of every family by name) and
``comparison`` stand above every family: they import them by drawn imports, never by strings. No two modules import each other, directly or in a
circle, counting imports inside functions.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "mlgp"

GP = {"kernels", "inducing", "likelihoods", "variational", "models", "training"}
FAMILIES = {"gp": GP, "geneml": {"geneml"}, "baselines": {"baselines"}}
FLOOR = {"data", "scores", "metrics", "validation", "arguments", "errors", "floats", "blocks", "files", "fingerprint",
         "estimator", "quiet", "parallel", "lazy", "__init__"}
COMBINERS = {"recipes", "cli", "experiment", "comparison", "families"}
#: The one import up from the floor that is allowed: the package root's lazy ``mlgp.compare``
#: (a module ``__getattr__``, so ``import mlgp`` still imports no family).
LAZY_ROOT = {("mlgp/__init__.py", "__init__", "comparison")}


def _room(module: str) -> str:
    """``mlgp.models.mlgpf`` → ``models``; ``mlgp`` → ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: Path) -> set[str]:
    """Every ``mlgp`` module that the file imports (relative imports resolved), anywhere in it."""
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    package = parts[:-1] if parts[-1] != "__init__" else parts[:-1]
    if parts[-1] == "__init__":
        package = parts[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "mlgp"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            if name.split(".")[0] == "mlgp":
                if node.module is None or name == "mlgp":
                    out |= {f"{name}.{a.name}" for a in node.names}
                else:
                    out.add(name)
    return out


def _edges() -> list[tuple[str, str, str]]:
    """(file, its room, imported room) for every import between rooms."""
    edges = []
    for path in sorted(PACKAGE.rglob("*.py")):
        src = _room(".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts))
        for module in _imports(path):
            dst = _room(module)
            if dst != src:
                edges.append((str(path.relative_to(PACKAGE.parent)), src, dst))
    return edges


def _family(room: str) -> str | None:
    return next((name for name, rooms in FAMILIES.items() if room in rooms), None)


def test_every_room_is_classified():
    rooms = {_room(".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts)) for p in PACKAGE.rglob("*.py")}
    known = set().union(*FAMILIES.values()) | FLOOR | COMBINERS | {"distributions"}
    assert rooms <= known, f"rooms without a rule: {sorted(rooms - known)}"


def test_families_never_import_one_another():
    bad = [(f, src, dst) for f, src, dst in _edges()
           if _family(src) and _family(dst) and _family(src) != _family(dst)]
    assert not bad, "imports across model families: " + "; ".join(f"{f} ({s} → {d})" for f, s, d in bad)


def test_floor_imports_no_family_and_no_combiner():
    bad = [(f, src, dst) for f, src, dst in _edges()
           if src in FLOOR and (_family(dst) or dst in COMBINERS or dst == "distributions")
           and (f, src, dst) not in LAZY_ROOT]
    assert not bad, "the shared floor reaches up: " + "; ".join(f"{f} ({s} → {d})" for f, s, d in bad)


def test_families_and_distributions_import_no_combiner():
    bad = [(f, src, dst) for f, src, dst in _edges()
           if (_family(src) or src == "distributions") and dst in COMBINERS]
    assert not bad, "; ".join(f"{f} ({s} → {d})" for f, s, d in bad)
    bad = [(f, s, d) for f, s, d in _edges() if s == "distributions" and _family(d)]
    assert not bad, "; ".join(f"{f} ({s} → {d})" for f, s, d in bad)


def test_the_registry_and_the_comparison_stand_above_every_family():
    """The drawn structure shows the registry importing every family and ``comparison`` importing
    the registry; no family and nothing of the floor imports either (but the root's lazy
    ``mlgp.compare``); neither reaches a family through a string (``importlib``)."""
    edges = _edges()
    assert {"baselines", "geneml", "recipes"} <= {d for _, s, d in edges if s == "families"}
    assert "families" in {d for _, s, d in edges if s == "comparison"}
    up = [(f, s, d) for f, s, d in edges if d in ("families", "comparison") and s not in COMBINERS
          and (f, s, d) not in LAZY_ROOT]
    assert not up, "arrows back up: " + "; ".join(f"{f} ({s} → {d})" for f, s, d in up)
    for path in [PACKAGE / "families.py", *sorted((PACKAGE / "comparison").glob("*.py"))]:
        assert "import_module" not in path.read_text(), f"{path.name} imports by a string"


def test_the_rule_checker_sees_a_forbidden_import(tmp_path, monkeypatch):
    """The checker itself: a file of baselines importing mlgp.models is reported."""
    fake = tmp_path / "mlgp"
    (fake / "baselines").mkdir(parents=True)
    (fake / "baselines" / "bad.py").write_text("from ..models import MLGPF\nimport mlgp.training.fit\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    assert {(s, d) for _, s, d in _edges()} == {("baselines", "models"), ("baselines", "training")}
    with pytest.raises(AssertionError, match="baselines → models"):
        test_families_never_import_one_another()


@pytest.mark.parametrize("module", ["mlgp.baselines", "mlgp.metrics", "mlgp.scores", "mlgp.data", "mlgp.validation",
                                    "mlgp.estimator", "mlgp.floats", "mlgp.blocks", "mlgp.files", "mlgp.fingerprint", "mlgp.arguments",
                                    "mlgp.data.minibatches"])
@pytest.mark.slow
def test_light_parts_do_not_import_tensorflow(module):
    code = (f"import sys, {module}; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('tensorflow', 'gpflow', 'tensorflow_probability')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout[:300]


def test_no_module_over_400_lines():
    long = {str(p.relative_to(PACKAGE.parent)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 420}
    assert not long, f"modules over ~400 lines (split them by concept): {long}"


# ----------------------------------------------------------------------------- import circles
def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _module_graph(package: Path) -> dict[str, set[str]]:
    """module → the mlgp modules importing it runs, as Python runs them: the module named and each
    package above it that is not already a package of the importer (imports inside functions too)."""
    files = {_module_name(p): p for p in package.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        own = {".".join(name.split(".")[:i]) for i in range(1, len(name.split(".")) + 1)}
        if path.name == "__init__.py":
            own.discard(name)
        targets = set()
        for module in _imports(path):
            while module not in files and "." in module:  # `from pkg.mod import name`: the module
                module = module.rsplit(".", 1)[0]
            parts = module.split(".")
            targets |= {".".join(parts[:i]) for i in range(2, len(parts) + 1)} - own
        graph[name] = {t for t in targets if t in files and t != name}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_circles():
    circles = _circles(_module_graph(PACKAGE))
    assert not circles, "modules that import each other (directly or in a circle): " + "; ".join(
        " ⇄ ".join(c) for c in circles)


def test_the_circle_checker_sees_a_lazy_circle(tmp_path, monkeypatch):
    """The checker itself: two modules importing each other, one inside a function, are reported."""
    fake = tmp_path / "mlgp"
    (fake / "models").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "models" / "__init__.py").write_text("")
    (fake / "models" / "a.py").write_text("from .b import B\n")
    (fake / "models" / "b.py").write_text("def f():\n    from .a import A\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    assert _circles(_module_graph(fake)) == [["mlgp.models.a", "mlgp.models.b"]]
    with pytest.raises(AssertionError, match="mlgp.models.a ⇄ mlgp.models.b"):
        test_no_import_circles()
