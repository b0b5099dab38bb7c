"""Atomic file writes: a file is either its old self or its complete new self, never a half.

:func:`atomic_write` writes into a temporary file beside the target (same folder, so the same file
system), flushes it to disk and moves it into place with ``os.replace``; on any failure, interrupts
included, the temporary file is removed and the target is untouched. Every saver in mlgp writes
through it. Standard library only.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import BinaryIO, Callable

__all__ = ["atomic_write"]


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
