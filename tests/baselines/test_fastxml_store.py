"""FastXML's tree folder (``fit(..., tree_dir=...)``): a killed fit resumes from the trees it grew
and ends with the forest an uninterrupted fit grows; a folder of another run, or one whose files
are damaged, is refused with a message naming the cause before any tree is grown."""

from __future__ import annotations

import json

import numpy as np
import pytest

import mlgp.baselines._fastxml.growing as fastxml_module  # where fit grows each tree
from mlgp.baselines import FastXML, PfastreXML
from mlgp.errors import ArgumentError, CheckpointMismatchError, DataFormatError

from _fastxml_helpers import _assert_same_forest, _data


@pytest.fixture
def counting(monkeypatch):
    """The seeds of the trees grown (n_jobs=1 grows them in this process)."""
    class Grown(list):
        fail_at = None  # raise (a kill) when this many trees have been started

    grown = Grown()
    original = fastxml_module.grow_tree

    def grow(*args):
        grown.append(args[7])
        if len(grown) == grown.fail_at:
            raise KeyboardInterrupt("killed")
        return original(*args)

    monkeypatch.setattr(fastxml_module, "grow_tree", grow)
    return grown


def test_a_killed_fit_resumes_from_its_trees(rng, tmp_path, counting) -> None:
    X, Y = _data(rng, N=150)
    whole = FastXML(n_estimators=5, max_leaf=6, random_state=2, calibration=None).fit(X, Y)
    counting.clear()
    counting.fail_at = 4  # killed while growing the 4th tree
    with pytest.raises(KeyboardInterrupt, match="killed"):
        FastXML(n_estimators=5, max_leaf=6, random_state=2, calibration=None).fit(X, Y, tree_dir=tmp_path)
    assert sorted(p.name for p in tmp_path.glob("tree_*.npz")) == ["tree_0000.npz", "tree_0001.npz", "tree_0002.npz"]
    counting.clear()
    counting.fail_at = None
    resumed = FastXML(n_estimators=5, max_leaf=6, random_state=2, calibration=None).fit(X, Y, tree_dir=tmp_path)
    assert counting == list(whole.tree_seeds_[3:])  # only the missing trees were grown
    _assert_same_forest(resumed, whole)
    # a tree deleted from the middle is grown again, the others are read
    (tmp_path / "tree_0001.npz").unlink()
    counting.clear()
    again = FastXML(n_estimators=5, max_leaf=6, random_state=2, calibration=None).fit(X, Y, tree_dir=tmp_path)
    assert counting == [whole.tree_seeds_[1]]
    _assert_same_forest(again, whole)


@pytest.mark.parametrize("change, named", [
    (dict(random_state=3), "random_state"), (dict(max_leaf=7), "parameter max_leaf"),
    (dict(separator_features="node"), "parameter separator_features"), ("data", "data"),
    ("labels", "num_labels"), ("class", "estimator")])
def test_a_folder_of_another_run_is_refused_before_any_work(rng, tmp_path, counting, change, named) -> None:
    X, Y = _data(rng, N=120)
    FastXML(n_estimators=2, max_leaf=6, random_state=2).fit(X, Y, tree_dir=tmp_path)
    counting.clear()
    cls, params = FastXML, dict(n_estimators=2, max_leaf=6, random_state=2)
    if change == "data":
        X = X.copy()
        X[0, 0] += 1.0
    elif change == "labels":
        Y = Y[:, :-1]
    elif change == "class":
        cls = PfastreXML
    else:
        params.update(change)
    with pytest.raises(CheckpointMismatchError, match=f"belong to another run \\(.*{named}: stored"):
        cls(**params).fit(X, Y, tree_dir=tmp_path)
    assert counting == []


def test_parameters_that_do_not_shape_trees_may_change(rng, tmp_path, counting) -> None:
    X, Y = _data(rng, N=120)
    first = FastXML(n_estimators=2, max_leaf=6, random_state=2).fit(X, Y, tree_dir=tmp_path)
    counting.clear()
    # calibration too (the first fit calibrates, by default): its copies grow no stored tree
    second = FastXML(n_estimators=2, max_leaf=6, random_state=2, threshold=0.3, verbose=0,
                     calibration=None).fit(X, Y, tree_dir=tmp_path)
    assert counting == []
    _assert_same_forest(first, second)


def test_tree_files_without_settings_are_refused(rng, tmp_path, counting) -> None:
    X, Y = _data(rng, N=120)
    FastXML(n_estimators=2, max_leaf=6, random_state=2).fit(X, Y, tree_dir=tmp_path)
    (tmp_path / "settings.json").unlink()
    with pytest.raises(CheckpointMismatchError, match="holds tree files but no settings.json"):
        FastXML(n_estimators=2, max_leaf=6, random_state=2).fit(X, Y, tree_dir=tmp_path)
    (tmp_path / "settings.json").write_text("{not json")
    with pytest.raises(CheckpointMismatchError, match="settings.json is unreadable"):
        FastXML(n_estimators=2, max_leaf=6, random_state=2).fit(X, Y, tree_dir=tmp_path)


