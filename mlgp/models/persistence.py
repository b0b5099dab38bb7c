"""Saving and loading MLGPF without pickle: a folder with ``model.json``, ``parameters.npz`` and,
when the model holds fixed arrays, ``constants.npz``.

``parameters.npz`` holds every Parameter's *unconstrained* value (in the model's float type) under its GPflow path
(``kernel.kernel.lengthscales``, ``likelihood.loadings``, ``q_sqrt`` …), so loading restores values
exactly. ``constants.npz`` holds the fixed array arguments (NumPy arrays, or SciPy CSR matrices as
their ``data`` / ``indices`` / ``indptr`` / ``shape``), e.g. an input map's projection matrix.
``model.json`` (format ``mlgp.MLGPF/4``) holds the structure needed to rebuild any MLGPF whose
kernel, inducing variable and input map are GPflow's or mlgp's own:

- ``kernel``, ``inducing_variable`` and ``input_map`` (``null`` for none): trees of nodes
  ``{"class": "module:qualname", "parameters": {arg: shape}, "arguments": {arg: JSON value},
  "constants": {arg: {"key", "kind"}}, "children": {arg: node or [nodes]}, "active_dims": ...}``
  naming the constructor arguments that matter: Parameters (rebuilt as placeholders of the saved
  shape), fixed arrays (read back from ``constants.npz``), sub-kernels (``Sum``/``Product``,
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

Each file is written atomically (:func:`mlgp.files.atomic_write`): an interrupted save leaves every
file either as it was or whole (the three are not replaced as one).

Loading constructs the classes with placeholder values of the saved shapes, gives a Parameter whose
rebuilt transform differs from the saved one the saved transform, then assigns the saved values.
Only classes from ``gpflow`` and ``mlgp`` (and TFP bijectors) are recorded or rebuilt; anything
else is refused when saving. Saves in format ``mlgp.MLGPF/1`` (models from ``from_data`` only,
rebuilt from ``spec``), ``mlgp.MLGPF/2`` (``whiten`` and top-level ``q_mu`` / ``q_sqrt``) and
``mlgp.MLGPF/3`` (no input map, no constants) load too. Every failure raises an :class:`~mlgp.errors.MLGPError` that
names the path.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from dataclasses import replace

import numpy as np
import scipy.sparse as sp
import tensorflow as tf
from gpflow import Parameter, set_trainable
from gpflow.config import as_context, config

from ..blocks import INPUT_MAPS, InputMap
from ..errors import DataFormatError, MLGPError, ModelNotFoundError, ShapeError
from ..files import atomic_write
from ..inducing import UnitSphereInducingPoints
from ..kernels import make_kernel
from ..likelihoods import MultiLabelBernoulli
from ..variational import Q_FAMILIES, make_q
from .structure import (
    MODEL_ROOTS,
    build_transform,
    build_tree,
    checked_transform,
    checked_tree,
    class_name,
    constant_arrays,
    constants_from_arrays,
    describe_likelihood,
    describe_transform,
    parameters_by_name,
    resolve_class,
)

__all__ = ["load_mlgpf", "load_parameters", "save_mlgpf"]

FORMAT = "mlgp.MLGPF/4"
_FORMAT_V3 = "mlgp.MLGPF/3"
_FORMAT_V2 = "mlgp.MLGPF/2"
_FORMAT_V1 = "mlgp.MLGPF/1"
_READABLE = (FORMAT, _FORMAT_V3, _FORMAT_V2, _FORMAT_V1)
#: Formats whose parameter paths are those of the q(u) family objects.
_FAMILY_PATHS = (FORMAT, _FORMAT_V3)
#: Parameter paths of format 2 (q(u) held by the model itself) and their names in formats 3 and 4.
_V2_NAMES = {"q_mu": "q.q_mu", "q_sqrt": "q.q_sqrt"}


# ----------------------------------------------------------------------------- the three entry points
def save_mlgpf(model, path: str | Path) -> Path:
    """Write ``model`` to the folder ``path`` (created if needed) and return it.

    Raises :class:`~mlgp.errors.DataFormatError`, before anything is written, for a kernel,
    inducing variable, likelihood or transform that the format cannot rebuild. The format is
    described in :mod:`mlgp.models.persistence`.
    """
    path = Path(path)
    params = parameters_by_name(model)
    if model.input_map is not None and type(model.input_map) not in INPUT_MAPS.values():
        raise DataFormatError(f"cannot save an input map of class {type(model.input_map).__qualname__}: only the "
                              "classes of mlgp.blocks.INPUT_MAPS (register_input_map) are saved and rebuilt", path=path)
    constants: dict = {}
    meta = {
        "format": FORMAT,
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
        text = json.dumps(meta, indent=2)
    except (TypeError, ValueError) as err:  # only model.spec can hold what JSON cannot
        raise DataFormatError(f"cannot save model.spec as JSON: {err}", path=path) from None
    try:
        path.mkdir(parents=True, exist_ok=True)
        values = {name: p.unconstrained_variable.numpy() for name, p in params.items()}
        atomic_write(path / "parameters.npz", lambda f: np.savez(f, **values))
        if constants:
            arrays = constant_arrays(constants)
            atomic_write(path / "constants.npz", lambda f: np.savez(f, **arrays))
        elif (path / "constants.npz").exists():  # an earlier save's, in the same folder
            (path / "constants.npz").unlink()
        atomic_write(path / "model.json", lambda f: f.write(text.encode()))
    except OSError as err:
        raise MLGPError(f"cannot save the model in {path}: {err.strerror or err}") from None
    return path


def load_mlgpf(path: str | Path, *, model_class: type):
    """Rebuild the model saved in the folder ``path`` by :func:`save_mlgpf` as a ``model_class``
    (:class:`~mlgp.models.MLGPF` or a subclass; ``MLGPF.load(path)`` passes its own)."""
    path = Path(path)
    meta = _read_meta(path)
    values = _read_values(path)
    if meta["format"] not in _FAMILY_PATHS:
        values = _renamed_v2(values)
    try:
        if meta["format"] == _FORMAT_V1:
            model = _build_v1(meta, path, model_class)
            _assign(model, values, path)
            trainable = meta.get("trainable", {})
        else:
            model = _build_v2(meta, path, model_class)
            saved = meta["parameters"] if meta["format"] in _FAMILY_PATHS else _renamed_v2(meta["parameters"])
            _check_names(parameters_by_name(model), saved, path)
            _restore_transforms(model, saved, values, path)
            _assign(model, values, path, saved)
            trainable = {name: entry["trainable"] for name, entry in saved.items()}
    except MLGPError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as err:
        raise DataFormatError(f"malformed MLGPF save ({type(err).__name__}: {err})", path=path / "model.json") from err
    params = parameters_by_name(model)
    for name, flag in trainable.items():
        if name in params:
            set_trainable(params[name], bool(flag))
    return model


def load_parameters(model, path: str | Path) -> None:
    """Assign the values saved in the folder ``path`` to ``model``, exactly (unconstrained).

    The model must have the saved parameters' names, shapes and (for saves that record them)
    transforms; otherwise nothing is assigned and :class:`~mlgp.errors.ShapeError` or
    :class:`~mlgp.errors.DataFormatError` names the difference.
    """
    path = Path(path)
    values = _read_values(path)
    saved = None
    if (path / "model.json").is_file():
        meta = _read_meta(path)
        saved = meta.get("parameters") if meta["format"] in (*_FAMILY_PATHS, _FORMAT_V2) else None
        if meta["format"] not in _FAMILY_PATHS:
            values = _renamed_v2(values)
            saved = None if saved is None else _renamed_v2(saved)
        if meta["format"] in _FAMILY_PATHS:
            _check_input_map(model, meta.get("input_map"), path)
    _assign(model, values, path, saved)


def _check_input_map(model, saved: dict | None, path: Path) -> None:
    """Parameters trained behind one input map mean nothing behind another: refuse a difference."""
    mine = model.input_map
    if saved is None and mine is None:
        return
    if saved is None or mine is None:
        raise DataFormatError(f"the save {'has no' if saved is None else 'has an'} input map but this model "
                              f"{'has one' if saved is None else 'has none'}", path=path)
    constants: dict = {}
    node = checked_tree(mine, "input_map", path, rebuild=False, constants=constants)
    theirs = constants_from_arrays([saved], _read_constants(path), path) if (path / "constants.npz").is_file() else {}
    same = node == saved and set(constants) == set(theirs) and all(
        (abs(constants[k] - theirs[k]).max() == 0 if sp.issparse(constants[k]) else np.array_equal(constants[k], theirs[k]))
        and constants[k].shape == theirs[k].shape for k in constants)
    if not same:
        raise DataFormatError("the saved parameters were trained behind another input map than this model's", path=path)


def _renamed_v2(entries: dict) -> dict:
    """A format-2 (or 1) mapping with q(u)'s paths renamed to those of the family object."""
    return {_V2_NAMES.get(name, name): value for name, value in entries.items()}


