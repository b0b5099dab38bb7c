"""One file format for every fitted estimator: a JSON header and plain arrays in one ``.npz`` file.

Contract: :func:`save_estimator` writes ``path`` (``.npz`` appended when missing) *atomically*
(:func:`mlgp.files.atomic_write`): the file is written under a temporary name in the same folder and
moved over ``path`` only when complete, so an interrupted save — an exception, or the process
killed — leaves the previous file intact (a kill may leave a hidden ``.tmp`` beside it, never read).
A path where no file can be written (a missing folder, a folder of that name) raises
:class:`~mlgp.errors.FileAccessError` naming it. The archive holds ``__header__``, a JSON string

    {"format": FORMAT, "class": <registered class name>, "params": <get_params(deep=False)>,
     "fitted": <scalar fitted attributes>, "sparse": {<name>: [rows, cols], ...}}

and the estimator's fitted arrays by name; a CSR matrix ``name`` is stored as ``name.data``,
``name.indices`` and ``name.indptr`` with its shape in ``sparse``. Parameters that JSON cannot hold
exactly are tagged: ``{"tuple": [...]}``, ``{"ndarray": [...], "dtype": "<f8"}``, ``{"path": "..."}``; a value that is not
plain data (a ``RandomState``, a CV splitter) is written as ``{"unsaved": repr}`` and loads as the
parameter's default — the fitted state is complete without it, so predictions are unchanged.

:func:`load_estimator` reads with :func:`mlgp.files.read_npz` (no pickle, so a file cannot run
code; CRCs and every array header checked), refuses a header nested past the recursion limit and
``sparse`` entries whose parts are missing, resolves the class through
:mod:`mlgp.estimator.registry` (:func:`saved_class_name` reads the class name alone, so that
:func:`mlgp.families.load_model` imports only the family that defines it), checks the parameters
against the class's ``_parameter_constraints`` (and that none is NaN or infinite), refuses an ``n_labels_`` larger than
the element count of every array that holds bytes before anything of that size is allocated (a
shape in the header or an array of shape (0, n) justifies no size; N and D allocate nothing), and
hands the fitted state to the estimator's ``_restore_fitted`` through a :class:`SavedState`, whose
accessors check every scalar (type, range, at most int64) and array (dtype kind, shape against the
fitted scalars, finite, range; CSR parts through :func:`mlgp.files.csr_from_parts`) they return;
each class checks what ties its arrays together (FastXML: that its trees are trees). Any file that
is not a well-formed save of the expected class — truncated, altered, of another class, with
unknown or invalid parameters, scalars that disagree with the arrays' shapes, a missing or extra
array or sparse entry, a restore that runs out of memory or recursion depth anyway — raises
:class:`~mlgp.errors.DataFormatError` naming the file; a missing file raises
:class:`~mlgp.errors.ModelNotFoundError`. A file that loads scores finitely
(``tests/reliability/test_fuzz_saved_models.py``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path, PurePath
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import ArgumentError, DataFormatError, MLGPError, ModelNotFoundError, warn
from ..files import as_path, atomic_write, read_npz
from .registry import resolve
from .saved_state import SavedState

__all__ = ["FORMAT", "SavedState", "load_estimator", "save_estimator", "saved_class_name"]

FORMAT = "mlgp.estimator/1"
_HEADER = "__header__"
_CSR_PARTS = ("data", "indices", "indptr")
_PLAIN_KINDS = "biufU"  # dtype kinds an array may have in a file: no objects, so no pickle
_DEFAULT = object()     # a parameter that loads as the class's default
# What a class's _restore_fitted may raise on a state that does not hold together.
_STATE_ERRORS = (MLGPError, ValueError, TypeError, KeyError, IndexError, ArithmeticError)


def npz_path(path: str | Path) -> Path:
    """``path`` with ``.npz`` appended when it has another suffix; an empty path is an ArgumentError."""
    path = as_path(path)
    if not path.name:
        raise ArgumentError(f"{str(path)!r} names no file to save to")
    return path if path.suffix == ".npz" else path.with_name(path.name + ".npz")


# ------------------------------------------------------------------------------------ writing --
def _encode(value: Any):
    """A parameter as JSON data (see the module docstring); ``_DEFAULT`` when it is not plain data."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic) and value.dtype.kind in _PLAIN_KINDS:
        return value.item()
    if isinstance(value, np.ndarray) and value.dtype.kind in _PLAIN_KINDS:
        return {"ndarray": value.tolist(), "dtype": value.dtype.str}
    if isinstance(value, PurePath):  # a folder parameter (MLGPFClassifier's checkpoint_dir, log_dir)
        return {"path": str(value)}
    if isinstance(value, (list, tuple)):
        items = [_encode(v) for v in value]
        if any(v is _DEFAULT for v in items):
            return _DEFAULT
        return {"tuple": items} if isinstance(value, tuple) else items
    return _DEFAULT


def _plain_scalar(value):
    """``json.dumps`` fallback for fitted scalars: NumPy scalars as Python numbers."""
    if isinstance(value, np.generic) and value.dtype.kind in _PLAIN_KINDS:
        return value.item()
    raise TypeError(f"a fitted scalar of type {type(value).__name__} cannot be saved ({value!r})")


