"""Exception and warning types raised by mlgp, :func:`warn` (a warning from the caller's line), and
the one-line form of a warning for the shell.

Every error the package raises on bad input derives from :class:`MLGPError`, so a
caller can catch the package's own errors without catching TensorFlow's. Each also derives from
the built-in type a caller would expect (``ValueError``, ``FileNotFoundError``,
``FloatingPointError``), so ``except ValueError`` keeps working.
"""

from __future__ import annotations

import sys
import warnings
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Iterator

__all__ = [
    "MLGPError",
    "ArgumentError",
    "BudgetWarning",
    "CheckpointMismatchError",
    "DataFormatError",
    "DatasetNotFoundError",
    "FileAccessError",
    "ModelNotFoundError",
    "ShapeError",
    "TrainingDivergedError",
    "warn",
]

#: Top-level modules whose frames :func:`warn` passes over next to mlgp's own: scikit-learn's
#: ``_fit_context`` and ``validate_params`` wrappers, joblib's parallel loops (a grid search, a
#: cross-validation), and the wrappers of functools and contextlib. They are never the user's line.
PASS_THROUGH = frozenset({"sklearn", "joblib", "functools", "contextlib"})


class MLGPError(Exception):
    """Base class of every error raised by mlgp on bad input or failed training."""


class ArgumentError(MLGPError, ValueError):
    """An argument or option has a value the function does not accept (an unknown choice, a
    negative scale, options that cannot be combined)."""


class BudgetWarning(UserWarning):
    """A fit's time budget (``max_seconds``) was spent by the end of its first training step, so
    the fitted model is little more than its starting point."""


class CheckpointMismatchError(MLGPError, ValueError):
    """A checkpoint folder holds checkpoints of another run (another model, other training data or
    other training settings), or checkpoints without a readable manifest saying whose they are."""


class DataFormatError(MLGPError, ValueError):
    """A data file does not follow its format.

    Parameters
    ----------
    message
        What is wrong.
    path
        The file, when the data came from one.
    line
        1-based line number in that file, when known.
    """

    def __init__(self, message: str, path: str | Path | None = None, line: int | None = None):
        self.path = None if path is None else str(path)
        self.line = line
        where = ""
        if self.path is not None:
            where = f"{self.path}"
            if line is not None:
                where += f", line {line}"
            where += ": "
        super().__init__(where + message)


class DatasetNotFoundError(MLGPError, FileNotFoundError):
    """A dataset's files are not in the data home."""


class FileAccessError(MLGPError, OSError):
    """A file or folder cannot be read or written: no permission, a missing folder to write in, a
    folder where a file was expected, a full disk."""


class ModelNotFoundError(MLGPError, FileNotFoundError):
    """A saved model's folder, or one of the files in it, does not exist."""


class ShapeError(MLGPError, ValueError):
    """Arrays passed together do not have matching or valid shapes or values."""


class TrainingDivergedError(MLGPError, FloatingPointError):
    """Training produced a non-finite loss or a failed Cholesky; the last good state was restored."""


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """:func:`warnings.warn` ``message`` as ``category``, from the line that called into mlgp: the
    first frame, walking outward from the caller of this function, whose file is not in mlgp's folder
    and whose module is not in ``PASS_THROUGH``.

    The walk starts at mlgp and stops at the first frame of neither, so a library's frames are passed
    over only while they lie between mlgp and its caller (``sklearn.base``'s ``_fit_context`` around an
    estimator's ``fit``, a grid search's joblib loop around a family's ``fit``), never beyond it; a
    user's function that mlgp calls back is the line shown. Levels are counted as
    :func:`warnings.warn` counts them, passing over the import system's frames (a warning while a
    module is imported comes from the ``import`` line). Python 3.12's ``skip_file_prefixes`` would
    do the first half of this; 3.11 has none.
    """
    frame, level = sys._getframe(), 1  # stacklevel=1: this line
    while (outer := _next_counted(frame)) is not None:
        frame, level = outer, level + 1
        if not _inside(frame):
            break
    warnings.warn(message, category, stacklevel=level)  # the outermost frame when all are inside


def _next_counted(frame):
    """The next frame outward that :func:`warnings.warn` counts as a level: not the import system's
    (its test, ``'importlib'`` and ``'_bootstrap'`` in the file name), or ``None``."""
    frame = frame.f_back
    while frame is not None and "importlib" in frame.f_code.co_filename and "_bootstrap" in frame.f_code.co_filename:
        frame = frame.f_back
    return frame


def _inside(frame) -> bool:
    """Whether ``frame`` runs mlgp's code or a ``PASS_THROUGH`` library's."""
    module = str(frame.f_globals.get("__name__", ""))
    return module.partition(".")[0] in PASS_THROUGH or _in_mlgp(frame.f_code.co_filename)


@lru_cache(maxsize=None)
def _in_mlgp(filename: str) -> bool:
    """Whether ``filename`` lies in mlgp's folder (resolved; ``python -m mlgp``'s ``__main__`` too)."""
    return Path(filename).resolve().is_relative_to(Path(__file__).resolve().parent)


@contextmanager
def one_line_warnings(prog: str = "mlgp") -> Iterator[None]:
    """Within the block, show each warning on stderr as ``<prog>: warning: <message>`` (its category
    first unless it is a plain :class:`UserWarning`), on one line, without its file or source line."""
    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        text = " ".join(str(message).split())
        kind = "" if category is UserWarning else f"{category.__name__}: "
        try:
            print(f"{prog}: warning: {kind}{text}", file=file or sys.stderr, flush=True)
        except OSError:  # a closed stream: as warnings.showwarning, say nothing
            pass

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = shown
