"""The model families by name: what ``mlgp fit``, ``mlgp compare`` and :func:`mlgp.compare` build.

Contract: :data:`FAMILIES` maps each name (``frequency fastxml pfastxml pfastrexml lspc mllspc
mllspccv mlknn geneml mlgpf``) to a :class:`Family`: the estimator class (imported on first use, so
naming the tree families imports no TensorFlow), the parameter that seeds it, the parameter that
bounds its training time, the changes the command line makes to the class's defaults, and whether
it trains in steps (and so records a validation trace). :func:`make_estimator` builds one from a
name, a seed, a budget and ``NAME=VALUE`` changes, checking the names against the class's
parameters and the values against its constraints before any data are read; :func:`parse_value`
is the one reader of a ``--set`` value.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from dataclasses import dataclass, field

from ..errors import ArgumentError

__all__ = ["FAMILIES", "Family", "family", "fit_arguments", "load_model", "make_estimator", "uses_tensorflow", "parse_assignment", "parse_value"]


@dataclass(frozen=True)
class Family:
    """One family of :data:`FAMILIES`.

    Attributes
    ----------
    name
        Its command-line name.
    target
        ``"module:Class"`` of the estimator.
    seed
        The parameter the seed goes to (``None``: the fit is deterministic).
    budget
        The parameter a time budget goes to (seconds; ``None``: the family has no budget).
    defaults
        Changes to the class's defaults made by the command line and :func:`mlgp.compare`.
    budget_defaults
        Changes made only when a budget is given (e.g. MLGPF's epochs become an upper bound).
    steps
        Whether ``fit`` takes ``validation=(X, Y)`` and traces P@k per step.
    """

    name: str
    target: str
    seed: str | None = "random_state"
    budget: str | None = None
    defaults: dict = field(default_factory=dict)
    budget_defaults: dict = field(default_factory=dict)
    steps: bool = False

    @property
    def estimator_class(self) -> type:
        module, _, name = self.target.partition(":")
        return getattr(importlib.import_module(module), name)

    def parameters(self) -> list[str]:
        """The estimator's constructor parameters, in order."""
        signature = inspect.signature(self.estimator_class.__init__)
        return [p for p in signature.parameters if p != "self"]


_TREES = {"n_jobs": -1}

#: Every family by its command-line name.
FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("frequency", "mlgp.baselines:LabelFrequency", seed=None),
    Family("fastxml", "mlgp.baselines:FastXML", defaults=_TREES),
    Family("pfastxml", "mlgp.baselines:PfastXML", defaults=_TREES),
    Family("pfastrexml", "mlgp.baselines:PfastreXML", defaults=_TREES),
    Family("lspc", "mlgp.baselines:LSPC"),
    Family("mllspc", "mlgp.baselines:MLLSPC"),
    Family("mllspccv", "mlgp.baselines:MLLSPCCV"),
    Family("mlknn", "mlgp.baselines:MLkNN", seed=None),
    # the preprocessing and rank of experiments/geneml_benchmarks.py (Bibtex P@1 63.74 by batch EM)
    Family("geneml", "mlgp.geneml:GenEML", budget="max_seconds", defaults={"normalize_rows": True, "n_components": 100},
           steps=True),
    Family("mlgpf", "mlgp.recipes:MLGPFClassifier", seed="seed", budget="max_seconds",
           budget_defaults={"epochs": 100000}, steps=True),
)}


def load_model(path):
    """A model file of any family (:meth:`mlgp.estimator.MultiLabelEstimator.load`), every family's
    class registered first (importing them imports no TensorFlow)."""
    from ..estimator import MultiLabelEstimator

    for f in FAMILIES.values():
        f.estimator_class  # noqa: B018 - importing the class registers it
    return MultiLabelEstimator.load(path)


def uses_tensorflow(estimator) -> bool:
    """Whether fitting ``estimator`` imports TensorFlow: MLGPF, and GenEML's Gibbs sampler."""
    return type(estimator).__module__.startswith("mlgp.recipes") or getattr(estimator, "inference", None) == "gibbs"


def family(name: str) -> Family:
    """The family called ``name``; :class:`ArgumentError` naming the families otherwise."""
    if name not in FAMILIES:
        raise ArgumentError(f"unknown family {name!r}; the families are {', '.join(FAMILIES)}")
    return FAMILIES[name]


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
    :class:`~mlgp.errors.ArgumentError` naming it)."""
    f = family(name)
    changes = dict(changes or {})
    known = f.parameters()
    unknown = sorted(set(changes) - set(known))
    if unknown:
        raise ArgumentError(f"{name}: unknown parameter(s) {', '.join(map(repr, unknown))}; "
                            f"{f.estimator_class.__name__} takes {', '.join(known)}")
    params = dict(f.defaults)
    if budget is not None:
        if f.budget is not None:
            params.update(f.budget_defaults)
            params[f.budget] = budget
    if seed is not None and f.seed is not None:
        params[f.seed] = seed
    params.update(changes)
    try:
        estimator = f.estimator_class(**params)
        estimator._validate_params()
    except ArgumentError as err:
        raise ArgumentError(f"{name}: {err}") from None
    except (TypeError, ValueError) as err:
        raise ArgumentError(f"{name}: {err}") from None
    return estimator


def fit_arguments(estimator, progress: bool, validation=None) -> dict:
    """Keyword arguments of ``estimator.fit`` beyond (X, Y): a progress bar where the family shows
    one, and ``validation`` where the family traces it."""
    import inspect

    accepted = inspect.signature(type(estimator).fit).parameters
    kwargs = {}
    if "progress" in accepted:
        kwargs["progress"] = progress
    elif "progress" in estimator.get_params():
        estimator.set_params(progress=progress)
    if validation is not None and "validation" in accepted:
        kwargs["validation"] = validation
    return kwargs
