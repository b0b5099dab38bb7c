"""Saving and loading MLGPF without pickle: a folder with ``model.json`` and ``parameters.npz``.

``parameters.npz`` holds every Parameter's *unconstrained* value (float64) under its GPflow path
(``kernel.kernel.lengthscales``, ``likelihood.loadings``, ``q_sqrt`` …), so loading restores values
exactly. ``model.json`` (format ``mlgp.MLGPF/2``) holds the structure needed to rebuild any MLGPF
whose kernel and inducing variable are GPflow's or mlgp's own:

- ``kernel`` and ``inducing_variable``: trees of nodes ``{"class": "module:qualname",
  "parameters": {arg: shape}, "arguments": {arg: JSON value}, "children": {arg: node or [nodes]},
  "active_dims": ...}`` naming the constructor arguments that matter: Parameters (rebuilt as
  placeholders of the saved shape), sub-kernels (``Sum``/``Product``, ``SharedIndependent``),
  simple values such as ``Polynomial``'s ``degree``, and ``active_dims`` when not all;
- ``likelihood``: class, K, P and the number of quadrature points; ``whiten``, ``num_data``;
- ``parameters``: per path, the unconstrained shape, ``trainable`` and the transform as a tree of
  TFP bijectors ``{"class", "arguments"}`` (``Softplus``, ``Exp``, ``Chain([Shift, Softplus])`` of
  ``positive(lower=…)``, mlgp's ``LowerTriangular``/``UnitRows`` …);
- ``spec``: the arguments of :func:`mlgp.models.mlgpf_from_data` (``{}`` for a model built from
  its parts).

Loading constructs the classes with placeholder values of the saved shapes, gives a Parameter whose
rebuilt transform differs from the saved one the saved transform, then assigns the saved values.
Only classes from ``gpflow`` and ``mlgp`` (and TFP bijectors) are recorded or rebuilt; anything
else is refused when saving. Saves in format ``mlgp.MLGPF/1`` (models from ``from_data`` only,
rebuilt from ``spec``) still load. Every failure raises an :class:`~mlgp.errors.MLGPError` that
names the path.
"""

from __future__ import annotations

import importlib
import inspect
import json
import re
from pathlib import Path

import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp
from gpflow import Parameter, set_trainable
from gpflow.inducing_variables import InducingVariables
from gpflow.kernels import Kernel
from gpflow.utilities import parameter_dict

from ..errors import DataFormatError, MLGPError, ModelNotFoundError, ShapeError
from ..inducing import UnitSphereInducingPoints
from ..kernels import make_kernel
from ..likelihoods import MultiLabelBernoulli
from .mlgpf import MLGPF

__all__ = ["load_mlgpf", "load_parameters", "save_mlgpf"]

FORMAT = "mlgp.MLGPF/2"
_FORMAT_V1 = "mlgp.MLGPF/1"
_MODEL_ROOTS = ("gpflow", "mlgp")
_BIJECTOR_ROOTS = ("gpflow", "mlgp", "tensorflow_probability")
_MISSING = object()
# Required constructor arguments that a class does not keep under the same name.
_EXTRA_ARGUMENTS = {
    "mlgp.kernels.shared_scale:SharedScaleSEPlusLinear": lambda k: {"num_features": int(k.scales.shape[0])},
}


# ----------------------------------------------------------------------------- the three entry points
def save_mlgpf(model: MLGPF, path: str | Path) -> Path:
    """Write ``model`` to the folder ``path`` (created if needed) and return it.

    Raises :class:`~mlgp.errors.DataFormatError`, before anything is written, for a kernel,
    inducing variable, likelihood or transform that the format cannot rebuild. The format is
    described in :mod:`mlgp.models.persistence`.
    """
    path = Path(path)
    params = _parameters(model)
    meta = {
        "format": FORMAT,
        "whiten": bool(model.whiten),
        "num_data": None if model.num_data is None else np.asarray(model.num_data).item(),
        "kernel": _checked_tree(model.kernel, "kernel", path),
        "inducing_variable": _checked_tree(model.inducing_variable, "inducing_variable", path, rebuild=False),
        "likelihood": _describe_likelihood(model.likelihood, path),
        "parameters": {name: {"shape": list(p.unconstrained_variable.shape), "trainable": bool(p.trainable),
                              "transform": _checked_transform(p.transform, name, path)} for name, p in params.items()},
        "spec": dict(model.spec),
    }
    try:
        text = json.dumps(meta, indent=2)
    except (TypeError, ValueError) as err:  # only model.spec can hold what JSON cannot
        raise DataFormatError(f"cannot save model.spec as JSON: {err}", path=path) from None
    path.mkdir(parents=True, exist_ok=True)
    np.savez(path / "parameters.npz", **{name: p.unconstrained_variable.numpy() for name, p in params.items()})
    (path / "model.json").write_text(text)
    return path


