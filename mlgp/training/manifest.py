"""The manifest of a checkpoint folder (:mod:`mlgp.training.checkpoints`): what it records of a
run and how a stored record differs from the run now.

:func:`run_record` describes a run: the model's class, its trainable variables (:func:`variable_names`,
shape, dtype) and its ``spec``; the training data's sizes and fingerprint; the settings a resumed
run must share (:func:`training_settings`, everything but ``epochs``). :func:`manifest_problem` says
what keeps a parsed manifest from being compared; :func:`mismatch` says, in words, why the run a
manifest describes is not the run now (another model, other data, other settings).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import numpy as np
import scipy.sparse as sp
import tensorflow as tf

from ..fingerprint import data_fingerprint

__all__ = ["FORMAT", "jsonable", "manifest_problem", "mismatch", "run_record", "training_settings", "variable_names"]

#: The manifest's format tag.
FORMAT = "mlgp.checkpoint/1"


def variable_names(model) -> list[str]:
    """Readable names of ``model.trainable_variables``: GPflow parameter paths (``.q.q_mu``) where
    the model is a ``tf.Module`` with parameters, else the variables' own names."""
    paths = {}
    if isinstance(model, tf.Module):
        from gpflow.utilities import parameter_dict

        for path, p in parameter_dict(model).items():
            v = getattr(p, "unconstrained_variable", p)
            if isinstance(v, tf.Variable):
                paths.setdefault(v.ref(), path)
    return [paths.get(v.ref(), v.name) for v in model.trainable_variables]


def _nnz(A) -> int:
    return int(A.nnz) if sp.issparse(A) else int(np.count_nonzero(A))


def jsonable(value):
    """``value`` as JSON stores it (tuples as lists, NumPy scalars as numbers)."""
    return json.loads(json.dumps(value, default=lambda o: o.item() if hasattr(o, "item") else str(o)))


def training_settings(batch_size, negatives, learning_rate, optimizer, natgrad_gamma, seed, batch_growth,
                      kl_weight: float = 1.0) -> dict:
    """The settings a resumed run must share with the run it resumes, from ``fit``'s arguments.

    ``epochs`` is not one of them (a resumed run may ask for more), nor are the options that do not
    change the trajectory (``jit_compile``, ``checkpoint_every``, ``progress``, …). ``natgrad_gamma``
    counts only with ``optimizer="natgrad"``; for an optimizer object, its class and its own
    learning rate stand for ``optimizer`` and ``learning_rate``. ``kl_weight`` is recorded only
    when it is not 1, so that a manifest written before it existed still matches its run.

    Returns
    -------
    dict
        In JSON form (tuples as lists), as the manifest stores it.
    """
    if optimizer is None or isinstance(optimizer, str):
        name = optimizer or "adam"
    else:  # an object: its class, and its own step size (restored from the checkpoint otherwise)
        name = f"{type(optimizer).__module__}.{type(optimizer).__qualname__}"
        try:
            learning_rate = float(np.asarray(optimizer.learning_rate))  # a variable, mirrored too
        except (AttributeError, TypeError, ValueError):
            learning_rate = type(getattr(optimizer, "learning_rate", None)).__name__
    return jsonable(dict(batch_size=batch_size, negatives=negatives, learning_rate=learning_rate, optimizer=name,
                          natgrad_gamma=natgrad_gamma if name == "natgrad" else None, seed=seed,
                          batch_growth=batch_growth, **({} if float(kl_weight) == 1.0 else {"kl_weight": kl_weight})))


def _plain(o):
    """``json.dumps``'s fallback for a spec: tf.Module's wrapped mappings and sequences as plain ones."""
    if isinstance(o, Mapping):
        return dict(o)
    if isinstance(o, Sequence) and not isinstance(o, (str, bytes)):
        return list(o)
    raise TypeError(f"{type(o).__name__} is not JSON-able")


def run_record(model, X, Y, settings: dict) -> dict:
    """The manifest's description of a run, in JSON form.

    Parameters
    ----------
    model
        Its class, trainable variables (:func:`variable_names`, shape, dtype) and ``spec`` (when a
        JSON-able mapping) describe its structure.
    X, Y
        (N, D) features and (N, K) labels, CSR or dense, as ``fit`` checked them: their sizes,
        numbers of stored non-zeros and a BLAKE2b fingerprint of their values, the same for a matrix
        given dense or sparse.
    settings
        From :func:`training_settings`.
    """
    structure = {
        "class": f"{type(model).__module__}.{type(model).__qualname__}",
        "variables": [{"name": name, "shape": [None if d is None else int(d) for d in v.shape], "dtype": v.dtype.name}
                      for name, v in zip(variable_names(model), model.trainable_variables)],
    }
    spec = getattr(model, "spec", None)
    if isinstance(spec, Mapping):  # tf.Module keeps a dict attribute as a wrapped mapping
        try:
            structure["spec"] = json.loads(json.dumps(spec, default=_plain))
        except (TypeError, ValueError):
            pass  # not JSON-able: the variables still describe the structure
    N, D = X.shape
    data = {"N": int(N), "D": int(D), "K": int(Y.shape[1]), "nnz_X": _nnz(X), "nnz_Y": _nnz(Y),
            "fingerprint": data_fingerprint(X, Y)}
    return {"format": FORMAT, "model": structure, "data": data, "settings": jsonable(settings)}


