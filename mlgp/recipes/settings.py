"""The MLGPF recipe's settings in one place: :class:`MLGPFSettings`, the check of each of its
fields and the layers put over it.

:class:`MLGPFSettings` is a frozen dataclass with one field per option of
:func:`mlgp.recipes.train_mlgpf`, each with its default and a one-line help text
(``field(metadata=...)``); building one checks and canonicalises every value once (:func:`checked`,
then :func:`check_together` between fields), raising :class:`mlgp.errors.ArgumentError` for a bad
value or choice. The choices come from each choice's own registry
(:data:`mlgp.kernels.factory.KERNELS`, :data:`mlgp.variational.Q_FAMILIES`,
:data:`mlgp.training.OPTIMIZERS`, :data:`mlgp.floats.FLOAT_POLICIES`,
:data:`mlgp.models.builders.BIAS_INITS`), read when they are needed: importing this module imports
no TensorFlow.

Over the defaults lie named layers of changes, each a ``{field: value}`` dict:
:data:`PAPER_SETTINGS` (the paper's P and M per dataset; :data:`OTHER_SIZES` elsewhere),
:data:`PAPER_FORM` (the paper's q(u), precision and start, which the experiment scripts train in
and :func:`mlgp.models.mlgpf_from_data` builds by default), :data:`DEMO_SETTINGS` (``mlgp demo``'s
sizes per dataset) and :data:`QUICK_SETTINGS` (every ``--quick`` run). The command-line options of
``mlgp demo`` and of the experiment scripts are generated from the fields
(:mod:`mlgp.recipes.options`). :func:`batch_growth` is the one parser of a batch schedule. What the
classifier leaves to the data (P, M and the batch from N, D and K, the epochs, the preprocessing,
the factors' warm-up) is resolved on it where the run is built (:mod:`mlgp.recipes.build`).
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable

from .. import arguments
from ..errors import ArgumentError

__all__ = ["BATCH_GROWTH_NAMES", "DEMO_SETTINGS", "MLGPFSettings", "OTHER_SIZES", "PAPER_BATCH_GROWTH", "PAPER_FORM",
           "PAPER_SETTINGS", "PREPROCESSINGS", "QUICK_SETTINGS", "batch_growth", "can_tie", "check_together", "checked",
           "demo_settings", "demo_values", "setting_fields"]

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

#: The authors' batch schedule (their code's defaults): start at 100 points, add 20 every 10 epochs.
PAPER_BATCH_GROWTH: tuple[int, int] = (10, 20)
#: Named batch schedules.
BATCH_GROWTH_NAMES: dict[str, tuple[int, int]] = {"paper": PAPER_BATCH_GROWTH}
#: The preprocessings of :class:`MLGPFSettings` (``"auto"`` resolves to one of the others).
PREPROCESSINGS = ("auto", "rows", "columns")

# --------------------------------------------------------------------------- the registries, read lazily
def _kernel_names() -> tuple[str, ...]:
    from ..kernels.factory import KERNELS
    return tuple(KERNELS)


def _q_family_names() -> tuple[str, ...]:
    from ..variational.factory import Q_FAMILIES
    return tuple(Q_FAMILIES)


def _optimizer_names() -> tuple[str, ...]:
    from ..training.optimizers import OPTIMIZERS
    return tuple(OPTIMIZERS)


def _dtype_names() -> tuple[str, ...]:
    from ..floats import FLOAT_POLICIES
    return tuple(FLOAT_POLICIES)


def _bias_init_names() -> tuple[str, ...]:
    from ..models.builders import BIAS_INITS
    return tuple(BIAS_INITS)


def _setting(default, help: str, *, kind: str | None = None, choices: Callable[[], tuple[str, ...]] | None = None,
             flag: str | None = None, metavar: str | None = None, none: str | None = None):
    """A field of :class:`MLGPFSettings`; ``metadata`` holds what its command-line option needs:
    ``kind``, how the option parses its text (``"positive_int"``, ``"seed"``, ``"positive_float"``,
    ``"bool"``, ``"batch_growth"``; ``"choice"`` with ``choices``, a function returning the
    registry's names; ``None``: no command-line option); ``flag`` (default ``--field-name``),
    ``metavar``; ``none``: what the value ``None`` means, for help texts."""
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
        and variances) it ranked and predicted better on Bibtex and Delicious, and about the same
        on the smaller sets (figures in ``docs/results.md``, "MLGPF: the kernel").
    num_latent_gps, num_inducing
        P and M; ``None``: :meth:`sized_for` the dataset.
    epochs, batch_size, negatives, learning_rate, optimizer, natgrad_gamma
        How :func:`mlgp.training.fit` trains (``negatives=None``: every label, the exact bound).
    unit_sphere_inducing
        Keep Z on the unit sphere like the L2-normalised inputs, as the authors' code does
        (:class:`mlgp.inducing.UnitSphereInducingPoints`; docs/results.md compares the two).
    q_family, dtype, warm_start, bias_init
        The model's form: see :func:`mlgp.models.mlgpf_from_data`.
    batch_growth
        ``(every, increment)``, ``"paper"`` or ``"EVERY,INC"`` (:func:`batch_growth`).
    subspace_rank, subspace_sample
        R: subspace inducing inputs, their basis from a row sample of this size
        (:func:`mlgp.models.mlgpf_from_data`'s ``subspace_rank`` and ``subspace_sample``).
    kl_weight
        Each step maximises the expected log-likelihood minus w × KL (:func:`mlgp.training.fit`'s
        ``kl_weight``); the paper's bound is w = 1, the authors' code trains with ½.
    covariance_warmup
        Optimiser steps at the start during which q(u)'s P Cholesky factors are tied
        (:mod:`mlgp.training.warmup`): ``"all"`` the whole run, 0 none (the paper's, and
        :data:`PAPER_FORM`'s); ``"auto"`` (the default) ``"all"`` where they can be (:func:`can_tie`),
        else 0. Tied, a step costs a fraction of a full one and the recipe reaches a given test P@1
        several times sooner (figures in docs/results.md, "MLGPF: time to accuracy").
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

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The field names, in order."""
        return tuple(f.name for f in dataclasses.fields(cls))


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


# --------------------------------------------------------------------------- each field's check
def _kernel_object(kernel):
    """A GPflow kernel given instead of a name, or :class:`ArgumentError`."""
    from ..quiet import quiet_tensorflow

    quiet_tensorflow()
    from gpflow.kernels import Kernel
    if not isinstance(kernel, Kernel):
        raise ArgumentError(f"kernel must be a kernel name or a gpflow.kernels.Kernel; got {kernel!r}")
    return kernel


def _field_checks() -> dict[str, Any]:
    """Each field's check (and canonical form), by name (see :class:`MLGPFSettings`)."""
    from ..floats import float_policy
    from ..kernels.factory import canonical_kernel_name
    from ..models.builders import check_bias_init
    from ..variational.factory import check_q_family

    def optional_int(name):
        return lambda v: arguments.positive_int(v, name, optional=True)

    return dict(
        kernel=lambda v: canonical_kernel_name(v) if isinstance(v, str) else _kernel_object(v),
        num_latent_gps=optional_int("num_latent_gps"),
        num_inducing=optional_int("num_inducing"),
        epochs=lambda v: arguments.positive_int(v, "epochs"),
        batch_size=lambda v: arguments.positive_int(v, "batch_size"),
        negatives=optional_int("negatives"),
        learning_rate=lambda v: arguments.positive_real(v, "learning_rate"),
        fixed_inducing=lambda v: arguments.flag(v, "fixed_inducing"),
        unit_sphere_inducing=lambda v: arguments.flag(v, "unit_sphere_inducing"),
        q_family=check_q_family,
        optimizer=_check_optimizer,
        natgrad_gamma=arguments.natgrad_gamma,
        dtype=lambda v: float_policy(v).name,
        warm_start=lambda v: arguments.flag(v, "warm_start"),
        batch_growth=batch_growth,
        bias_init=check_bias_init,
        subspace_rank=optional_int("subspace_rank"),
        subspace_sample=optional_int("subspace_sample"),
        preprocessing=_check_preprocessing,
        covariance_warmup=lambda v: arguments.covariance_warmup(v, auto=True),
        kl_weight=arguments.kl_weight,
        seed=arguments.seed,
        max_train=optional_int("max_train"),
    )


def checked(values: dict[str, Any]) -> dict[str, Any]:
    """The fields in ``values`` checked and canonicalised, in the class's field order."""
    checks = _field_checks()
    return {name: checks[name](values[name]) for name in checks if name in values}


def check_together(s) -> None:
    """The checks between fields."""
    if s.subspace_sample is not None and s.subspace_rank is None:
        raise ArgumentError("subspace_sample chooses the rows of the subspace's basis: it needs subspace_rank")
    if s.optimizer == "natgrad" and s.q_family == "preconditioned":
        raise ArgumentError("optimizer='natgrad' needs a Cholesky q(u) family ('cholesky' or 'whitened'); the "
                            "preconditioned family's natural-gradient step leaves the family (see docs/q_families.md)")
    if s.covariance_warmup not in (0, "auto") and not can_tie(s):
        raise ArgumentError(f"covariance_warmup={s.covariance_warmup!r} ties the factors of a Cholesky q(u) family "
                            f"trained by Adam; with q_family={s.q_family!r} and optimizer={s.optimizer!r} use "
                            "covariance_warmup=0 (or 'auto')")


def can_tie(s) -> bool:
    """Whether settings ``s`` train a q(u) family whose factors can be tied (a Cholesky family with Adam)."""
    return s.optimizer == "adam" and s.q_family in ("cholesky", "whitened")


def _check_preprocessing(value) -> str:
    """``value`` if it is one of :data:`PREPROCESSINGS`, else :class:`ArgumentError` naming them."""
    if not isinstance(value, str) or value not in PREPROCESSINGS:
        raise ArgumentError(f"preprocessing must be one of {', '.join(map(repr, PREPROCESSINGS))}; got {value!r}")
    return value


def _check_optimizer(value) -> str:
    names = _optimizer_names()
    if not isinstance(value, str) or value not in names:
        raise ArgumentError(f"optimizer must be one of {', '.join(repr(n) for n in names)}; got {value!r}")
    return value


def batch_growth(value) -> tuple[int, int] | None:
    """A batch schedule ``(every, increment)`` from ``value``: ``None`` (a fixed batch), a name of
    :data:`BATCH_GROWTH_NAMES` (``"paper"``), a text ``"EVERY,INC"`` or a pair ``(every, increment)``,
    with EVERY ≥ 1 and INC ≥ 0 whole numbers; anything else raises :class:`ArgumentError` naming
    what is accepted."""
    if value is None:
        return None
    accepted = f"{' or '.join(repr(n) for n in BATCH_GROWTH_NAMES)}, 'EVERY,INC' or a pair (every, increment)"
    if isinstance(value, str):
        text = value.strip().lower()
        if text in BATCH_GROWTH_NAMES:
            return BATCH_GROWTH_NAMES[text]
        try:
            pair = tuple(int(v) for v in text.split(","))
        except ValueError:
            raise ArgumentError(f"batch_growth must be {accepted}; got {value!r}") from None
        if len(pair) != 2:
            raise ArgumentError(f"batch_growth must be {accepted}; got {value!r}")
        if pair[0] < 1 or pair[1] < 0:
            raise ArgumentError(f"batch_growth needs EVERY ≥ 1 and INC ≥ 0, got {value!r}")
        return pair
    return arguments.batch_growth_pair(value)  # a pair: the check fit uses
