"""The private names of scikit-learn and GPflow that mlgp relies on, one test each.

setup.cfg bounds scikit-learn and GPflow to the versions these tests pass on. When a new release
moves or changes one of these names, its test fails with a message naming the private name and the
mlgp files that use it, so the bound can be widened only together with a fix. The last tests keep
this list complete: every private import of a third-party module in ``mlgp/`` must be listed here,
and every listed name must still be used somewhere.
"""

from __future__ import annotations

import ast
import inspect
import re
from numbers import Integral, Real
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

PACKAGE = Path(__file__).resolve().parents[1] / "mlgp"

#: private name → a regular expression that finds its uses in mlgp's source
PRIVATE = {
    "sklearn.svm._liblinear.train_wrap": r"_liblinear\b",
    "sklearn.svm._liblinear.set_verbosity_wrap": r"_liblinear\b",
    "sklearn.svm._base._get_liblinear_solver_type": r"_get_liblinear_solver_type",
    "sklearn.base._fit_context": r"\b_fit_context\b",
    "sklearn.utils._param_validation": r"sklearn\.utils\._param_validation",
    "sklearn.base.BaseEstimator._validate_params": r"\._validate_params\(",
    "gpflow.optimizers.NaturalGradient._natgrad_apply_gradients": r"\._natgrad_apply_gradients\(",
}
#: the private third-party modules and names mlgp may import (checked by the scan below)
PRIVATE_IMPORTS = {"sklearn.svm._liblinear", "sklearn.svm._base._get_liblinear_solver_type",
                   "sklearn.base._fit_context", "sklearn.utils._param_validation"}


def _users(name: str) -> list[str]:
    pattern = re.compile(PRIVATE[name])
    return sorted(str(p.relative_to(PACKAGE.parent)) for p in PACKAGE.rglob("*.py") if pattern.search(p.read_text()))


def _gone(name: str, what: str) -> None:
    users = ", ".join(_users(name)) or "(no file)"
    pytest.fail(f"{name} {what}; {users} use(s) it. Adapt them, then widen the version bound in setup.cfg.")


def _signature(fn) -> list[str]:
    return list(inspect.signature(fn).parameters)


# ---------------------------------------------------------------------------- scikit-learn --
def test_liblinear_train_wrap() -> None:
    """FastXML's node separator calls the compiled liblinear trainer with 12 positional
    arguments and reads (coefficients (1, D + 1), iterations) back."""
    name = "sklearn.svm._liblinear.train_wrap"
    try:
        from sklearn.svm import _liblinear
        from sklearn.svm._base import _get_liblinear_solver_type

        params = _signature(_liblinear.train_wrap)
    except (ImportError, AttributeError, ValueError) as err:
        _gone(name, f"is gone ({err})")
    expected = ["X", "Y", "is_sparse", "solver_type", "eps", "bias", "C", "class_weight", "max_iter",
                "random_seed", "epsilon", "sample_weight"]
    if params != expected:
        _gone(name, f"changed signature: {params}, expected {expected}")
    X = sp.csr_matrix(np.array([[1.0, 0.0], [2.0, 0.0], [0.0, 1.0], [0.0, 2.0]]))
    y = np.array([1.0, 1.0, 0.0, 0.0])
    solver = _get_liblinear_solver_type("ovr", "l1", "logistic_regression", False)
    try:
        raw, n_iter = _liblinear.train_wrap(X, y, True, solver, 0.1, 1.0, 1.0, np.array([1.0, 1.0]), 10, 0, 0.1,
                                            np.ones(4))
    except (TypeError, ValueError) as err:
        _gone(name, f"no longer takes mlgp's call ({err})")
    if np.asarray(raw).shape != (1, 3) or int(np.max(n_iter)) < 1:
        _gone(name, f"returns coefficients of shape {np.asarray(raw).shape} (expected (1, 3)) and n_iter {n_iter!r}")


def test_liblinear_set_verbosity_wrap() -> None:
    name = "sklearn.svm._liblinear.set_verbosity_wrap"
    try:
        from sklearn.svm import _liblinear

        _liblinear.set_verbosity_wrap(0)
    except (ImportError, AttributeError, TypeError) as err:
        _gone(name, f"is gone or changed ({err})")


def test_liblinear_solver_type() -> None:
    name = "sklearn.svm._base._get_liblinear_solver_type"
    try:
        from sklearn.svm._base import _get_liblinear_solver_type

        solver = _get_liblinear_solver_type("ovr", "l1", "logistic_regression", False)
    except (ImportError, AttributeError, TypeError, ValueError) as err:
        _gone(name, f"is gone or changed ({err})")
    if solver != 6:  # liblinear's L1R_LR
        _gone(name, f"maps (ovr, l1, logistic_regression, primal) to {solver}, not liblinear's L1R_LR = 6")


def _tiny_estimator(decorate):
    """A one-parameter estimator (``alpha > 0``) whose ``fit`` is wrapped by ``decorate``."""
    from sklearn.base import BaseEstimator
    from sklearn.utils._param_validation import Interval

    class Tiny(BaseEstimator):
        _parameter_constraints: dict = {"alpha": [Interval(Real, 0, None, closed="neither")]}

        def __init__(self, alpha=1.0):
            self.alpha = alpha

        @decorate
        def fit(self, X, y=None):
            self.fitted_ = True
            return self

    return Tiny


