"""``mlgp params FAMILY [--seed N] [--budget SECONDS] [--out FILE]`` and the parameter files that
``mlgp fit --params FILE`` and ``mlgp compare --params FAMILY=FILE`` read: parameters as files.

``mlgp params`` prints (or writes atomically, :func:`mlgp.files.atomic_write`) one JSON object::

    {"class": "FastXML", "family": "fastxml", "params": {"bias": 1.0, ...}}

with sorted keys: the constructor parameters that ``mlgp fit FAMILY`` with the same ``--seed`` and
``--budget`` builds the estimator with (:func:`family_parameters`). A tuple is written as a JSON
array; a value JSON cannot hold (a NumPy array, an object, NaN) is an error naming the parameter.

A parameter file is that object, or a plain ``{name: value}`` object. Reading it
(:func:`read_params`) turns every JSON array into a tuple, so that a file written by ``mlgp
params`` builds an estimator whose ``get_params()`` equals the one it was written from. The
parameters of an estimator, from weakest to strongest (:func:`file_changes`):

1. the class's defaults;
2. the command line's defaults of the family (:data:`mlgp.families.FAMILIES`: the trees' ``n_jobs=-1``);
3. ``--budget`` (``max_seconds``, and MLGPF's ``epochs=100000``) and ``--seed``;
4. the ``--params`` file;
5. ``--set NAME=VALUE``.

A file written with ``--seed 0`` therefore keeps seed 0 under ``mlgp fit --seed 1``: give
``--set random_state=1`` (or leave the parameter out of the file) to change it. The file is checked
on its own (with the seed and the budget) before ``--set`` is applied and before any data are read:
an unreadable file, text that is not JSON, JSON that is not an object, a family that is not the one
fitted, an unknown parameter or a value outside its constraints is one line ``mlgp: error: FILE:
...`` and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from ..errors import ArgumentError
from .common import seconds, seed_number

__all__ = ["add_parser", "run", "family_parameters", "params_document", "to_json", "from_json", "read_params",
           "file_changes", "param_files", "compare_settings"]

#: The keys of the object that ``mlgp params`` writes (``params`` holds the parameters).
DOCUMENT_KEYS = ("class", "family", "params")


def add_parser(sub, home_kw: dict) -> argparse.ArgumentParser:
    """Register the subcommand on ``sub`` (from ``add_subparsers``)."""
    from ..families import FAMILIES

    p = sub.add_parser("params", help="print a family's parameters as JSON (for --params)",
                       description="Print the constructor parameters that 'mlgp fit FAMILY' builds the estimator "
                                   "with, as one JSON object {\"family\", \"class\", \"params\"}, for "
                                   "'mlgp fit FAMILY --params FILE' and 'mlgp compare --params FAMILY=FILE'. "
                                   "Precedence there: class defaults < the command line's defaults < --budget and "
                                   "--seed < the file < --set.")
    p.add_argument("family", choices=list(FAMILIES), metavar="FAMILY", help=f"one of: {' '.join(FAMILIES)}")
    p.add_argument("--seed", type=seed_number, default=None, metavar="N", help="seed, as 'mlgp fit --seed'")
    p.add_argument("--budget", type=seconds, default=None, metavar="SECONDS",
                   help="wall seconds of the fit, as 'mlgp fit --budget'")
    p.add_argument("--out", type=Path, default=None, metavar="FILE", help="JSON file (default: standard output)")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Print or write the parameters of ``args.family``."""
    from ..files import atomic_write_text

    text = json.dumps(params_document(args.family, seed=args.seed, budget=args.budget), indent=2,
                      sort_keys=True, allow_nan=False) + "\n"
    if args.out is None:
        sys.stdout.write(text)
    else:
        atomic_write_text(args.out, text)
        print(f"parameters of {args.family} written to {args.out}", file=sys.stderr)
    return 0


def family_parameters(name: str, *, seed: int | None = None, budget: float | None = None) -> dict:
    """The constructor parameters of family ``name`` as ``mlgp fit`` builds it.

    Parameters
    ----------
    name
        A family of :data:`mlgp.families.FAMILIES`.
    seed, budget
        As ``mlgp fit --seed`` and ``--budget``.

    Returns
    -------
    dict
        ``get_params(deep=False)`` of :func:`mlgp.families.make_estimator`'s estimator.
    """
    from ..families import make_estimator

    return make_estimator(name, seed=seed, budget=budget).get_params(deep=False)


def params_document(name: str, *, seed: int | None = None, budget: float | None = None) -> dict:
    """``{"family": name, "class": class name, "params": {...}}`` with JSON values (:func:`to_json`)."""
    from ..families import family

    params = family_parameters(name, seed=seed, budget=budget)
    return {"family": name, "class": family(name).estimator_class.__name__,
            "params": {key: to_json(value, key) for key, value in sorted(params.items())}}


def to_json(value, name: str):
    """``value`` as a JSON value: tuples and lists as lists, NumPy scalars as Python numbers.

    Raises
    ------
    ArgumentError
        Naming the parameter ``name``, for a value JSON cannot hold (NaN, an infinity, a NumPy array,
        an object, a dict).
    """
    import numpy as np

    if isinstance(value, (np.bool_, np.integer, np.floating)):
        value = value.item()
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    if isinstance(value, (tuple, list)):
        return [to_json(v, name) for v in value]
    shown = " ".join(repr(value).split())  # one line
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    raise ArgumentError(f"parameter {name!r}: {shown} ({type(value).__name__}) cannot be written as JSON")


