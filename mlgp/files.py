"""Atomic file writes (a file is either its old self or its complete new self, never a half) and
strict reading of array archives: what every saver and loader of mlgp goes through.

:func:`atomic_write` writes into a temporary file beside the target (same folder, so the same file
system), flushes it to disk and moves it into place with ``os.replace``; on any failure, interrupts
included, the temporary file is removed and the target is untouched (a process killed outright
leaves at most a hidden ``.<name>.<hex>.tmp`` beside it, which no loader reads). Savers turn the
``OSError`` of a refused write into :class:`~mlgp.errors.FileAccessError` naming the file.

:func:`read_npz` reads an ``.npz`` archive of plain arrays and refuses anything else with
:class:`~mlgp.errors.DataFormatError` naming the file: a damaged zip (CRCs are checked), a member
that is not one ``.npy`` array, an array header that does not match the member's size (so a
corrupted shape never allocates memory the file does not hold), or an object array (no pickle, so a
file cannot run code). :func:`csr_from_parts` rebuilds a CSR matrix from stored parts only when they
are well-formed. :func:`check_output_file` and :func:`check_output_folder` say, before any work,
whether a command's output can be written where it is asked for.
"""

from __future__ import annotations

import math
import os
import secrets
import zipfile
from pathlib import Path
from typing import BinaryIO, Callable

import numpy as np
import scipy.sparse as sp

from .errors import ArgumentError, DataFormatError, FileAccessError

__all__ = ["as_path", "atomic_write", "atomic_write_text", "check_output_file", "check_output_folder", "csr_from_parts",
           "make_folder",
           "read_npz"]


def atomic_write(path: str | Path, write: Callable[[BinaryIO], None]) -> Path:
    """Call ``write(file)`` on a new temporary file beside ``path``, then move it to ``path``.

    Parameters
    ----------
    path
        The file to (re)place.
    write
        Writes the whole content to the binary file object it is given.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    FileAccessError
        For any ``OSError`` of the file system (no such folder, no permission, a folder of that
        name, a full disk), naming ``path``; it is an ``OSError`` too.

    Notes
    -----
    The folder is not fsynced after the move: a save survives the process being killed at any
    moment, not necessarily a power loss. The new file gets the default permissions, and a
    symbolic link at ``path`` is replaced by a regular file.
    """
    path = as_path(path)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        with open(tmp, "xb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:  # no temporary file could be made there either (a file as folder, no permission)
            pass
        if isinstance(exc, OSError) and not isinstance(exc, FileAccessError):
            raise FileAccessError(f"cannot write {path}: {exc.strerror or exc}") from exc
        raise
    return path


# ------------------------------------------------------------------------------------ reading --
def read_npz(path: str | Path, what: str = "archive", only: frozenset[str] | None = None) -> dict[str, np.ndarray]:
    """The arrays of the ``.npz`` file ``path`` by name, each checked as described in the module
    docstring; ``what`` names the file's role in messages ("saved estimator", "parameter file").
    ``only``: read just the arrays of these names (a header), the others' members left unread."""
    path = Path(path)
    arrays: dict[str, np.ndarray] = {}
    try:
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                name = info.filename
                if only is not None and name[:-4] not in only:
                    continue
                if not name.endswith(".npy") or name[:-4] in arrays:
                    raise DataFormatError(f"{what}: the member {name!r} is not one .npy array", path=path)
                arrays[name[:-4]] = _read_member(archive, info, path, what)
    except DataFormatError:
        raise
    except Exception as err:  # zipfile, NumPy's .npy reader: anything they raise means a broken file
        raise DataFormatError(f"unreadable {what} ({type(err).__name__}: {err})", path=path) from None
    return arrays


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, path: Path, what: str) -> np.ndarray:
    fmt = np.lib.format
    with archive.open(info) as f:
        version = fmt.read_magic(f)
        if version not in ((1, 0), (2, 0)):
            raise DataFormatError(f"{what}: {info.filename} has .npy version {version}", path=path)
        read_header = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
        shape, _, dtype = read_header(f)
        if dtype.hasobject:
            raise DataFormatError(f"{what}: {info.filename} holds Python objects (refused: no pickle)", path=path)
        size = f.tell() + math.prod(shape) * dtype.itemsize
        if size != info.file_size:
            raise DataFormatError(f"{what}: the header of {info.filename} (shape {shape}, dtype {dtype}) promises "
                                  f"{size} bytes, the member holds {info.file_size}", path=path)
    with archive.open(info) as f:
        array = fmt.read_array(f, allow_pickle=False)
        if f.read(1):  # also completes the CRC check
            raise DataFormatError(f"{what}: {info.filename} has bytes after its array", path=path)
    return array


