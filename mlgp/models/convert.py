"""Converting MLGPF save folders of the earlier formats ``mlgp.MLGPF/1`` to ``mlgp.MLGPF/4`` to the
current format ``mlgp.MLGPF/5``, once, in place::

    python -m mlgp.models.convert FOLDER [FOLDER ...]

prints one line per folder, ``FOLDER: converted from mlgp.MLGPF/N to mlgp.MLGPF/5``, ``FOLDER:
already current (mlgp.MLGPF/5)`` (nothing is written) or ``FOLDER: error: …``, and exits with
status 2 when any folder failed (else 0). :mod:`mlgp.models.persistence` reads format 5 only and
refuses the earlier formats by name, pointing here.

This module holds the one reader of the earlier formats. They differ from format 5 thus:

- ``mlgp.MLGPF/1``: ``{"format", "spec", "trainable"}`` only, for models built by
  ``mlgpf_from_data``; the structure is rebuilt from ``spec`` (its arguments),
  with ``whiten`` choosing the q(u) family; D, K, P and M (and the products allocated together) are
  bounded by what ``parameters.npz`` holds before anything is built. A model not built by
  ``from_data`` (no ``spec``) cannot be converted.
- ``mlgp.MLGPF/2``: the trees of format 5, but ``whiten`` in place of ``q``, no ``float_type``
  (float64), and q(u)'s values under ``q_mu`` / ``q_sqrt`` (``q.q_mu`` / ``q.q_sqrt`` since);
  format 1 names them so too.
- ``mlgp.MLGPF/3``: format 4 without the input map and the constants file.
- ``mlgp.MLGPF/4``: format 5 without ``files``: the arrays always in ``parameters.npz`` and, when
  the model holds fixed arrays, ``constants.npz``.

A folder is converted by reading it (:func:`mlgp.models.save_folder.read_folder`, so a save that
commits meanwhile is not read half), writing its ``model.json`` as format 5 in memory, rebuilding
the model from it with every check of :func:`mlgp.models.persistence.rebuild_mlgpf`, and saving
that model over the folder with :func:`mlgp.models.persistence.save_mlgpf`, whose commit is atomic
as a whole with ``model.json`` written last: the arrays go to the other name set
(``parameters-1.npz``, ``constants-1.npz``), and the old files are deleted once the new
``model.json`` names the new ones. The converted folder loads to the model that loading the old
folder gave before format 5 became the only one read, to the bit (tested). A folder that cannot be
read or rebuilt raises an :class:`~mlgp.errors.MLGPError` naming the path
(:class:`~mlgp.errors.DataFormatError`, :class:`~mlgp.errors.ModelNotFoundError`) before anything
is written, and is left as it was.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

import numpy as np

from ..errors import DataFormatError, MLGPError
from ..files import as_path
from ..inducing import UnitSphereInducingPoints
from ..kernels import make_kernel
from ..likelihoods import MultiLabelBernoulli
from ..variational import make_q
from .mlgpf import MLGPF
from .persistence import FORMAT, OLD_FORMATS, describe_mlgpf, rebuild_mlgpf, save_mlgpf
from .rebuild import quadrature_points
from .save_folder import NAME_SETS, Saved, existing, read_folder, read_json
from .structure import check_size_products

__all__ = ["convert_folder", "main"]

_V1, _V2 = OLD_FORMATS[0], OLD_FORMATS[1]
#: The parameter paths of q(u) in formats 1 and 2 (held by the model itself), and since.
_V2_NAMES = {"q_mu": "q.q_mu", "q_sqrt": "q.q_sqrt"}
#: ``spec`` keys of format 1 that size what is built from it.
_V1_SIZES = {"D": "num_features", "K": "num_labels", "P": "num_latent_gps", "M": "num_inducing"}


def convert_folder(path: str | Path) -> str | None:
    """Convert the save folder ``path`` to format 5 in place (module docstring); the format it was
    in, or ``None`` when it is in format 5 already (nothing is written)."""
    path = as_path(path)
    file = existing(path, "model.json")
    meta = read_json(file.read_bytes(), file)
    if isinstance(meta, dict) and meta.get("format") == FORMAT:
        return None
    saved = read_folder(path, _parse_old, _old_files)
    try:
        model = _rebuild_old(saved, path)
    except (MemoryError, RecursionError) as err:
        raise DataFormatError(f"the save cannot be rebuilt here ({type(err).__name__}: {err})", path=path) from None
    save_mlgpf(model, path)
    return saved.meta["format"]


# ----------------------------------------------------------------------------- reading the folder
def _parse_old(text: bytes, file: Path) -> dict:
    meta = read_json(text, file)
    found = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
    if not (isinstance(meta, dict) and isinstance(found, str) and found in OLD_FORMATS):
        raise DataFormatError(f"not an MLGPF save of an earlier format (format {found!r}; the converter reads "
                              f"{', '.join(repr(f) for f in OLD_FORMATS)} and leaves {FORMAT!r} as it is)", path=file)
    return meta


def _old_files(meta: dict, path: Path, file: Path) -> dict:
    """The earlier formats' array files: the first name set, constants when present (not in format 1)."""
    names = NAME_SETS[0]
    constants = meta["format"] != _V1 and (path / names["constants"]).is_file()
    return {"parameters": names["parameters"], "constants": names["constants"] if constants else None}