def from_json(value):
    """A JSON value as a parameter: every array a tuple (recursively), the rest as they are."""
    if isinstance(value, list):
        return tuple(from_json(v) for v in value)
    return value


def read_params(path: Path, name: str) -> dict:
    """The parameters of a parameter file for family ``name``, every JSON array a tuple.

    The file holds ``{"family": ..., "class": ..., "params": {...}}`` (what ``mlgp params``
    writes; ``family`` and ``class`` may be left out) or a plain ``{name: value}`` object. The
    values are not checked here (:func:`file_changes` does).

    Raises
    ------
    ArgumentError
        ``"FILE: ..."`` for a file that cannot be read, is not UTF-8 JSON, is not an object, or
        names another family or class.
    """
    data = _load_json(path)
    if "params" in data:
        data = _unwrap(path, data, name)
    return {key: from_json(value) for key, value in data.items()}


def _load_json(path: Path) -> dict:
    """The JSON object in ``path`` (duplicate keys, NaN and infinities refused)."""
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except OSError as err:
        raise ArgumentError(f"{path}: cannot read the parameter file: {err.strerror or err}") from None
    except UnicodeDecodeError:
        raise ArgumentError(f"{path}: the parameter file is not UTF-8 text") from None
    try:
        data = json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except ValueError as err:
        raise ArgumentError(f"{path}: not JSON: {err}") from None
    if not isinstance(data, dict):
        raise ArgumentError(f"{path}: expected a JSON object {{name: value}}, got a JSON {_json_type(data)}")
    return data


def _unique_keys(pairs: list) -> dict:
    keys = [k for k, _ in pairs]
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        raise ValueError(f"key(s) given twice: {', '.join(map(repr, twice))}")
    return dict(pairs)


def _no_constant(text: str):
    raise ValueError(f"{text} is not a JSON number")


def _json_type(value) -> str:
    names = {list: "array", str: "string", bool: "boolean", int: "number", float: "number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _unwrap(path: Path, data: dict, name: str) -> dict:
    """The ``params`` object of the form that ``mlgp params`` writes, its family and class checked."""
    from ..families import family

    stray = sorted(set(data) - set(DOCUMENT_KEYS))
    if stray:
        raise ArgumentError(f"{path}: unexpected key(s) {', '.join(map(repr, stray))} beside 'params' "
                            f"(the file holds {{\"family\", \"class\", \"params\"}} or {{name: value}})")
    if "family" in data and data["family"] != name:
        raise ArgumentError(f"{path}: holds the parameters of family {data['family']!r}, not {name!r}")
    cls = family(name).estimator_class.__name__
    if "class" in data and data["class"] != cls:
        raise ArgumentError(f"{path}: holds the parameters of class {data['class']!r}, not {cls!r} ({name})")
    if not isinstance(data["params"], dict):
        raise ArgumentError(f"{path}: 'params' must be a JSON object {{name: value}}, "
                            f"got a JSON {_json_type(data['params'])}")
    return data["params"]


def file_changes(name: str, path: Path | None, changes: dict | None = None, *, seed: int | None = None,
                 budget: float | None = None) -> dict:
    """The changes to pass to :func:`mlgp.families.make_estimator`: the file's parameters, then
    ``changes`` (``--set``) over them.

    Parameters
    ----------
    name
        The family.
    path
        The parameter file (``None``: none, ``changes`` alone).
    changes
        ``--set``'s ``{name: value}``.
    seed, budget
        ``--seed`` and ``--budget``: the file is checked with them, as it will be used.

    Raises
    ------
    ArgumentError
        ``"FILE: ..."`` (one line) for a bad file (:func:`read_params`), an unknown parameter or a
        value outside its constraints, before any data are read.
    """
    from ..families import make_estimator

    changes = dict(changes or {})
    if path is None:
        return changes
    params = read_params(path, name)
    try:
        make_estimator(name, params, seed=seed, budget=budget)
    except ArgumentError as err:
        make_estimator(name, seed=seed, budget=budget)  # a bad --budget or --seed is not the file's fault
        raise ArgumentError(f"{path}: " + " ".join(str(err).split("\n"))) from None
    return {**params, **changes}


def param_files(values: list[str] | None, models: str) -> dict[str, Path]:
    """``mlgp compare``'s ``--params FAMILY=FILE`` options as ``{FAMILY: FILE}``.

    Raises
    ------
    ArgumentError
        For an option without ``=``, an unknown family, a family not among ``models`` (the
        comma-separated ``--models``) or a family given twice.
    """
    from ..families import family

    compared = [m.strip() for m in models.split(",") if m.strip()]
    out: dict[str, Path] = {}
    for text in values or []:
        name, sep, path = text.partition("=")
        name = name.strip()
        if not sep or not name or not path:
            raise ArgumentError(f"--params takes FAMILY=FILE here, got {text!r}")
        family(name)
        if name not in compared:
            raise ArgumentError(f"--params {text}: {name} is not among the families compared ({', '.join(compared)})")
        if name in out:
            raise ArgumentError(f"--params {text}: a file for {name} is given twice")
        out[name] = Path(path)
    return out


def compare_settings(args: argparse.Namespace) -> dict:
    """``mlgp compare``'s ``{family: {parameter: value}}``: each family's ``--params`` file with its
    ``--set FAMILY.NAME=VALUE`` over it, every file checked (:func:`file_changes`)."""
    from .inputs import sets

    settings = sets(args.set, prefix=True)
    for name, path in param_files(args.params, args.models).items():
        settings[name] = file_changes(name, path, settings.get(name), seed=args.seed, budget=args.budget)
    return settings
