"""Checkpoint folders of :func:`mlgp.training.fit`: a manifest naming the run, checked before any
restore, and a restore that falls back past damaged checkpoints.

Contract. A folder holds ``ckpt-<epoch>.index`` / ``ckpt-<epoch>.data-*`` (``tf.train.Checkpoint``
files of the model, the optimizer and the epoch counter; the newest :data:`KEEP` are kept),
``manifest.json`` and ``trace.csv``, and TensorFlow's ``checkpoint`` state file, kept for
``tf.train.latest_checkpoint`` but never read here. The manifest (format :data:`FORMAT`) records the
run: the model's class, its trainable variables (name, shape, dtype) and its ``spec``; the training
data's sizes and fingerprint; the settings a resumed run must share (everything but ``epochs``); and
the checkpoints written. :meth:`CheckpointFolder.resume` refuses, with
:class:`~mlgp.errors.CheckpointMismatchError` and before touching the model, a folder written by
another run or holding checkpoints without a readable manifest (one that is not JSON, is nested past
the recursion limit, or has not the manifest's shape). It finds the checkpoints from the
files themselves, restores the newest that restores whole and warns about each one skipped; when
none does it raises :class:`~mlgp.errors.DataFormatError` and leaves the folder and the model as they
were. Every file here is written atomically (:func:`mlgp.files.atomic_write`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp
import tensorflow as tf

from ..errors import ArgumentError, CheckpointMismatchError, DataFormatError, FileAccessError, warn
from ..files import as_path, atomic_write
from ..fingerprint import data_fingerprint

__all__ = ["FORMAT", "KEEP", "CheckpointFolder", "checked_folder", "mismatch", "run_record", "training_settings",
           "variable_names"]

#: The manifest's format tag.
FORMAT = "mlgp.checkpoint/1"
#: Checkpoints kept: the newest ones.
KEEP = 3
MANIFEST = "manifest.json"
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


def variable_names(model) -> list[str]:
    """Readable names of ``model.trainable_variables``: GPflow parameter paths (``.q.q_mu``) where
    the model is a ``tf.Module`` with parameters, else the variables' own names."""
    paths = {}
    if isinstance(model, tf.Module):
        from gpflow.utilities import parameter_dict

        for path, p in parameter_dict(model).items():
            v = getattr(p, "unconstrained_variable", p)
            if isinstance(v, tf.Variable):
                paths.setdefault(v.ref(), path)
    return [paths.get(v.ref(), v.name) for v in model.trainable_variables]


def _nnz(A) -> int:
    return int(A.nnz) if sp.issparse(A) else int(np.count_nonzero(A))


def _jsonable(value):
    """``value`` as JSON stores it (tuples as lists, NumPy scalars as numbers)."""
    return json.loads(json.dumps(value, default=lambda o: o.item() if hasattr(o, "item") else str(o)))


def training_settings(batch_size, negatives, learning_rate, optimizer, natgrad_gamma, seed, batch_growth,
                      kl_weight: float = 1.0) -> dict:
    """The settings a resumed run must share with the run it resumes, from ``fit``'s arguments.

    ``epochs`` is not one of them (a resumed run may ask for more), nor are the options that do not
    change the trajectory (``jit_compile``, ``checkpoint_every``, ``progress``, …). ``natgrad_gamma``
    counts only with ``optimizer="natgrad"``; for an optimizer object, its class and its own
    learning rate stand for ``optimizer`` and ``learning_rate``. ``kl_weight`` is recorded only
    when it is not 1, so that a manifest written before it existed still matches its run.

    Returns
    -------
    dict
        In JSON form (tuples as lists), as the manifest stores it.
    """
    if optimizer is None or isinstance(optimizer, str):
        name = optimizer or "adam"
    else:  # an object: its class, and its own step size (restored from the checkpoint otherwise)
        name = f"{type(optimizer).__module__}.{type(optimizer).__qualname__}"
        try:
            learning_rate = float(np.asarray(optimizer.learning_rate))  # a variable, mirrored too
        except (AttributeError, TypeError, ValueError):
            learning_rate = type(getattr(optimizer, "learning_rate", None)).__name__
    return _jsonable(dict(batch_size=batch_size, negatives=negatives, learning_rate=learning_rate, optimizer=name,
                          natgrad_gamma=natgrad_gamma if name == "natgrad" else None, seed=seed,
                          batch_growth=batch_growth, **({} if float(kl_weight) == 1.0 else {"kl_weight": kl_weight})))


def _plain(o):
    """``json.dumps``'s fallback for a spec: tf.Module's wrapped mappings and sequences as plain ones."""
    if isinstance(o, Mapping):
        return dict(o)
    if isinstance(o, Sequence) and not isinstance(o, (str, bytes)):
        return list(o)
    raise TypeError(f"{type(o).__name__} is not JSON-able")


def run_record(model, X, Y, settings: dict) -> dict:
    """The manifest's description of a run, in JSON form.

    Parameters
    ----------
    model
        Its class, trainable variables (:func:`variable_names`, shape, dtype) and ``spec`` (when a
        JSON-able mapping) describe its structure.
    X, Y
        (N, D) features and (N, K) labels, CSR or dense, as ``fit`` checked them: their sizes,
        numbers of stored non-zeros and a BLAKE2b fingerprint of their values, the same for a matrix
        given dense or sparse.
    settings
        From :func:`training_settings`.
    """
    structure = {
        "class": f"{type(model).__module__}.{type(model).__qualname__}",
        "variables": [{"name": name, "shape": [None if d is None else int(d) for d in v.shape], "dtype": v.dtype.name}
                      for name, v in zip(variable_names(model), model.trainable_variables)],
    }
    spec = getattr(model, "spec", None)
    if isinstance(spec, Mapping):  # tf.Module keeps a dict attribute as a wrapped mapping
        try:
            structure["spec"] = json.loads(json.dumps(spec, default=_plain))
        except (TypeError, ValueError):
            pass  # not JSON-able: the variables still describe the structure
    N, D = X.shape
    data = {"N": int(N), "D": int(D), "K": int(Y.shape[1]), "nnz_X": _nnz(X), "nnz_Y": _nnz(Y),
            "fingerprint": data_fingerprint(X, Y)}
    return {"format": FORMAT, "model": structure, "data": data, "settings": _jsonable(settings)}