def test_a_damaged_or_altered_tree_file_is_refused(rng, tmp_path) -> None:
    X, Y = _data(rng, N=120)
    FastXML(n_estimators=2, max_leaf=6, random_state=2).fit(X, Y, tree_dir=tmp_path)
    path = tmp_path / "tree_0001.npz"
    path.write_bytes(path.read_bytes()[:200])
    with pytest.raises(DataFormatError, match="tree_0001.npz") as err:
        FastXML(n_estimators=2, max_leaf=6, random_state=2).fit(X, Y, tree_dir=tmp_path)
    assert "unreadable stored FastXML tree" in str(err.value)
    good = (tmp_path / "tree_0000.npz").read_bytes()
    arrays = dict(np.load(tmp_path / "tree_0000.npz"))
    arrays["leaf_size"] = arrays["leaf_size"] + 1  # leaves no longer hold the N training points
    np.savez(tmp_path / "tree_0000.npz", **arrays)
    path.unlink()
    with pytest.raises(DataFormatError, match="damaged .*not the 120 training points"):
        FastXML(n_estimators=2, max_leaf=6, random_state=2).fit(X, Y, tree_dir=tmp_path)
    (tmp_path / "tree_0000.npz").write_bytes(good)
    path.write_bytes(good)  # tree 0 saved as tree 1: another seed
    with pytest.raises(DataFormatError, match="damaged .*grown from seed"):
        FastXML(n_estimators=2, max_leaf=6, random_state=2).fit(X, Y, tree_dir=tmp_path)
    # tree 1 of the same seed but grown with other settings (copied from another folder)
    other = tmp_path / "other"
    FastXML(n_estimators=2, max_leaf=7, random_state=2).fit(X, Y, tree_dir=other)
    (tmp_path / "tree_0001.npz").write_bytes((other / "tree_0001.npz").read_bytes())
    with pytest.raises(DataFormatError, match="damaged .*grown with other settings"):
        FastXML(n_estimators=2, max_leaf=6, random_state=2).fit(X, Y, tree_dir=tmp_path)


def test_settings_are_recorded_as_json(rng, tmp_path) -> None:
    X, Y = _data(rng, N=120)
    FastXML(n_estimators=2, max_leaf=np.int64(6), random_state=np.int32(2)).fit(X, Y, tree_dir=tmp_path,
                                                                               progress=True)
    settings = json.loads((tmp_path / "settings.json").read_text())
    assert settings["random_state"] == 2 and settings["parameter max_leaf"] == 6 and settings["num_samples"] == 120
    assert "parameter n_jobs" not in settings and "parameter n_estimators" not in settings
    assert len(settings["data"]) == 32 and settings["scikit-learn"]
    tree = np.load(tmp_path / "tree_0001.npz")
    assert tree["seconds"] > 0 and int(tree["seed"]) == FastXML(n_estimators=2, random_state=2).fit(X, Y).tree_seeds_[1]


def test_a_folder_serves_fewer_and_more_trees(rng, tmp_path, counting) -> None:
    """Tree t's seed does not depend on the number of trees: 3 stored trees give a 2-tree fit with
    no growing, and a 5-tree fit grows the last 2."""
    X, Y = _data(rng, N=150)
    FastXML(n_estimators=3, max_leaf=6, random_state=2, calibration=None).fit(X, Y, tree_dir=tmp_path)
    counting.clear()
    two = FastXML(n_estimators=2, max_leaf=6, random_state=2, calibration=None).fit(X, Y, tree_dir=tmp_path)
    assert counting == []
    _assert_same_forest(two, FastXML(n_estimators=2, max_leaf=6, random_state=2, calibration=None).fit(X, Y))
    counting.clear()
    five = FastXML(n_estimators=5, max_leaf=6, random_state=2, calibration=None).fit(X, Y, tree_dir=tmp_path)
    assert counting == list(five.tree_seeds_[3:])
    _assert_same_forest(five, FastXML(n_estimators=5, max_leaf=6, random_state=2, calibration=None).fit(X, Y))


@pytest.mark.parametrize("random_state", [None, np.random.RandomState(0)])
def test_tree_dir_needs_an_integer_random_state(rng, tmp_path, counting, random_state) -> None:
    X, Y = _data(rng, N=120)
    with pytest.raises(ArgumentError, match="tree_dir needs an integer random_state"):
        FastXML(n_estimators=2, random_state=random_state).fit(X, Y, tree_dir=tmp_path)
    assert counting == [] and not (tmp_path / "settings.json").exists()


def test_progress_must_be_a_flag(rng, tmp_path, counting) -> None:
    X, Y = _data(rng, N=120)
    with pytest.raises(ArgumentError, match="progress must be True or False, got 'yes'"):
        FastXML(n_estimators=2, random_state=2).fit(X, Y, tree_dir=tmp_path, progress="yes")
    assert counting == [] and not (tmp_path / "settings.json").exists()