def load_mlgpf(path: str | Path, *, model_class: type[MLGPF] = MLGPF) -> MLGPF:
    """Rebuild the model saved in the folder ``path`` by :func:`save_mlgpf`."""
    path = Path(path)
    meta = _read_meta(path)
    values = _read_values(path)
    try:
        if meta["format"] == _FORMAT_V1:
            model = _build_v1(meta, path, model_class)
            _assign(model, values, path)
            trainable = meta.get("trainable", {})
        else:
            model = _build_v2(meta, path, model_class)
            saved = meta["parameters"]
            _check_names(_parameters(model), saved, path)
            _restore_transforms(model, saved, values, path)
            _assign(model, values, path, saved)
            trainable = {name: entry["trainable"] for name, entry in saved.items()}
    except MLGPError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as err:
        raise DataFormatError(f"malformed MLGPF save ({type(err).__name__}: {err})", path=path / "model.json") from err
    params = _parameters(model)
    for name, flag in trainable.items():
        if name in params:
            set_trainable(params[name], bool(flag))
    return model


def load_parameters(model: MLGPF, path: str | Path) -> None:
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
        saved = meta.get("parameters") if meta["format"] == FORMAT else None
    _assign(model, values, path, saved)


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
    if not isinstance(meta, dict) or meta.get("format") not in (FORMAT, _FORMAT_V1):
        found = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
        raise DataFormatError(f"not an MLGPF save (format {found!r}; this version reads {FORMAT!r} and {_FORMAT_V1!r})", path=file)
    return meta


def _read_values(path: Path) -> dict[str, np.ndarray]:
    file = _existing(path, "parameters.npz")
    try:
        with np.load(file, allow_pickle=False) as npz:
            return {name: npz[name] for name in npz.files}
    except Exception as err:  # zipfile, pickle refusal, truncation: all mean a broken file
        raise DataFormatError(f"unreadable parameter file ({type(err).__name__}: {err})", path=file) from None


# ----------------------------------------------------------------------------- parameters
def _parameters(module) -> dict[str, Parameter]:
    return {name.lstrip("."): p for name, p in parameter_dict(module).items()}


def _check_names(params: dict, saved, path: Path) -> None:
    missing, extra = sorted(set(params) - set(saved)), sorted(set(saved) - set(params))
    if missing or extra:
        raise ShapeError(f"{path}: saved parameters do not match this model: missing {missing}, unexpected {extra}")


def _assign(model, values: dict, path: Path, saved: dict | None = None) -> None:
    """Check everything, then assign every value (a failed load leaves the model untouched)."""
    params = _parameters(model)
    _check_names(params, values, path)
    for name, p in params.items():
        if values[name].shape != tuple(p.unconstrained_variable.shape):
            raise ShapeError(f"{path}: {name}: saved shape {values[name].shape} ≠ model shape {tuple(p.unconstrained_variable.shape)}")
        if saved is not None and name in saved:
            try:
                mine = _describe_transform(p.transform, name, path)
            except DataFormatError:  # a transform the format cannot record differs from any saved one
                mine = {"class": f"{type(p.transform).__module__}:{type(p.transform).__qualname__}"}
            if mine != saved[name]["transform"]:
                raise DataFormatError(f"parameter {name} was saved with transform {_name(saved[name]['transform'])} "
                                      f"but has {_name(mine)} here", path=path)
    for name, p in params.items():
        p.unconstrained_variable.assign(values[name])


def _restore_transforms(model, saved: dict, values: dict, path: Path) -> None:
    """Give each rebuilt Parameter whose transform differs from the saved one the saved transform."""
    for name, p in _parameters(model).items():
        if _describe_transform(p.transform, name, path) == saved[name]["transform"]:
            continue
        transform = _build_transform(saved[name]["transform"], name, path)
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


# ----------------------------------------------------------------------------- classes by name
def _class_path(cls: type, roots: tuple[str, ...], what: str, path: Path) -> str:
    if cls.__module__.split(".")[0] not in roots or "<locals>" in cls.__qualname__:
        raise DataFormatError(f"cannot save {what} of class {cls.__module__}.{cls.__qualname__}: the MLGPF save format "
                              f"rebuilds classes from {', '.join(roots)} only", path=path)
    return f"{cls.__module__}:{cls.__qualname__}"


def _resolve(text: str, roots: tuple[str, ...], base: type | tuple, path: Path) -> type:
    module, _, qualname = str(text).partition(":")
    if module.split(".")[0] not in roots:
        raise DataFormatError(f"refusing to load class {text!r}: only classes from {', '.join(roots)} are rebuilt", path=path)
    try:
        obj = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as err:
        raise DataFormatError(f"class {text!r} not found in this installation ({err})", path=path) from None
    if not (isinstance(obj, type) and issubclass(obj, base)):
        raise DataFormatError(f"{text!r} is not a {getattr(base, '__name__', base)}", path=path)
    return obj


