"""The benchmark datasets: where they live on disk, their published numbers, loading.

A *data home* is a folder with one sub-folder per dataset, each holding
``train.txt.gz`` (or ``train.txt``), ``test.txt.gz`` (or ``test.txt``) in XC
format and optionally ``labels.txt`` (line ``j+1`` is the name of label ``j``).
Nothing is cached on disk.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..errors import DataFormatError, DatasetNotFoundError, ShapeError
from ..metrics import inverse_propensity, propensity_params
from .io import read_xc

__all__ = [
    "DATASETS",
    "Dataset",
    "DatasetInfo",
    "Split",
    "available",
    "data_home",
    "load",
]

ENV_VAR = "MLGP_DATA"
XC_URL = "http://manikvarma.org/downloads/XC/XMLRepository.html"
MULAN_URL = "http://mulan.sourceforge.net/datasets-mlc.html"


@dataclass(frozen=True)
class Split:
    """One part (train or test) of a dataset.

    Attributes
    ----------
    name : str
        ``"train"`` or ``"test"`` (or any name).
    X : scipy.sparse.csr_matrix, shape (N, D)
        Features.
    Y : scipy.sparse.csr_matrix, shape (N, K), int8
        0/1 labels.
    path : Path or None
        The file it was read from.
    """

    name: str
    X: sp.csr_matrix
    Y: sp.csr_matrix
    path: Path | None = None

    def __post_init__(self) -> None:
        if self.X.shape[0] != self.Y.shape[0]:
            raise ShapeError(
                f"split {self.name!r}: X has {self.X.shape[0]} rows but Y has {self.Y.shape[0]}"
            )

    @property
    def num_points(self) -> int:
        """N."""
        return int(self.X.shape[0])

    @property
    def num_features(self) -> int:
        """D."""
        return int(self.X.shape[1])

    @property
    def num_labels(self) -> int:
        """K."""
        return int(self.Y.shape[1])

    def __repr__(self) -> str:
        return (f"Split({self.name!r}, N={self.num_points}, D={self.num_features}, "
                f"K={self.num_labels})")


@dataclass(frozen=True)
class Dataset:
    """A multi-label dataset with a train and a test split sharing D and K.

    ``propensity_a`` and ``propensity_b`` are the A, B constants of the Jain et al. (2016)
    propensity model for this dataset's name (:func:`mlgp.metrics.propensity_params`, the one
    source of them); :meth:`inverse_propensity` gives the weights from the train labels.
    """

    name: str
    train: Split
    test: Split
    label_names: list[str] | None = None
    home: Path | None = None
    extras: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        for what, a, b in (("features", self.train.num_features, self.test.num_features),
                           ("labels", self.train.num_labels, self.test.num_labels)):
            if a != b:
                raise ShapeError(f"dataset {self.name!r}: train has {a} {what}, test has {b}")
        if self.label_names is not None and len(self.label_names) != self.train.num_labels:
            raise ShapeError(f"dataset {self.name!r}: {len(self.label_names)} label names for "
                             f"{self.train.num_labels} labels")

    @property
    def num_features(self) -> int:
        """D."""
        return self.train.num_features

    @property
    def propensity_a(self) -> float:
        """A of the propensity model (from :func:`mlgp.metrics.propensity_params`)."""
        return propensity_params(self.name)[0]

    @property
    def propensity_b(self) -> float:
        """B of the propensity model (from :func:`mlgp.metrics.propensity_params`)."""
        return propensity_params(self.name)[1]

    def inverse_propensity(self, a: float | None = None, b: float | None = None) -> np.ndarray:
        """Inverse propensity weights (K,) from the train labels, with this dataset's A, B unless given."""
        return inverse_propensity(sp.csr_matrix(self.train.Y),
                                  self.propensity_a if a is None else a,
                                  self.propensity_b if b is None else b)

    @property
    def num_labels(self) -> int:
        """K."""
        return self.train.num_labels

    def __repr__(self) -> str:
        return (f"Dataset({self.name!r}, train={self.train.num_points}, "
                f"test={self.test.num_points}, D={self.num_features}, K={self.num_labels})")


