"""The model families by name: one registry above every family, for ``mlgp fit``, ``mlgp compare``,
:func:`mlgp.compare` and loading a saved model of any family.

:data:`FAMILIES` maps each name to a :class:`Family`: a function importing the estimator class (imported on first
use, so naming a tree family imports no TensorFlow; written out, so that the imports can be drawn
and checked), the parameter that seeds it, whether it takes the one time budget ``max_seconds``
(:class:`mlgp.estimator.budget.Budget`), the changes the command line makes to the class's
defaults, and what its ``fit`` takes beyond ``(X, Y)`` (a ``validation`` pair; ``progress`` as a
``fit`` argument or a parameter) — declared here, not inspected. :func:`make_estimator` builds one
from a name, a seed, a budget and ``NAME=VALUE`` changes, checking the names against the class's
parameters and the values against its constraints before any data are read; :func:`parse_value` is
the one reader of a ``--set`` value. This module combines the families: no family and nothing of
the floor imports it.

It is the one registry of estimators: each family also names the classes its module defines whose
files it reads (:attr:`Family.class_names`), and the table of saved class names
(:func:`saved_classes`) is derived from :data:`FAMILIES`. :func:`load_model` reads a saved model's
class name from its header (:func:`mlgp.estimator.persistence.saved_class_name`) and imports that
family's module alone; the floor (:mod:`mlgp.estimator.registry`) then finds the class that module
defined, as it finds any class already defined (a user's subclass).
"""

from __future__ import annotations

import difflib

import ast
import inspect
from dataclasses import dataclass, field
from typing import Callable

from .errors import ArgumentError

__all__ = ["FAMILIES", "Family", "family", "fit_arguments", "load_model", "make_estimator", "parse_assignment",
           "parse_value", "saved_classes", "uses_tensorflow"]


def _baseline(name: str) -> Callable[[], type]:
    """The loader of the class ``name`` of :mod:`mlgp.baselines` (which imports its module alone)."""
    def load() -> type:
        from . import baselines
        return getattr(baselines, name)

    return load


def _geneml():
    from .geneml import GenEML
    return GenEML


def _mlgpf():
    from .recipes import MLGPFClassifier
    return MLGPFClassifier


@dataclass(frozen=True)
class Family:
    """One family of :data:`FAMILIES`.

    Attributes
    ----------
    name
        Its command-line name.
    load
        Returns the estimator class (importing its module).
    seed
        The parameter the seed goes to (``None``: the fit is deterministic).
    budget
        Whether the family takes ``max_seconds`` (the one budget).
    defaults
        Changes to the class's defaults made by the command line and :func:`mlgp.compare`.
    budget_defaults
        Changes made only when a budget is given (e.g. MLGPF's epochs become an upper bound).
    validation
        Whether ``fit`` takes ``validation=(X, Y)`` and traces P@k per step.
    progress
        ``"fit"``: ``fit`` takes ``progress=``; ``"parameter"``: a constructor parameter;
        ``None``: the family shows no progress bar.
    tensorflow
        Whether fitting imports TensorFlow: ``True``, ``False`` or a function of the estimator.
    class_names
        The classes whose saved files this family's module reads, by ``__name__``: its estimator
        class first, then any other class that module defines (GenEMLCV beside GenEML). A saved
        file names its class, and :func:`load_model` imports the one family that names it.
    """

    name: str
    load: Callable[[], type]
    seed: str | None = "random_state"
    budget: bool = False
    defaults: dict = field(default_factory=dict)
    budget_defaults: dict = field(default_factory=dict)
    validation: bool = False
    progress: str | None = None
    tensorflow: bool | Callable[[object], bool] = False
    class_names: tuple[str, ...] = ()

    @property
    def estimator_class(self) -> type:
        cls = self.load()
        _BY_CLASS.setdefault(cls, self)
        return cls

    def parameters(self) -> list[str]:
        """The estimator's constructor parameters, in order."""
        signature = inspect.signature(self.estimator_class.__init__)
        return [p for p in signature.parameters if p != "self"]


#: the family of each family class loaded so far (:func:`family_of`'s quick answer for an estimator
#: of exactly that class, without importing the other families)
_BY_CLASS: dict[type, "Family"] = {}

_TREES = {"n_jobs": -1}

#: Every family by its command-line name.
FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("frequency", _baseline("LabelFrequency"), seed=None, class_names=("LabelFrequency",)),
    Family("fastxml", _baseline("FastXML"), budget=True, defaults=_TREES, progress="fit", class_names=("FastXML",)),
    Family("pfastxml", _baseline("PfastXML"), budget=True, defaults=_TREES, progress="fit", class_names=("PfastXML",)),
    Family("pfastrexml", _baseline("PfastreXML"), budget=True, defaults=_TREES, progress="fit", class_names=("PfastreXML",)),
    Family("lspc", _baseline("LSPC"), budget=True, class_names=("LSPC",)),
    Family("mllspc", _baseline("MLLSPC"), budget=True, class_names=("MLLSPC",)),
    Family("mllspccv", _baseline("MLLSPCCV"), budget=True, class_names=("MLLSPCCV",)),
    Family("mlknn", _baseline("MLkNN"), seed=None, budget=True, class_names=("MLkNN",)),
    # the class's own defaults (preprocessing chosen from the features, k = 100)
    Family("geneml", _geneml, budget=True, validation=True,
           progress="parameter", tensorflow=lambda est: est.inference == "gibbs", class_names=("GenEML", "GenEMLCV")),
    Family("mlgpf", _mlgpf, seed="seed", budget=True, budget_defaults={"epochs": 100000}, validation=True,
           progress="parameter", tensorflow=True, class_names=("MLGPFClassifier",)),
)}