def _shape(entry) -> str:
    return str(tuple(entry["shape"]))


def _variable_difference(saved: list, now: list) -> str | None:
    """The first difference between two variable lists, in words (None when they agree)."""
    for i, (a, b) in enumerate(zip(saved, now)):
        if a["name"] != b["name"]:
            return f"variable {i + 1} is {a['name']} {_shape(a)} there, {b['name']} {_shape(b)} now"
        if a["shape"] != b["shape"]:
            return f"{a['name']} has shape {_shape(a)} there, {_shape(b)} now"
        if a["dtype"] != b["dtype"]:
            return f"{a['name']} is {a['dtype']} there, {b['dtype']} now"
    if len(saved) != len(now):
        extra = (saved if len(saved) > len(now) else now)[min(len(saved), len(now))]
        return (f"{len(saved)} variables there, {len(now)} now (first unmatched: {extra['name']} "
                f"{_shape(extra)})")
    return None


def _differences(saved: dict, now: dict) -> str:
    return ", ".join(f"{k}: {saved.get(k)!r} there, {now.get(k)!r} now"
                     for k in list(saved) + [k for k in now if k not in saved] if saved.get(k) != now.get(k))


def _data_words(d: dict) -> str:
    return f"N={d.get('N')} D={d.get('D')} K={d.get('K')}, fingerprint {str(d.get('fingerprint'))[:12]}"


def _is_dict_of(value, types: dict) -> bool:
    """Whether ``value`` is a dict whose entry ``k`` is an instance of ``types[k]`` for every ``k``."""
    return isinstance(value, dict) and all(isinstance(value.get(k), t) for k, t in types.items())


def _manifest_problem(saved) -> str | None:
    """What keeps ``saved`` (a parsed manifest) from being compared by :func:`mismatch`, in words
    (None when nothing does): an object whose ``model`` is an object with a ``class`` string, a
    ``variables`` list of objects with a ``name`` and ``dtype`` string and a ``shape`` list, and a
    ``spec`` object or null when present; whose ``data`` and ``settings`` are objects. A manifest of
    another format needs only be an object (:func:`mismatch` names its format)."""
    if not isinstance(saved, dict):
        return f"it holds a JSON {type(saved).__name__}, not an object"
    if saved.get("format") != FORMAT:
        return None
    model = saved.get("model")
    if not (_is_dict_of(model, {"class": str, "variables": list})
            and isinstance(model.get("spec"), (dict, type(None)))):
        return "'model' must be an object with a 'class' string, a 'variables' list and an optional 'spec' object"
    variable = {"name": str, "shape": list, "dtype": str}
    if not all(_is_dict_of(v, variable) for v in model["variables"]):
        return "each of 'model.variables' must be an object with a 'name' string, a 'shape' list and a 'dtype' string"
    for key in ("data", "settings"):
        if not isinstance(saved.get(key), dict):
            return f"{key!r} must be an object, got {type(saved.get(key)).__name__}"
    return None


def mismatch(saved: dict, now: dict) -> str | None:
    """Why the run described by ``saved`` (a manifest; :func:`_manifest_problem` found nothing wrong
    with its shape) is not the run ``now`` (None when it is)."""
    if saved.get("format") != FORMAT:
        return f"the manifest has format {saved.get('format')!r}, not {FORMAT!r}"
    a, b = saved.get("model", {}), now["model"]
    parts = []
    if a.get("class") != b["class"]:
        parts.append(f"class {a.get('class')} there, {b['class']} now")
    variables = _variable_difference(a.get("variables", []), b["variables"])
    if variables:
        parts.append(variables)
    spec = _differences(a.get("spec") or {}, b.get("spec") or {})
    if parts or (spec and saved.get("data") == now["data"]):
        return f"the checkpoints were written for another model ({'; '.join(parts + ([spec] if spec else []))})"
    if saved.get("data") != now["data"]:
        return (f"the checkpoints were written for other training data ({_data_words(saved.get('data', {}))}; "
                f"this run: {_data_words(now['data'])})")
    settings = _differences(saved.get("settings", {}), now["settings"])
    if settings:
        return f"the checkpoints were written with other training settings ({settings})"
    return None


class CheckpointFolder:
    """The checkpoints of one run in ``folder``.

    Parameters
    ----------
    folder
        From :func:`checked_folder`.
    checkpoint
        The ``tf.train.Checkpoint`` saved and restored (model, optimizer, epoch counter).
    record
        From :func:`run_record`.
    writable
        False in a process that only restores from the folder (a cluster's worker other than the
        chief): :meth:`resume` then writes nothing and :meth:`save` is a no-op.
    """

    def __init__(self, folder: Path, checkpoint: tf.train.Checkpoint, record: dict, writable: bool = True):
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
        problem = _manifest_problem(saved)
        if problem:
            raise CheckpointMismatchError(f"{path}: the manifest is not readable: {problem}, so which run wrote the "
                                          f"checkpoints cannot be checked; {_ADVICE}")
        why = mismatch(saved, self.record)
        if why:
            raise CheckpointMismatchError(f"{self.folder}: {why}; {_ADVICE}")

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
