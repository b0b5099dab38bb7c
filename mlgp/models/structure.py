"""Recording GPflow and mlgp objects as JSON trees and rebuilding them: the structure half of
:mod:`mlgp.models.persistence`.

A node is ``{"class": "module:qualname", "parameters": {arg: shape}, "arguments": {arg: JSON
value}, "constants": {arg: {"key", "kind"}}, "children": {arg: node or [nodes]}, "active_dims":
...}``; a constant is a fixed array argument (``"ndarray"``, or ``"csr"`` for a SciPy CSR matrix),
its values kept outside the JSON under ``key`` (:func:`constant_arrays`, :func:`constants_from_arrays`);
a transform is a tree of TFP bijectors ``{"class", "arguments"}``, nested at most :data:`MAX_TRANSFORM_DEPTH`
deep. Only classes under :data:`MODEL_ROOTS` (and TFP for bijectors) are recorded or rebuilt; anything
else raises :class:`~mlgp.errors.DataFormatError` naming the file. Before a tree is rebuilt,
:func:`check_placeholders` requires each Parameter placeholder it allocates to have the shape of its
saved value, and :func:`check_sizes` and :func:`check_q_shapes` bound the other sizes (K, P, M)
and their products (:func:`check_size_products`), so that rebuilding allocates no more than the
save's files hold.
"""

from __future__ import annotations

import importlib
import inspect
import json
import math
import re
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import tensorflow as tf
import tensorflow_probability as tfp
from gpflow import Parameter
from gpflow.inducing_variables import InducingVariables
from gpflow.kernels import Kernel
from gpflow.utilities import parameter_dict

from ..blocks import INPUT_MAPS
from ..errors import DataFormatError, MLGPError
from ..files import csr_from_parts
from ..likelihoods import MultiLabelBernoulli
from ..variational import make_q

__all__ = [
    "MODEL_ROOTS",
    "MAX_TRANSFORM_DEPTH",
    "build_transform",
    "build_tree",
    "checked_transform",
    "check_all_used",
    "check_placeholders",
    "check_q_shapes",
    "check_size_products",
    "check_sizes",
    "checked_tree",
    "class_name",
    "constant_arrays",
    "constants_from_arrays",
    "describe_likelihood",
    "describe_transform",
    "parameter_owner",
    "parameters_by_name",
    "placeholder_paths",
    "resolve_class",
]

#: Top-level packages whose classes may be recorded and rebuilt.
MODEL_ROOTS = ("gpflow", "mlgp")
_BIJECTOR_ROOTS = ("gpflow", "mlgp", "tensorflow_probability")
#: Transforms nested deeper are refused: TFP's ``Chain`` of ``Chain`` s costs time exponential in
#: the depth (depth 16: over a minute), and GPflow's and mlgp's transforms nest at most 2 deep.
MAX_TRANSFORM_DEPTH = 8
_MISSING = object()
# Required constructor arguments that a class does not keep under the same name.
_EXTRA_ARGUMENTS = {
    "mlgp.kernels.shared_scale:SharedScaleSEPlusLinear": lambda k: {"num_features": int(k.scales.shape[0])},
}


def parameters_by_name(module) -> dict[str, Parameter]:
    """Every Parameter of ``module`` by its GPflow path without the leading dot (``kernel.kernel.variance``)."""
    return {name.lstrip("."): p for name, p in parameter_dict(module).items()}


def parameter_owner(model, name: str, path: Path) -> tuple:
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


def resolve_class(text: str, roots: tuple[str, ...], base: type | tuple, path: Path) -> type:
    module, _, qualname = str(text).partition(":")
    if module.split(".")[0] not in roots or "__main__" in module.split("."):
        raise DataFormatError(f"refusing to load class {text!r}: only classes from {', '.join(roots)} are rebuilt", path=path)
    try:
        obj = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as err:
        raise DataFormatError(f"class {text!r} not found in this installation ({err})", path=path) from None
    if not (isinstance(obj, type) and issubclass(obj, base)):
        bases = base if isinstance(base, tuple) else (base,)
        raise DataFormatError(f"{text!r} is not a {' or '.join(b.__name__ for b in bases)}", path=path)
    return obj


# ----------------------------------------------------------------------------- kernels and inducing variables
def _is_simple(value) -> bool:
    simple = value is None or isinstance(value, (bool, int, float, str, np.bool_, np.integer, np.floating))
    return simple or (isinstance(value, (list, tuple)) and all(_is_simple(v) for v in value))


