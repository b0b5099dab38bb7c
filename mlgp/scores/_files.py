"""Score files: what ``mlgp evaluate`` reads and models write (dense .npy, sparse or top-k .npz; no pickle)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..errors import DataFormatError, FileAccessError, MLGPError, ShapeError
from ..files import atomic_write
from ._topk import TopK

__all__ = ["check_score_file_path", "load_scores", "save_scores"]


def save_scores(path: str | Path, scores) -> Path:
    """Write ``scores`` in a form :func:`load_scores` (and ``mlgp evaluate``) reads.

    A :class:`TopK` goes to ``.npz`` with arrays ``indices`` and ``scores``; a sparse matrix to
    ``.npz`` by ``scipy.sparse.save_npz``; a dense (N, K) array to ``.npy``. The suffix of ``path``
    must match (``.npz`` for the first two, ``.npy`` or ``.npz`` for a dense array); the folder must
    exist. The file is written atomically (:func:`mlgp.files.atomic_write`). Returns the path
    written.
    """
    path = Path(path)
    check_score_file_path(path, dense=not (isinstance(scores, TopK) or sp.issparse(scores)))
    if isinstance(scores, TopK):
        write = lambda f: np.savez(f, indices=scores.indices, scores=scores.scores)  # noqa: E731
    elif sp.issparse(scores):
        matrix = sp.csr_matrix(scores)
        write = lambda f: sp.save_npz(f, matrix)  # noqa: E731
    else:
        arr = np.asarray(scores)
        if arr.ndim != 2:
            raise ShapeError(f"dense scores must be 2-D (N, K), got shape {arr.shape}")
        write = (lambda f: np.savez(f, scores=arr)) if path.suffix == ".npz" else (lambda f: np.save(f, arr))
    atomic_write(path, write)  # a failed write is a FileAccessError naming the file
    return path


def check_score_file_path(path: str | Path, dense: bool = False, what: str = "scores file") -> Path:
    """Check, before any work, that a score file can be written at ``path``; returns it.

    ``.npz`` always; ``.npy`` too when ``dense``. Raises :class:`~mlgp.errors.MLGPError` naming
    the path when the suffix is wrong or the folder does not exist.
    """
    path = Path(path)
    allowed = (".npz", ".npy") if dense else (".npz",)
    if path.suffix not in allowed:  # NumPy appends its own suffix to any other, upper case included
        raise MLGPError(f"{what} {str(path)!r}: the file name must end in {' or '.join(allowed)}")
    if not path.parent.is_dir():
        raise MLGPError(f"{what} {str(path)!r}: folder {str(path.parent)!r} does not exist")
    return path


def load_scores(path: str | Path):
    """Read a score file written by :func:`save_scores` (or by hand with NumPy / SciPy).

    Parameters
    ----------
    path
        ``.npy`` (dense (N, K) array), or ``.npz`` holding either a scipy sparse matrix written by
        ``scipy.sparse.save_npz``, arrays ``indices`` and ``scores`` (a top-k ranking, both
        (N, k), best first) or a single dense array ``scores``.

    Returns
    -------
    numpy.ndarray, scipy.sparse.csr_matrix or TopK

    Raises
    ------
    MLGPError
        When the file does not exist or is a folder.
    DataFormatError
        When it cannot be read as one of the forms above (a file that is not NumPy's format, or
        one that would need pickle, included).
    ShapeError
        When its arrays have the wrong number of dimensions or do not match each other.
    """
    path = Path(path)
    if not path.exists():
        raise MLGPError(f"scores file {str(path)!r} does not exist")
    if path.is_dir():
        raise MLGPError(f"scores file {str(path)!r} is a folder, not a file")
    suffix = path.suffix.lower()
    if suffix not in (".npy", ".npz"):
        raise DataFormatError(
            f"unsupported scores file type {path.suffix or '(none)'!r}: use .npy (dense N×K "
            "array) or .npz (scipy.sparse.save_npz matrix, or arrays 'indices' and 'scores' "
            "for a top-k ranking)", path)
    try:
        with open(path, "rb") as fh:
            magic = fh.read(6)
    except OSError as exc:
        raise MLGPError(f"cannot read scores file {str(path)!r}: {exc.strerror or exc}") from None
    if magic != b"\x93NUMPY" and magic[:2] != b"PK":
        raise DataFormatError(f"not a NumPy {suffix} file (it does not start with NumPy's or "
                              "zip's signature)", path)
    try:
        loaded = np.load(path, allow_pickle=False)
    except ValueError as exc:
        if "pickle" in str(exc).lower():
            raise DataFormatError("the file holds Python objects, not numbers; "
                                  "save a numeric array", path) from None
        raise DataFormatError(f"cannot read as a NumPy {suffix} file: {exc}", path) from None
    except (OSError, EOFError, zipfile.BadZipFile) as exc:
        raise DataFormatError(f"cannot read as a NumPy {suffix} file: {exc}", path) from None
    if isinstance(loaded, np.ndarray):  # also a .npy file named .npz
        return _check_dense(loaded, path)
    with loaded as npz:
        names = set(npz.files)
        if "format" in names and {"data", "indices", "indptr", "shape"} <= names:
            try:
                S = sp.load_npz(path)
            except (ValueError, OSError, KeyError) as exc:
                raise DataFormatError(f"cannot read the sparse matrix: {exc}", path) from None
            if not np.issubdtype(S.dtype, np.number) or np.issubdtype(S.dtype, np.complexfloating):
                raise DataFormatError(f"sparse scores must be real numbers, got dtype {S.dtype}", path)
            return sp.csr_matrix(S)
        try:
            if {"indices", "scores"} <= names:
                idx, val = npz["indices"], npz["scores"]
                try:
                    return TopK(idx, val)
                except ShapeError as exc:
                    raise ShapeError(f"{path}: top-k arrays: {exc}") from None
            if names == {"scores"}:
                return _check_dense(npz["scores"], path)
        except ValueError as exc:
            if isinstance(exc, ShapeError):
                raise
            raise DataFormatError(f"cannot read its arrays: {exc}", path) from None
        raise DataFormatError(
            f"the .npz file holds arrays {sorted(names)}; expected a scipy.sparse.save_npz matrix, "
            "arrays 'indices' and 'scores' (top-k ranking), or a single dense array 'scores'", path)


def _check_dense(arr: np.ndarray, path: Path) -> np.ndarray:
    if arr.ndim != 2:
        raise ShapeError(f"{path}: dense scores must be a 2-D (N, K) array, got shape {arr.shape}")
    if not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
            or arr.dtype == np.bool_):
        raise DataFormatError(f"scores must be real numbers, got dtype {arr.dtype}", path)
    return arr