# ----------------------------------------------------------------------------- reading the files
def _existing(path: Path, name: str) -> Path:
    if not path.is_dir():
        raise ModelNotFoundError(f"{path}: no saved MLGPF here (not a folder)")
    if not (path / name).is_file():
        raise ModelNotFoundError(f"{path / name}: missing (not an MLGPF save folder)")
    return path / name


def _read_meta(path: Path) -> dict:
    file = _existing(path, "model.json")
    try:
        meta = json.loads(file.read_text())
    except (ValueError, UnicodeDecodeError) as err:
        raise DataFormatError(f"invalid JSON: {err}", path=file) from None
    if not isinstance(meta, dict) or meta.get("format") not in _READABLE:
        found = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
        raise DataFormatError(f"not an MLGPF save (format {found!r}; this version reads "
                              f"{', '.join(repr(f) for f in _READABLE)})", path=file)
    return meta


def _read_constants(path: Path) -> dict[str, np.ndarray]:
    return _read_npz(path / "constants.npz", "constants")


def _read_values(path: Path) -> dict[str, np.ndarray]:
    return _read_npz(_existing(path, "parameters.npz"), "parameter")


def _read_npz(file: Path, what: str) -> dict[str, np.ndarray]:
    try:
        with np.load(file, allow_pickle=False) as npz:
            return {name: npz[name] for name in npz.files}
    except Exception as err:  # zipfile, pickle refusal, truncation: all mean a broken file
        raise DataFormatError(f"unreadable {what} file ({type(err).__name__}: {err})", path=file) from None


