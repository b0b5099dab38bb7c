"""One table of every family for the tests that go through all of them (``tests/`` is on ``sys.path``):
small parameters that fit each family in well under a second on the command-line tests' data (a few
hundred points, D ≤ 8, K ≤ 12), and what :data:`mlgp.families.FAMILIES` is expected to declare for it,
written out here so that the registry is checked against a table of its own, not against itself.

The tests parametrise over ``FAMILIES`` and read their entry here; ``tests/comparison/test_families.py``
fails while a family of ``FAMILIES`` has no entry or an entry names no family, so a new family adds one
entry here (in the registry's order) and is fitted, saved, predicted and compared by every such test.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["SETTINGS", "FamilySettings", "fit_order", "set_arguments"]


@dataclass(frozen=True)
class FamilySettings:
    """One family's row of :data:`SETTINGS`.

    Attributes
    ----------
    small
        ``NAME=VALUE`` changes (``--set`` on the command line, ``changes`` of ``make_estimator``)
        small enough for a fit in well under a second.
    budget
        Expected ``Family.budget``: whether the family takes ``max_seconds``.
    defaults, budget_defaults
        Expected ``Family.defaults`` / ``Family.budget_defaults``.
    tensorflow
        Expected ``Family.tensorflow``: ``True`` / ``False``, or ``None`` where it is a function of
        the estimator (tested on its own).
    """

    small: dict = field(default_factory=dict)
    budget: bool = True
    defaults: dict = field(default_factory=dict)
    budget_defaults: dict = field(default_factory=dict)
    tensorflow: bool | None = False


_TREES = {"n_jobs": -1}  # the trees run on every core from the command line (their classes' default: None)

#: Every family, in the order of ``FAMILIES``.
SETTINGS: dict[str, FamilySettings] = {
    # no budget: its fit is one pass of counting
    "frequency": FamilySettings(budget=False),
    "fastxml": FamilySettings({"n_estimators": 2, "n_jobs": 1}, defaults=_TREES),
    "pfastxml": FamilySettings({"n_estimators": 2, "n_jobs": 1}, defaults=_TREES),
    "pfastrexml": FamilySettings({"n_estimators": 2, "n_jobs": 1}, defaults=_TREES),
    "lspc": FamilySettings({"n_basis": 20}),
    "mllspc": FamilySettings({"n_basis": 20}),
    # a 2 × 2 grid on 2 folds: the search and the refit both run
    "mllspccv": FamilySettings({"n_basis": 20, "cv": 2, "alphas": (0.1, 1.0), "couplings": (0.0, 0.1)}),
    "mlknn": FamilySettings({"n_neighbors": 3}),
    "geneml": FamilySettings({"n_components": 2, "max_iter": 2}, tensorflow=None),  # TensorFlow for gibbs only
    # one epoch; M = 5 inducing inputs (≤ D, so the linear kernel's K_ZZ is full rank)
    "mlgpf": FamilySettings({"epochs": 1, "num_inducing": 5, "num_latent_gps": 2},
                            budget_defaults={"epochs": 100000}, tensorflow=True),
}


def set_arguments(name: str) -> list[str]:
    """The ``--set NAME=VALUE`` arguments of family ``name``'s small settings."""
    return [a for key, value in SETTINGS[name].small.items() for a in ("--set", f"{key}={value!r}")]


def fit_order(names) -> list[str]:
    """``names`` with the families that always import TensorFlow first (the slowest to fit and to
    load in a new process, so that their processes start first), otherwise in the given order."""
    return sorted(names, key=lambda name: SETTINGS[name].tensorflow is not True)
