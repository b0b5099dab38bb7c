"""Score files: what ``mlgp evaluate`` reads and models write (dense .npy, sparse or top-k .npz, a
top-k ranking as text; no pickle).

:func:`load_scores` reads strictly: an ``.npz`` through :func:`mlgp.files.read_npz` (CRCs and every
member's header checked), a sparse matrix rebuilt only from well-formed parts
(:func:`mlgp.files.csr_from_parts`), and a ``.npy`` file whose header must account for exactly the
bytes of the file; a ``.txt`` ranking line by line (:mod:`mlgp.scores._text`); a file that is none of the forms it reads is a
:class:`~mlgp.errors.DataFormatError` naming it, and nothing is allocated that the file does not hold.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..errors import DataFormatError, MLGPError, ShapeError
from ..files import atomic_write, check_output_file, csr_from_parts, make_folder, read_npz
from ._text import read_topk_text, write_topk_text
from ._topk import TopK

__all__ = ["check_score_file_path", "load_scores", "save_scores"]


def save_scores(path: str | Path, scores) -> Path:
    """Write ``scores`` in a form :func:`load_scores` (and ``mlgp evaluate``) reads.

    A :class:`TopK` goes to ``.npz`` with arrays ``indices`` and ``scores`` (or to ``.txt``, one line
    per point of ``label:score`` pairs: :mod:`mlgp.scores._text`); a sparse matrix to
    ``.npz`` by ``scipy.sparse.save_npz``; a dense (N, K) array to ``.npy``. The suffix of ``path``
    must match (``.npz`` or ``.txt`` for a ranking, ``.npz`` for a sparse matrix, ``.npy`` or ``.npz`` for a dense array); a missing
    folder is made (in a writable one, as every output file: :func:`mlgp.files.check_output_file`).
    The file is written atomically (:func:`mlgp.files.atomic_write`). Returns the path
    written.
    """
    path = Path(path)
    is_topk = isinstance(scores, TopK)
    check_score_file_path(path, dense=not (is_topk or sp.issparse(scores)), ranking=is_topk)
    make_folder(path.parent, "scores file")
    if is_topk and path.suffix == ".txt":
        write_topk_text(path, scores)
        return path
    if is_topk:
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


def check_score_file_path(path: str | Path, dense: bool = False, what: str = "scores file",
                          ranking: bool = False) -> Path:
    """Check, before any work, that a score file can be written at ``path``; returns it.

    ``.npz`` always; ``.npy`` too when ``dense``, ``.txt`` too for a top-k ``ranking``. Raises
    :class:`~mlgp.errors.MLGPError` naming the path when the suffix is wrong, and
    :func:`mlgp.files.check_output_file`'s error when the file cannot be written there (a missing
    folder is fine: it is made when the scores are saved).
    """
    path = Path(path)
    allowed = (".npz",) + ((".npy",) if dense else ()) + ((".txt",) if ranking else ())
    if path.suffix not in allowed:  # NumPy appends its own suffix to any other, upper case included
        raise MLGPError(f"{what} {str(path)!r}: the file name must end in {' or '.join(allowed)}")
    check_output_file(path, what)
    return path


def load_scores(path: str | Path):
    """Read a score file written by :func:`save_scores` (or by hand with NumPy / SciPy).

    Parameters
    ----------
    path
        ``.npy`` (dense (N, K) array), ``.npz`` holding either a scipy sparse matrix written by
        ``scipy.sparse.save_npz``, arrays ``indices`` and ``scores`` (a top-k ranking, both
        (N, k), best first) or a single dense array ``scores``, or ``.txt``: a top-k ranking, one
        line per point of ``label:score`` pairs best first (what ``mlgp predict --format txt``
        writes).

    Returns
    -------
    numpy.ndarray, scipy.sparse.csr_matrix or TopK

    Raises
    ------
    MLGPError
        When the file does not exist or is a folder.
    DataFormatError
        When it cannot be read as one of the forms above (a file that is not NumPy's format, a
        damaged one, a header promising other bytes than the file holds, a malformed sparse
        matrix, or one that would need pickle, included).
    ShapeError
        When its arrays have the wrong number of dimensions or do not match each other.
    """
    path = Path(path)
    if not path.exists():
        raise MLGPError(f"scores file {str(path)!r} does not exist")
    if path.is_dir():
        raise MLGPError(f"scores file {str(path)!r} is a folder, not a file")
    suffix = path.suffix.lower()
    if suffix == ".txt":
        return read_topk_text(path)
    if suffix not in (".npy", ".npz"):
        raise DataFormatError(
            f"unsupported scores file type {path.suffix or '(none)'!r}: use .npy (dense N×K "
            "array), .npz (scipy.sparse.save_npz matrix, or arrays 'indices' and 'scores' "
            "for a top-k ranking) or .txt (a top-k ranking as label:score pairs, one line per point)", path)
    try:
        with open(path, "rb") as fh:
            magic = fh.read(6)
    except OSError as exc:
        raise MLGPError(f"cannot read scores file {str(path)!r}: {exc.strerror or exc}") from None
    if magic != b"\x93NUMPY" and magic[:2] != b"PK":
        raise DataFormatError(f"not a NumPy {suffix} file (it does not start with NumPy's or "
                              "zip's signature)", path)
    if magic == b"\x93NUMPY":  # also a .npy file named .npz
        return _check_dense(_read_npy(path), path)
    arrays = read_npz(path, "scores file")
    names = set(arrays)
    if "format" in names and {"data", "indices", "indptr", "shape"} <= names:
        return _sparse_scores(arrays, path)
    if {"indices", "scores"} <= names:
        try:
            return TopK(arrays["indices"], arrays["scores"])
        except ShapeError as exc:
            raise ShapeError(f"{path}: top-k arrays: {exc}") from None
        except (ValueError, TypeError) as exc:
            raise DataFormatError(f"cannot read its arrays: {exc}", path) from None
    if names == {"scores"}:
        return _check_dense(arrays["scores"], path)
    raise DataFormatError(
        f"the .npz file holds arrays {sorted(names)}; expected a scipy.sparse.save_npz matrix, "
        "arrays 'indices' and 'scores' (top-k ranking), or a single dense array 'scores'", path)


def _read_npy(path: Path) -> np.ndarray:
    """The array of the ``.npy`` file ``path``, checked as :func:`mlgp.files.read_npz` checks a
    member: format version 1.0 or 2.0, no Python objects (no pickle), and a header whose shape and
    dtype promise exactly the bytes the file holds (so a corrupted shape allocates nothing)."""
    fmt = np.lib.format
    try:
        with open(path, "rb") as f:
            version = fmt.read_magic(f)
            if version not in ((1, 0), (2, 0)):
                raise DataFormatError(f"a .npy file of format version {version} (1.0 or 2.0 are read)", path)
            read_header = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
            shape, _, dtype = read_header(f)
            if dtype.hasobject:
                raise DataFormatError("the file holds Python objects, not numbers; save a numeric array", path)
            size, held = f.tell() + math.prod(shape) * dtype.itemsize, os.fstat(f.fileno()).st_size
            if size != held:
                raise DataFormatError(f"the header (shape {shape}, dtype {dtype}) promises {size} bytes, the file "
                                      f"holds {held}", path)
            f.seek(0)
            return fmt.read_array(f, allow_pickle=False)
    except DataFormatError:
        raise
    except Exception as exc:  # noqa: BLE001 - NumPy's header parser and reader: a broken file
        raise DataFormatError(f"cannot read as a NumPy .npy file ({type(exc).__name__}: {exc})", path) from None


def _sparse_scores(arrays: dict[str, np.ndarray], path: Path) -> sp.csr_matrix:
    """The CSR matrix of the parts ``scipy.sparse.save_npz`` writes for a CSR or CSC matrix, rebuilt
    by :func:`mlgp.files.csr_from_parts` (well-formed parts only) with real-number values."""
    kind, shape, data = arrays["format"], arrays["shape"], arrays["data"]
    name = kind.item() if kind.ndim == 0 and kind.dtype.kind in "SU" else None
    name = name.decode("ascii", "replace") if isinstance(name, bytes) else name
    if name not in ("csr", "csc"):
        raise DataFormatError(f"a sparse matrix of format {name or kind!r}; save scores as CSR or CSC", path)
    if shape.shape != (2,) or shape.dtype.kind not in "iu":
        raise DataFormatError(f"the sparse matrix's shape must be 2 integers, got {shape!r}", path)
    if data.dtype.kind not in "iuf":
        raise DataFormatError(f"sparse scores must be real numbers, got dtype {data.dtype}", path)
    rows, cols = (int(n) for n in shape)
    try:
        if name == "csr":
            return csr_from_parts(data, arrays["indices"], arrays["indptr"], (rows, cols))
        return sp.csr_matrix(csr_from_parts(data, arrays["indices"], arrays["indptr"], (cols, rows)).T)
    except ValueError as exc:
        raise DataFormatError(f"the sparse matrix is malformed ({exc})", path) from None


def _check_dense(arr: np.ndarray, path: Path) -> np.ndarray:
    if arr.ndim != 2:
        raise ShapeError(f"{path}: dense scores must be a 2-D (N, K) array, got shape {arr.shape}")
    if not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
            or arr.dtype == np.bool_):
        raise DataFormatError(f"scores must be real numbers, got dtype {arr.dtype}", path)
    return arr
