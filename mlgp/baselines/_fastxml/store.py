"""A folder of grown FastXML trees, so that a long fit that is killed resumes from the trees it has.

Contract: :class:`TreeStore` holds ``settings.json`` (what the trees belong to: the estimator's
class and tree-shaping parameters, its integer ``random_state``, the training data's shape and
content hash, the scikit-learn version whose liblinear fits the separators) and one
``tree_NNNN.npz`` per grown tree, written atomically once the tree is complete, holding the tree,
its seed, the hash of the settings and the seconds it took to grow. Tree t's seed is the t-th draw
from ``random_state`` whatever the number of trees, so a folder serves any number of trees: a run
of 10 reads the first 10 trees of a run of 50, and a run of 50 grows the 40 missing ones.

Opening a folder whose recorded settings differ from the run's raises
:class:`~mlgp.errors.CheckpointMismatchError` naming the settings that differ, before any tree is
grown; a folder with tree files but no readable settings is refused the same way, and
``settings.json`` is created exclusively, so two runs started together on an empty folder cannot
both claim it. A stored tree is read with :func:`mlgp.files.read_npz` and checked (its settings
hash and seed, :meth:`~.forest.Forest.check`, its leaves holding the N training points) before use;
a damaged or foreign file raises :class:`~mlgp.errors.DataFormatError` naming it.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from dataclasses import fields
from numbers import Integral
from pathlib import Path

import numpy as np

from ...errors import ArgumentError, CheckpointMismatchError, DataFormatError, FileAccessError
from ...files import as_path, atomic_write, atomic_write_text, csr_from_parts, read_npz
from .forest import CSR_FIELDS, Forest
from .tree import Tree

__all__ = ["TreeStore", "tree_settings"]

SETTINGS = "settings.json"
FORMAT = "mlgp-fastxml-trees/2"


def _plain(value):
    """``value`` as JSON would give it back (tuples as lists, NumPy scalars as numbers)."""
    return json.loads(json.dumps(value, default=lambda v: v.item() if isinstance(v, np.generic) else str(v)))


class TreeStore:
    """The trees of one fit in ``folder`` (module docstring).

    Parameters
    ----------
    folder : str or os.PathLike
        Created if missing.
    settings : dict
        JSON-able description of the run; ``num_samples``, ``num_features`` and ``num_labels`` are
        required.
    """

    def __init__(self, folder, settings: dict) -> None:
        self.folder = as_path(folder)
        self.settings = _plain({"format": FORMAT, **settings})
        text = json.dumps(self.settings, indent=1, sort_keys=True)
        self.key = hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise FileAccessError(f"cannot create the tree folder {self.folder}: {err.strerror or err}") from err
        path = self.folder / SETTINGS
        if not path.exists() and any(self.folder.glob("tree_*.npz")):
            raise CheckpointMismatchError(f"{self.folder} holds tree files but no {SETTINGS} saying which run they "
                                          "belong to: use another folder or empty this one")
        if not self._create(path, text):
            self._compare(path)

    @staticmethod
    def _create(path: Path, text: str) -> bool:
        """Write ``path`` whole if it does not exist (a complete temporary file hard-linked to the
        name, which fails if another run got there first); False if it exists."""
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            atomic_write_text(tmp, text)
            os.link(tmp, path)
            return True
        except FileExistsError:
            return False
        except OSError as err:
            raise FileAccessError(f"cannot write {path}: {err.strerror or err}") from err
        finally:
            tmp.unlink(missing_ok=True)

    def _compare(self, path: Path) -> None:
        try:
            recorded = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
            raise CheckpointMismatchError(f"{path} is unreadable ({err}); its trees cannot be matched to this "
                                          "run: use another folder or empty this one") from None
        if not isinstance(recorded, dict):
            raise CheckpointMismatchError(f"{path} does not hold a settings object")
        differ = sorted(k for k in set(recorded) | set(self.settings) if recorded.get(k) != self.settings.get(k))
        if differ:
            shown = ", ".join(f"{k}: stored {str(recorded.get(k))[:60]!s}, now {str(self.settings.get(k))[:60]!s}"
                              for k in differ)
            raise CheckpointMismatchError(f"the trees in {self.folder} belong to another run ({shown}); use "
                                          "another folder, or empty this one to start again")

    def path(self, t: int) -> Path:
        return self.folder / f"tree_{t:04d}.npz"

    def grown(self, count: int) -> list[int]:
        """The numbers below ``count`` of the trees stored, in increasing order."""
        return [t for t in range(count) if self.path(t).exists()]

    def save(self, t: int, tree: Tree, seed: int, seconds: float) -> None:
        """Store tree ``t``, grown from ``seed`` in ``seconds`` (atomically)."""
        arrays = {k: v for k, v in Forest.from_trees([tree]).to_arrays().items()
                  if k not in ("tree_root", "node_tree", "leaf_tree")}
        arrays.update(seed=np.asarray(seed, np.int64), seconds=np.asarray(seconds, np.float64),
                      settings=np.asarray(self.key))
        atomic_write(self.path(t), lambda f: np.savez(f, **arrays))

    def seconds(self, t: int) -> float:
        """The seconds tree ``t`` took to grow (as recorded)."""
        return float(read_npz(self.path(t), "stored FastXML tree")["seconds"])

    def load(self, t: int, seed: int) -> Tree:
        """Tree ``t``, checked to belong to these settings and to have grown from ``seed``."""
        path = self.path(t)
        arrays = read_npz(path, "stored FastXML tree")
        try:
            if str(arrays["settings"]) != self.key:
                raise ValueError("it was grown with other settings (another folder's tree?)")
            if int(arrays["seed"]) != int(seed):
                raise ValueError(f"it was grown from seed {int(arrays['seed'])}, not {seed}")
            kw = {}
            for f in fields(Tree):
                if f.name in CSR_FIELDS:
                    parts = [arrays[f"{f.name}.{p}"] for p in ("data", "indices", "indptr", "shape")]
                    kw[f.name] = csr_from_parts(*parts[:3], tuple(int(n) for n in parts[3]))
                else:
                    kw[f.name] = arrays[f.name]
            tree = Tree(**kw)
            forest = Forest.from_trees([tree])
            forest.check(int(self.settings["num_features"]), int(self.settings["num_labels"]))
            if int(tree.leaf_size.sum()) != int(self.settings["num_samples"]):
                raise ValueError(f"its leaves hold {int(tree.leaf_size.sum())} points, not the "
                                 f"{self.settings['num_samples']} training points")
        except (KeyError, ValueError, TypeError, IndexError) as err:
            raise DataFormatError(f"stored FastXML tree is damaged ({err}); delete it to grow it again",
                                  path=path) from None
        return tree


def tree_settings(estimator, X, Y, not_tree_parameters: frozenset) -> dict:
    """What stored trees must match: ``estimator``'s class, its parameters that shape trees (all but
    ``not_tree_parameters`` and the number of trees: tree t's seed does not depend on it), its
    ``random_state``, the data (N × D features ``X``, N × K labels ``Y``) and the scikit-learn
    version (its liblinear fits the separators). An :class:`~mlgp.errors.ArgumentError` for a
    ``random_state`` that is not an integer."""
    import sklearn

    from ...fingerprint import data_fingerprint

    if not isinstance(estimator.random_state, Integral):
        raise ArgumentError("tree_dir needs an integer random_state, so that a rerun draws the same tree seeds "
                            f"(got {estimator.random_state!r})")
    skip = not_tree_parameters | {"n_estimators"}
    params = {f"parameter {k}": v for k, v in estimator.get_params().items() if k not in skip}
    return {"estimator": type(estimator).__name__, **params, "random_state": int(estimator.random_state),
            "num_samples": int(X.shape[0]), "num_features": int(X.shape[1]), "num_labels": int(Y.shape[1]),
            "data": data_fingerprint(X, Y), "scikit-learn": sklearn.__version__}