def saved_classes() -> dict[str, Family]:
    """The family whose module defines each saved class name (:attr:`Family.class_names`), derived
    from :data:`FAMILIES`; nothing is imported."""
    return {name: f for f in FAMILIES.values() for name in f.class_names}


def family(name: str) -> Family:
    """The family called ``name``; :class:`ArgumentError` naming the families otherwise."""
    if name not in FAMILIES:
        close = difflib.get_close_matches(str(name), list(FAMILIES), n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ArgumentError(f"unknown family {name!r}; {hint}the families are {', '.join(FAMILIES)}")
    return FAMILIES[name]


def family_of(estimator) -> Family:
    """The family of ``estimator``: that of its class, or of the nearest family class it derives
    from (a user's subclass of FastXML is of the fastxml family, PfastXML of its own). An estimator of
    a family class already loaded (one :func:`make_estimator` built) is answered without importing
    the other families."""
    known = _BY_CLASS.get(type(estimator))
    if known is not None:
        return known
    named = saved_classes()
    for cls in type(estimator).__mro__:  # only a family whose class has this name is imported
        f = named.get(cls.__name__)
        if f is not None and f.estimator_class is cls:
            return f
    raise ArgumentError(f"{type(estimator).__name__} is not one of the families ({', '.join(FAMILIES)})")


def load_model(path):
    """A model file of any family (:meth:`mlgp.estimator.MultiLabelEstimator.load`): the family
    whose :attr:`Family.class_names` holds the class the file names is imported first, and no other
    (a file of a class defined elsewhere loads once its module is imported, as on the floor)."""
    from .estimator import MultiLabelEstimator
    from .estimator.persistence import saved_class_name

    f = saved_classes().get(saved_class_name(path))
    if f is not None:
        f.load()  # importing the family's class registers the classes of its module
    return MultiLabelEstimator.load(path)


def uses_tensorflow(estimator) -> bool:
    """Whether fitting ``estimator`` imports TensorFlow (as its family declares)."""
    declared = family_of(estimator).tensorflow
    return bool(declared(estimator) if callable(declared) else declared)


def parse_value(text: str):
    """A ``--set`` value from its text: a Python literal (``10``, ``0.5``, ``(1, 2)``, ``[0.1, 1]``,
    ``None``, ``True``), ``true``/``false``/``none``/``null`` in any case, else the text itself."""
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "null"):
        return None
    try:
        return ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text


def parse_assignment(text: str) -> tuple[str, object]:
    """``"NAME=VALUE"`` → ``(NAME, parsed VALUE)``; :class:`ArgumentError` without ``=`` or a name."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise ArgumentError(f"--set takes NAME=VALUE, got {text!r}")
    return name.strip(), parse_value(value)


def make_estimator(name: str, changes: dict | None = None, *, seed: int | None = None, budget: float | None = None):
    """The estimator of family ``name`` with the command line's defaults, ``budget`` seconds (where
    the family has a budget), ``seed`` (where it takes one) and ``changes`` over them, its
    parameters checked (an unknown name or a value outside the constraints raises
    :class:`~mlgp.errors.ArgumentError` naming it).

    This is the one check of ``budget`` and ``seed`` on the way from ``mlgp compare`` / ``mlgp fit``
    / :func:`mlgp.compare` to a family's ``fit`` (the command line only turns their text into
    numbers): a budget by the one rule of a budget (:func:`mlgp.arguments.is_seconds`: a finite
    number of seconds > 0, or ``None``); a seed a whole number from 0 to
    :data:`~mlgp.arguments.MAX_SEED` or ``None``, checked whether or not the family takes one.
    The ``max_seconds`` and the seed parameter they become are then trusted by the estimator's
    parameter check, and the budget by ``fit`` (:meth:`~mlgp.estimator.Budget.trusted`).
    """
    from . import arguments

    f = family(name)
    budget = arguments.max_seconds(budget, "budget")
    if seed is not None:
        seed = arguments.seed(seed)
    changes = dict(changes or {})
    known = f.parameters()
    unknown = sorted(set(changes) - set(known))
    if unknown:
        raise ArgumentError(f"{name}: unknown parameter(s) {', '.join(map(repr, unknown))}; "
                            f"{f.estimator_class.__name__} takes {', '.join(known)}")
    params = dict(f.defaults)
    if budget is not None and f.budget:
        params.update(f.budget_defaults)
        params["max_seconds"] = budget
    if seed is not None and f.seed is not None:
        params[f.seed] = seed
    params.update(changes)
    checked = (["max_seconds"] if budget is not None and f.budget else []) + \
        ([f.seed] if seed is not None and f.seed is not None else [])
    trusted = tuple(name for name in checked if name not in changes)
    try:
        estimator = f.estimator_class(**params)
        estimator._validate_params(trusted=trusted)
    except (ArgumentError, TypeError, ValueError) as err:
        raise ArgumentError(f"{name}: {err}") from None
    return estimator


def fit_arguments(estimator, progress: bool, validation=None) -> dict:
    """Keyword arguments of ``estimator.fit`` beyond (X, Y), as its family declares them: a
    progress bar where the family shows one (set as a parameter where it is one), and
    ``validation`` where the family traces it."""
    f = family_of(estimator)
    kwargs = {}
    if f.progress == "fit":
        kwargs["progress"] = progress
    elif f.progress == "parameter":
        estimator.set_params(progress=progress)
    if validation is not None and f.validation:
        kwargs["validation"] = validation
    return kwargs
