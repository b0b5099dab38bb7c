"""The checks of :func:`mlgp.compare`'s and :func:`mlgp.comparison.compare_many`'s arguments, all made
before any data are read or anything is written: the family names and their settings, the types of
the other arguments (an :class:`~mlgp.errors.ArgumentError` naming the argument and what it takes,
:func:`wrong_argument`), the output folder (:func:`checked_out`, the one output-folder check of
:mod:`mlgp.files`), and the estimators built and checked by :func:`mlgp.families.make_estimator`
(which checks the seed and the budget, once for each family). ``quiet_tensorflow`` is deprecated
and ignored (:func:`quiet_tensorflow_deprecated`).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..errors import ArgumentError, warn
from ..families import family, make_estimator

__all__ = ["check_read_options", "checked_families", "checked_out", "quiet_tensorflow_deprecated", "wrong_argument"]


def wrong_argument(name: str, what: str, value) -> ArgumentError:
    """``ArgumentError``: argument ``name`` takes ``what``, and got ``value`` (of its type)."""
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return ArgumentError(f"compare: {name} takes {what}, got {shown} ({type(value).__name__})")


def _check_models(models) -> list[str]:
    """The family names of ``models`` (a text, comma-separated, or an iterable of texts), checked."""
    if isinstance(models, str):
        models = [m.strip() for m in models.split(",") if m.strip()]
    elif isinstance(models, (bytes, dict)) or not hasattr(models, "__iter__"):
        raise wrong_argument("models", "a family name, a comma-separated text of them or a list of them", models)
    models = list(models)
    for m in models:
        if not isinstance(m, str):
            raise wrong_argument("models", "family names (texts)", m)
    if not models:
        raise ArgumentError("compare needs at least one family")
    twice = sorted({m for m in models if models.count(m) > 1})
    if twice:
        raise ArgumentError(f"family listed twice: {', '.join(twice)}")
    for m in models:
        family(m)
    return models


def _check_settings(settings, models: list[str]) -> dict:
    """``{family: {parameter: value}}`` for families among ``models``."""
    if settings is None:
        return {}
    if not isinstance(settings, dict):
        raise wrong_argument("settings", "a dict {family: {parameter: value}}", settings)
    for name, changes in settings.items():
        if not isinstance(name, str):
            raise wrong_argument("settings", "family names (texts) as keys", name)
        if changes is not None and not isinstance(changes, dict):
            raise wrong_argument(f"settings[{name!r}]", "a dict {parameter: value}", changes)
    stray = sorted(set(settings) - set(models))
    if stray:
        raise ArgumentError(f"settings given for {', '.join(stray)}, which is not among the families compared")
    return dict(settings)


def _check_types(dataset, train, test, data_format, out, data_home, echo, flags: dict) -> None:
    """Check the types of :func:`compare`'s other arguments (the seed and the budget are checked by
    :func:`mlgp.families.make_estimator`, once for each family)."""
    from ..data.registry import Dataset

    path = (str, os.PathLike)
    if dataset is not None and not isinstance(dataset, (str, Dataset)):
        raise wrong_argument("dataset", "a dataset name or an mlgp.data.Dataset", dataset)
    if dataset is not None and (train is not None or test is not None):
        raise ArgumentError("compare takes a dataset, or a train and a test file, not both")
    for name, value in (("train", train), ("test", test), ("out", out), ("data_home", data_home)):
        if value is not None and not isinstance(value, path):
            raise wrong_argument(name, "a path (str or os.PathLike)", value)
    if data_format is not None and not isinstance(data_format, str):
        raise wrong_argument("data_format", "a format name (str) or None", data_format)
    for name, value in flags.items():
        if not isinstance(value, (bool, np.bool_)):
            raise wrong_argument(name, "True or False", value)
    if echo is not None and not callable(echo):
        raise wrong_argument("echo", "a function of one line of text, or None", echo)


def check_read_options(read_options, train) -> None:
    """:func:`compare`'s ``read_options``: a dict (or None), and only with a ``train`` file."""
    if not (read_options is None or isinstance(read_options, dict)):
        raise wrong_argument("read_options", "a dict of read_labelled's keyword arguments or None", read_options)
    if read_options and train is None:
        raise ArgumentError("compare: read_options apply to the train and test files, and no train file is given")


def checked_out(out) -> Path | None:
    """``out`` as a :class:`~pathlib.Path`, checked before any work as every output folder is
    (:func:`mlgp.files.check_output_folder`); ``None`` stays ``None``."""
    if out is None:
        return None
    from ..files import check_output_folder

    check_output_folder(Path(out))
    return Path(out)


def quiet_tensorflow_deprecated(value, where: str) -> None:
    """A ``FutureWarning`` when ``where(quiet_tensorflow=...)`` was given: the argument is ignored
    (the library is quiet by itself, :mod:`mlgp.quiet`); to be removed."""
    if value is not None:
        warn(f"{where}(quiet_tensorflow=...) is deprecated and ignored: TensorFlow comes up without its start-up "
             "lines by itself (mlgp.quiet); set TF_CPP_MIN_LOG_LEVEL to choose its logging", FutureWarning)


def checked_families(models, settings, seed, budget, source: tuple, out, data_home, echo,
                      flags: dict) -> tuple[list[str], dict]:
    """The family names and their estimators, every argument checked before any data are read
    (:func:`compare` and :func:`mlgp.comparison.many.compare_many`); ``source``: ``(dataset, train,
    test, data_format)``."""
    models = _check_models(models)
    settings = _check_settings(settings, models)
    _check_types(*source, out, data_home, echo, flags)
    return models, {m: make_estimator(m, settings.get(m), seed=seed, budget=budget) for m in models}