@dataclass(frozen=True)
class DatasetInfo:
    """Published numbers of a benchmark dataset (averages over train and test)."""

    name: str
    n_train: int
    n_test: int
    num_features: int
    num_labels: int
    labels_per_point: float
    url: str
    description: str


DATASETS: dict[str, DatasetInfo] = {
    info.name: info
    for info in (
        DatasetInfo("bibtex", 4880, 2515, 1836, 159, 2.4019, XC_URL,
                    "BibTeX tag recommendation, binary bag-of-words (XC repository version)"),
        DatasetInfo("delicious", 12920, 3185, 500, 983, 19.0200, XC_URL,
                    "del.icio.us tag prediction, binary bag-of-words (XC repository version)"),
        DatasetInfo("enron", 1123, 579, 1001, 53, 3.3784, MULAN_URL,
                    "Enron e-mail categorisation, binary word features (Mulan split)"),
        DatasetInfo("yeast", 1500, 917, 103, 14, 4.2371, MULAN_URL,
                    "yeast gene function classes, dense real features (Mulan split)"),
        DatasetInfo("emotions", 391, 202, 72, 6, 1.8685, MULAN_URL,
                    "music emotions, dense real features (Mulan split)"),
        DatasetInfo("scene", 1211, 1196, 294, 6, 1.0740, MULAN_URL,
                    "scene image classification, dense real features (Mulan split)"),
        DatasetInfo("birds", 322, 323, 271, 19, 1.0140, MULAN_URL,
                    "bird species in audio recordings, dense real features; 294 of 645 unlabelled (Mulan split)"),
        DatasetInfo("genbase", 463, 199, 1185, 27, 1.2523, MULAN_URL,
                    "protein function classes, binary motif features, many duplicate rows (Mulan split)"),
        DatasetInfo("flags", 129, 65, 43, 7, 3.3918, MULAN_URL,
                    "colours on national flags, mixed numeric and one-hot features (Mulan split)"),
        DatasetInfo("cal500", 335, 167, 68, 174, 26.0438, MULAN_URL,
                    "song tags, dense real audio features, 26 labels per song (seeded 2/3 : 1/3 split)"),
        DatasetInfo("foodtruck", 272, 135, 32, 12, 2.2899, MULAN_URL,
                    "preferred kinds of food, mixed numeric and one-hot features (seeded 2/3 : 1/3 split)"),
    )
}


def data_home(path: str | Path | None = None, *, required: bool = True, option: str = "data_home") -> Path | None:
    """The data home: ``path`` if given, else ``$MLGP_DATA``. The package's one resolver.

    Parameters
    ----------
    path
        An explicit folder (a function argument or a command-line flag).
    required
        When neither ``path`` nor ``$MLGP_DATA`` is set: raise (True) or return None (False).
    option
        How ``path`` is named in messages (``"--data-home"`` from the command line).

    Raises
    ------
    DatasetNotFoundError
        When the chosen folder does not exist (whether or not ``required``), or when none is set and
        ``required``.
    """
    if path is None:
        env = os.environ.get(ENV_VAR)
        if not env:
            if not required:
                return None
            raise DatasetNotFoundError(
                f"no data home: {_how_to_pass(option)} or set the environment variable {ENV_VAR} "
                "to a folder holding one sub-folder per dataset (e.g. $MLGP_DATA/bibtex/"
                "train.txt.gz, test.txt.gz, labels.txt)"
            )
        p, origin = Path(env).expanduser(), f"${ENV_VAR}"
    else:
        p, origin = Path(path).expanduser(), option
    if not p.is_dir():
        what = "does not exist" if not p.exists() else "is not a folder"
        raise DatasetNotFoundError(f"data home {str(p)!r} (from {origin}) {what}")
    return p


def _how_to_pass(option: str) -> str:
    """How to give the data home: ``pass --data-home PATH`` for an option, ``pass data_home=...`` for a
    keyword."""
    return f"pass {option} PATH" if option.startswith("-") else f"pass {option}=..."


