"""The folder of an MLGPF save as files on disk: which array files a save writes, how it commits them
as a whole, and how a loader reads one consistent save back (the format of the contents is
:mod:`mlgp.models.persistence`'s).

Contract: :func:`commit` writes the parameter values (and the constant arrays, if any) under the one
of the two name sets :data:`NAME_SETS` that the folder's current ``model.json`` does *not* name, each
file atomically (:func:`mlgp.files.atomic_write`); then it replaces ``model.json``, which names the
new files in ``files`` (the commit point); then it deletes the array files ``model.json`` no longer
names. Whenever the process stops — an exception, a full disk, ``kill -9`` — the folder holds the
earlier save or the new one, whole; what an interrupted save leaves (the other name set, hidden
``.*.tmp`` files) is never read, and the next save overwrites or deletes the array files of it.
:func:`read_folder` reads ``model.json``, the files it names and ``model.json`` again, and reads
again when a save committed in between; :func:`array_files` checks the ``files`` entry of a save
(format ``mlgp.MLGPF/5``). A folder of an earlier format, whose ``model.json`` has no ``files``,
holds its arrays under the first name set, so a commit over it (a save, or the conversion of
:mod:`mlgp.models.convert`) writes the second. A missing folder or named file raises
:class:`~mlgp.errors.ModelNotFoundError`, a malformed ``files`` entry or array file
:class:`~mlgp.errors.DataFormatError`, each naming the path;
:func:`read_json` turns any text that is not JSON — nested past the recursion limit included — into
a :class:`~mlgp.errors.DataFormatError` (a save over such a ``model.json`` replaces it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, NamedTuple

import numpy as np

from ..errors import DataFormatError, ModelNotFoundError
from ..files import atomic_write, read_npz

__all__ = ["NAME_SETS", "Saved", "array_files", "commit", "existing", "read_arrays", "read_folder", "read_json"]

#: The two name sets of the array files (the folders of formats before ``files`` used the first).
NAME_SETS = ({"parameters": "parameters.npz", "constants": "constants.npz"},
             {"parameters": "parameters-1.npz", "constants": "constants-1.npz"})
_ATTEMPTS = 5


class Saved(NamedTuple):
    """One consistent save: ``model.json`` as parsed, the parameter values, and the constant arrays
    (``None`` when the save has no constants file)."""

    meta: dict
    values: dict
    constants: dict | None


def commit(path: Path, meta: dict, values: dict, constants: dict | None) -> None:
    """Write a save into the existing folder ``path`` atomically as a whole (module docstring);
    ``meta`` (the contents of ``model.json``) gets its ``files`` entry here."""
    names = NAME_SETS[1] if _current_parameters(path) == NAME_SETS[0]["parameters"] else NAME_SETS[0]
    meta["files"] = {"parameters": names["parameters"], "constants": names["constants"] if constants else None}
    written = []
    try:
        written.append(atomic_write(path / names["parameters"], lambda f: np.savez(f, **values)))
        if constants:
            written.append(atomic_write(path / names["constants"], lambda f: np.savez(f, **constants)))
        text = json.dumps(meta, indent=2).encode()
        atomic_write(path / "model.json", lambda f: f.write(text))
    except BaseException:
        for file in written:  # no model.json names them: the earlier save is still the folder's
            file.unlink(missing_ok=True)
        raise
    for stale in {name for names in NAME_SETS for name in names.values()} - set(meta["files"].values()):
        (path / stale).unlink(missing_ok=True)


def _current_parameters(path: Path) -> str | None:
    """The parameter file the folder's model.json names (``None``: no readable model.json; the
    first name set for a folder of an earlier format, which names none)."""
    try:
        meta = read_json((path / "model.json").read_bytes(), path / "model.json")
    except (OSError, DataFormatError):
        return None
    files = meta.get("files", NAME_SETS[0]) if isinstance(meta, dict) else None
    return files.get("parameters") if isinstance(files, dict) else None


def read_json(text: bytes, file: Path):
    """The JSON value of ``text`` (UTF-8), read from ``file``; :class:`~mlgp.errors.DataFormatError`
    naming ``file`` for anything else: invalid JSON or UTF-8, or nesting deeper than Python's
    recursion limit (``json`` raises ``RecursionError`` for it)."""
    try:
        return json.loads(text.decode())
    except (ValueError, UnicodeDecodeError, RecursionError) as err:
        raise DataFormatError(f"invalid JSON: {type(err).__name__}: {err}", path=file) from None


def existing(path: Path, name: str) -> Path:
    """``path / name``; :class:`~mlgp.errors.ModelNotFoundError` when the folder or the file is missing."""
    if not path.is_dir():
        raise ModelNotFoundError(f"{path}: no saved MLGPF here (not a folder)")
    if not (path / name).is_file():
        raise ModelNotFoundError(f"{path / name}: missing (not an MLGPF save folder)")
    return path / name


def read_arrays(file: Path, what: str) -> dict[str, np.ndarray]:
    """The arrays of one ``.npz`` file of a save, checked by :func:`mlgp.files.read_npz`."""
    if not file.is_file():
        raise ModelNotFoundError(f"{file}: missing (the save's model.json names it)")
    return read_npz(file, f"{what} file")


def read_folder(path: Path, parse: Callable[[bytes, Path], dict],
                files: Callable[[dict, Path, Path], dict] | None = None) -> Saved:
    """One consistent save of the folder ``path``: ``parse(text, file)`` turns ``model.json`` into
    its dict (raising for a file of no readable format), ``files(meta, path, file)`` gives the names
    of its array files (``{"parameters": name, "constants": name or None}``; by default
    :func:`array_files`, the ``files`` entry)."""
    files = array_files if files is None else files
    for _ in range(_ATTEMPTS):
        file = existing(path, "model.json")
        text = file.read_bytes()
        meta = parse(text, file)
        try:
            names = files(meta, path, file)
            values = read_arrays(existing(path, names["parameters"]), "parameter")
            constants = None if names["constants"] is None else read_arrays(path / names["constants"], "constants")
        except (ModelNotFoundError, DataFormatError):
            if _changed(file, text):  # a save committed while this one was read: read it
                continue
            raise
        if not _changed(file, text):
            return Saved(meta, values, constants)
    raise DataFormatError(f"the folder changed {_ATTEMPTS} times while it was read (saves in progress?)", path=path)


def _changed(file: Path, text: bytes) -> bool:
    try:
        return file.read_bytes() != text
    except OSError:
        return True


def array_files(meta: dict, path: Path, file: Path) -> dict:
    """The ``files`` entry of ``meta`` (``model.json`` of the folder ``path``, read from ``file``),
    which must be one of :data:`NAME_SETS` (constants optional)."""
    files = meta.get("files")
    for names in NAME_SETS:
        if isinstance(files, dict) and files.keys() == names.keys() and files["parameters"] == names["parameters"] \
                and files["constants"] in (names["constants"], None):
            return files
    raise DataFormatError(f"'files' must name one of the array file sets {list(NAME_SETS)}, got {files!r}", path=file)
