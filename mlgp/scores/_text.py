"""A top-k ranking as text, one line per point, ``label:score`` pairs best first::

    12:0.8125 3:0.5 40:0.25

what ``mlgp predict --format txt`` writes and ``mlgp evaluate`` reads. Labels are 0-based indices
written as digits; scores are written as the shortest text of the same float64 (so a write then a
read gives the ranking back exactly). Every line holds the same number k ≥ 1 of pairs, a label at
most once. The reader checks every line against this grammar (a file's bytes can only give a
ranking or a :class:`~mlgp.errors.DataFormatError` naming the file and line) and keeps each line's
order: the ranking is the file's, not re-sorted by score.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ..errors import DataFormatError, MLGPError
from ..files import atomic_write
from ._topk import TopK

__all__ = ["read_topk_text", "topk_text", "write_topk_text"]

#: the largest label index a text ranking may hold
_MAX_LABEL = 2**31 - 2
_PAIR_RE = re.compile(r"([0-9]{1,10}):([-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)", re.ASCII)


def topk_text(topk: TopK) -> str:
    """``topk`` as the module's text: one line per row, ``label:score`` pairs in the ranking's order."""
    return "".join(" ".join(f"{int(i)}:{float(s)!r}" for i, s in zip(idx, sc)) + "\n"
                   for idx, sc in zip(topk.indices.tolist(), topk.scores.tolist()))


def write_topk_text(path: Path, topk: TopK) -> None:
    """Write ``topk`` as text to ``path``, atomically (:func:`mlgp.files.atomic_write`)."""
    data = topk_text(topk).encode("ascii")
    atomic_write(path, lambda fh: fh.write(data))


def _line_pairs(line: str, path: Path, number: int) -> list[tuple[int, float]]:
    """The ``(label, score)`` pairs of one line, checked; ``number`` is its 1-based line number."""
    pairs = []
    for tok in line.split():
        match = _PAIR_RE.fullmatch(tok)
        if match is None:
            raise DataFormatError(f"malformed pair {tok[:80]!r}: expected label:score (a label index 0, 1, … "
                                  "and a finite number)", path, number)
        label, score = int(match.group(1)), float(match.group(2))
        if label > _MAX_LABEL:
            raise DataFormatError(f"label {label} too large (at most {_MAX_LABEL})", path, number)
        if not np.isfinite(score):
            raise DataFormatError(f"score {match.group(2)[:80]} of label {label} is not finite in float64",
                                  path, number)
        pairs.append((label, score))
    if not pairs:
        raise DataFormatError("empty line: every point holds k ≥ 1 label:score pairs", path, number)
    if len({label for label, _ in pairs}) < len(pairs):
        raise DataFormatError("a label appears twice in the line", path, number)
    return pairs


def read_topk_text(path: Path) -> TopK:
    """The :class:`TopK` of a text ranking (module docstring).

    Raises
    ------
    DataFormatError
        Naming the file and line: a byte that is not ASCII, a malformed or repeated pair, a
        non-finite score, an empty line, a line with another number of pairs than the first, or
        an empty file.
    MLGPError
        When the file cannot be read.
    """
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise MLGPError(f"cannot read scores file {str(path)!r}: {exc.strerror or exc}") from None
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError as exc:
        raise DataFormatError(f"byte {raw[exc.start]:#04x} is not ASCII text", path,
                              raw.count(b"\n", 0, exc.start) + 1) from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line
    if not lines:
        raise DataFormatError("empty file: no ranking lines", path)
    rows = [_line_pairs(line, path, number) for number, line in enumerate(lines, start=1)]
    k = len(rows[0])
    for number, row in enumerate(rows, start=1):
        if len(row) != k:
            raise DataFormatError(f"{len(row)} label:score pairs where line 1 has {k}: every line holds k", path,
                                  number)
    indices = np.array([[label for label, _ in row] for row in rows], dtype=np.int64).reshape(len(rows), k)
    scores = np.array([[score for _, score in row] for row in rows], dtype=np.float64).reshape(len(rows), k)
    return TopK(indices, scores)