def _renamed(entries: dict) -> dict:
    """A mapping of format 1 or 2 with q(u)'s paths renamed to those of format 5."""
    return {_V2_NAMES.get(name, name): value for name, value in entries.items()}


# ----------------------------------------------------------------------------- the model of an old save
def _rebuild_old(saved: Saved, path: Path):
    """The model the old save describes, rebuilt and checked from its ``model.json`` as format 5."""
    meta, values, constants = saved
    if meta["format"] in (_V1, _V2):
        values = _renamed(values)
    with _format_errors(path):
        meta = _meta_of_v1(meta, values, path) if meta["format"] == _V1 else _meta_of_v2_to_v4(meta)
    return rebuild_mlgpf(Saved(meta, values, constants), path, MLGPF)


@contextlib.contextmanager
def _format_errors(path: Path):
    """A constructor's refusal or a missing or mistyped entry: a save that does not make a model."""
    try:
        yield
    except DataFormatError:
        raise
    except MLGPError as err:
        raise DataFormatError(f"inconsistent MLGPF save ({type(err).__name__}: {err})", path=path) from None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, ArithmeticError) as err:
        raise DataFormatError(f"malformed MLGPF save ({type(err).__name__}: {err})", path=path / "model.json") from None


def _meta_of_v2_to_v4(meta: dict) -> dict:
    """``model.json`` of format 2, 3 or 4 as format 5 (the arrays are named when saving)."""
    new = {key: value for key, value in meta.items() if key != "whiten"}
    new.update(format=FORMAT, files={}, q=meta.get("q") or {"family": "whitened" if meta["whiten"] else "cholesky"},
               float_type=meta.get("float_type", "float64"), input_map=meta.get("input_map"))
    if meta["format"] == _V2:
        new["parameters"] = _renamed(meta["parameters"])
    return new


def _meta_of_v1(meta: dict, values: dict, path: Path) -> dict:
    """``model.json`` of format 1 as format 5: the structure of the model ``from_data`` built, with
    the saved trainable flags."""
    file = path / "model.json"
    spec, trainable = meta.get("spec"), meta.get("trainable", {})
    largest = max((a.size for a in values.values() if a.dtype.itemsize), default=0)
    check_size_products({c: spec.get(key) for c, key in _V1_SIZES.items()} if isinstance(spec, dict) else {}, largest, file)
    if not (isinstance(trainable, dict) and all(isinstance(flag, bool) for flag in trainable.values())):
        raise DataFormatError("the trainable flags must be true or false", path=file)
    new = describe_mlgpf(_build_v1(spec, path), path).meta
    for name, flag in trainable.items():
        if name in new["parameters"]:
            new["parameters"][name]["trainable"] = flag
    return new


def _build_v1(spec, path: Path):
    """The model (placeholder values) format 1 recorded the ``from_data`` arguments ``spec`` of."""
    if not spec or spec.get("kernel") is None:
        raise DataFormatError(f"this save (format {_V1}) holds no model structure (model not built by "
                              "mlgpf_from_data): it cannot be converted", path=path / "model.json")
    D, K, P, M = (spec[key] for key in _V1_SIZES.values())
    sphere = spec.get("unit_sphere_inducing", False)  # saves made before the option lack the key
    Z = UnitSphereInducingPoints(np.ones((M, D))) if sphere else np.zeros((M, D))
    quadrature = quadrature_points(spec["num_gauss_hermite_points"], path / "model.json")
    likelihood = MultiLabelBernoulli(K, P, num_gauss_hermite_points=quadrature)
    q = make_q("whitened" if spec["whiten"] else "cholesky", M, P)
    model = MLGPF(make_kernel(spec["kernel"], D), likelihood, Z, num_data=spec["num_data"], q=q)
    model.spec = spec
    return model


# ----------------------------------------------------------------------------- the command
def main(argv: list[str] | None = None) -> int:
    """``python -m mlgp.models.convert FOLDER [FOLDER ...]`` (module docstring); the exit status."""
    parser = argparse.ArgumentParser(prog="python -m mlgp.models.convert",
                                     description=f"Convert MLGPF save folders of formats {', '.join(OLD_FORMATS)} to "
                                                 f"{FORMAT}, in place (atomically; model.json last).")
    parser.add_argument("folders", nargs="+", metavar="FOLDER", help="an MLGPF save folder")
    failed = 0
    for folder in parser.parse_args(argv).folders:
        try:
            old = convert_folder(folder)
        except MLGPError as err:
            print(f"{folder}: error: {err}", flush=True)
            failed += 1
            continue
        print(f"{folder}: converted from {old} to {FORMAT}" if old else f"{folder}: already current ({FORMAT})", flush=True)
    return 2 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
