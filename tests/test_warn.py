"""A warning the user can act on comes from the user's line (:func:`mlgp.errors.warn`): the first
frame outside mlgp, passing over scikit-learn's, joblib's, functools' and contextlib's frames only
while they lie between mlgp and its caller — never from a file of mlgp or of scikit-learn."""

from __future__ import annotations

import contextlib
import inspect
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest
from _clock import fake_clock, random_problem, slowed

import mlgp
import mlgp.baselines.lspc as lspc_module
import mlgp.baselines.mlknn as mlknn_module
from mlgp import errors
from mlgp.baselines import LSPC, FastXML, MLkNN
from mlgp.errors import BudgetWarning
from mlgp.geneml import GenEML

MLGP = Path(mlgp.__file__).resolve().parent


def _in_mlgp(source: str) -> dict:
    """``source``'s functions as if they were a module of mlgp (their file is in mlgp's folder)."""
    namespace = {"__name__": "mlgp._planted", "errors": errors, "contextlib": contextlib}
    exec(compile(textwrap.dedent(source), str(MLGP / "_planted.py"), "exec"), namespace)
    return namespace


PLANTED = _in_mlgp("""
    def deep(category):
        errors.warn("planted advice", category)

    def middle(category):
        deep(category)

    def public(category=UserWarning):
        middle(category)

    def calls_back(function):
        return function()

    @contextlib.contextmanager
    def block():
        middle(UserWarning)
        yield
""")


def _line() -> int:
    """The line this function is called from."""
    return inspect.currentframe().f_back.f_lineno


def _from_here(caught, line: int | None = None) -> None:
    assert len(caught) == 1, [str(w.message) for w in caught]
    assert caught[0].filename == __file__, f"{caught[0].filename}:{caught[0].lineno}"
    if line is not None:
        assert caught[0].lineno == line


def test_warn_from_nested_helpers_of_mlgp_comes_from_the_line_that_called_into_mlgp() -> None:
    with pytest.warns(FutureWarning, match="planted advice") as caught:
        line = _line(); PLANTED["public"](FutureWarning)  # noqa: E702 - one line: the one named
    _from_here(caught, line)
    assert caught[0].category is FutureWarning


def test_warn_called_outside_mlgp_comes_from_its_own_caller() -> None:
    with pytest.warns(UserWarning, match="said here") as caught:
        line = _line(); errors.warn("said here")  # noqa: E702
    _from_here(caught, line)


def test_warn_stops_at_the_users_function_that_mlgp_calls_back() -> None:
    """mlgp → the user's callback → mlgp: the callback's line, not the line outermost in the user's
    code (the outermost-first scan's answer)."""
    lines = []

    def callback() -> None:
        lines.append(_line()); PLANTED["public"]()  # noqa: E702

    with pytest.warns(UserWarning, match="planted advice") as caught:
        PLANTED["calls_back"](callback)
    _from_here(caught, lines[0])


def test_warn_passes_over_contextlib_between_mlgp_and_the_user() -> None:
    with pytest.warns(UserWarning, match="planted advice") as caught:
        line = _line(); block = PLANTED["block"]()  # noqa: E702
        with block:  # contextlib's __enter__ runs mlgp's generator
            pass
    _from_here(caught, line + 1)


def test_warn_when_every_frame_is_passed_over_names_the_outermost(monkeypatch) -> None:
    """No caller outside (threading made a pass-through library, so a thread running mlgp has none):
    the outermost frame, threading's bootstrap, never beyond the stack's end ('sys', line 1)."""
    import threading

    monkeypatch.setattr(errors, "PASS_THROUGH", errors.PASS_THROUGH | {"threading"})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        thread = threading.Thread(target=PLANTED["public"])
        thread.start()
        thread.join()
    assert len(caught) == 1 and caught[0].filename == threading.__file__, [(w.filename, w.lineno) for w in caught]


