"""Saving and loading MLGPF without pickle: a folder with ``model.json`` and the array files it names,
``parameters.npz`` (or ``parameters-1.npz``) and, when the model holds fixed arrays, ``constants.npz``
(or ``constants-1.npz``).

The parameter file holds every Parameter's *unconstrained* value (in the model's float type) under its GPflow path
(``kernel.kernel.lengthscales``, ``likelihood.loadings``, ``q_sqrt`` …), so loading restores values
exactly. The constants file holds the fixed array arguments (NumPy arrays, or SciPy CSR matrices as
their ``data`` / ``indices`` / ``indptr`` / ``shape``), e.g. an input map's projection matrix.
``model.json`` (format ``mlgp.MLGPF/5``) holds the structure needed to rebuild any MLGPF whose
kernel, inducing variable and input map are GPflow's or mlgp's own:

- ``files``: ``{"parameters": name, "constants": name or null}``, the array files of this save;
- ``kernel``, ``inducing_variable`` and ``input_map`` (``null`` for none): trees of nodes
  ``{"class": "module:qualname", "parameters": {arg: shape}, "arguments": {arg: JSON value},
  "constants": {arg: {"key", "kind"}}, "children": {arg: node or [nodes]}, "active_dims": ...}``
  naming the constructor arguments that matter: Parameters (rebuilt as placeholders of the saved
  shape), fixed arrays (read back from the constants file), sub-kernels (``Sum``/``Product``,
  ``SharedIndependent``), simple values such as ``Polynomial``'s ``degree``, and ``active_dims``
  when not all;
- ``likelihood``: class, K, P and the number of quadrature points; ``num_data``;
- ``q``: the q(u) family and what rebuilding it needs (:meth:`mlgp.variational.QDistribution.describe`),
  and ``float_type`` (``"float64"`` or ``"float32"``; values are stored in it);
- ``parameters``: per path, the unconstrained shape, ``trainable`` and the transform as a tree of
  TFP bijectors ``{"class", "arguments"}`` (``Softplus``, ``Exp``, ``Chain([Shift, Softplus])`` of
  ``positive(lower=…)``, mlgp's ``LowerTriangular``/``UnitRows`` …);
- ``spec``: the arguments of :func:`mlgp.models.mlgpf_from_data` (``{}`` for a model built from
  its parts).

A save is atomic as a whole, ``model.json`` its commit point (:mod:`mlgp.models.save_folder`): a
save interrupted at any moment, the process killed included, leaves the earlier model or the new
one, never a mix, and a load never reads half of a save that commits meanwhile.

Loading constructs the classes (:mod:`mlgp.models.rebuild`) with placeholder values of the saved
shapes, gives a Parameter whose rebuilt transform differs from the saved one the saved transform,
then assigns the saved values. Nothing is allocated larger than what the files hold: before anything
is built, every placeholder must have the shape of its saved value, K, P and K × P be at most the
largest element count of the saved arrays, and q(u)'s parameters the shapes of their saved values;
running out of memory or of recursion depth anyway is a :class:`~mlgp.errors.DataFormatError` naming
the folder. Everything is checked first: the values' names, shapes, float type and finiteness, a
saved transform's values against the domain of the class's own transform (a variance stays
positive), and, last, that the model predicts finite values at its inducing inputs. Only classes
from ``gpflow`` and ``mlgp`` (and TFP bijectors) are recorded or rebuilt; anything else is refused
when saving. Format 5 is the one format read. A folder of an earlier format, ``mlgp.MLGPF/1`` to
``mlgp.MLGPF/4`` (:data:`OLD_FORMATS`), is refused, before anything is built, with a
:class:`~mlgp.errors.DataFormatError` that names the folder, its format and the command that
converts it once, ``python -m mlgp.models.convert FOLDER`` (:mod:`mlgp.models.convert`). Every
failure raises an :class:`~mlgp.errors.MLGPError` that names the path: a folder whose files do not
make a model is a :class:`~mlgp.errors.DataFormatError`, a missing folder or file a
:class:`~mlgp.errors.ModelNotFoundError`. """

from __future__ import annotations

import json
import shlex
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import tensorflow as tf
from gpflow import Parameter, set_trainable

from ..blocks import INPUT_MAPS, take_rows
from ..errors import DataFormatError, FileAccessError, MLGPError, ShapeError
from ..files import as_path
from .rebuild import build_model
from .save_folder import Saved, commit, read_folder, read_json
from .structure import (
    build_transform,
    check_sizes,
    checked_transform,
    checked_tree,
    class_name,
    constant_arrays,
    constants_from_arrays,
    describe_likelihood,
    describe_transform,
    parameter_owner,
    parameters_by_name,
)

