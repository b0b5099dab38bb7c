"""Building the MLGPF a save of format ``mlgp.MLGPF/5`` describes, before its values are assigned:
:func:`build_model` makes the kernel, inducing variable and input map from their recorded trees,
the likelihood and the q(u) family from their descriptions, in the recorded float type. Every
recorded value is checked before it is used; a value that cannot be is a
:class:`~mlgp.errors.DataFormatError` naming the file. :mod:`mlgp.models.persistence` reads the
files and assigns the values.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
from gpflow.config import as_context, config

from ..blocks import INPUT_MAPS, InputMap
from ..errors import DataFormatError
from ..likelihoods import MultiLabelBernoulli
from ..variational import Q_FAMILIES, make_q
from .structure import MODEL_ROOTS, build_tree, check_all_used, check_q_shapes, class_name, constants_from_arrays, resolve_class

__all__ = ["build_model", "quadrature_points"]


def build_model(meta: dict, path: Path, model_class: type, arrays: dict | None, values: dict):
    """The model ``meta`` (``model.json``) describes, with placeholder values; ``arrays``: the
    constants file's, if any; ``values``: the parameters' (their shapes bound q(u)'s)."""
    file = path / "model.json"
    float_name = meta["float_type"]
    if float_name not in ("float64", "float32"):
        raise DataFormatError(f"unknown float_type {float_name!r}", path=file)
    q_meta = meta["q"]
    if q_meta["family"] not in Q_FAMILIES:
        raise DataFormatError(f"unknown q(u) family {q_meta['family']!r}", path=file)
    extra = {k: v for k, v in q_meta.items() if k in ("jitter", "sigma_lower")}
    num_data, lik = meta["num_data"], meta["likelihood"]
    numbers = [*extra.values()] + ([] if num_data is None else [num_data])
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0 for v in numbers):
        raise DataFormatError(f"num_data and q's jitter must be finite numbers >= 0, got {numbers}", path=file)
    quadrature = quadrature_points(lik["num_gauss_hermite_points"], file)
    nodes = [meta["kernel"], meta["inducing_variable"], meta["input_map"]]
    constants = constants_from_arrays(nodes, arrays, path) if arrays is not None else {}
    cfg = replace(config(), float=np.dtype(float_name).type)
    with as_context(cfg):
        kernel = build_tree(meta["kernel"], "kernel", path, constants)
        inducing = build_tree(meta["inducing_variable"], "inducing_variable", path, constants)
        input_map = None
        if meta["input_map"] is not None:
            input_map = build_tree(meta["input_map"], "input_map", path, constants, base=tuple(INPUT_MAPS.values()))
            if not isinstance(input_map, InputMap):
                raise DataFormatError(f"{class_name(meta['input_map'])} is not an input map", path=file)
        lik_class = resolve_class(lik["class"], MODEL_ROOTS, MultiLabelBernoulli, path)
        likelihood = lik_class(lik["num_labels"], lik["num_latent"], num_gauss_hermite_points=quadrature)
        M, P = int(inducing.num_inducing), lik["num_latent"]
        check_q_shapes(q_meta["family"], M, P, extra, values, file)
        q = make_q(q_meta["family"], M, P, **extra)
        model = model_class(kernel, likelihood, inducing, num_data=num_data, q=q, input_map=input_map)
    check_all_used(constants, arrays or {}, path)
    model.spec = dict(meta.get("spec") or {})
    return model


def quadrature_points(n, file: Path) -> int:
    if not (isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= 1000):
        raise DataFormatError(f"num_gauss_hermite_points must be a whole number in [1, 1000], got {n!r}", path=file)
    return n
