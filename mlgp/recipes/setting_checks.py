"""Each setting of :class:`mlgp.recipes.MLGPFSettings` checked and canonicalised, and the registries
its choices come from (read when they are needed: importing this module imports no TensorFlow).
:func:`batch_growth` is the one parser of a batch schedule."""

from __future__ import annotations

from typing import Any

from .. import arguments
from ..errors import ArgumentError

__all__ = ["BATCH_GROWTH_NAMES", "PAPER_BATCH_GROWTH", "PREPROCESSINGS", "batch_growth", "can_tie", "check_together", "checked",
           "resolved_warmup"]

#: The authors' batch schedule (their code's defaults): start at 100 points, add 20 every 10 epochs.
PAPER_BATCH_GROWTH: tuple[int, int] = (10, 20)

#: Named batch schedules.
BATCH_GROWTH_NAMES: dict[str, tuple[int, int]] = {"paper": PAPER_BATCH_GROWTH}


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


#: The preprocessings of :class:`MLGPFSettings` (``"auto"`` resolves to one of the others).
PREPROCESSINGS = ("auto", "rows", "columns")


def _bias_init_names() -> tuple[str, ...]:
    from ..models.builders import BIAS_INITS

    return tuple(BIAS_INITS)


# --------------------------------------------------------------------------- checks
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


def resolved_warmup(s) -> int | str:
    """``s.covariance_warmup`` with ``"auto"`` resolved: ``"all"`` where the factors can be tied
    (:func:`can_tie`), else 0."""
    if s.covariance_warmup != "auto":
        return s.covariance_warmup
    return "all" if can_tie(s) else 0


def _check_preprocessing(value) -> str:
    if not isinstance(value, str) or value not in PREPROCESSINGS:
        raise ArgumentError(f"preprocessing must be one of {', '.join(map(repr, PREPROCESSINGS))}; got {value!r}")
    return value


def _check_optimizer(value) -> str:
    names = _optimizer_names()
    if not isinstance(value, str) or value not in names:
        raise ArgumentError(f"optimizer must be one of {', '.join(repr(n) for n in names)}; got {value!r}")
    return value


def batch_growth(value) -> tuple[int, int] | None:
    """A batch schedule ``(every, increment)`` from a name, a text or a pair.

    Parameters
    ----------
    value
        ``None`` (fixed batch), a name of :data:`BATCH_GROWTH_NAMES` (``"paper"``), a text
        ``"EVERY,INC"`` or a pair ``(every, increment)``, with EVERY ≥ 1 and INC ≥ 0 whole numbers.

    Raises
    ------
    ArgumentError
        For anything else, naming what is accepted.
    """
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
