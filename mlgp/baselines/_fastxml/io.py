"""Saving and loading fitted FastXML-family estimators as one ``.npz`` file of plain arrays.

Contract: :func:`save_arrays` writes the estimator's class name, its ``get_params()`` and scalar
fitted attributes as JSON strings, and every array it hands over (the forest's arrays and any
extra arrays such as inverse propensities or centroids) under their names; :func:`load_arrays`
reads them back with ``allow_pickle=False`` and checks the format tag, raising
:class:`~mlgp.errors.DataFormatError` (naming the file) on anything else. Nothing is pickled, so a
file from an untrusted source cannot run code.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ...errors import DataFormatError

__all__ = ["FORMAT", "save_arrays", "load_arrays"]

FORMAT = "mlgp.FastXML/1"


def save_arrays(path: str | Path, class_name: str, params: dict, fitted: dict,
                arrays: dict[str, np.ndarray]) -> Path:
    """Write ``path`` (``.npz`` appended if missing); returns the path written."""
    path = Path(path)
    if path.suffix != ".npz":
        path = path.with_name(path.name + ".npz")
    header = {"format": FORMAT, "class": class_name, "params": params, "fitted": fitted}
    np.savez(path, __header__=np.array(json.dumps(header, default=_plain)), **arrays)
    return path


def _plain(value):
    """NumPy scalars (e.g. parameters from a grid over ``np.arange``) as Python numbers."""
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"cannot save a parameter of type {type(value).__name__} ({value!r})")


def load_arrays(path: str | Path) -> tuple[str, dict, dict, dict[str, np.ndarray]]:
    """``(class name, params, fitted scalars, arrays)`` from a file written by :func:`save_arrays`."""
    path = Path(path)
    if not path.exists() and path.with_name(path.name + ".npz").exists():
        path = path.with_name(path.name + ".npz")
    try:
        loaded = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise
    except (OSError, ValueError, EOFError) as err:
        raise DataFormatError(f"{path}: not a saved FastXML model ({err})") from err
    if not isinstance(loaded, np.lib.npyio.NpzFile):
        raise DataFormatError(f"{path}: not a saved FastXML model (a single array, not an .npz archive)")
    try:
        with loaded as f:
            header = json.loads(str(f["__header__"]))
            arrays = {k: f[k] for k in f.files if k != "__header__"}
    except (OSError, KeyError, ValueError, EOFError) as err:
        raise DataFormatError(f"{path}: not a saved FastXML model ({err})") from err
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise DataFormatError(f"{path}: format {header.get('format')!r}, expected {FORMAT!r}")
    missing = [k for k in ("class", "params", "fitted") if k not in header]
    if missing:
        raise DataFormatError(f"{path}: the header lacks {missing}")
    return header["class"], header["params"], header["fitted"], arrays