__all__ = ["FORMAT", "OLD_FORMATS", "describe_mlgpf", "load_mlgpf", "load_parameters", "rebuild_mlgpf", "save_mlgpf"]

#: The format written and read.
FORMAT = "mlgp.MLGPF/5"
#: The earlier formats: refused by name, converted once by :mod:`mlgp.models.convert`.
OLD_FORMATS = ("mlgp.MLGPF/1", "mlgp.MLGPF/2", "mlgp.MLGPF/3", "mlgp.MLGPF/4")


# ----------------------------------------------------------------------------- the three entry points
def describe_mlgpf(model, path: Path) -> Saved:
    """What a save of ``model`` holds, in memory: the contents of ``model.json`` (without ``files``),
    the unconstrained parameter values by GPflow path, and the constant arrays (``None`` when
    there are none). ``path`` names the save in messages. Raises
    :class:`~mlgp.errors.DataFormatError` for a part the format cannot rebuild."""
    params = parameters_by_name(model)
    if model.input_map is not None and type(model.input_map) not in INPUT_MAPS.values():
        raise DataFormatError(f"cannot save an input map of class {type(model.input_map).__qualname__}: only the "
                              "classes of mlgp.blocks.INPUT_MAPS (register_input_map) are saved and rebuilt", path=path)
    constants: dict = {}
    meta = {
        "format": FORMAT,
        "files": {},
        "q": model.q.describe(),
        "float_type": np.dtype(model.float_type).name,
        "num_data": None if model.num_data is None else np.asarray(model.num_data).item(),
        "kernel": checked_tree(model.kernel, "kernel", path, constants=constants),
        "inducing_variable": checked_tree(model.inducing_variable, "inducing_variable", path, rebuild=False,
                                          constants=constants),
        "input_map": None if model.input_map is None else checked_tree(model.input_map, "input_map", path,
                                                                       rebuild=False, constants=constants),
        "likelihood": describe_likelihood(model.likelihood, path),
        "parameters": {name: {"shape": list(p.unconstrained_variable.shape), "trainable": bool(p.trainable),
                              "transform": checked_transform(p.transform, name, path)} for name, p in params.items()},
        "spec": dict(model.spec),
    }
    try:
        json.dumps(meta)
    except (TypeError, ValueError) as err:  # only model.spec can hold what JSON cannot
        raise DataFormatError(f"cannot save model.spec as JSON: {err}", path=path) from None
    values = {name: p.unconstrained_variable.numpy() for name, p in params.items()}
    arrays = constant_arrays(constants) if constants else None
    return Saved(meta, values, arrays)


def save_mlgpf(model, path: str | Path) -> Path:
    """Write ``model`` to the folder ``path`` (created if needed) and return it.

    Raises :class:`~mlgp.errors.DataFormatError`, before anything is written, for a kernel,
    inducing variable, likelihood or transform that the format cannot rebuild, and
    :class:`~mlgp.errors.FileAccessError` (an ``OSError``) when the folder cannot be written (the
    format, and why an interrupted save leaves a loadable folder: :mod:`mlgp.models.persistence`).
    """
    path = as_path(path)
    meta, values, arrays = describe_mlgpf(model, path)
    try:
        path.mkdir(parents=True, exist_ok=True)
        commit(path, meta, values, arrays)
    except OSError as err:  # atomic_write's FileAccessError keeps the OSError it stands for as its cause
        cause = err.__cause__ if isinstance(err, FileAccessError) and isinstance(err.__cause__, OSError) else err
        raise FileAccessError(f"cannot save the model in {path}: {cause.strerror or cause}") from None
    return path


def load_mlgpf(path: str | Path, *, model_class: type):
    """Rebuild the model saved in the folder ``path`` by :func:`save_mlgpf` as a ``model_class``
    (:class:`~mlgp.models.MLGPF` or a subclass; ``MLGPF.load(path)`` passes its own)."""
    path = as_path(path)
    try:
        return _load(path, model_class)
    except (MemoryError, RecursionError) as err:  # a backstop: the checks below allocate nothing absurd
        raise DataFormatError(f"the save cannot be rebuilt here ({type(err).__name__}: {err})", path=path) from None


def _load(path: Path, model_class: type):
    return rebuild_mlgpf(_read_folder(path), path, model_class)


