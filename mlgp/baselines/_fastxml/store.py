"""A folder of grown FastXML trees, so that a long fit that is killed resumes from the trees it has.

Contract: :class:`TreeStore` holds ``settings.json`` (what the trees belong to: the estimator's
class and tree-shaping parameters, the training data's shape and content hash, and every tree's
seed) and one ``tree_NNNN.npz`` per grown tree, each written atomically once the tree is complete.
Opening a folder whose recorded settings differ from the run's raises
:class:`~mlgp.errors.CheckpointMismatchError` naming the settings that differ, before any tree is
grown; a folder with tree files but no readable settings is refused the same way (it is never
mixed with this run's trees). A stored tree is read with :func:`mlgp.files.read_npz` and checked
(:meth:`~.forest.Forest.check`, its leaves holding the N training points) before use; a damaged
file raises :class:`~mlgp.errors.DataFormatError` naming it.
"""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import numpy as np

from ...errors import CheckpointMismatchError, DataFormatError, FileAccessError
from ...files import as_path, atomic_write, atomic_write_text, csr_from_parts, read_npz
from .forest import CSR_FIELDS, Forest
from .tree import Tree

__all__ = ["TreeStore"]

SETTINGS = "settings.json"
FORMAT = "mlgp-fastxml-trees/1"


def _plain(value):
    """``value`` as JSON would give it back (tuples as lists, NumPy scalars as numbers)."""
    return json.loads(json.dumps(value))


class TreeStore:
    """The trees of one fit in ``folder`` (module docstring).

    Parameters
    ----------
    folder : str or os.PathLike
        Created if missing.
    settings : dict
        JSON-able description of the run; ``num_samples``, ``num_features``, ``num_labels`` and
        ``seeds`` (T,) are required.
    """

    def __init__(self, folder, settings: dict) -> None:
        self.folder = as_path(folder)
        self.settings = _plain({"format": FORMAT, **settings})
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise FileAccessError(f"cannot create the tree folder {self.folder}: {err.strerror or err}") from err
        path = self.folder / SETTINGS
        if path.exists():
            self._compare(path)
        else:
            if any(self.folder.glob("tree_*.npz")):
                raise CheckpointMismatchError(f"{self.folder} holds tree files but no {SETTINGS} saying which run they "
                                              "belong to: use another folder or empty this one")
            atomic_write_text(path, json.dumps(self.settings, indent=1, sort_keys=True))

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

    def grown(self) -> list[int]:
        """The tree numbers stored, in increasing order."""
        return [t for t in range(len(self.settings["seeds"])) if self.path(t).exists()]

    def save(self, t: int, tree: Tree) -> None:
        """Store tree ``t`` (atomically)."""
        arrays = {k: v for k, v in Forest.from_trees([tree]).to_arrays().items()
                  if k not in ("tree_root", "node_tree", "leaf_tree")}
        arrays["seed"] = np.asarray(self.settings["seeds"][t], np.int64)
        atomic_write(self.path(t), lambda f: np.savez(f, **arrays))

    def load(self, t: int) -> Tree:
        """Tree ``t``, checked."""
        path = self.path(t)
        arrays = read_npz(path, "stored FastXML tree")
        try:
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
            if int(arrays["seed"]) != int(self.settings["seeds"][t]):
                raise ValueError(f"it was grown from seed {int(arrays['seed'])}, not {self.settings['seeds'][t]}")
        except (KeyError, ValueError, TypeError, IndexError) as err:
            raise DataFormatError(f"stored FastXML tree is damaged ({err}); delete it to grow it again",
                                  path=path) from None
        return tree