# ----------------------------------------------------------------------------- parameters
def _check_names(params: dict, saved, path: Path) -> None:
    missing, extra = sorted(set(params) - set(saved)), sorted(set(saved) - set(params))
    if missing or extra:
        raise ShapeError(f"{path}: saved parameters do not match this model: missing {missing}, unexpected {extra}")


def _assign(model, values: dict, path: Path, saved: dict | None = None) -> None:
    """Check everything, then assign every value (a failed load leaves the model untouched)."""
    params = parameters_by_name(model)
    _check_names(params, values, path)
    for name, p in params.items():
        if values[name].shape != tuple(p.unconstrained_variable.shape):
            raise ShapeError(f"{path}: {name}: saved shape {values[name].shape} ≠ model shape {tuple(p.unconstrained_variable.shape)}")
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


def _restore_transforms(model, saved: dict, values: dict, path: Path) -> None:
    """Give each rebuilt Parameter whose transform differs from the saved one the saved transform."""
    for name, p in parameters_by_name(model).items():
        if describe_transform(p.transform, name, path) == saved[name]["transform"]:
            continue
        transform = build_transform(saved[name]["transform"], name, path)
        owner, attr = _owner(model, name, path)
        value = transform.forward(tf.constant(values[name], dtype=p.dtype))
        setattr(owner, attr, Parameter(value, transform=transform, prior=p.prior, prior_on=p.prior_on,
                                       trainable=p.trainable, dtype=p.dtype))


