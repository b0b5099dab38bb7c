"""Every estimator's ``trace_["objective"]`` is per training point (:func:`mlgp.estimator.recorder.common_trace`):
GenEML's is its log posterior over N (the total is ``log_posterior``), MLGPFClassifier's its ELBO
over N (also ``elbo_per_point``; the total is ``elbo``). No consumer of the traces — the notebooks,
the documentation's examples, the experiment scripts, :mod:`mlgp.comparison` — may divide a
per-point value by N again: this file reads their code and refuses any division whose numerator
reads a per-point column."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from mlgp.geneml import GenEML

REPO = Path(__file__).resolve().parents[2]
#: The trace columns that hold a value per training point.
PER_POINT = {"objective", "elbo_per_point"}

_CELL = re.compile(r"^```(?:\{code-cell\}|python)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def _sources() -> dict[str, str]:
    """Every consumer's code: the notebooks' code cells and the pages' Python examples (cell
    options dropped), the experiment scripts and the comparison package."""
    out = {}
    for page in sorted([*(REPO / "docs").rglob("*.md"), REPO / "README.md"]):
        for number, match in enumerate(_CELL.finditer(page.read_text(encoding="utf-8")), 1):
            lines = [line for line in match.group(1).splitlines() if not re.match(r"^:[\w-]+:", line)]
            out[f"{page.relative_to(REPO)} cell {number}"] = "\n".join(lines)
    for path in sorted([*(REPO / "experiments").glob("*.py"), *(REPO / "mlgp" / "comparison").glob("*.py")]):
        out[str(path.relative_to(REPO))] = path.read_text(encoding="utf-8")
    return out


def _reads_per_point(expr: ast.AST) -> bool:
    """Whether ``expr`` reads a per-point column: a subscript naming one (``t["objective"]``,
    ``t.loc[rows, "objective"]``)."""
    return any(isinstance(node, ast.Subscript) and any(isinstance(c, ast.Constant) and c.value in PER_POINT
                                                       for c in ast.walk(node.slice))
               for node in ast.walk(expr))


def divisions_of_per_point(source: str) -> list[str]:
    """The divisions in ``source`` whose numerator reads a per-point column: ``a / b``, ``a //= b``,
    ``a.div(b)`` (``truediv``, ``divide``) and ``np.divide(a, b)``, as ``"line: code"``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        numerator = None
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Div, ast.FloorDiv)):
            numerator = node.left
        elif isinstance(node, ast.AugAssign) and isinstance(node.op, (ast.Div, ast.FloorDiv)):
            numerator = node.target
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in {"div", "truediv"}:
                numerator = node.func.value
            elif node.func.attr in {"divide", "true_divide"} and node.args:
                numerator = node.args[0]
        if numerator is not None and _reads_per_point(numerator):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


@pytest.mark.parametrize("code, flagged", [
    ('runs = {"per_point": geneml.trace_["objective"] / N}', True),
    ('x = clf.trace_["elbo_per_point"].iloc[-5:].mean() / len(rows)', True),
    ('y = trace.loc[trace["step"] > 0, "objective"].div(N)', True),
    ('z = np.divide(est.trace_["objective"], N)', True),
    ('t["objective"] /= N', True),
    ('per_point = geneml.trace_["log_posterior"] / N', False),
    ('per_point = parts_trace["elbo"] / N', False),
    ('gap = trace["objective"] - lpd / N', False),
])
def test_the_check_finds_a_per_point_value_divided_again(code, flagged) -> None:
    assert bool(divisions_of_per_point(code)) is flagged


def test_no_consumer_divides_a_per_point_objective_by_n_again() -> None:
    sources = _sources()
    assert any("compare_models.md" in where for where in sources) and any("comparison" in w for w in sources)
    found = [f"{where}, line {hit}" for where, source in sources.items() for hit in divisions_of_per_point(source)]
    assert not found, ("a per-point trace column divided again (trace_['objective'] is per training point "
                       "already; divide the total, 'log_posterior' or 'elbo', instead): " + "; ".join(found))


def test_genemls_objective_is_its_log_posterior_per_training_point() -> None:
    rng = np.random.default_rng(0)
    X = sp.random(60, 5, density=0.5, random_state=1, format="csr")
    Y = sp.csr_matrix((rng.random((60, 4)) < 0.4).astype(np.float64))
    trace = GenEML(n_components=2, max_iter=3, tol=None, calibration=None).fit(X, Y).trace_
    np.testing.assert_allclose(trace["objective"] * 60, trace["log_posterior"], rtol=1e-12)