def rebuild_mlgpf(saved: Saved, path: Path, model_class: type):
    """The model a :class:`Saved` (read from a folder, or from another container such as an
    estimator file) describes, checked as :func:`load_mlgpf` checks a folder; ``path`` names the
    save in messages."""
    meta, values, constants = saved
    meta = _check_format(meta, path / "model.json")
    check_sizes(meta, values, constants, path / "model.json")
    try:
        model = build_model(meta, path, model_class, constants, values)
        saved = meta["parameters"]
        _check_names(parameters_by_name(model), saved, path, exact=True)
        _restore_transforms(model, saved, values, path)
        _assign(model, values, path, saved, exact=True)
        trainable = {name: entry["trainable"] for name, entry in saved.items()}
        if not all(isinstance(flag, bool) for flag in trainable.values()):
            raise DataFormatError("the trainable flags must be true or false", path=path / "model.json")
    except DataFormatError:
        raise
    except MLGPError as err:  # a constructor's refusal: the files do not describe a model
        raise DataFormatError(f"inconsistent MLGPF save ({type(err).__name__}: {err})", path=path) from None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, ArithmeticError, tf.errors.OpError) as err:
        raise DataFormatError(f"malformed MLGPF save ({type(err).__name__}: {err})", path=path / "model.json") from err
    params = parameters_by_name(model)
    for name, flag in trainable.items():
        if name in params:
            set_trainable(params[name], flag)
    _check_usable(model, path)
    return model


def load_parameters(model, path: str | Path) -> None:
    """Assign the values saved in the folder ``path`` to ``model``, exactly (unconstrained).

    The model must have the saved parameters' names, shapes and transforms, and the saved input
    map; otherwise nothing is assigned and
    :class:`~mlgp.errors.ShapeError` or :class:`~mlgp.errors.DataFormatError` names the difference.
    """
    path = as_path(path)
    meta, values, constants = _read_folder(path)
    _check_input_map(model, meta.get("input_map"), constants, path)
    _assign(model, values, path, meta.get("parameters"), exact=False)


def _check_input_map(model, saved: dict | None, arrays: dict | None, path: Path) -> None:
    """Parameters trained behind one input map mean nothing behind another: refuse a difference."""
    mine = model.input_map
    if saved is None and mine is None:
        return
    if saved is None or mine is None:
        raise DataFormatError(f"the save {'has no' if saved is None else 'has an'} input map but this model "
                              f"{'has one' if saved is None else 'has none'}", path=path)
    constants: dict = {}
    node = checked_tree(mine, "input_map", path, rebuild=False, constants=constants)
    theirs = constants_from_arrays([saved], arrays, path) if arrays is not None else {}
    same = node == saved and set(constants) == set(theirs) and all(
        (abs(constants[k] - theirs[k]).max() == 0 if sp.issparse(constants[k]) else np.array_equal(constants[k], theirs[k]))
        and constants[k].shape == theirs[k].shape for k in constants)
    if not same:
        raise DataFormatError("the saved parameters were trained behind another input map than this model's", path=path)


# ----------------------------------------------------------------------------- reading the files
def _read_folder(path: Path) -> Saved:
    return read_folder(path, _parse_meta)


def _parse_meta(text: bytes, file: Path) -> dict:
    return _check_format(read_json(text, file), file)


def _check_format(meta, file: Path) -> dict:
    """``meta`` when it is a dict of :data:`FORMAT`; else :class:`DataFormatError`, which for one
    of :data:`OLD_FORMATS` names the folder (``file``'s) and the command that converts it."""
    found = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
    if isinstance(meta, dict) and isinstance(found, str) and found in OLD_FORMATS:
        folder = file.parent
        command = f"python -m mlgp.models.convert {shlex.quote(str(folder))}"
        raise DataFormatError(f"this MLGPF save is in the earlier format {found!r}, which is no longer read; convert "
                              f"it once to {FORMAT!r} with: {command}", path=folder)
    if not isinstance(meta, dict) or found != FORMAT:
        raise DataFormatError(f"not an MLGPF save (format {found!r}; this version reads {FORMAT!r})", path=file)
    return meta


# ----------------------------------------------------------------------------- parameters
def _mismatch(path: Path, message: str, exact: bool) -> MLGPError:
    """A save that does not match itself (``exact``: loading) or the caller's model (``load_parameters``)."""
    return DataFormatError(message, path=path) if exact else ShapeError(f"{path}: {message}")


def _check_names(params: dict, saved, path: Path, exact: bool) -> None:
    missing, extra = sorted(set(params) - set(saved)), sorted(set(saved) - set(params))
    if missing or extra:
        raise _mismatch(path, f"saved parameters do not match {'the model the save describes' if exact else 'this model'}: "
                              f"missing {missing}, unexpected {extra}", exact)