def _write_arrays(file, arrays: dict[str, np.ndarray]) -> None:
    """The array writer: ``arrays`` into the open binary ``file`` as an uncompressed ``.npz``."""
    np.savez(file, **arrays)


#: Parameters that only seed or split the fitting (a RandomState, a CV splitter): loading them as
#: their defaults is expected and not warned about.
_STATE_PARAMETERS = frozenset({"random_state", "cv"})


def _resolve(name: str):
    """The registered class of ``name`` (``None`` if none); an ambiguous name is an ArgumentError."""
    try:
        return resolve(name)
    except TypeError as err:
        raise ArgumentError(str(err)) from None


def save_estimator(estimator, path: str | Path) -> Path:
    """Write a fitted ``estimator`` to ``path`` atomically (module docstring); returns the path written.

    Raises :class:`~mlgp.errors.ArgumentError` when the class is not the one registered under its
    name (it could not be loaded) or a fitted value cannot be written without pickle.
    """
    cls = type(estimator)
    if _resolve(cls.__name__) is not cls:
        raise ArgumentError(f"{cls.__module__}.{cls.__qualname__} is not the estimator class registered as "
                            f"{cls.__name__!r}; a file of it could not be loaded")
    params = {}
    unsaved = []
    for name, value in estimator.get_params(deep=False).items():
        encoded = _encode(value)
        params[name] = {"unsaved": repr(value)} if encoded is _DEFAULT else encoded
        if encoded is _DEFAULT and name not in _STATE_PARAMETERS:
            unsaved.append(name)
    if unsaved:  # the fitted state is saved whole; only get_params() and a refit of the loaded copy differ
        warn(f"{cls.__name__}: parameter(s) {unsaved} cannot be written without pickle; the loaded "
             "estimator predicts the same but has their defaults in get_params()", UserWarning)
    arrays: dict[str, np.ndarray] = {}
    sparse: dict[str, list[int]] = {}
    for name, value in estimator._fitted_arrays().items():
        if sp.issparse(value):
            csr = sp.csr_matrix(value)
            arrays.update({f"{name}.{part}": getattr(csr, part) for part in _CSR_PARTS})
            sparse[name] = [int(n) for n in csr.shape]
            continue
        value = np.asarray(value)
        if value.dtype.kind not in _PLAIN_KINDS:
            raise ArgumentError(f"{cls.__name__}.{name} has dtype {value.dtype}; only numbers, booleans and "
                                "strings can be saved without pickle")
        arrays[name] = value
    header = {"format": FORMAT, "class": cls.__name__, "params": params,
              "fitted": estimator._fitted_scalars(), "sparse": sparse}
    try:
        text = json.dumps(header, default=_plain_scalar)
    except TypeError as err:
        raise ArgumentError(f"{cls.__name__}: {err}") from None
    path = npz_path(path)
    return atomic_write(path, lambda f: _write_arrays(f, {_HEADER: np.array(text), **arrays}))  # or FileAccessError


# ------------------------------------------------------------------------------------ reading --
def _read_archive(path: Path) -> tuple[dict, dict[str, np.ndarray]]:
    """The header and arrays of ``path``; :class:`DataFormatError` for anything unreadable."""
    arrays = read_npz(path, "saved estimator")
    text = arrays.pop(_HEADER, None)
    if text is None or text.dtype.kind != "U" or text.ndim != 0:
        raise DataFormatError(f"not a saved estimator (no {_HEADER} string)", path=path)
    try:
        header = json.loads(str(text))
    except (ValueError, RecursionError) as err:  # RecursionError: nested past the recursion limit
        raise DataFormatError(f"the header is not JSON ({type(err).__name__}: {err})", path=path) from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        found = header.get("format") if isinstance(header, dict) else type(header).__name__
        raise DataFormatError(f"format {found!r}, expected {FORMAT!r}", path=path)
    for key, kind in (("class", str), ("params", dict), ("fitted", dict), ("sparse", dict)):
        if not isinstance(header.get(key), kind):
            raise DataFormatError(f"the header's {key!r} must be a {kind.__name__}, got {header.get(key)!r}", path=path)
    for name in header["sparse"]:
        missing = [part for part in _CSR_PARTS if f"{name}.{part}" not in arrays]
        if missing:
            raise DataFormatError(f"the sparse matrix {name!r} lacks its array(s) {missing}", path=path)
    return header, arrays


def _decode(value, path: Path):
    """The inverse of :func:`_encode`; ``_DEFAULT`` for an unsaved value."""
    if isinstance(value, list):
        return [_decode(v, path) for v in value]
    if not isinstance(value, dict):
        return value
    if value.keys() == {"tuple"} and isinstance(value["tuple"], list):
        return tuple(_decode(v, path) for v in value["tuple"])
    if value.keys() == {"unsaved"}:
        return _DEFAULT
    if value.keys() == {"path"} and isinstance(value["path"], str):
        return Path(value["path"])
    if value.keys() == {"ndarray", "dtype"}:
        try:
            dtype = np.dtype(value["dtype"])
            if dtype.kind in _PLAIN_KINDS:
                return np.asarray(value["ndarray"], dtype=dtype)
        except (TypeError, ValueError):
            pass
    raise DataFormatError(f"a parameter value {value!r} is not in the file format", path=path)