def _shape(entry) -> str:
    return str(tuple(entry["shape"]))


def _variable_difference(saved: list, now: list) -> str | None:
    """The first difference between two variable lists, in words (None when they agree)."""
    for i, (a, b) in enumerate(zip(saved, now)):
        if a["name"] != b["name"]:
            return f"variable {i + 1} is {a['name']} {_shape(a)} there, {b['name']} {_shape(b)} now"
        if a["shape"] != b["shape"]:
            return f"{a['name']} has shape {_shape(a)} there, {_shape(b)} now"
        if a["dtype"] != b["dtype"]:
            return f"{a['name']} is {a['dtype']} there, {b['dtype']} now"
    if len(saved) != len(now):
        extra = (saved if len(saved) > len(now) else now)[min(len(saved), len(now))]
        return (f"{len(saved)} variables there, {len(now)} now (first unmatched: {extra['name']} "
                f"{_shape(extra)})")
    return None


def _differences(saved: dict, now: dict) -> str:
    return ", ".join(f"{k}: {saved.get(k)!r} there, {now.get(k)!r} now"
                     for k in list(saved) + [k for k in now if k not in saved] if saved.get(k) != now.get(k))


def _data_words(d: dict) -> str:
    return f"N={d.get('N')} D={d.get('D')} K={d.get('K')}, fingerprint {str(d.get('fingerprint'))[:12]}"


def _is_dict_of(value, types: dict) -> bool:
    """Whether ``value`` is a dict whose entry ``k`` is an instance of ``types[k]`` for every ``k``."""
    return isinstance(value, dict) and all(isinstance(value.get(k), t) for k, t in types.items())


def manifest_problem(saved) -> str | None:
    """What keeps ``saved`` (a parsed manifest) from being compared by :func:`mismatch`, in words
    (None when nothing does): an object whose ``model`` is an object with a ``class`` string, a
    ``variables`` list of objects with a ``name`` and ``dtype`` string and a ``shape`` list, and a
    ``spec`` object or null when present; whose ``data`` and ``settings`` are objects. A manifest of
    another format needs only be an object (:func:`mismatch` names its format)."""
    if not isinstance(saved, dict):
        return f"it holds a JSON {type(saved).__name__}, not an object"
    if saved.get("format") != FORMAT:
        return None
    model = saved.get("model")
    if not (_is_dict_of(model, {"class": str, "variables": list})
            and isinstance(model.get("spec"), (dict, type(None)))):
        return "'model' must be an object with a 'class' string, a 'variables' list and an optional 'spec' object"
    variable = {"name": str, "shape": list, "dtype": str}
    if not all(_is_dict_of(v, variable) for v in model["variables"]):
        return "each of 'model.variables' must be an object with a 'name' string, a 'shape' list and a 'dtype' string"
    for key in ("data", "settings"):
        if not isinstance(saved.get(key), dict):
            return f"{key!r} must be an object, got {type(saved.get(key)).__name__}"
    return None


def mismatch(saved: dict, now: dict) -> str | None:
    """Why the run described by ``saved`` (a manifest; :func:`manifest_problem` found nothing wrong
    with its shape) is not the run ``now`` (None when it is)."""
    if saved.get("format") != FORMAT:
        return f"the manifest has format {saved.get('format')!r}, not {FORMAT!r}"
    a, b = saved.get("model", {}), now["model"]
    parts = []
    if a.get("class") != b["class"]:
        parts.append(f"class {a.get('class')} there, {b['class']} now")
    variables = _variable_difference(a.get("variables", []), b["variables"])
    if variables:
        parts.append(variables)
    spec = _differences(a.get("spec") or {}, b.get("spec") or {})
    if parts or (spec and saved.get("data") == now["data"]):
        return f"the checkpoints were written for another model ({'; '.join(parts + ([spec] if spec else []))})"
    if saved.get("data") != now["data"]:
        return (f"the checkpoints were written for other training data ({_data_words(saved.get('data', {}))}; "
                f"this run: {_data_words(now['data'])})")
    settings = _differences(saved.get("settings", {}), now["settings"])
    if settings:
        return f"the checkpoints were written with other training settings ({settings})"
    return None
