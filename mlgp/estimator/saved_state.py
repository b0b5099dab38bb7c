"""The checked view of one saved estimator's fitted state (:class:`SavedState`), through which each
class's ``_restore_fitted`` reads a file: every accessor checks the value it returns — scalars
(type, range, at most int64), dense arrays (dtype kind, shape against the fitted scalars, finite,
range) and CSR matrices (well-formed parts through :func:`mlgp.files.csr_from_parts`) — and raises
:class:`~mlgp.errors.DataFormatError` naming the file and the entry. :mod:`mlgp.estimator.persistence`
builds one per file and refuses entries no accessor read.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..errors import DataFormatError
from ..files import csr_from_parts

__all__ = ["MAX_INT", "SavedState"]

#: A fitted integer or a matrix dimension must fit in int64.
MAX_INT = 2 ** 63 - 1


class SavedState:
    """The fitted state of one file, as ``_restore_fitted`` reads it: every accessor checks the value
    it returns (type, dtype kind, shape, range) and raises :class:`~mlgp.errors.DataFormatError`
    naming the file and the entry.

    Parameters
    ----------
    path : Path
        The file, for messages.
    scalars : dict
        The header's ``fitted`` entries (or a nested estimator's).
    arrays : dict of str to np.ndarray
        Every array of the file.
    sparse : dict of str to list of int
        Shapes of the CSR matrices.
    prefix : str
        Names are looked up as ``prefix + name`` (a nested estimator's state).
    """

    def __init__(self, path: Path, scalars: dict, arrays: dict, sparse: dict, prefix: str = "",
                 read: set | None = None) -> None:
        self.path, self._scalars, self._arrays, self._sparse, self._prefix = path, scalars, arrays, sparse, prefix
        self._read = set() if read is None else read

    def error(self, message: str) -> DataFormatError:
        """A :class:`DataFormatError` about this file."""
        return DataFormatError(message, path=self.path)

    # -- scalars
    def scalar(self, name: str, kind: type, *, low: float | None = None, choices=None):
        """The fitted scalar ``name`` of type ``kind`` (int, float, bool, str, list or dict), at
        least ``low`` (numbers, finite) or one of ``choices``."""
        if name not in self._scalars:
            raise self.error(f"the header lacks the fitted value {self._prefix + name!r}")
        value = self._scalars[name]
        ok = (isinstance(value, (int, float)) and not isinstance(value, bool)) if kind is float \
            else (isinstance(value, int) and not isinstance(value, bool)) if kind is int \
            else isinstance(value, kind)
        if ok and kind in (int, float):
            ok = math.isfinite(value) and (low is None or value >= low) and abs(value) <= (MAX_INT if kind is int else math.inf)
        if ok and choices is not None:
            ok = value in choices
        if not ok:
            bound = f" >= {low}" if low is not None else f" in {sorted(choices)}" if choices is not None else ""
            raise self.error(f"the fitted value {self._prefix + name!r} must be a {kind.__name__}{bound}, got {value!r}")
        return float(value) if kind is float else value

    def count(self, name: str) -> int:
        """The fitted integer ``name``, at least 1 (a number of samples, features, labels)."""
        return self.scalar(name, int, low=1)

    def has_scalar(self, name: str) -> bool:
        """Whether the header holds the fitted scalar ``name``: for one that files written by an
        earlier release lack."""
        return name in self._scalars

    def nested(self, name: str) -> "SavedState":
        """The state of a nested estimator saved under ``name`` (scalars ``name``, arrays ``name.*``)."""
        scalars = self.scalar(name, dict)
        return SavedState(self.path, scalars, self._arrays, self._sparse, f"{self._prefix}{name}.", self._read)

    # -- arrays
    def has(self, name: str) -> bool:
        """Whether the file holds the array ``name`` (dense or sparse): for a fitted array that files
        written by an earlier release lack."""
        key = self._prefix + name
        return key in self._arrays or key in self._sparse

    def _raw(self, key: str) -> np.ndarray:
        if key not in self._arrays:
            raise self.error(f"the array {key!r} is missing")
        self._read.add(key)
        return self._arrays[key]

    def _check(self, key: str, a: np.ndarray, shape, kinds: str, finite: bool, low, high) -> np.ndarray:
        if a.dtype.kind not in kinds or a.dtype.kind == "f" and a.dtype.itemsize not in (4, 8):
            raise self.error(f"the array {key!r} has dtype {a.dtype}, expected kind {kinds!r} (floats: 32 or 64 bits)")
        if shape is not None and (a.ndim != len(shape) or any(s is not None and n != s for n, s in zip(a.shape, shape))):
            want = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
            raise self.error(f"the array {key!r} has shape {a.shape}, expected {want} from the fitted values")
        if a.dtype.kind == "f" and finite and not np.all(np.isfinite(a)):
            raise self.error(f"the array {key!r} holds NaN or inf")
        if a.size and a.dtype.kind in "iuf" and ((low is not None and a.min() < low) or (high is not None and a.max() > high)):
            raise self.error(f"the array {key!r} has values outside [{low}, {high}]")
        return a

    def array(self, name: str, shape: tuple | None = None, kinds: str = "f", *, finite: bool = True,
              low: float | None = None, high: float | None = None) -> np.ndarray:
        """The dense array ``name``: dtype kind in ``kinds``, ``shape`` (``None`` entries: any size),
        finite (floats) and within [``low``, ``high``] when given."""
        key = self._prefix + name
        if key in self._sparse:
            raise self.error(f"{key!r} is a sparse matrix where a dense array is expected")
        return self._check(key, self._raw(key), shape, kinds, finite, low, high)

    def csr(self, name: str, shape: tuple, *, low: float | None = None, high: float | None = None) -> sp.csr_matrix:
        """The CSR matrix ``name`` of ``shape`` (``None`` entries: any size): well-formed index
        arrays (:func:`mlgp.files.csr_from_parts`), finite values within [``low``, ``high``]."""
        key = self._prefix + name
        stored = self._sparse.get(key)
        if stored is None:
            raise self.error(f"the sparse matrix {key!r} is missing")
        self._read.add(key)
        if not (isinstance(stored, list) and len(stored) == 2
                and all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= MAX_INT for n in stored)):
            raise self.error(f"the shape of {key!r} must be [rows, cols], got {stored!r}")
        if len(shape) != 2 or any(s is not None and n != s for n, s in zip(stored, shape)):
            raise self.error(f"the sparse matrix {key!r} has shape {tuple(stored)}, expected {shape} from the fitted values")
        data = self._check(f"{key}.data", self._raw(f"{key}.data"), (None,), "f", True, low, high)
        indices = self._check(f"{key}.indices", self._raw(f"{key}.indices"), (None,), "iu", True, None, None)
        indptr = self._check(f"{key}.indptr", self._raw(f"{key}.indptr"), (stored[0] + 1,), "iu", True, None, None)
        try:
            return csr_from_parts(data, indices, indptr, tuple(stored))
        except ValueError as err:
            raise self.error(f"the sparse matrix {key!r} is malformed ({err})") from None

    def matrix(self, name: str, shape: tuple, kinds: str = "f") -> np.ndarray | sp.csr_matrix:
        """``name`` as saved: a CSR matrix or a dense array, of ``shape``."""
        key = self._prefix + name
        return self.csr(name, shape) if key in self._sparse else self.array(name, shape, kinds)

    def unread(self) -> list[str]:
        """Names of the arrays and sparse entries no accessor has read."""
        return sorted((set(self._arrays) | set(self._sparse)) - self._read)
