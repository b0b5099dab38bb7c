"""The text layer that the XC and LIBSVM readers share: a file's text (gzip or plain, ASCII only),
the token grammar they have in common (unsigned integers, decimal values), and the location of a
problem: the point each entry belongs to and the first point with a bad entry.

A point's 1-based line in its file is for each reader to say (XC: point ``i`` is line ``i + 2``,
after the header; LIBSVM: the line of its ``i``-th data line, blank lines and comments counted);
every error here and there is a :class:`~mlgp.errors.DataFormatError` naming the file and that line.
"""

from __future__ import annotations

import gzip
import re
import zlib
from pathlib import Path

import numpy as np

from ...errors import DataFormatError, DatasetNotFoundError, FileAccessError

__all__ = ["VALUE", "VALUE_RE", "entry_rows", "first_bad_row", "is_uint", "read_text"]

#: a decimal value as both formats write it (no ``nan``, ``inf``, hexadecimal or underscores)
VALUE = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
VALUE_RE = re.compile(VALUE, re.ASCII)


def is_uint(tok: str) -> bool:
    """Whether ``tok`` is a non-negative integer written with ASCII digits only."""
    return tok.isascii() and tok.isdigit()


def read_text(path: Path) -> str:
    """Return the file's text, decompressing ``.gz`` files.

    Raises
    ------
    DataFormatError
        For gzip data that cannot be decompressed, or a non-ASCII byte (naming its 1-based line
        and byte offset, and hinting at gzip data in a file whose name does not end in ``.gz``).
    DatasetNotFoundError, FileAccessError
        For a missing file; an unreadable one.
    """
    try:
        if path.name.endswith(".gz"):
            with gzip.open(path, "rb") as fh:
                raw = fh.read()
        else:
            raw = path.read_bytes()
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise DataFormatError(f"cannot decompress gzip data: {exc}", path) from exc
    except FileNotFoundError:
        raise DatasetNotFoundError(f"{path}: no such file") from None
    except OSError as exc:
        raise FileAccessError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        return raw.decode("ascii")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        hint = ""
        if raw[:2] == b"\x1f\x8b":
            hint = " (the file is gzip-compressed; its name must end in .gz)"
        raise DataFormatError(
            f"non-ASCII byte {raw[exc.start]:#04x} at byte offset {exc.start}{hint}", path, line
        ) from exc


def entry_rows(counts: np.ndarray) -> np.ndarray:
    """(sum(counts),) int64: the point (0-based) of each entry of entries listed point by point,
    ``counts`` (N,) saying how many each point has."""
    return np.repeat(np.arange(counts.size), counts)


def first_bad_row(bad_rows: list[np.ndarray]) -> int | None:
    """The smallest point in any of ``bad_rows`` (arrays of the points of bad entries), ``None``
    when they are all empty."""
    bad = np.concatenate(bad_rows)
    return int(bad.min()) if bad.size else None