def _parameters(klass: type, header: dict, path: Path) -> dict:
    """The constructor arguments of the header, checked against the class's parameters."""
    known = set(klass._get_param_names())
    unknown = sorted(set(header["params"]) - known)
    if unknown:
        raise DataFormatError(f"unknown parameter(s) {unknown} for {klass.__name__}", path=path)
    params = {}
    for name, value in header["params"].items():
        value = _decode(value, path)
        if value is _DEFAULT:
            continue
        if not _finite(value):
            raise DataFormatError(f"invalid parameter: {name} = {value!r} holds NaN or inf", path=path)
        params[name] = value
    return params


def _finite(value) -> bool:
    """Whether no number in a decoded parameter is NaN or infinite."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, np.ndarray) and value.dtype.kind in "fc":
        return bool(np.all(np.isfinite(value)))
    if isinstance(value, (list, tuple)):
        return all(_finite(v) for v in value)
    return True


def _check_label_counts(header: dict, arrays: dict, path: Path) -> None:
    """No ``n_labels_`` of the header (nor of a nested estimator's) exceeds the element count of every
    array that holds bytes: each class keeps an array with at least K elements, and an absurd count is
    refused before anything of that size (``classes_``) is allocated. The header's sparse shapes and
    arrays of no bytes (shape (0, n), or an empty dtype) are numbers the file controls for free, so
    they justify nothing."""
    largest = max((a.size for a in arrays.values() if a.dtype.itemsize), default=0)
    stack = [header["fitted"]]
    while stack:
        scalars = stack.pop()
        count = scalars.get("n_labels_")
        if isinstance(count, int) and not isinstance(count, bool) and count > largest:
            raise DataFormatError(f"n_labels_ = {count} is larger than the element count of every array (at most "
                                  f"{largest}), so no array has a shape it implies", path=path)
        stack.extend(v for v in scalars.values() if isinstance(v, dict))


def _saved_file(path: str | Path) -> Path:
    """The file a saved estimator ``path`` names (``.npz`` appended where only that exists);
    :class:`~mlgp.errors.ModelNotFoundError` when there is none."""
    path = as_path(path)
    if not path.exists() and npz_path(path).exists():
        path = npz_path(path)
    if not path.is_file():
        raise ModelNotFoundError(f"{path}: no saved estimator at this path")
    return path


def saved_class_name(path: str | Path) -> str | None:
    """The class name a saved estimator file names, read from its header alone (no array of the
    file is read), or ``None`` when there is no file or no readable header: :func:`load_estimator`
    then says what is wrong. What :func:`mlgp.families.load_model` imports the one family by."""
    try:
        text = read_npz(_saved_file(path), "saved estimator", only=frozenset({_HEADER})).get(_HEADER)
        header = json.loads(str(text)) if text is not None and text.dtype.kind == "U" and text.ndim == 0 else None
    except (MLGPError, ValueError, RecursionError):
        return None
    name = header.get("class") if isinstance(header, dict) else None
    return name if isinstance(name, str) else None


def load_estimator(path: str | Path, expected: type):
    """Read an estimator written by :func:`save_estimator`; its class must be ``expected`` or a
    subclass (a file of a subclass loads as that subclass)."""
    path = _saved_file(path)
    try:
        return _load(path, expected)
    except (MemoryError, RecursionError) as err:  # a backstop: no size is taken from the header alone
        raise DataFormatError(f"the saved estimator cannot be restored here ({type(err).__name__}: {err})",
                              path=path) from None


def _load(path: Path, expected: type):
    header, arrays = _read_archive(path)
    name = header["class"]
    klass = _resolve(str(name))
    if klass is None:
        raise DataFormatError(f"unknown estimator class {name!r} (no class of that name is registered; "
                              "import the module that defines it first)", path=path)
    if not issubclass(klass, expected):
        raise DataFormatError(f"holds a {name}, not a {expected.__name__}", path=path)
    estimator = klass(**_parameters(klass, header, path))
    try:
        estimator._validate_params()
    except (ValueError, TypeError) as err:
        raise DataFormatError(f"invalid parameter: {err}", path=path) from None
    _check_label_counts(header, arrays, path)
    state = SavedState(path, header["fitted"], arrays, header["sparse"])
    try:
        estimator._restore_fitted(state)
        estimator._restore_proba_map(state, estimator._n_outputs)  # after the family's own checks
    except DataFormatError:
        raise
    except _STATE_ERRORS as err:
        raise DataFormatError(f"inconsistent {name} state ({type(err).__name__}: {err})", path=path) from None
    extra = state.unread()
    if extra:
        raise DataFormatError(f"unexpected array(s) {extra} for a {name}", path=path)
    return estimator
