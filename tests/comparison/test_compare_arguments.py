""":func:`mlgp.compare` refuses wrong-typed arguments with an :class:`~mlgp.errors.ArgumentError`
naming the argument and what it takes, before any data are read or anything is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _compare_stubs import tiny

import mlgp
from mlgp.errors import ArgumentError

#: argument → (a wrong value, what the error must say)
WRONG = {
    "models an int": ({"models": 123}, r"models takes a family name, a comma-separated text of them or a list"),
    "models None": ({"models": None}, r"models takes a family name"),
    "models a dict": ({"models": {"frequency": {}}}, r"models takes a family name"),
    "a model a list": ({"models": ["frequency", ["lspc"]]}, r"models takes family names \(texts\), got \['lspc'\]"),
    "a model an int": ({"models": ["frequency", 7]}, r"models takes family names \(texts\), got 7 \(int\)"),
    "dataset an int": ({"dataset": 123}, r"dataset takes a dataset name or an mlgp.data.Dataset, got 123"),
    "dataset and files": ({"train": "a.txt", "test": "b.txt"}, r"a dataset, or a train and a test file, not both"),
    "train an int": ({"dataset": None, "train": 5, "test": "b.txt"}, r"train takes a path"),
    "out an int": ({"out": 123}, r"out takes a path \(str or os.PathLike\), got 123"),
    "data_home an int": ({"data_home": 5}, r"data_home takes a path"),
    "data_format an int": ({"data_format": 5}, r"data_format takes a format name"),
    "settings an int": ({"settings": 3}, r"settings takes a dict \{family: \{parameter: value\}\}, got 3"),
    "settings pairs": ({"settings": [("frequency", {})]}, r"settings takes a dict"),
    "a family's settings an int": ({"settings": {"frequency": 3}}, r"settings\['frequency'\] takes a dict"),
    "a settings key an int": ({"settings": {1: {}}}, r"settings takes family names \(texts\) as keys, got 1"),
    "seed a text": ({"seed": "x"}, r"^seed must be an integer from 0 to 2147483647, got 'x'$"),
    "seed negative": ({"seed": -1}, r"^seed must be an integer from 0 to 2147483647, got -1$"),
    "seed a float": ({"seed": 1.5}, r"seed must be an integer"),
    "seed a bool": ({"seed": True}, r"seed must be an integer"),
    "seed 2**31": ({"seed": 2**31}, r"seed must be an integer from 0 to 2147483647, got 2147483648"),
    # a value is shown whole up to 60 characters, then cut to 57 and "..."
    "a 60-character value": ({"echo": "s" * 58}, r"got '" + "s" * 58 + r"' \(str\)"),
    "a 61-character value": ({"echo": "s" * 59}, r"got '" + "s" * 56 + r"\.\.\. \(str\)"),
    "progress a text": ({"progress": "yes"}, r"progress takes True or False, got 'yes'"),
    "isolate a text": ({"isolate": "no"}, r"isolate takes True or False"),
    "echo an int": ({"echo": 5}, r"echo takes a function of one line of text, or None, got 5"),
}


@pytest.mark.parametrize("change, message", list(WRONG.values()), ids=list(WRONG))
def test_a_wrong_typed_argument_is_refused_before_any_work(tmp_path, change, message) -> None:
    arguments = {"models": "frequency", "dataset": tiny(), "out": tmp_path / "c", "isolate": False, **change}
    models = arguments.pop("models")
    with pytest.raises(ArgumentError, match=message):
        mlgp.compare(models, **arguments)
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize("value", [True, False, 1])
def test_quiet_tensorflow_is_deprecated_and_ignored(tmp_path, value) -> None:
    """``compare(quiet_tensorflow=...)`` and ``compare_many``'s: a FutureWarning naming the call, and
    the comparison runs as without it (the library quiets TensorFlow itself, :mod:`mlgp.quiet`)."""
    with pytest.warns(FutureWarning, match=r"^compare\(quiet_tensorflow=\.\.\.\) is deprecated and ignored"):
        result = mlgp.compare("frequency", dataset=tiny(), isolate=False, quiet_tensorflow=value)
    assert (result.results["error"] == "").all()
    with pytest.warns(FutureWarning, match=r"^compare_many\(quiet_tensorflow=\.\.\.\) is deprecated"):
        many = mlgp.comparison.compare_many("frequency", [tiny()], isolate=False, quiet_tensorflow=value)
    assert list(many.comparisons) == [tiny().name]


def test_the_arguments_taken_still_work(tmp_path) -> None:
    """Every kind each argument takes: a tuple of names, numpy's integers and booleans, paths."""
    import numpy as np

    result = mlgp.compare(("frequency", "lspc"), dataset=tiny(), out=Path(tmp_path / "c"), seed=np.int64(4),
                          settings={"lspc": None, "frequency": {"smoothing": 1.0}}, isolate=np.bool_(False),
                          progress=False, echo=print)
    assert list(result.results["family"]) == ["frequency", "lspc"] and (result.results["error"] == "").all()
    again = mlgp.compare("frequency, lspc", dataset=tiny(), out=str(tmp_path / "c"), seed=4,
                         settings={"lspc": None, "frequency": {"smoothing": 1.0}}, isolate=False)
    assert again.results["resumed"].all()  # the numpy seed was recorded as the int it is


def test_the_largest_seed_is_taken_and_none_leaves_the_defaults(tmp_path) -> None:
    """The one range of a seed (:data:`mlgp.arguments.MAX_SEED`), checked for a family that takes
    none too; ``None`` leaves each family's own seed, and is recorded as such."""
    result = mlgp.compare("frequency, lspc", dataset=tiny(), seed=2**31 - 1, isolate=False, out=tmp_path / "a")
    assert (result.results["error"] == "").all()
    assert json.loads((tmp_path / "a" / "runs" / "lspc.json").read_text())["config"]["seed"] == 2**31 - 1
    result = mlgp.compare("lspc", dataset=tiny(), seed=None, isolate=False, out=tmp_path / "b")
    assert (result.results["error"] == "").all()
    assert json.loads((tmp_path / "b" / "runs" / "lspc.json").read_text())["config"]["seed"] is None


def test_a_test_file_is_read_at_the_training_files_width(tmp_path) -> None:
    """The test file is read with the training file's D and K: a test row's feature index that the
    training rows' D allows is taken, whatever the number of training rows."""
    from mlgp.data.io import write_labelled

    ds = tiny()  # N_train = 40 rows, D = 5
    X, Y = ds.train.X[:3], ds.train.Y[:3]  # 3 training rows, still 5 features wide
    write_labelled(tmp_path / "train.txt", X, Y)
    write_labelled(tmp_path / "test.txt", ds.test.X, ds.test.Y)
    assert ds.test.X[:, 3:].nnz > 0  # the test rows use feature indices ≥ 3
    result = mlgp.compare("frequency", train=tmp_path / "train.txt", test=tmp_path / "test.txt", isolate=False)
    assert (result.results["error"] == "").all()