def _assign(model, values: dict, path: Path, saved: dict | None, exact: bool) -> None:
    """Check everything, then assign every value (a failed load leaves the model untouched).

    Values must be finite floating-point numbers (of the model's float type, when ``exact``)."""
    params = parameters_by_name(model)
    _check_names(params, values, path, exact)
    for name, p in params.items():
        value, dtype = values[name], p.unconstrained_variable.dtype.as_numpy_dtype
        if value.shape != tuple(p.unconstrained_variable.shape):
            raise _mismatch(path, f"{name}: saved shape {value.shape} ≠ model shape {tuple(p.unconstrained_variable.shape)}", exact)
        if value.dtype.kind != "f" or (exact and value.dtype != dtype) or not np.all(np.isfinite(value)):
            raise DataFormatError(f"the saved values of {name} must be finite {np.dtype(dtype).name if exact else 'floats'}"
                                  f" (dtype {value.dtype})", path=path)
        if saved is not None and name in saved:
            try:
                mine = describe_transform(p.transform, name, path)
            except DataFormatError:  # a transform the format cannot record differs from any saved one
                mine = {"class": f"{type(p.transform).__module__}:{type(p.transform).__qualname__}"}
            if mine != saved[name]["transform"]:
                raise DataFormatError(f"parameter {name} was saved with transform {class_name(saved[name]['transform'])} "
                                      f"but has {class_name(mine)} here", path=path)
    for name, p in params.items():
        p.unconstrained_variable.assign(np.asarray(values[name], dtype=p.unconstrained_variable.dtype.as_numpy_dtype))
    for name, p in params.items():
        if not np.all(np.isfinite(p.numpy())):
            raise DataFormatError(f"the saved value of {name} is not finite once transformed", path=path)


def _restore_transforms(model, saved: dict, values: dict, path: Path) -> None:
    """Give each rebuilt Parameter whose transform differs from the saved one the saved transform;
    its values must lie in the domain of the class's own transform (a variance stays positive)."""
    for name, p in parameters_by_name(model).items():
        if describe_transform(p.transform, name, path) == saved[name]["transform"]:
            continue
        transform = build_transform(saved[name]["transform"], name, path)
        owner, attr = parameter_owner(model, name, path)
        finite = np.asarray(values[name]).dtype.kind == "f" and np.all(np.isfinite(values[name]))
        value = transform.forward(tf.constant(values[name] if finite else 0.0, dtype=p.dtype))
        own = p.transform.inverse(value) if p.transform is not None else value
        if not (finite and np.all(np.isfinite(value.numpy())) and np.all(np.isfinite(own.numpy()))):
            raise DataFormatError(f"the saved value of {name} is not finite or lies outside the domain of "
                                  f"{type(p.transform).__name__}, the transform its class gives it", path=path)
        setattr(owner, attr, Parameter(value, transform=transform, prior=p.prior, prior_on=p.prior_on,
                                       trainable=p.trainable, dtype=p.dtype))


def _check_usable(model, path: Path) -> None:
    """The loaded model must predict finite values at its inducing inputs, at the origin and (with an
    input map) at the map of a row of ones: saved values that are each finite can still make K_ZZ,
    the map or the predictions overflow."""
    iv = getattr(model.inducing_variable, "inducing_variable", None)
    points = [np.zeros((1, model.input_dim))] + ([np.asarray(iv.Z.numpy())] if hasattr(iv, "Z") else [])
    try:
        if model.input_map is not None:
            D = model.num_features  # a CSR row: nothing as wide as the raw features is densified
            ones = sp.csr_matrix((np.ones(D), np.arange(D), [0, D]), shape=(1, D))
            points.append(np.asarray(take_rows(ones, slice(None), input_map=model.input_map), dtype=np.float64))
        x = tf.constant(np.concatenate(points), dtype=model.float_type)
        with model.float_context():
            mu, var = model.predict_latent(x)
            f = tf.linalg.matmul(mu, model.likelihood.loadings, transpose_b=True) + model.likelihood.bias
            finite = all(np.all(np.isfinite(t.numpy())) for t in (f, model.likelihood.predict_mean_and_var(x, mu, var)[0]))
    except Exception as err:  # noqa: BLE001 - TensorFlow's errors of a failed Cholesky and the like
        raise DataFormatError(f"the saved values do not make a usable model ({type(err).__name__}: {err})",
                              path=path) from None
    if not finite:
        raise DataFormatError("the saved values give non-finite predictions (at the inducing inputs, the origin "
                              "or a mapped row of ones)", path=path)