def _plain(value):
    return [_plain(v) for v in value] if isinstance(value, (list, tuple)) else np.asarray(value).item() if value is not None else None


def _describe_tree(obj, where: str, path: Path, constants: dict | None = None) -> dict:
    """The constructor of ``obj`` (a kernel, inducing variable or input map) as a JSON tree; fixed
    array arguments go into ``constants`` (key → ndarray or CSR)."""
    cls = type(obj)
    node: dict = {"class": _class_path(cls, MODEL_ROOTS, where, path),
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
        elif isinstance(value, tf.Module) or type(value) in INPUT_MAPS.values():  # an input map's inner map
            node["children"][arg] = _describe_tree(value, f"{where}.{arg}", path, constants)
        elif isinstance(value, (list, tuple)) and value and all(isinstance(v, tf.Module) for v in value):
            node["children"][arg] = [_describe_tree(v, f"{where}.{arg}[{i}]", path, constants) for i, v in enumerate(value)]
        elif constants is not None and (isinstance(value, np.ndarray) or sp.issparse(value)):
            key = f"{where}.{arg}"
            constants[key] = value
            node.setdefault("constants", {})[arg] = {"key": key, "kind": "csr" if sp.issparse(value) else "ndarray"}
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


def build_tree(node: dict, where: str, path: Path, constants: dict | None = None,
               base: type | tuple = (Kernel, InducingVariables)):
    """Rebuild the object a :func:`checked_tree` node describes (``constants``: key → array);
    its children are rebuilt with the same ``base`` (a kernel's are kernels, an input map's input maps)."""
    cls = resolve_class(node["class"], MODEL_ROOTS, base, path)
    kwargs = dict(node.get("arguments", {}))
    kwargs.update({arg: np.ones(shape) for arg, shape in node.get("parameters", {}).items()})
    for arg, entry in node.get("constants", {}).items():
        if constants is None or entry["key"] not in constants:
            raise DataFormatError(f"the constant {entry['key']!r} of {where} is missing", path=path)
        kwargs[arg] = constants[entry["key"]]
    for arg, child in node.get("children", {}).items():
        kwargs[arg] = ([build_tree(c, f"{where}.{arg}[{i}]", path, constants, base) for i, c in enumerate(child)]
                       if isinstance(child, list) else build_tree(child, f"{where}.{arg}", path, constants, base))
    if "active_dims" in node:
        dims = node["active_dims"]
        kwargs["active_dims"] = slice(*dims["slice"]) if isinstance(dims, dict) else list(dims)
    try:
        return cls(**kwargs)
    except Exception as err:  # a constructor's own complaint: the tree does not describe a valid object
        raise DataFormatError(f"could not rebuild {where} ({node['class']}): {type(err).__name__}: {err}", path=path) from None


def placeholder_paths(node, where: str) -> list[tuple[str, object]]:
    """``(GPflow path, shape as recorded)`` of each Parameter placeholder that rebuilding the tree
    ``node`` at ``where`` allocates, children included (a shape as a damaged file holds it)."""
    if not isinstance(node, dict):
        return []
    parameters, children = node.get("parameters"), node.get("children")
    found = [(f"{where}.{arg}", shape) for arg, shape in parameters.items()] if isinstance(parameters, dict) else []
    for arg, child in children.items() if isinstance(children, dict) else ():
        if isinstance(child, list):
            for i, c in enumerate(child):
                found += placeholder_paths(c, f"{where}.{arg}[{i}]")
        else:
            found += placeholder_paths(child, f"{where}.{arg}")
    return found


def check_placeholders(meta: dict, values: dict[str, np.ndarray], file: Path) -> None:
    """Every Parameter placeholder of the trees ``kernel``, ``inducing_variable`` and ``input_map``
    of ``meta`` must have the shape recorded for its parameter in ``meta["parameters"]`` and the
    shape of its saved value, a float array: nothing is allocated larger than what the file holds."""
    saved = meta.get("parameters") if isinstance(meta.get("parameters"), dict) else {}
    for key in ("kernel", "inducing_variable", "input_map"):
        for name, shape in placeholder_paths(meta.get(key), key):
            entry, value = saved.get(name), values.get(name)
            recorded = entry.get("shape") if isinstance(entry, dict) else None
            whole = isinstance(shape, list) and all(isinstance(n, int) and not isinstance(n, bool) for n in shape)
            if value is None or value.dtype.kind != "f" or not (whole and shape == recorded == list(value.shape)):
                have = "none" if value is None else f"{value.dtype} {list(value.shape)}"
                raise DataFormatError(f"the placeholder of {name} has shape {shape!r}, but the parameter is recorded "
                                      f"with shape {recorded!r} and saved as {have}", path=file)


def checked_tree(obj, where: str, path: Path, rebuild: bool = True, constants: dict | None = None) -> dict:
    """Describe ``obj`` and (for kernels, whose parameters are small) rebuild it at once, so that a
    structure the format cannot carry is refused when saving rather than when loading. Fixed array
    arguments go into ``constants`` when it is given (refused otherwise)."""
    node = json.loads(json.dumps(_describe_tree(obj, where, path, constants)))
    if not rebuild:
        return node
    rebuilt = {k: tuple(p.shape) for k, p in parameters_by_name(build_tree(node, where, path, constants)).items()}
    original = {k: tuple(p.shape) for k, p in parameters_by_name(obj).items()}
    if rebuilt != original:
        raise DataFormatError(f"cannot save {where}: rebuilding {node['class']} from its constructor arguments gives "
                              f"parameters {rebuilt}, not {original}", path=path)
    return node


def describe_likelihood(likelihood, path: Path) -> dict:
    cls = type(likelihood)
    if not isinstance(likelihood, MultiLabelBernoulli):
        raise DataFormatError(f"cannot save a likelihood of class {cls.__module__}.{cls.__qualname__}: "
                              "MLGPF saves hold a MultiLabelBernoulli", path=path)
    return {"class": _class_path(cls, MODEL_ROOTS, "likelihood", path), "num_labels": int(likelihood.num_labels),
            "num_latent": int(likelihood.num_latent), "num_gauss_hermite_points": int(likelihood.num_gauss_hermite_points)}


def check_sizes(meta: dict, values: dict, constants: dict | None, file: Path) -> None:
    """Nothing that rebuilding the model allocates is larger than what the files hold: the
    placeholders of the trees have their saved values' shapes (:func:`check_placeholders`), and the
    sizes the likelihood gives (K, P) are whole numbers, each and their product K × P at most the
    largest element count of the saved arrays (an array of no bytes, such as one of shape (0, n),
    counts for nothing)."""
    largest = max((a.size for a in [*values.values(), *(constants or {}).values()] if a.dtype.itemsize), default=0)
    check_placeholders(meta, values, file)
    lik = meta.get("likelihood")
    sizes = {"K": lik.get("num_labels"), "P": lik.get("num_latent")} if isinstance(lik, dict) else {}
    check_size_products(sizes, largest, file)


def check_size_products(sizes: dict, largest: int, file: Path) -> None:
    """Each of ``sizes`` (letter → value) is a whole number at most ``largest``, and so are the
    products of those allocated together among them (K × P, M × D, M × P, P × M × M)."""
    for n in sizes.values():
        if not (isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= largest):
            raise DataFormatError(f"a size in the structure is {n!r}, not a whole number up to {largest}", path=file)
    for product in ("KP", "MD", "MP", "PMM"):
        if all(c in sizes for c in product) and math.prod(sizes[c] for c in product) > largest:
            raise DataFormatError(f"{' × '.join(product)} = {math.prod(sizes[c] for c in product)} is more than the saved "
                                  f"arrays hold (at most {largest} elements)", path=file)


def check_q_shapes(family: str, M: int, P: int, extra: dict, values: dict, file: Path) -> None:
    """q(u) of M inducing points and P latent GPs is built only when each parameter it allocates has
    the shape of its saved value; a family built at M = 5, P = 7 tells which axes are M and which P."""
    for name, p in parameters_by_name(make_q(family, 5, 7, **extra)).items():
        want = tuple(M if n == 5 else P if n == 7 else n for n in p.unconstrained_variable.shape)
        have = values.get(f"q.{name}")
        if have is None or have.shape != want:
            raise DataFormatError(f"q(u) of M = {M}, P = {P} needs q.{name} of shape {want}, saved "
                                  f"{'none' if have is None else have.shape}", path=file)


# ----------------------------------------------------------------------------- transforms
def describe_transform(bijector, where: str, path: Path) -> dict:
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
        return {"transform": describe_transform(value, where, path)}
    if isinstance(value, (list, tuple)):
        return [_encode(v, where, path) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (np.ndarray, np.generic, tf.Tensor, tf.Variable)):
        array = np.asarray(value)
        return {"array": array.tolist(), "dtype": str(array.dtype)}
    raise DataFormatError(f"cannot save the transform of {where}: argument of type {type(value).__name__}", path=path)


def _decode(value, where: str, path: Path, depth: int):
    if isinstance(value, dict) and "transform" in value:
        return build_transform(value["transform"], where, path, depth + 1)
    if isinstance(value, dict):
        dtype = np.dtype(value["dtype"])
        if dtype.kind not in "biuf" or dtype.shape or dtype.itemsize > 16:  # no strings or sub-arrays of any size
            raise DataFormatError(f"the transform of {where} has an argument of dtype {dtype}, not a number", path=path)
        return np.asarray(value["array"], dtype=dtype)
    return [_decode(v, where, path, depth) for v in value] if isinstance(value, list) else value


def build_transform(node: dict, where: str, path: Path, depth: int = 0):
    """The bijector a :func:`describe_transform` node describes (``depth``: how deep it is nested)."""
    if depth > MAX_TRANSFORM_DEPTH:
        raise DataFormatError(f"the transform of {where} is nested more than {MAX_TRANSFORM_DEPTH} deep", path=path)
    cls = resolve_class(node["class"], _BIJECTOR_ROOTS, tfp.bijectors.Bijector, path)
    try:
        return cls(**{k: _decode(v, where, path, depth) for k, v in node.get("arguments", {}).items()})
    except MLGPError:
        raise
    except Exception as err:
        raise DataFormatError(f"could not rebuild the transform of {where} ({node['class']}): {err}", path=path) from None


def checked_transform(bijector, where: str, path: Path) -> dict:
    node = describe_transform(bijector, where, path)
    if describe_transform(build_transform(node, where, path), where, path) != node:
        raise DataFormatError(f"cannot save the transform of {where}: {class_name(node)} does not rebuild from its "
                              "recorded arguments", path=path)
    return node


def class_name(node: dict) -> str:
    inner = [class_name(v["transform"]) for v in node.get("arguments", {}).get("bijectors", []) if isinstance(v, dict)]
    return node["class"].rpartition(":")[2] + (f"[{', '.join(inner)}]" if inner else "")


# ----------------------------------------------------------------------------- constant arrays
def constant_arrays(constants: dict) -> dict[str, np.ndarray]:
    """The plain arrays that hold ``constants`` (key → ndarray or CSR) in an ``.npz``: an ndarray
    under its key, a CSR matrix as ``key.data``, ``key.indices``, ``key.indptr`` and ``key.shape``."""
    out = {}
    for key, value in constants.items():
        if sp.issparse(value):
            m = sp.csr_matrix(value)
            out.update({f"{key}.data": m.data, f"{key}.indices": m.indices, f"{key}.indptr": m.indptr,
                        f"{key}.shape": np.asarray(m.shape, dtype=np.int64)})
        else:
            out[key] = np.asarray(value)
    return out


def constants_from_arrays(tree_nodes, arrays: dict[str, np.ndarray], path: Path) -> dict:
    """Key → ndarray or CSR for every constant the nodes (and their children) name, checked."""
    out: dict = {}

    def walk(node):
        if not isinstance(node, dict):
            return
        for entry in node.get("constants", {}).values():
            key, kind = entry["key"], entry["kind"]
            try:
                if kind == "ndarray":
                    out[key] = arrays[key]
                elif kind == "csr":
                    shape = arrays[f"{key}.shape"]
                    if shape.shape != (2,) or shape.dtype.kind not in "iu":
                        raise ValueError(f"its shape must be 2 integers, got {shape!r}")
                    out[key] = csr_from_parts(arrays[f"{key}.data"], arrays[f"{key}.indices"], arrays[f"{key}.indptr"],
                                              tuple(shape))
                else:
                    raise DataFormatError(f"unknown constant kind {kind!r} for {key!r}", path=path)
            except (KeyError, ValueError, TypeError) as err:
                raise DataFormatError(f"the constant {key!r} is missing or malformed ({err})", path=path) from None
        for child in node.get("children", {}).values():
            for c in child if isinstance(child, list) else [child]:
                walk(c)

    for node in tree_nodes:
        walk(node)
    return out


def check_all_used(constants: dict, arrays: dict[str, np.ndarray], path: Path) -> None:
    """Refuse the arrays of a save's constants file that none of its ``constants`` (from
    :func:`constant_arrays` of all its trees) is stored in."""
    used = set(constant_arrays(constants))
    if set(arrays) - used:
        raise DataFormatError(f"unexpected array(s) {sorted(set(arrays) - used)} in the constants file", path=path)