def _owner(model, name: str, path: Path):
    """The module holding the Parameter at GPflow path ``name``, and its attribute name."""
    steps = re.findall(r"(?:^|\.)([A-Za-z_]\w*)|\[(\d+)\]|\['([^']*)'\]", name)
    obj = model
    for attr, index, key in steps[:-1]:
        obj = getattr(obj, attr) if attr else obj[int(index)] if index else obj[key]
    if not steps or not steps[-1][0]:
        raise DataFormatError(f"cannot give parameter {name} its saved transform (not a module attribute)", path=path)
    return obj, steps[-1][0]


# ----------------------------------------------------------------------------- building
def _build_v2(meta: dict, path: Path, model_class: type):
    """Formats 2 and 3 (format 2: float64 and a Cholesky family chosen by ``whiten``)."""
    float_name = meta.get("float_type", "float64")
    if float_name not in ("float64", "float32"):
        raise DataFormatError(f"unknown float_type {float_name!r}", path=path / "model.json")
    q_meta = meta.get("q") or {"family": "whitened" if meta["whiten"] else "cholesky"}
    if q_meta["family"] not in Q_FAMILIES:
        raise DataFormatError(f"unknown q(u) family {q_meta['family']!r}", path=path / "model.json")
    nodes = [meta["kernel"], meta["inducing_variable"], meta.get("input_map")]
    constants = constants_from_arrays(nodes, _read_constants(path), path) if (path / "constants.npz").is_file() else {}
    cfg = replace(config(), float=np.dtype(float_name).type)
    with as_context(cfg):
        kernel = build_tree(meta["kernel"], "kernel", path, constants)
        inducing = build_tree(meta["inducing_variable"], "inducing_variable", path, constants)
        input_map = None
        if meta.get("input_map") is not None:
            input_map = build_tree(meta["input_map"], "input_map", path, constants, base=tuple(INPUT_MAPS.values()))
            if not isinstance(input_map, InputMap):
                raise DataFormatError(f"{class_name(meta['input_map'])} is not an input map", path=path / "model.json")
        lik = meta["likelihood"]
        lik_class = resolve_class(lik["class"], MODEL_ROOTS, MultiLabelBernoulli, path)
        likelihood = lik_class(int(lik["num_labels"]), int(lik["num_latent"]), num_gauss_hermite_points=int(lik["num_gauss_hermite_points"]))
        M, P = int(inducing.num_inducing), int(lik["num_latent"])
        extra = {k: v for k, v in q_meta.items() if k in ("jitter", "sigma_lower")}
        q = make_q(q_meta["family"], M, P, **extra)
        model = model_class(kernel, likelihood, inducing, num_data=meta["num_data"], q=q, input_map=input_map)
    model.spec = dict(meta.get("spec") or {})
    return model


def _build_v1(meta: dict, path: Path, model_class: type):
    """Format 1 recorded only the arguments of ``from_data`` (``spec``)."""
    spec = meta.get("spec")
    if not spec or spec.get("kernel") is None:
        raise DataFormatError("this save (format mlgp.MLGPF/1) holds no model structure (model not built by "
                              "MLGPF.from_data); use load_parameters", path=path / "model.json")
    D, K, P, M = spec["num_features"], spec["num_labels"], spec["num_latent_gps"], spec["num_inducing"]
    sphere = spec.get("unit_sphere_inducing", False)  # saves made before the option lack the key
    Z = UnitSphereInducingPoints(np.ones((M, D))) if sphere else np.zeros((M, D))
    likelihood = MultiLabelBernoulli(K, P, num_gauss_hermite_points=spec["num_gauss_hermite_points"])
    q = make_q("whitened" if spec["whiten"] else "cholesky", M, P)
    model = model_class(make_kernel(spec["kernel"], D), likelihood, Z, num_data=spec["num_data"], q=q)
    model.spec = spec
    return model