def csr_from_parts(data: np.ndarray, indices: np.ndarray, indptr: np.ndarray, shape: tuple[int, int]) -> sp.csr_matrix:
    """The CSR matrix of stored parts, checked beyond scipy's ``check_format`` (which skips the order
    of ``indptr`` when its last entry is 0, and then crashes): 1-D parts, integer indices, ``indptr``
    of length rows + 1 rising from 0 to nnz, column indices in [0, cols), no entry stored twice.
    Raises ``ValueError`` naming what is wrong."""
    rows, cols = (int(n) for n in shape)
    if min(rows, cols) < 0 or any(a.ndim != 1 for a in (data, indices, indptr)):
        raise ValueError(f"shape {shape} and 1-D data, indices and indptr expected")
    if indices.dtype.kind not in "iu" or indptr.dtype.kind not in "iu" or data.dtype.kind not in "biuf":
        raise ValueError(f"integer indices and numeric data expected, got {indices.dtype}, {indptr.dtype}, {data.dtype}")
    indices, indptr = indices.astype(np.int64, copy=False), indptr.astype(np.int64, copy=False)
    counts = np.diff(indptr)
    if indptr.size != rows + 1 or indices.size != data.size or indptr[0] != 0 or indptr[-1] != data.size \
            or np.any(counts < 0):
        raise ValueError(f"indptr must hold {rows + 1} entries rising from 0 to nnz = {data.size}")
    if data.size and (indices.min() < 0 or indices.max() >= cols):
        raise ValueError(f"a column index outside [0, {cols})")
    row = np.repeat(np.arange(rows, dtype=np.int64), counts)
    order = np.lexsort((indices, row))
    if np.any((np.diff(row[order]) == 0) & (np.diff(indices[order]) == 0)):
        raise ValueError("an entry stored twice")
    matrix = sp.csr_matrix((data, indices, indptr), shape=(rows, cols))
    matrix.check_format(full_check=True)
    return matrix


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically (:func:`atomic_write`); returns ``path``."""
    data = text.encode("utf-8")
    return atomic_write(path, lambda f: f.write(data))


def as_path(path) -> Path:
    """``path`` (a ``str`` or ``os.PathLike``) as a :class:`~pathlib.Path`; anything else (``None``, a
    number, an open file) raises :class:`~mlgp.errors.ArgumentError`."""
    if not isinstance(path, (str, os.PathLike)):
        raise ArgumentError(f"a file path must be a str or os.PathLike, got {path!r}")
    return Path(path)


def check_output_file(path: Path, option: str = "--out") -> None:
    """Before any work: ``path`` must name a file (not a folder) whose folder is writable or can be
    made (:func:`make_folder`) in the nearest existing folder above it, which must be writable."""
    if path.is_dir():
        raise FileAccessError(f"{option} {path}: is a folder, not a file name")
    folder = _nearest_existing(path.parent)
    if not folder.is_dir():
        raise FileAccessError(f"{option} {path}: {str(folder)!r} is a file, not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise FileAccessError(f"{option} {path}: folder {str(folder)!r} is not writable")


def make_folder(path: Path, option: str = "--out") -> Path:
    """Make the folder ``path`` (and those above it) unless it exists; returns ``path``. A failure is a
    :class:`~mlgp.errors.FileAccessError` naming ``option``."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FileAccessError(f"{option}: cannot make the folder {str(path)!r}: {exc.strerror or exc}") from None
    return path


def _nearest_existing(path: Path) -> Path:
    """``path`` or the nearest folder above it that exists (a file there is returned as it is)."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def check_output_folder(path: Path, option: str = "--out") -> None:
    """Before any work: ``path`` must be a writable folder or a new one in a writable folder."""
    if path.exists() and not path.is_dir():
        raise FileAccessError(f"{option} {path}: is a file, not a folder")
    existing = path if path.is_dir() else _nearest_existing(path.parent)
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise FileAccessError(f"{option} {path}: folder {str(existing)!r} is not writable")
