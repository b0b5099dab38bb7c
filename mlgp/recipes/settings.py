"""The MLGPF recipe's settings in one place: :class:`MLGPFSettings` and the layers put over it.

:class:`MLGPFSettings` is a frozen dataclass with one field per option of
:func:`mlgp.recipes.train_mlgpf`, each with its default and a one-line help text
(``field(metadata=...)``); building one checks and canonicalises every value once, raising
:class:`mlgp.errors.ArgumentError` for a bad value or choice. The choices come from each choice's
own registry (:data:`mlgp.kernels.factory.KERNELS`, :data:`mlgp.variational.Q_FAMILIES`,
:data:`mlgp.training.OPTIMIZERS`, :data:`mlgp.floats.FLOAT_POLICIES`,
:data:`mlgp.models.builders.BIAS_INITS`), read when they are needed: importing this module imports
no TensorFlow.

Over the defaults lie named layers of changes, each a ``{field: value}`` dict:
:data:`PAPER_SETTINGS` (the paper's P and M per dataset; :data:`OTHER_SIZES` elsewhere),
:data:`PAPER_FORM` (the paper's q(u), precision and start, which the experiment scripts train in
and :func:`mlgp.models.mlgpf_from_data` builds by default), :data:`DEMO_SETTINGS` (``mlgp demo``'s
sizes per dataset) and :data:`QUICK_SETTINGS` (every ``--quick`` run). The command-line options of
``mlgp demo`` and of the experiment scripts are generated from the fields
(:mod:`mlgp.recipes.options`). :func:`batch_growth` is the one parser of a batch schedule.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable

from ..errors import ArgumentError
from .setting_checks import (BATCH_GROWTH_NAMES, PAPER_BATCH_GROWTH, PREPROCESSINGS, _bias_init_names, _dtype_names,
                             _kernel_names, _optimizer_names, _q_family_names, batch_growth, check_together, checked)

__all__ = [
    "AUTO_MIN_EPOCHS",
    "AUTO_MIN_STEPS",
    "BATCH_GROWTH_NAMES",
    "DEMO_SETTINGS",
    "MLGPFSettings",
    "OTHER_SIZES",
    "PAPER_BATCH_GROWTH",
    "PAPER_FORM",
    "PAPER_SETTINGS",
    "QUICK_SETTINGS",
    "auto_epochs",
    "batch_growth",
    "demo_settings",
    "demo_values",
    "setting_fields",
    "sizes_for_data",
]

#: Table 2 of the MLGPF paper: number of latent GPs P and inducing inputs M per dataset.
PAPER_SETTINGS: dict[str, dict[str, int]] = {
    "bibtex": {"num_latent_gps": 159, "num_inducing": 400},
    "delicious": {"num_latent_gps": 300, "num_inducing": 400},
}

#: P and M on a dataset without paper values (P is also kept at most K).
OTHER_SIZES: dict[str, int] = {"num_latent_gps": 30, "num_inducing": 100}

#: The paper's model form where the recipe's defaults depart from it (docs/results.md gives the measured
#: effects): the non-whitened q(u), float64 and no warm start.
PAPER_FORM: dict[str, Any] = {"q_family": "cholesky", "dtype": "float64", "warm_start": False, "covariance_warmup": 0}

#: What ``mlgp demo`` changes from the defaults, per dataset; ``"*"``: any other dataset.
DEMO_SETTINGS: dict[str, dict[str, Any]] = {
    "bibtex": {"num_latent_gps": 60, "num_inducing": 200},
    "synthetic": {"num_latent_gps": 10, "num_inducing": 50, "epochs": 100, "batch_size": 200, "q_family": "cholesky"},
    "*": {"num_latent_gps": 60, "num_inducing": 200, "epochs": 10},
}

#: What every ``--quick`` run (``mlgp demo --quick``, the experiment scripts' smoke tests) changes.
QUICK_SETTINGS: dict[str, Any] = {"num_latent_gps": 8, "num_inducing": 20, "epochs": 1, "max_train": 300}

def _setting(default, help: str, *, kind: str | None = None, choices: Callable[[], tuple[str, ...]] | None = None,
             flag: str | None = None, metavar: str | None = None, none: str | None = None):
    """A field of :class:`MLGPFSettings`; ``metadata`` holds what its command-line option needs.

    ``kind``: how the option parses its text (``"positive_int"``, ``"seed"``, ``"positive_float"``,
    ``"bool"``, ``"batch_growth"``; ``"choice"`` with ``choices``, a function returning the
    registry's names; ``None``: no command-line option); ``flag`` (default ``--field-name``),
    ``metavar``; ``none``: what the value ``None`` means, for help texts.
    """
    kind = "choice" if choices is not None else kind
    return field(default=default, metadata=dict(help=help, kind=kind, choices=choices, flag=flag, metavar=metavar,
                                                none=none))


@dataclass(frozen=True)
class MLGPFSettings:
    """Every option of the MLGPF recipe (:func:`mlgp.recipes.train_mlgpf`), checked.

    Building one (or :meth:`replace`) checks and canonicalises each value: kernel aliases become
    canonical names, ``batch_growth`` a pair, ``dtype`` a name of :data:`mlgp.floats.FLOAT_POLICIES`.
    The defaults are the recipe's: they depart from the paper where
    ``experiments/time_to_accuracy.py`` measured a faster route to the same accuracy (the
    :data:`PAPER_FORM` layer restores the paper's). Each field's help text is in its
    ``metadata["help"]``; :func:`setting_fields` lists them. What the fields need beyond it:

    Attributes
    ----------
    kernel
        A name of :data:`mlgp.kernels.factory.KERNELS` (or an alias), or a GPflow kernel. The
        default, ``"se+linear-shared"``, is SE+LR as the authors' code writes it: one ARD vector
        shared by both parts, weights summing to one. Against ``"se+linear"`` (separate ARD vectors
        and variances) it ranked and predicted better on Bibtex (3 seeds: test P@1 63.74 against
        62.90 at the epoch the held-out density chose) and Delicious, and about the same on the
        smaller sets (``docs/results.md``, "MLGPF: the kernel").
    num_latent_gps, num_inducing
        P and M; ``None``: :meth:`sized_for` the dataset.
    epochs, batch_size, negatives, learning_rate, optimizer, natgrad_gamma
        How :func:`mlgp.training.fit` trains (``negatives=None``: every label, the exact bound).
    unit_sphere_inducing
        Keep Z on the unit sphere like the L2-normalised inputs, as the authors' code does
        (:class:`mlgp.inducing.UnitSphereInducingPoints`); off, Z drifts off the sphere (docs/results.md
        compares the two).
    q_family, dtype, warm_start, bias_init
        The model's form: see :func:`mlgp.models.mlgpf_from_data`.
    batch_growth
        ``(every, increment)``, ``"paper"`` or ``"EVERY,INC"`` (:func:`batch_growth`).
    subspace_rank
        R: subspace inducing inputs (:func:`mlgp.models.mlgpf_from_data`'s ``subspace_rank``).
    subspace_sample
        The basis from a row sample of this size (``mlgpf_from_data``'s ``subspace_sample``).
    kl_weight
        Each step maximises the expected log-likelihood minus w × KL (:func:`mlgp.training.fit`'s
        ``kl_weight``); the paper's bound is w = 1, the authors' code trains with ½.
    covariance_warmup
        Optimiser steps at the start during which q(u)'s P Cholesky factors are tied
        (:mod:`mlgp.training.warmup`): ``"all"`` the whole run, 0 none (the paper's, and
        :data:`PAPER_FORM`'s); ``"auto"`` (the default) ``"all"`` for the ``"cholesky"`` and
        ``"whitened"`` families trained by Adam, else 0. Tied, a step on Bibtex costs about a sixth of a full
        one and the recipe reaches test P@1 63.5 7.8 times sooner (docs/results.md).
    preprocessing
        ``"rows"`` (the paper's, the recipe's default): every row L2-normalised; ``"columns"``:
        every column standardised with the training rows' statistics, then every row normalised;
        ``"auto"`` (:class:`~mlgp.recipes.MLGPFClassifier`'s default): ``"columns"`` for dense or
        signed features, else ``"rows"`` (:func:`mlgp.data.preprocessing.wants_columns`). The
        model carries it as its input map and scores raw rows.
    seed
        Seeds k-means, the initial values, the minibatches and the sampled negatives.
    max_train
        Use only the first ``max_train`` training points (for quick runs).

    Raises
    ------
    ArgumentError
        For a bad value or choice (naming the choices) or options that cannot be combined.
    """

    kernel: Any = _setting("se+linear-shared", "kernel of the latent GPs", choices=_kernel_names)
    num_latent_gps: int | None = _setting(None, "latent GPs P, at most K", kind="positive_int", flag="--latent",
                                          metavar="P", none=f"the paper's P for the dataset, else min(K, {OTHER_SIZES['num_latent_gps']})")
    num_inducing: int | None = _setting(None, "inducing inputs M, at most N", kind="positive_int", flag="--inducing",
                                        metavar="M", none=f"the paper's M for the dataset, else {OTHER_SIZES['num_inducing']}")
    epochs: int = _setting(20, "passes over the training data", kind="positive_int", metavar="N")
    batch_size: int = _setting(500, "points per minibatch", kind="positive_int", metavar="B")
    negatives: int | None = _setting(None, "negative labels sampled per point, fewer than K", kind="positive_int",
                                     metavar="L", none="all labels, the exact bound")
    learning_rate: float = _setting(0.005, "Adam's step size", kind="positive_float", metavar="LR")
    fixed_inducing: bool = _setting(False, "SE-F: the inducing inputs fixed at random training points", kind="bool")
    unit_sphere_inducing: bool = _setting(True, "keep the inducing inputs on the unit sphere like the inputs",
                                          kind="bool", flag="--unit-sphere-z")
    q_family: str = _setting("whitened", "the q(u) family", choices=_q_family_names, metavar="FAMILY")
    optimizer: str = _setting("adam", "optimizer (natgrad: natural gradients on q(u) and Adam on the rest, Cholesky "
                              "families only)", choices=_optimizer_names, metavar="NAME")
    natgrad_gamma: Any = _setting((0.01, 0.1, 100), "natural-gradient step γ, or (γ at the start, γ, steps of the "
                                  "log-linear ramp between them)")
    dtype: str = _setting("float32", "training precision", choices=_dtype_names, metavar="DTYPE")
    warm_start: bool = _setting(True, "start Φ and q(u)'s means at a linear solution", kind="bool")
    batch_growth: Any = _setting(None, "grow the batch by INC points every EVERY epochs ('paper': the authors' "
                                 "10,20)", kind="batch_growth", metavar="EVERY,INC", none="a fixed batch")
    bias_init: str = _setting("log-odds", "initial bias b: the labels' log-odds, or the authors' N(0, 1/P) draws",
                              choices=_bias_init_names, metavar="INIT")
    subspace_rank: int | None = _setting(None, "subspace inducing inputs in the top-R singular subspace of the training "
                                         "features (a step's cost stops depending on D)", kind="positive_int",
                                         metavar="R", none="inducing inputs in the full input space")
    subspace_sample: int | None = _setting(None, "take the subspace's basis from this many training rows drawn at random "
                                           "(with --subspace-rank)", kind="positive_int", metavar="N",
                                           none="all training rows")
    preprocessing: str = _setting("rows", "the features' preprocessing: rows L2-normalised (the paper's), or columns "
                                  "standardised first ('auto': for dense or signed features)",
                                  choices=lambda: PREPROCESSINGS, metavar="NAME")
    covariance_warmup: Any = _setting("auto", "optimiser steps with q(u)'s covariance factors tied: held at their shared "
                                      "start, a step a fraction of the cost ('all': the whole run; 0: the paper's; "
                                      "'auto': 'all' for a Cholesky family trained by Adam, else 0)",
                                      kind="warmup", metavar="STEPS")
    kl_weight: float = _setting(1.0, "weight w in (0, 1] of the KL term in the training objective (1: the ELBO; the "
                                "authors' code: 0.5)", kind="kl_weight", metavar="W")
    seed: int = _setting(0, "seed of k-means, initial values and minibatches", kind="seed")
    max_train: int | None = _setting(None, "use only the first N training points", kind="positive_int", metavar="N",
                                     none="all")

    def __post_init__(self) -> None:
        for name, value in checked(self.as_dict()).items():
            object.__setattr__(self, name, value)
        check_together(self)

    @classmethod
    def trusting(cls, values: dict[str, Any], trusted: tuple[str, ...] = ()) -> "MLGPFSettings":
        """Settings of ``values`` in which the fields named in ``trusted`` are taken as they are
        (their caller checked them: :func:`mlgp.families.make_estimator` checks a seed and a
        budget once) and the rest are checked; the checks between fields are made on the result."""
        unknown = sorted(set(values) - set(cls.names()))
        if unknown:
            raise ArgumentError(f"unknown MLGPF setting(s) {', '.join(map(repr, unknown))}")
        new = object.__new__(cls)
        for f in dataclasses.fields(cls):
            object.__setattr__(new, f.name, values.get(f.name, f.default))
        for name, value in checked({k: v for k, v in new.as_dict().items() if k not in trusted}).items():
            object.__setattr__(new, name, value)
        check_together(new)
        return new

    def replace(self, **changes) -> "MLGPFSettings":
        """A copy with ``changes``, only those checked (the rest were when this was made) and the
        checks between fields made again; an unknown name raises :class:`ArgumentError`."""
        unknown = sorted(set(changes) - set(self.names()))
        if unknown:
            raise ArgumentError(f"unknown MLGPF setting(s) {', '.join(map(repr, unknown))}; the settings are "
                                f"{', '.join(self.names())}")
        new = copy.copy(self)
        for name, value in checked(changes).items():
            object.__setattr__(new, name, value)
        check_together(new)
        return new

    def as_dict(self) -> dict[str, Any]:
        """The settings as ``{field: value}`` (keyword arguments of :func:`mlgp.recipes.train_mlgpf`)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def as_json(self) -> dict[str, Any]:
        """The settings as JSON values (what an estimator file stores); a kernel object cannot be
        stored (:class:`ArgumentError`: save the model with ``MLGPF.save``)."""
        out = self.as_dict()
        if not isinstance(out["kernel"], str):
            raise ArgumentError("an MLGPFClassifier with a kernel object cannot be saved in the estimator format; save "
                                "model_ with MLGPF.save")
        out["batch_growth"] = None if out["batch_growth"] is None else list(out["batch_growth"])
        if isinstance(out["natgrad_gamma"], tuple):
            out["natgrad_gamma"] = list(out["natgrad_gamma"])
        return out

    def sized_for(self, dataset: str, num_labels: int) -> "MLGPFSettings":
        """P and M filled in where they are ``None``: the paper's values for ``dataset``
        (:data:`PAPER_SETTINGS`), else :data:`OTHER_SIZES` with P at most ``num_labels``."""
        sizes = PAPER_SETTINGS.get(dataset, {**OTHER_SIZES, "num_latent_gps": min(num_labels, OTHER_SIZES["num_latent_gps"])})
        return self.replace(**{k: v for k, v in sizes.items() if getattr(self, k) is None})

    def sized_for_data(self, N: int, D: int, K: int, batch_given: bool) -> "MLGPFSettings":
        """P and M filled in where they are ``None``, and the batch unless ``batch_given``, by
        :func:`sizes_for_data` for data of N points, D features and K labels (what
        :class:`mlgp.recipes.MLGPFClassifier` trains with)."""
        sizes = sizes_for_data(N, D, K)
        names = ("num_latent_gps", "num_inducing") + (() if batch_given else ("batch_size",))
        return self.replace(**{n: sizes[n] for n in names if n == "batch_size" or getattr(self, n) is None})

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The field names, in order."""
        return tuple(f.name for f in dataclasses.fields(cls))


def sizes_for_data(num_points: int, num_features: int, num_labels: int) -> dict[str, int]:
    """P, M and the batch for data of N points, D features and K labels (what
    :class:`mlgp.recipes.MLGPFClassifier` uses where they are ``None``).

    P = min(K, max(20, min(300, K // 2))): half the labels up to the paper's largest P (300 on
    Delicious), all of them for K ≤ 20; M = min(N, 400, max(50, N // 10)): the paper's 400 from
    4,000 points on, a tenth of the points below; the batch min(N, 500). ``num_features`` does not
    enter (a step's cost grows with D only through the kernel's ARD weights).
    """
    P = min(num_labels, max(20, min(300, num_labels // 2)))
    M = min(num_points, 400, max(50, num_points // 10))
    return {"num_latent_gps": P, "num_inducing": M, "batch_size": min(num_points, 500)}


#: ``MLGPFClassifier(epochs="auto")`` allows at least this many epochs ...
AUTO_MIN_EPOCHS = 20
#: ... and at least this many optimiser steps (:func:`auto_epochs`).
AUTO_MIN_STEPS = 200


def auto_epochs(steps_per_epoch: int) -> int:
    """The epoch cap of ``MLGPFClassifier(epochs="auto")``: max(:data:`AUTO_MIN_EPOCHS`,
    ⌈:data:`AUTO_MIN_STEPS` / ``steps_per_epoch``⌉), so that a data set of one minibatch may take
    200 optimiser steps rather than 20 (early stopping usually ends training sooner). The steps
    per epoch are those of the first epoch's batch (``batch_growth`` makes later epochs shorter)."""
    return max(AUTO_MIN_EPOCHS, -(-AUTO_MIN_STEPS // max(1, int(steps_per_epoch))))


def setting_fields() -> dict[str, dataclasses.Field]:
    """The fields of :class:`MLGPFSettings` by name (defaults, help texts and option metadata)."""
    return {f.name: f for f in dataclasses.fields(MLGPFSettings)}


def demo_values(dataset: str, quick: bool = False) -> dict[str, Any]:
    """What ``mlgp demo`` trains ``dataset`` with, unchecked: the defaults, :data:`DEMO_SETTINGS`'s
    layer for it (``"*"`` for a dataset it does not name) and, with ``quick``, :data:`QUICK_SETTINGS`."""
    values = {f.name: f.default for f in dataclasses.fields(MLGPFSettings)}
    values.update(DEMO_SETTINGS.get(dataset, DEMO_SETTINGS["*"]))
    if quick:
        values.update(QUICK_SETTINGS)
    return values


def demo_settings(dataset: str, quick: bool = False) -> MLGPFSettings:
    """:func:`demo_values` as checked :class:`MLGPFSettings`."""
    return MLGPFSettings(**demo_values(dataset, quick))