def test_fit_context() -> None:
    """Every baseline's ``fit`` is wrapped in ``_fit_context``, which validates the parameters."""
    name = "sklearn.base._fit_context"
    try:
        from sklearn.base import _fit_context
    except ImportError as err:
        _gone(name, f"is gone ({err})")
    from sklearn.utils._param_validation import InvalidParameterError

    if _signature(_fit_context) != ["prefer_skip_nested_validation"]:
        _gone(name, f"changed signature: {_signature(_fit_context)}")
    Tiny = _tiny_estimator(_fit_context(prefer_skip_nested_validation=True))
    assert Tiny(alpha=2.0).fit(None).fitted_
    try:
        Tiny(alpha=-1.0).fit(None)
    except InvalidParameterError:
        return
    _gone(name, "no longer validates the parameters before fit")


def test_param_validation() -> None:
    """The constraint types and names mlgp's ``_parameter_constraints`` use."""
    name = "sklearn.utils._param_validation"
    try:
        from sklearn.utils._param_validation import (InvalidParameterError, Interval, StrOptions,
                                                     validate_parameter_constraints)
    except ImportError as err:
        _gone(name, f"is gone ({err})")
    constraints = {"a": [Interval(Integral, 1, None, closed="left"), None],
                   "b": [Interval(Real, 0, 1, closed="both"), "array-like"],
                   "c": [StrOptions({"x", "y"})], "d": ["random_state"], "e": ["verbose"], "f": ["cv_object"],
                   "g": ["array-like", "sparse matrix"]}
    good = {"a": None, "b": [0.1, 0.2], "c": "x", "d": np.random.RandomState(0), "e": 0, "f": 5, "g": sp.eye(2)}
    try:
        validate_parameter_constraints(constraints, good, caller_name="Tiny")
    except (TypeError, ValueError) as err:
        _gone(name, f"no longer accepts mlgp's constraints ({err})")
    with pytest.raises(InvalidParameterError, match="'c' parameter of Tiny must be a str among"):
        validate_parameter_constraints(constraints, {**good, "c": "z"}, caller_name="Tiny")


def test_validate_params() -> None:
    """Loading a saved estimator checks its parameters with ``BaseEstimator._validate_params``."""
    name = "sklearn.base.BaseEstimator._validate_params"
    from sklearn.base import BaseEstimator
    from sklearn.utils._param_validation import InvalidParameterError

    if not callable(getattr(BaseEstimator, "_validate_params", None)) or _signature(BaseEstimator._validate_params) != ["self"]:
        _gone(name, "is gone or changed signature")
    Tiny = _tiny_estimator(lambda fit: fit)
    Tiny(alpha=1.0)._validate_params()
    with pytest.raises(InvalidParameterError, match="'alpha' parameter of Tiny must be a float in the range"):
        Tiny(alpha=0.0)._validate_params()


# ------------------------------------------------------------------------------------ GPflow --
def test_natgrad_apply_gradients() -> None:
    """NatGradAdam applies one natural-gradient step per (q_mu, q_sqrt) pair with GPflow's own
    update, called as ``_natgrad_apply_gradients(q_mu_grad, q_sqrt_grad, q_mu, q_sqrt)``."""
    name = "gpflow.optimizers.NaturalGradient._natgrad_apply_gradients"
    try:
        from gpflow.optimizers import NaturalGradient

        params = _signature(NaturalGradient._natgrad_apply_gradients)
    except (ImportError, AttributeError) as err:
        _gone(name, f"is gone ({err})")
    if params[:5] != ["self", "q_mu_grad", "q_sqrt_grad", "q_mu", "q_sqrt"] or \
            any(p.default is inspect.Parameter.empty for p in list(inspect.signature(
                NaturalGradient._natgrad_apply_gradients).parameters.values())[5:]):
        _gone(name, f"changed signature: {params}")
    if "gamma" not in _signature(NaturalGradient.__init__):
        _gone(name, "NaturalGradient no longer takes gamma")


# ------------------------------------------------------------------------ the list is complete --
def _private_imports(path: Path) -> set[str]:
    """Third-party modules or names with a private component that ``path`` imports."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        out |= {n for n in names if n.split(".")[0] not in ("mlgp", "__future__")
                and any(p.startswith("_") for p in n.split(".")[1:])}
    return out


def test_every_private_import_is_listed() -> None:
    found = {(name, str(p.relative_to(PACKAGE.parent))) for p in PACKAGE.rglob("*.py") for name in _private_imports(p)}
    unlisted = sorted((n, f) for n, f in found if not any(n == m or n.startswith(m + ".") for m in PRIVATE_IMPORTS))
    assert not unlisted, ("private third-party imports without a test here (add one, and bound the version): "
                          + "; ".join(f"{n} in {f}" for n, f in unlisted))


@pytest.mark.parametrize("name", sorted(PRIVATE))
def test_every_listed_name_is_still_used(name) -> None:
    assert _users(name), f"{name} is no longer used by mlgp: drop its test and reconsider the version bound"