# load() and available() take an argument named data_home, which hides the function.
_resolve_home = data_home


def _find_file(folder: Path, stem: str) -> Path | None:
    for suffix in (".txt.gz", ".txt"):
        p = folder / f"{stem}{suffix}"
        if p.is_file():
            return p
    return None


def _missing_message(name: str, home: Path, folder: Path, missing: list[str]) -> str:
    present = available(home)
    if not folder.exists() and name not in DATASETS:
        close = difflib.get_close_matches(name, sorted(set(present) | set(DATASETS)), n=1, cutoff=0.6)
        if close:
            where = f"in {home}" if close[0] in present else f"(nor in {home})"
            return f"dataset {name!r} not found {where}: did you mean {close[0]!r}?"
    msg = (f"dataset {name!r} not found: expected {', '.join(missing)} in {folder} "
           f"(XC format, optionally gzip-compressed as .txt.gz; labels.txt with one label "
           f"name per line is optional).")
    info = DATASETS.get(name)
    if info is not None:
        msg += f" {name} is published at {info.url}."
    else:
        msg += (f" Known datasets: {', '.join(sorted(DATASETS))} (published at {XC_URL} "
                f"and {MULAN_URL}).")
    if present:
        msg += f" Present in {home}: {', '.join(present)}."
    return msg


def _read_label_names(path: Path, num_labels: int) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DataFormatError(f"not UTF-8 text: {exc}", path) from exc
    names = text.split("\n")
    if names and names[-1] == "":
        names.pop()
    names = [s.rstrip("\r") for s in names]
    if len(names) != num_labels:
        raise DataFormatError(
            f"{len(names)} label names but the data has K={num_labels} labels", path,
            min(len(names), num_labels) + 1,
        )
    return names


def load(name: str, data_home: str | Path | None = None, dtype=np.float64, *, option: str = "data_home") -> Dataset:
    """Load dataset ``name`` from the data home.

    Parameters
    ----------
    name
        Folder name under the data home (e.g. ``"bibtex"``).
    data_home
        The data home; default ``$MLGP_DATA``.
    dtype
        Floating dtype of X.
    option
        How ``data_home`` is named in messages (``"--data-home"`` from the command line).

    Returns
    -------
    Dataset
        train.X (N_train, D), train.Y (N_train, K) int8, likewise test.

    Raises
    ------
    DatasetNotFoundError
        When the home or the dataset's files are missing.
    DataFormatError
        When a file is malformed or train and test disagree on D or K.
    """
    home = _resolve_home(data_home, option=option)
    folder = home / name
    train_path = _find_file(folder, "train")
    test_path = _find_file(folder, "test")
    missing = [f"{stem}.txt.gz (or {stem}.txt)"
               for stem, p in (("train", train_path), ("test", test_path)) if p is None]
    if missing:
        raise DatasetNotFoundError(_missing_message(name, home, folder, missing))
    assert train_path is not None and test_path is not None
    Xtr, Ytr = read_xc(train_path, dtype=dtype)
    Xte, Yte = read_xc(test_path, dtype=dtype)
    for what, a, b in (("D (features)", Xtr.shape[1], Xte.shape[1]),
                       ("K (labels)", Ytr.shape[1], Yte.shape[1])):
        if a != b:
            raise DataFormatError(
                f"train and test disagree on {what}: {train_path} has {a}, "
                f"{test_path} has {b}", test_path, 1)
    labels_path = folder / "labels.txt"
    label_names = _read_label_names(labels_path, Ytr.shape[1]) if labels_path.is_file() else None
    return Dataset(
        name=name,
        train=Split("train", Xtr, Ytr, train_path),
        test=Split("test", Xte, Yte, test_path),
        label_names=label_names,
        home=home,
    )


def available(data_home: str | Path | None = None) -> list[str]:
    """Sorted names of the dataset folders in the data home that have train and test files."""
    home = _resolve_home(data_home)
    return sorted(
        p.name for p in home.iterdir()
        if p.is_dir() and _find_file(p, "train") is not None and _find_file(p, "test") is not None
    )
