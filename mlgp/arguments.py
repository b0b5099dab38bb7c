"""The one check of numeric and flag arguments, shared by every entry point.

Contract: each function takes what a user passed for the argument called ``name`` and returns it as
a plain Python value (``int``, ``float`` or ``bool``), or raises :class:`~mlgp.errors.ArgumentError`
(a ``ValueError``) with the message ``"<name> must be <what>, got <value>"``. Booleans are never
taken for numbers, non-finite numbers never pass, and nothing is rounded or clamped.
:func:`mlgp.training.fit`, :func:`mlgp.models.mlgpf_from_data`, :class:`mlgp.recipes.MLGPFSettings`
and the command line (:func:`argparse_type`) all check through these, so one value gets one answer
in the package's words wherever it is given. No TensorFlow.

A time budget has one rule, :func:`is_seconds` (checked by :func:`max_seconds`), wherever it is
given — an estimator's ``max_seconds`` (:data:`mlgp.estimator.budget.MAX_SECONDS`),
:class:`mlgp.estimator.budget.Budget`, :func:`mlgp.recipes.train_mlgpf`, :func:`mlgp.training.fit`,
the ``budget`` of :func:`mlgp.families.make_estimator`, :func:`mlgp.compare` and ``--budget``:
``None`` is no bound; a real number strictly between 0 and infinity is that many wall seconds;
refused are ``inf`` (and an integer too large for a float: say ``None`` for no bound), NaN, 0,
negative numbers, booleans (``True`` is not 1 second) and anything that is not a real number.
"""

from __future__ import annotations

import argparse
import math
import numbers
from typing import Callable

import numpy as np

from .errors import ArgumentError

__all__ = [
    "MAX_SEED",
    "argparse_type",
    "batch_growth_pair",
    "covariance_warmup",
    "finite_real",
    "flag",
    "is_seconds",
    "kl_weight",
    "max_seconds",
    "natgrad_gamma",
    "non_negative_int",
    "positive_int",
    "positive_real",
    "seed",
]

#: The largest seed accepted (NumPy, scikit-learn and TensorFlow all take it).
MAX_SEED = 2**31 - 1


