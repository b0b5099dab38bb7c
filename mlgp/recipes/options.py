"""The MLGPF settings as command-line options, generated from the fields of :class:`MLGPFSettings`.

:func:`add_settings_options` adds one argparse option per named field: its flag, metavar, parser
and help text come from the field's metadata, its ``choices`` from the field's registry, read only
when a value is checked or the help is printed (:class:`RegistryChoices`: building a parser imports
no TensorFlow). Every option's argparse default is ``None`` ("not given"), so that the caller's
settings layer decides the value; the help text ends with ``(default: …)`` as the caller describes
it (:func:`describe_value`, :func:`describe_cases`). :func:`given_settings` collects the options
given. ``mlgp demo`` and the experiment scripts (:mod:`mlgp.experiment.mlgpf_options`) use it.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any, Callable, Iterable, Mapping

from .. import arguments
from ..arguments import MAX_SEED, argparse_type
from ..errors import MLGPError
from .settings import batch_growth, setting_fields

__all__ = [
    "MAX_SEED",
    "RegistryChoices",
    "add_settings_options",
    "describe_cases",
    "describe_value",
    "given_settings",
    "non_negative_int",
    "positive_float",
    "positive_int",
]

#: argparse type: a whole number ≥ 1 (checked by :func:`mlgp.arguments.positive_int`).
positive_int = argparse_type(arguments.positive_int, int, "a positive integer", "option")
#: argparse type: a seed, a whole number in [0, 2³¹ − 1] (:func:`mlgp.arguments.seed`).
non_negative_int = argparse_type(arguments.seed, int, f"an integer from 0 to {MAX_SEED}", "seed")
#: argparse type: a finite number > 0 (:func:`mlgp.arguments.positive_real`).
positive_float = argparse_type(arguments.positive_real, float, "a positive number", "option")


def _batch_growth(text: str) -> tuple[int, int]:
    """argparse type: a batch schedule, as :func:`mlgp.recipes.batch_growth` parses it."""
    try:
        return batch_growth(text)
    except MLGPError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _covariance_warmup(text: str) -> int | str:
    """argparse type: ``auto``, ``all`` or a whole number of steps ≥ 0 (:func:`mlgp.arguments.covariance_warmup`)."""
    try:
        return arguments.covariance_warmup(text, auto=True)
    except MLGPError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


kl_weight = argparse_type(arguments.kl_weight, float, "a number in (0, 1]", "option")

_TYPES: dict[str, Callable[[str], Any]] = {
    "positive_int": positive_int,
    "seed": non_negative_int,
    "positive_float": positive_float,
    "batch_growth": _batch_growth,
    "warmup": _covariance_warmup,
    "kl_weight": kl_weight,
}


class RegistryChoices(Sequence):
    """argparse ``choices`` read from a registry the first time they are needed.

    Parameters
    ----------
    load
        Returns the registry's names (e.g. the keys of :data:`mlgp.variational.Q_FAMILIES`).
    """

    def __init__(self, load: Callable[[], Iterable[str]]) -> None:
        self._load = load
        self._names: tuple[str, ...] | None = None

    @property
    def names(self) -> tuple[str, ...]:
        """The registry's names."""
        if self._names is None:
            self._names = tuple(self._load())
        return self._names

    def __getitem__(self, index):
        return self.names[index]

    def __len__(self) -> int:
        return len(self.names)

    def __contains__(self, value) -> bool:
        return value in self.names

    def __repr__(self) -> str:
        return f"RegistryChoices({self._load.__qualname__})"


def describe_value(name: str, value) -> str:
    """How a help text shows the value of field ``name``: ``None`` as the field says, booleans as
    on/off, pairs as ``a,b``."""
    if value is None:
        return setting_fields()[name].metadata["none"] or "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def describe_cases(name: str, cases: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    """Field ``name``'s value over named cases, e.g. ``"60 on bibtex and other datasets, 10 on
    synthetic"``; the bare value when every case has the same one.

    ``cases``: ``(where, values)`` pairs, ``where`` completing "… on <where>".
    """
    groups: dict[str, list[str]] = {}
    for where, values in cases:
        groups.setdefault(describe_value(name, values[name]), []).append(where)
    if len(groups) == 1:
        return next(iter(groups))
    return ", ".join(f"{value} on {' and '.join(where)}" for value, where in groups.items())


def add_settings_options(parser: argparse.ArgumentParser, names: Sequence[str], default_text: Callable[[str], str],
                         notes: Mapping[str, str] | None = None) -> None:
    """Add an option for each field of :class:`MLGPFSettings` in ``names``, in that order.

    Parameters
    ----------
    parser
        The parser (or argument group) to add to.
    names
        Field names; each field's metadata gives its flag (``--field-name`` by default), metavar,
        parser (positive integers, seeds, positive numbers, a batch schedule, ``--x/--no-x`` for
        booleans, a registry's names for choices) and help text.
    default_text
        ``default_text(name)``: what the help text says after ``default:`` (the value the caller
        will really use).
    notes
        Extra help text per field, appended to the field's own.

    Raises
    ------
    ValueError
        For a field without a command-line form (``natgrad_gamma``).
    """
    fields = setting_fields()
    for name in names:
        meta = fields[name].metadata
        if meta["kind"] is None:
            raise ValueError(f"the MLGPF setting {name!r} has no command-line option")
        flag = meta["flag"] or "--" + name.replace("_", "-")
        text = meta["help"] + (f"; {notes[name]}" if notes and name in notes else "")
        kw: dict[str, Any] = dict(dest=name, default=None)
        if meta["kind"] == "bool":
            kw["action"] = argparse.BooleanOptionalAction
        elif meta["kind"] == "choice":
            kw["choices"] = RegistryChoices(meta["choices"])
            text += ": %(choices)s"
        else:
            kw["type"] = _TYPES[meta["kind"]]
        if meta["metavar"] and meta["kind"] != "bool":
            kw["metavar"] = meta["metavar"]
        elif meta["kind"] == "choice":
            kw["metavar"] = name.upper()
        parser.add_argument(flag, help=f"{text} (default: {default_text(name)})", **kw)


def given_settings(args: argparse.Namespace, names: Iterable[str]) -> dict[str, Any]:
    """``{field: value}`` of the options among ``names`` given on the command line."""
    return {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}