def test_mlknns_budget_warning_through_fit_context_names_the_users_line(monkeypatch) -> None:
    """``MLkNN.fit`` is wrapped by scikit-learn's ``_fit_context``: the warning (raised in
    :meth:`mlgp.estimator.budget.Budget.warn_if_first_step_spent`) passes over it to this line."""
    X, Y = random_problem(100, 4, 3, seed=5)
    monkeypatch.setattr(mlknn_module, "QUERY_BLOCK", 10)
    fake_clock(monkeypatch)
    with pytest.warns(BudgetWarning, match="MLkNN: max_seconds=0.5 was spent") as caught:
        line = _line(); MLkNN(n_neighbors=3, calibration=None, max_seconds=0.5).fit(X, Y)  # noqa: E702
    _from_here(caught, line)


def test_the_prior_maps_refused_copy_names_the_users_line() -> None:
    """25 rows: MLkNN with 20 neighbours fits them, its prior map's copies on 20 rows cannot."""
    rng = np.random.default_rng(0)
    X = rng.random((25, 6))
    Y = (X[:, :4] + 0.4 * rng.random((25, 4)) > 0.75).astype(np.int64)
    with pytest.warns(UserWarning, match="MLkNN: calibration='prior' left out") as caught:
        MLkNN(n_neighbors=20).fit(X, Y)
    _from_here(caught)


def test_genemls_cut_components_warn_once_from_the_users_line() -> None:
    """The model's own fit cuts the components and says so once, naming this line; the copies fitted
    for its prior map (60 rows, then 48) cut them too and say nothing (their warnings repeat it)."""
    X, Y = random_problem(60, 8, 6, seed=3)
    with pytest.warns(UserWarning, match="GenEML: n_components=10 is more than min") as caught:
        GenEML(n_components=10, max_iter=1).fit(X, Y)
    assert [(w.filename, str(w.message)[:40]) for w in caught] == [(__file__, "GenEML: n_components=10 is more than min")]


def test_fastxmls_prior_map_left_out_for_its_budget_names_the_users_line(monkeypatch) -> None:
    """A 3.5 s budget's quarter is gone by the first look (one second per reading): no copy is
    fitted and the map is left out."""
    rng = np.random.default_rng(0)
    X = rng.random((60, 6))
    Y = (X[:, :4] + 0.4 * rng.random((60, 4)) > 0.75).astype(np.int64)
    fake_clock(monkeypatch)
    with pytest.warns(BudgetWarning, match="FastXML: calibration='prior' left out") as caught:
        FastXML(n_estimators=10, max_leaf=6, n_jobs=1, random_state=0, max_seconds=3.5).fit(X, Y)
    _from_here(caught)


def test_a_single_solves_map_left_out_names_the_users_line(monkeypatch) -> None:
    clock = fake_clock(monkeypatch)
    slowed(monkeypatch, clock, lspc_module, "fit_basis")
    X, Y = random_problem(60, 6, 4, seed=3)
    with pytest.warns(BudgetWarning, match="LSPC: calibration='prior' left out") as caught:
        LSPC(n_basis=20, random_state=0, max_seconds=50.0).fit(X, Y)
    _from_here(caught)


def test_a_warning_through_scikit_learns_cross_validation_names_the_users_line(monkeypatch) -> None:
    """scikit-learn's own frames (``cross_validate``, its joblib loop, ``_fit_and_score``,
    ``_fit_context``) between this line and mlgp are passed over."""
    from sklearn.model_selection import cross_validate

    X, Y = random_problem(100, 4, 3, seed=5)
    monkeypatch.setattr(mlknn_module, "QUERY_BLOCK", 10)
    fake_clock(monkeypatch)
    with pytest.warns(BudgetWarning, match="MLkNN: max_seconds=0.5 was spent") as caught:
        cross_validate(MLkNN(n_neighbors=3, calibration=None, max_seconds=0.5), X, Y.toarray(), cv=2,
                       error_score="raise")
    assert caught and all(w.filename == __file__ for w in caught), [f"{w.filename}:{w.lineno}" for w in caught]