def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def _is_real(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _as_float(value) -> float:
    """``float(value)``, or inf for a number too large for a float (an int of 400 digits)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf


def positive_int(value, name: str, *, optional: bool = False) -> int | None:
    """``value`` as an ``int`` ≥ 1 (``None`` passes when ``optional``)."""
    if value is None and optional:
        return None
    if not _is_int(value) or value < 1:
        raise ArgumentError(f"{name} must be a positive integer{' or None' if optional else ''}, got {value!r}")
    return int(value)


def non_negative_int(value, name: str) -> int:
    """``value`` as an ``int`` ≥ 0."""
    if not _is_int(value) or value < 0:
        raise ArgumentError(f"{name} must be a non-negative integer, got {value!r}")
    return int(value)


def covariance_warmup(value, name: str = "covariance_warmup", *, auto: bool = False) -> int | str:
    """Steps with q(u)'s factors tied: ``"all"`` (the whole run) or a whole number ≥ 0, given as
    such or as text (``"all"``, ``"120"``); with ``auto``, ``"auto"`` too (the recipe's default)."""
    if isinstance(value, str):
        text = value.strip().lower()
        if text == "all" or (auto and text == "auto"):
            return text
        if not text.isdigit():
            choices = "'auto', 'all'" if auto else "'all'"
            raise ArgumentError(f"{name} must be {choices} or a whole number of steps ≥ 0; got {value!r}")
        value = int(text)
    return non_negative_int(value, name)


def kl_weight(value, name: str = "kl_weight") -> float:
    """The KL term's weight in the training objective: a number in (0, 1] (1: the ELBO itself;
    the authors' code of MLGPF trains with ½)."""
    if not _is_real(value) or not 0 < _as_float(value) <= 1:
        raise ArgumentError(f"{name} must be a number in (0, 1], got {value!r}")
    return float(value)


def seed(value, name: str = "seed") -> int:
    """A seed: an ``int`` from 0 to :data:`MAX_SEED`."""
    if not _is_int(value) or not 0 <= value <= MAX_SEED:
        raise ArgumentError(f"{name} must be an integer from 0 to {MAX_SEED}, got {value!r}")
    return int(value)


def positive_real(value, name: str, *, optional: bool = False) -> float | None:
    """``value`` as a finite ``float`` > 0 (``None`` passes when ``optional``)."""
    if value is None and optional:
        return None
    if not _is_real(value) or not 0 < value < math.inf or not math.isfinite(_as_float(value)):
        raise ArgumentError(f"{name} must be a positive finite number{' or None' if optional else ''}, got {value!r}")
    return float(value)


def is_seconds(value) -> bool:
    """Whether ``value`` is a time budget by the module's one rule: ``None``, or a real number (not a
    boolean) with 0 < value < inf."""
    return value is None or (_is_real(value) and 0 < _as_float(value) < math.inf)


def max_seconds(value, name: str = "max_seconds") -> float | None:
    """``value`` as a budget in seconds by :func:`is_seconds` (a ``float``, or ``None``: no bound)."""
    if not is_seconds(value):
        raise ArgumentError(f"{name} must be a positive number (finite seconds) or None, got {value!r}")
    return None if value is None else float(value)


def finite_real(value, name: str) -> float:
    """``value`` as a finite ``float``."""
    if not _is_real(value) or not math.isfinite(_as_float(value)):
        raise ArgumentError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def flag(value, name: str) -> bool:
    """``value`` as a ``bool``: ``True``/``False`` (NumPy's too); anything else (``"no"``, 0.5,
    ``None``) is refused instead of being taken by its truth value."""
    if not isinstance(value, (bool, np.bool_)):
        raise ArgumentError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def natgrad_gamma(value, name: str = "natgrad_gamma") -> float | tuple[float, float, int]:
    """A natural-gradient step: γ (a finite number > 0), or ``(gamma_start, gamma, ramp_steps)``
    with finite γs > 0 and a whole ramp ≥ 0 (a log-linear ramp from ``gamma_start`` to ``gamma``)."""
    if _is_real(value):
        return positive_real(value, name)
    message = f"{name} must be γ > 0 or (gamma_start > 0, gamma > 0, ramp_steps ≥ 0), got {value!r}"
    if not isinstance(value, (tuple, list)) or len(value) != 3:
        raise ArgumentError(message)
    try:
        return positive_real(value[0], name), positive_real(value[1], name), non_negative_int(value[2], name)
    except ArgumentError:
        raise ArgumentError(message) from None


def batch_growth_pair(value, name: str = "batch_growth") -> tuple[int, int]:
    """A batch schedule ``(every, increment)``: whole numbers with every ≥ 1 and increment ≥ 0."""
    message = f"{name} must be a pair (every ≥ 1, increment ≥ 0) of whole numbers, got {value!r}"
    if not isinstance(value, (tuple, list)) or len(value) != 2 or not all(_is_int(v) for v in value):
        raise ArgumentError(message)
    if value[0] < 1 or value[1] < 0:
        raise ArgumentError(message)
    return int(value[0]), int(value[1])


def argparse_type(check: Callable, convert: Callable[[str], object], expected: str, name: str) -> Callable[[str], object]:
    """An argparse ``type`` that converts the option's text with ``convert`` and checks the result
    with ``check(value, name)``; a failure is argparse's ``expected <expected>, got '<text>'``."""

    def parse(text: str):
        try:
            return check(convert(text), name)
        except (ValueError, OverflowError):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None

    parse.__name__ = parse.__qualname__ = f"{check.__name__}_option"
    parse.__doc__ = f"argparse type: {expected} (:func:`mlgp.arguments.{check.__name__}`)."
    return parse