# ----------------------------------------------------------------------------- kernels and inducing variables
def _is_simple(value) -> bool:
    simple = value is None or isinstance(value, (bool, int, float, str, np.bool_, np.integer, np.floating))
    return simple or (isinstance(value, (list, tuple)) and all(_is_simple(v) for v in value))


def _plain(value):
    return [_plain(v) for v in value] if isinstance(value, (list, tuple)) else np.asarray(value).item() if value is not None else None


def _describe_tree(obj, where: str, path: Path) -> dict:
    """The constructor of ``obj`` (a kernel or inducing variable) as a JSON tree."""
    cls = type(obj)
    node: dict = {"class": _class_path(cls, _MODEL_ROOTS, where, path),
                  "parameters": {}, "arguments": {}, "children": {}}
    extra = _EXTRA_ARGUMENTS.get(node["class"], lambda o: {})(obj)
    signature = inspect.signature(cls.__init__)
    open_kwargs = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
    for arg, p in signature.parameters.items():
        if arg in ("self", "name", "active_dims") or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        value = extra[arg] if arg in extra else getattr(obj, arg, _MISSING)
        if isinstance(value, Parameter):
            node["parameters"][arg] = list(value.shape)
        elif isinstance(value, tf.Module):
            node["children"][arg] = _describe_tree(value, f"{where}.{arg}", path)
        elif isinstance(value, (list, tuple)) and value and all(isinstance(v, tf.Module) for v in value):
            node["children"][arg] = [_describe_tree(v, f"{where}.{arg}[{i}]", path) for i, v in enumerate(value)]
        elif value is not _MISSING and _is_simple(value):
            node["arguments"][arg] = _plain(value)
        elif value is _MISSING and p.default is not p.empty:
            continue
        else:
            raise DataFormatError(f"cannot save {where}: the constructor argument {arg!r} of {node['class']} is not "
                                  "recorded by the MLGPF save format", path=path)
    dims = getattr(obj, "active_dims", slice(None)) if isinstance(obj, Kernel) else slice(None)
    if not (isinstance(dims, slice) and dims == slice(None)):
        if "active_dims" not in signature.parameters and not open_kwargs:
            raise DataFormatError(f"cannot save {where}: {node['class']} takes no active_dims", path=path)
        node["active_dims"] = {"slice": [dims.start, dims.stop, dims.step]} if isinstance(dims, slice) else [int(d) for d in dims]
    return node


def _build_tree(node: dict, where: str, path: Path):
    cls = _resolve(node["class"], _MODEL_ROOTS, (Kernel, InducingVariables), path)
    kwargs = dict(node.get("arguments", {}))
    kwargs.update({arg: np.ones(shape) for arg, shape in node.get("parameters", {}).items()})
    for arg, child in node.get("children", {}).items():
        kwargs[arg] = ([_build_tree(c, f"{where}.{arg}[{i}]", path) for i, c in enumerate(child)]
                       if isinstance(child, list) else _build_tree(child, f"{where}.{arg}", path))
    if "active_dims" in node:
        dims = node["active_dims"]
        kwargs["active_dims"] = slice(*dims["slice"]) if isinstance(dims, dict) else list(dims)
    try:
        return cls(**kwargs)
    except Exception as err:  # a constructor's own complaint: the tree does not describe a valid object
        raise DataFormatError(f"could not rebuild {where} ({node['class']}): {type(err).__name__}: {err}", path=path) from None


def _checked_tree(obj, where: str, path: Path, rebuild: bool = True) -> dict:
    """Describe ``obj`` and (for kernels, whose parameters are small) rebuild it at once, so that a
    structure the format cannot carry is refused when saving rather than when loading."""
    node = json.loads(json.dumps(_describe_tree(obj, where, path)))
    if not rebuild:
        return node
    rebuilt = {k: tuple(p.shape) for k, p in _parameters(_build_tree(node, where, path)).items()}
    original = {k: tuple(p.shape) for k, p in _parameters(obj).items()}
    if rebuilt != original:
        raise DataFormatError(f"cannot save {where}: rebuilding {node['class']} from its constructor arguments gives "
                              f"parameters {rebuilt}, not {original}", path=path)
    return node


def _describe_likelihood(likelihood, path: Path) -> dict:
    cls = type(likelihood)
    if not isinstance(likelihood, MultiLabelBernoulli):
        raise DataFormatError(f"cannot save a likelihood of class {cls.__module__}.{cls.__qualname__}: "
                              "MLGPF saves hold a MultiLabelBernoulli", path=path)
    return {"class": _class_path(cls, _MODEL_ROOTS, "likelihood", path), "num_labels": int(likelihood.num_labels),
            "num_latent": int(likelihood.num_latent), "num_gauss_hermite_points": int(likelihood.num_gauss_hermite_points)}


