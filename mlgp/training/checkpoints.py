"""Checkpoint folders of :func:`mlgp.training.fit`: a manifest naming the run, checked before any
restore, and a restore that falls back past damaged checkpoints.

Contract. A folder holds ``ckpt-<epoch>.index`` / ``ckpt-<epoch>.data-*`` (``tf.train.Checkpoint``
files of the model, the optimizer and the epoch counter; the newest :data:`KEEP` are kept),
``manifest.json`` and ``trace.csv``, and TensorFlow's ``checkpoint`` state file, kept for
``tf.train.latest_checkpoint`` but never read here. The manifest (format :data:`FORMAT`) records the
run: the model's class, its trainable variables (name, shape, dtype) and its ``spec``; the training
data's sizes and fingerprint; the settings a resumed run must share (everything but ``epochs``);
for a run of the MLGPF recipe (:func:`recipe_settings`), the recipe's settings (:data:`RECIPE`), the
folder's one record of them; and the checkpoints written. :meth:`CheckpointFolder.resume` refuses,
with :class:`~mlgp.errors.CheckpointMismatchError` and before touching the model, a folder written by
another run or holding checkpoints without a readable manifest (one that is not JSON, is nested past
the recursion limit, or has not the manifest's shape); :func:`recipe_settings` refuses other recipe
settings before the model is built. It finds the checkpoints from the files themselves, restores the
newest that restores whole and warns about each one skipped; when none does it raises
:class:`~mlgp.errors.DataFormatError` and leaves the folder and the model as they were. Every file
here is written atomically (:func:`mlgp.files.atomic_write`).
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import re
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import tensorflow as tf

from ..errors import ArgumentError, CheckpointMismatchError, DataFormatError, FileAccessError, warn
from ..files import as_path, atomic_write
from .manifest import FORMAT, jsonable, manifest_problem, mismatch, run_record, training_settings, variable_names

__all__ = ["FORMAT", "KEEP", "OLD_SETTINGS", "RECIPE", "CheckpointFolder", "checked_folder", "mismatch",
           "recipe_settings", "run_record", "training_settings", "variable_names"]

#: Checkpoints kept: the newest ones.
KEEP = 3
MANIFEST = "manifest.json"
#: The manifest's entry for the settings of the recipe that built and trains the model.
RECIPE = "recipe"
#: Where a folder of the recipe kept its settings before its manifest carried them.
OLD_SETTINGS = "settings.json"
#: ``(folder, settings)`` of the :func:`recipe_settings` block around this ``fit``, if any.
_RECIPE = contextvars.ContextVar("mlgp_recipe_settings", default=None)
_CKPT = re.compile(r"ckpt-(\d+)\.index")
_ADVICE = "use another checkpoint_dir or delete it"


def checked_folder(checkpoint_dir) -> Path:
    """``checkpoint_dir`` as a folder that exists (made with its parents); before any training.

    Raises
    ------
    ArgumentError
        When it is an existing file, or not a path (a ``str`` or ``os.PathLike``).
    FileAccessError
        When the folder cannot be made.
    """
    folder = as_path(checkpoint_dir)
    if folder.exists() and not folder.is_dir():
        raise ArgumentError(f"checkpoint_dir {folder} is a file, not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise FileAccessError(f"cannot make the checkpoint folder {folder}: {err.strerror or err}") from None
    return folder


@contextlib.contextmanager
def recipe_settings(checkpoint_dir, settings: dict, older: Callable[[dict], dict] = dict):
    """The block in which a recipe builds and trains a model checkpointed in ``checkpoint_dir``
    (``None``: nothing is checked or recorded) with ``settings`` (those a resumed run must share).

    On entering, before any work, the folder is made (:func:`checked_folder`) and the settings it
    records are compared with ``settings``: its manifest's :data:`RECIPE` entry, or the
    :data:`OLD_SETTINGS` file a folder written before the manifest carried them holds, each read
    through ``older`` (which fills in what a record written before a setting existed implies);
    any setting of ``settings`` that differs raises :class:`~mlgp.errors.CheckpointMismatchError`
    naming each one, and a record that cannot be read raises it too. Inside the block every
    manifest written in the folder carries ``settings`` as its :data:`RECIPE` entry, and the old
    file is removed once it does: the manifest is the folder's one record of them. (:func:`mlgp.training.fit`
    takes no argument for them: the block hands them to the :class:`CheckpointFolder` it opens there.)
    """
    if checkpoint_dir is None:
        yield
        return
    folder = checked_folder(checkpoint_dir)
    settings = jsonable(settings)
    stored = _stored_recipe(folder)
    if stored is not None:
        stored = older(stored)
        differ = [f"{k}: checkpoint {stored.get(k)!r}, now {v!r}" for k, v in settings.items() if stored.get(k) != v]
        if differ:
            raise CheckpointMismatchError(f"checkpoint folder {folder} holds a run with other settings "
                                          f"({', '.join(differ)}); use another folder")
    token = _RECIPE.set((folder.resolve(), settings))
    try:
        yield
    finally:
        _RECIPE.reset(token)


def _stored_recipe(folder: Path) -> dict | None:
    """The recipe's settings ``folder`` records (its manifest's entry, else :data:`OLD_SETTINGS`), or
    ``None``; a manifest that cannot be read is left to :meth:`CheckpointFolder.resume`."""
    try:
        saved = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError, RecursionError):
        saved = None
    path = folder / MANIFEST
    if isinstance(saved, dict) and RECIPE in saved:
        stored = saved[RECIPE]
    elif (folder / OLD_SETTINGS).is_file():
        path = folder / OLD_SETTINGS
        try:
            stored = json.loads(path.read_bytes().decode("utf-8"))
        except (OSError, ValueError, RecursionError) as err:  # ValueError: bad UTF-8 or JSON
            raise CheckpointMismatchError(f"{path}: the run's settings are not readable ({err}); {_ADVICE}") from None
    else:
        return None
    if not isinstance(stored, dict):
        raise CheckpointMismatchError(f"{path}: the run's settings are not a JSON object; {_ADVICE}")
    return stored


class CheckpointFolder:
    """The checkpoints of one run in ``folder``.

    Parameters
    ----------
    folder
        From :func:`checked_folder`.
    checkpoint
        The ``tf.train.Checkpoint`` saved and restored (model, optimizer, epoch counter).
    record
        From :func:`run_record`; inside :func:`recipe_settings` for ``folder``, the recipe's settings
        are added as its :data:`RECIPE` entry.
    writable
        False in a process that only restores from the folder (a cluster's worker other than the
        chief): :meth:`resume` then writes nothing and :meth:`save` is a no-op.
    """

    def __init__(self, folder: Path, checkpoint: tf.train.Checkpoint, record: dict, writable: bool = True):
        recipe = _RECIPE.get()
        if recipe is not None and recipe[0] == folder.resolve():  # inside recipe_settings for this folder
            record = dict(record, **{RECIPE: recipe[1]})
        self.folder, self.checkpoint, self.record, self.writable = folder, checkpoint, record, writable
        checkpoint.save_counter  # noqa: B018  created now, so that every file holds it and restores match
        self.latest: str | None = None

    def _numbers(self) -> list[int]:
        """The checkpoints' numbers (epochs) found from their index files, oldest first."""
        return sorted(int(m.group(1)) for p in self.folder.iterdir() if (m := _CKPT.fullmatch(p.name)))

    def resume(self, state: list) -> list[dict]:
        """Check the manifest against this run, restore the newest intact checkpoint (or none when
        the folder has none), rewrite the state file and write the manifest.

        Parameters
        ----------
        state
            Every variable a failed restore may have touched (model, optimizer, epoch); put back
            when no checkpoint restores.

        Returns
        -------
        list of dict
            The rows of ``trace.csv`` for the restored epochs (none for a fresh folder).

        Raises
        ------
        CheckpointMismatchError
            When the folder holds checkpoints of another run, or ones without a readable manifest.
        DataFormatError
            When none of its checkpoints (or its ``trace.csv``) can be read.
        FileAccessError
            When the manifest cannot be written.
        """
        numbers = self._numbers()
        rows = []
        if numbers:
            self._check_manifest()
            self._restore(numbers[::-1], state)
            rows = self._trace_rows(int(self.checkpoint.epoch.numpy()))
            if self.writable:
                self._write_state(int(Path(self.latest).name.split("-")[1]))
        if self.writable:
            self._write_manifest()
        return rows

    def _trace_rows(self, epoch: int) -> list[dict]:
        """The first ``epoch`` rows of ``trace.csv`` (none when it is missing)."""
        trace = self.folder / "trace.csv"
        if not trace.is_file():
            return []
        try:
            return pd.read_csv(trace).to_dict("records")[:epoch]
        except (ValueError, pd.errors.ParserError) as err:
            raise DataFormatError(f"cannot be read ({err}); delete it to resume without the earlier rows", trace) from None

    def _check_manifest(self) -> None:
        """Raise :class:`CheckpointMismatchError` unless the manifest names this run."""
        path = self.folder / MANIFEST
        if not path.is_file():
            raise CheckpointMismatchError(
                f"{self.folder} holds checkpoints but no {MANIFEST}, so which run wrote them cannot be checked "
                f"(checkpoints written before mlgp kept manifests have none); {_ADVICE}")
        try:
            saved = json.loads(path.read_text())
        except (OSError, ValueError, RecursionError) as err:  # RecursionError: nested past the recursion limit
            raise CheckpointMismatchError(f"{path} cannot be read ({type(err).__name__}: {err}), so which run wrote "
                                          f"the checkpoints cannot be checked; {_ADVICE}") from None
        problem = manifest_problem(saved)
        if problem:
            raise CheckpointMismatchError(f"{path}: the manifest is not readable: {problem}, so which run wrote the "
                                          f"checkpoints cannot be checked; {_ADVICE}")
        why = mismatch(saved, self.record)
        if why:
            raise CheckpointMismatchError(f"{self.folder}: {why}; {_ADVICE}")
        if RECIPE not in self.record and isinstance(saved.get(RECIPE), dict):  # resumed outside the recipe: kept
            self.record = dict(self.record, **{RECIPE: saved[RECIPE]})

    def _restore(self, numbers: list[int], state: list) -> None:
        """Restore the first of ``numbers`` (newest first) that restores whole, warning about the others."""
        before = [v.numpy() for v in state]
        for i, n in enumerate(numbers):
            path = self.folder / f"ckpt-{n}"
            try:
                self.checkpoint.restore(str(path)).assert_existing_objects_matched()
            except (tf.errors.OpError, IndexError, ValueError, AssertionError, OSError) as err:
                reason = (str(err).strip().splitlines() or [type(err).__name__])[0][:300]
                then = f"trying ckpt-{numbers[i + 1]}" if i + 1 < len(numbers) else "no older checkpoint is left"
                warn(f"{path}: skipped, it cannot be restored ({type(err).__name__}: {reason}); {then}",
                     RuntimeWarning)
                continue
            self.latest = str(path)
            return
        for v, x in zip(state, before):
            v.assign(x)
        names = ", ".join(f"ckpt-{n}" for n in numbers)
        raise DataFormatError(f"none of the checkpoints here can be restored ({names}); they are left as they are: "
                              f"move them away or delete them to start afresh", self.folder)

    def save(self, epoch: int, rows: list[dict]) -> None:
        """Write the trace, the checkpoint of ``epoch``, the state file and the manifest; keep the
        newest :data:`KEEP` checkpoints up to this one (nothing when the folder was opened read-only:
        another process, a cluster's chief, writes it). A failed write raises :class:`FileAccessError`."""
        if not self.writable:
            return
        try:
            atomic_write(self.folder / "trace.csv", lambda f: f.write(pd.DataFrame(rows).to_csv(index=False).encode()))
            self.latest = self.checkpoint.write(str(self.folder / f"ckpt-{epoch}"))
            for n in [n for n in self._numbers() if n <= epoch][:-KEEP]:
                for p in [self.folder / f"ckpt-{n}.index", *self.folder.glob(f"ckpt-{n}.data-*")]:
                    p.unlink(missing_ok=True)
            self._write_state(epoch)
        except FileAccessError:  # atomic_write's, naming the file
            raise
        except (OSError, tf.errors.OpError) as err:
            raise FileAccessError(f"cannot write the checkpoint of epoch {epoch} in {self.folder}: "
                                  f"{getattr(err, 'strerror', None) or getattr(err, 'message', None) or err}") from None
        self._write_manifest()

    def _write_state(self, latest: int) -> None:
        """TensorFlow's ``checkpoint`` file, for ``tf.train.latest_checkpoint``: the checkpoints up to ``latest``."""
        kept = [n for n in self._numbers() if n <= latest]
        text = f'model_checkpoint_path: "ckpt-{latest}"\n' + "".join(f'all_model_checkpoint_paths: "ckpt-{n}"\n' for n in kept)
        atomic_write(self.folder / "checkpoint", lambda f: f.write(text.encode()))

    def _write_manifest(self) -> None:
        """The run's record and the checkpoints up to the latest one, written atomically."""
        last = int(Path(self.latest).name.split("-")[1]) if self.latest else 0
        manifest = dict(self.record, checkpoints=[{"file": f"ckpt-{n}", "epoch": n} for n in self._numbers() if n <= last])
        text = json.dumps(manifest, indent=1) + "\n"
        atomic_write(self.folder / MANIFEST, lambda f: f.write(text.encode()))  # a FileAccessError naming it
        if RECIPE in self.record:  # the manifest holds the recipe's settings now: the one record of them
            (self.folder / OLD_SETTINGS).unlink(missing_ok=True)
