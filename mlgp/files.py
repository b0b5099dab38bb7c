"""Atomic file writes (a file is either its old self or its complete new self, never a half) and
strict reading of array archives: what every saver and loader of mlgp goes through.

:func:`atomic_write` writes into a temporary file beside the target (same folder, so the same file
system), flushes it to disk and moves it into place with ``os.replace``; on any failure, interrupts
included, the temporary file is removed and the target is untouched (a process killed outright
leaves at most a hidden ``.<name>.<hex>.tmp`` beside it, which no loader reads). A model saver turns
the ``OSError`` of a refused write into an :class:`~mlgp.errors.MLGPError` naming the file with
:func:`save_error`.

:func:`read_npz` reads an ``.npz`` archive of plain arrays and refuses anything else with
:class:`~mlgp.errors.DataFormatError` naming the file: a damaged zip (CRCs are checked), a member
that is not one ``.npy`` array, an array header that does not match the member's size (so a
corrupted shape never allocates memory the file does not hold), or an object array (no pickle, so a
file cannot run code).
"""

from __future__ import annotations

import errno
import math
import os
import secrets
import zipfile
from pathlib import Path
from typing import BinaryIO, Callable

import numpy as np

from .errors import DataFormatError, MLGPError, ModelNotFoundError

__all__ = ["SaveError", "atomic_write", "atomic_write_text", "read_npz", "save_error"]


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
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        with open(tmp, "xb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


class SaveError(MLGPError, OSError):
    """A file could not be written (no permission, a folder of that name, a full disk): an
    :class:`~mlgp.errors.MLGPError` that is also the ``OSError`` it replaces, with its ``errno``."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(code, message)

    def __str__(self) -> str:
        return self.strerror


def save_error(path: str | Path, err: OSError) -> MLGPError:
    """The error a saver raises for the ``OSError`` ``err`` met writing ``path``: a
    :class:`~mlgp.errors.ModelNotFoundError` (a ``FileNotFoundError``) when the folder does not
    exist, else a :class:`SaveError`; both name the file."""
    path = Path(path)
    if isinstance(err, MLGPError):
        return err
    if err.errno == errno.ENOENT:
        return ModelNotFoundError(f"{path}: cannot write the file: the folder {path.parent} does not exist")
    why = {errno.ENOTDIR: f"{path.parent} is not a folder", errno.EISDIR: "a folder has this name"}.get(
        err.errno, err.strerror or str(err))
    return SaveError(f"{path}: cannot write the file: {why}", err.errno)


# ------------------------------------------------------------------------------------ reading --
def read_npz(path: str | Path, what: str = "archive") -> dict[str, np.ndarray]:
    """The arrays of the ``.npz`` file ``path`` by name, each checked as described in the module
    docstring; ``what`` names the file's role in messages ("saved estimator", "parameter file")."""
    path = Path(path)
    arrays: dict[str, np.ndarray] = {}
    try:
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                name = info.filename
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


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically (:func:`atomic_write`); returns ``path``."""
    data = text.encode("utf-8")
    return atomic_write(path, lambda f: f.write(data))