# ----------------------------------------------------------------------------- transforms
def _describe_transform(bijector, where: str, path: Path) -> dict:
    bijector = tfp.bijectors.Identity() if bijector is None else bijector
    cls = type(bijector)
    node = {"class": _class_path(cls, _BIJECTOR_ROOTS, f"the transform of {where}", path), "arguments": {}}
    if bijector.parameters is None:  # a bijector that does not record its arguments: only argument-free ones
        signature = inspect.signature(cls.__init__).parameters.values()
        if any(p.default is p.empty and p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in signature):
            raise DataFormatError(f"cannot save the transform of {where}: {node['class']} does not record its arguments", path=path)
        return node
    node["arguments"] = {k: _encode(v, where, path) for k, v in bijector.parameters.items() if k != "name"}
    return json.loads(json.dumps(node))


def _encode(value, where: str, path: Path):
    if isinstance(value, tfp.bijectors.Bijector):
        return {"transform": _describe_transform(value, where, path)}
    if isinstance(value, (list, tuple)):
        return [_encode(v, where, path) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (np.ndarray, np.generic, tf.Tensor, tf.Variable)):
        array = np.asarray(value)
        return {"array": array.tolist(), "dtype": str(array.dtype)}
    raise DataFormatError(f"cannot save the transform of {where}: argument of type {type(value).__name__}", path=path)


def _decode(value, where: str, path: Path):
    if isinstance(value, dict) and "transform" in value:
        return _build_transform(value["transform"], where, path)
    if isinstance(value, dict):
        return np.asarray(value["array"], dtype=value["dtype"])
    return [_decode(v, where, path) for v in value] if isinstance(value, list) else value


def _build_transform(node: dict, where: str, path: Path):
    cls = _resolve(node["class"], _BIJECTOR_ROOTS, tfp.bijectors.Bijector, path)
    try:
        return cls(**{k: _decode(v, where, path) for k, v in node.get("arguments", {}).items()})
    except MLGPError:
        raise
    except Exception as err:
        raise DataFormatError(f"could not rebuild the transform of {where} ({node['class']}): {err}", path=path) from None


def _checked_transform(bijector, where: str, path: Path) -> dict:
    node = _describe_transform(bijector, where, path)
    if _describe_transform(_build_transform(node, where, path), where, path) != node:
        raise DataFormatError(f"cannot save the transform of {where}: {_name(node)} does not rebuild from its "
                              "recorded arguments", path=path)
    return node


def _name(node: dict) -> str:
    inner = [_name(v["transform"]) for v in node.get("arguments", {}).get("bijectors", []) if isinstance(v, dict)]
    return node["class"].rpartition(":")[2] + (f"[{', '.join(inner)}]" if inner else "")


# ----------------------------------------------------------------------------- building
def _build_v2(meta: dict, path: Path, model_class: type[MLGPF]) -> MLGPF:
    kernel = _build_tree(meta["kernel"], "kernel", path)
    inducing = _build_tree(meta["inducing_variable"], "inducing_variable", path)
    lik = meta["likelihood"]
    lik_class = _resolve(lik["class"], _MODEL_ROOTS, MultiLabelBernoulli, path)
    likelihood = lik_class(int(lik["num_labels"]), int(lik["num_latent"]), num_gauss_hermite_points=int(lik["num_gauss_hermite_points"]))
    model = model_class(kernel, likelihood, inducing, num_data=meta["num_data"], whiten=bool(meta["whiten"]))
    model.spec = dict(meta.get("spec") or {})
    return model


def _build_v1(meta: dict, path: Path, model_class: type[MLGPF]) -> MLGPF:
    """Format 1 recorded only the arguments of ``from_data`` (``spec``)."""
    spec = meta.get("spec")
    if not spec or spec.get("kernel") is None:
        raise DataFormatError("this save (format mlgp.MLGPF/1) holds no model structure (model not built by "
                              "MLGPF.from_data); use load_parameters", path=path / "model.json")
    D, K, P, M = spec["num_features"], spec["num_labels"], spec["num_latent_gps"], spec["num_inducing"]
    sphere = spec.get("unit_sphere_inducing", False)  # saves made before the option lack the key
    Z = UnitSphereInducingPoints(np.ones((M, D))) if sphere else np.zeros((M, D))
    likelihood = MultiLabelBernoulli(K, P, num_gauss_hermite_points=spec["num_gauss_hermite_points"])
    model = model_class(make_kernel(spec["kernel"], D), likelihood, Z, num_data=spec["num_data"], whiten=spec["whiten"])
    model.spec = spec
    return model
