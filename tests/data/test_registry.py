"""Tests of the dataset registry (mlgp.data.registry) and statistics (mlgp.data.stats)."""

from __future__ import annotations

import dataclasses
import shutil

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from mlgp.data import (
    DATASETS,
    Dataset,
    Split,
    available,
    data_home,
    load,
    statistics,
    statistics_table,
    write_xc,
)
from mlgp.errors import ArgumentError, DataFormatError, DatasetNotFoundError, ShapeError
from mlgp.metrics import inverse_propensity

README_TABLE = {
    # name: (N train, N test, D, K, labels per point)
    "bibtex": (4880, 2515, 1836, 159, 2.4019),
    "delicious": (12920, 3185, 500, 983, 19.0200),
    "enron": (1123, 579, 1001, 53, 3.3784),
    "yeast": (1500, 917, 103, 14, 4.2371),
    "emotions": (391, 202, 72, 6, 1.8685),
    "scene": (1211, 1196, 294, 6, 1.0740),
    "birds": (322, 323, 271, 19, 1.0140),
    "genbase": (463, 199, 1185, 27, 1.2523),
    "flags": (129, 65, 43, 7, 3.3918),
    "cal500": (335, 167, 68, 174, 26.0438),
    "foodtruck": (272, 135, 32, 12, 2.2899),
}


def test_registry_matches_readme():
    assert set(DATASETS) == set(README_TABLE)
    for name, (ntr, nte, d, k, lpp) in README_TABLE.items():
        info = DATASETS[name]
        assert (info.n_train, info.n_test, info.num_features, info.num_labels) == (ntr, nte, d, k)
        assert info.labels_per_point == pytest.approx(lpp)
        assert info.url.startswith("http://")


@pytest.mark.parametrize("name", sorted(README_TABLE))
def test_load_real(data_home, name):
    ntr, nte, d, k, lpp = README_TABLE[name]
    ds = load(name, data_home)
    assert isinstance(ds, Dataset)
    assert ds.train.X.shape == (ntr, d) and ds.train.Y.shape == (ntr, k)
    assert ds.test.X.shape == (nte, d) and ds.test.Y.shape == (nte, k)
    assert ds.num_features == d and ds.num_labels == k
    assert ds.train.num_points == ntr and ds.test.num_points == nte
    assert ds.train.Y.dtype == np.int8 and ds.train.X.dtype == np.float64
    assert ds.label_names is not None and len(ds.label_names) == k
    stats = statistics(ds)
    assert round(float(stats["labels_per_point"]), 4) == pytest.approx(lpp, abs=1e-12)
    assert (stats["N_train"], stats["N_test"], stats["D"], stats["K"]) == (ntr, nte, d, k)
    assert name in repr(ds)


def test_available_and_env(data_home, monkeypatch):
    import mlgp.data

    assert set(README_TABLE) <= set(available(data_home))
    monkeypatch.setenv("MLGP_DATA", str(data_home))
    assert mlgp.data.data_home() == data_home == mlgp.data.data_home(required=False)
    assert load("emotions").train.num_points == 391


def test_data_home_errors(monkeypatch, tmp_path):
    monkeypatch.delenv("MLGP_DATA", raising=False)
    assert data_home(required=False) is None
    with pytest.raises(DatasetNotFoundError, match=r"^no data home: pass data_home=\.\.\. or set the environment variable MLGP_DATA"):
        data_home()
    with pytest.raises(DatasetNotFoundError, match=r"^no data home: pass --data-home PATH or set"):
        data_home(option="--data-home")
    missing = tmp_path / "missing"
    with pytest.raises(DatasetNotFoundError, match=r"^data home '.*missing' \(from data_home\) does not exist$"):
        data_home(missing)
    with pytest.raises(DatasetNotFoundError, match=r"^data home '.*missing' \(from --data-home\) does not exist$"):
        data_home(missing, required=False, option="--data-home")
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    with pytest.raises(DatasetNotFoundError, match=r"^data home '.*a_file' \(from data_home\) is not a folder$"):
        data_home(a_file)
    monkeypatch.setenv("MLGP_DATA", str(missing))
    # a home that is named but missing is an error, whether or not one is required
    with pytest.raises(DatasetNotFoundError, match=r"^data home '.*missing' \(from \$MLGP_DATA\) does not exist$"):
        data_home(required=False)
    with pytest.raises(DatasetNotFoundError, match=r"^data home '.*missing' \(from \$MLGP_DATA\) does not exist$"):
        load("bibtex")
    assert data_home(tmp_path) == tmp_path


def test_missing_dataset_message(tmp_path):
    with pytest.raises(DatasetNotFoundError, match=r"dataset 'bibtex' not found: expected ") as info:
        load("bibtex", tmp_path)
    msg = str(info.value)
    assert "train.txt.gz" in msg and "test.txt.gz" in msg
    assert str(tmp_path / "bibtex") in msg
    assert "manikvarma.org" in msg
    with pytest.raises(DatasetNotFoundError, match=r"dataset 'nosuchthing' not found") as info:
        load("nosuchthing", tmp_path)
    assert "Known datasets" in str(info.value) and "mulan" in str(info.value)
    # FileNotFoundError is a base class: plain callers can catch it.
    assert isinstance(info.value, FileNotFoundError)


def test_a_name_close_to_a_known_one_is_suggested(tmp_path):
    """A typo gets "did you mean" (a data set of the home first, else a known one), not the long list."""
    (tmp_path / "mine").mkdir()
    for split in ("train", "test"):
        (tmp_path / "mine" / f"{split}.txt").write_text("")
    with pytest.raises(DatasetNotFoundError, match=rf"^dataset 'bibtx' not found \(nor in {tmp_path}\): did you mean 'bibtex'\?$"):
        load("bibtx", tmp_path)
    with pytest.raises(DatasetNotFoundError, match=rf"^dataset 'mines' not found in {tmp_path}: did you mean 'mine'\?$"):
        load("mines", tmp_path)
    with pytest.raises(DatasetNotFoundError, match="Known datasets"):
        load("qqqqq", tmp_path)  # nothing close: the list


def _toy(tmp_path, name="toy", d_test=4, k_test=3, labels=("a", "b", "c")):
    folder = tmp_path / name
    folder.mkdir()
    X = sp.csr_matrix(np.array([[1.0, 0, 0, 2.0], [0, 0, 0.5, 0]]))
    Y = sp.csr_matrix(np.array([[1, 0, 1], [0, 1, 0]], dtype=np.int8))
    write_xc(folder / "train.txt.gz", X, Y)
    write_xc(folder / "test.txt", sp.csr_matrix((1, d_test)), sp.csr_matrix((1, k_test)))
    if labels is not None:
        (folder / "labels.txt").write_text("\n".join(labels) + "\n")
    return folder


def test_load_custom_folder(tmp_path):
    _toy(tmp_path)
    ds = load("toy", tmp_path)
    assert ds.label_names == ["a", "b", "c"]
    assert ds.train.path.name == "train.txt.gz" and ds.test.path.name == "test.txt"
    assert ds.home == tmp_path
    assert available(tmp_path) == ["toy"]
    s = statistics(ds.train)
    assert s["rows_without_labels"] == 0 and s["nnz_per_point"] == 1.5
    assert statistics(ds.test)["rows_without_labels"] == 1
    assert statistics(ds.test)["labels_without_points"] == 3


@pytest.mark.parametrize("d_test,k_test,what", [(5, 3, "D"), (4, 2, "K")])
def test_train_test_mismatch(tmp_path, d_test, k_test, what):
    folder = _toy(tmp_path, d_test=d_test, k_test=k_test)
    with pytest.raises(DataFormatError, match=f"train and test disagree on {what} ") as info:
        load("toy", tmp_path)
    msg = str(info.value)
    assert f"disagree on {what}" in msg
    assert str(folder / "train.txt.gz") in msg and str(folder / "test.txt") in msg


def test_label_names_count(tmp_path):
    _toy(tmp_path, labels=("a", "b"))
    with pytest.raises(DataFormatError, match="2 label names but the data has K=3"):
        load("toy", tmp_path)


def test_labels_txt_optional(tmp_path):
    _toy(tmp_path, labels=None)
    assert load("toy", tmp_path).label_names is None


def test_dataset_validation():
    X = sp.csr_matrix((2, 3))
    Y = sp.csr_matrix((2, 2), dtype=np.int8)
    with pytest.raises(ShapeError, match=r"split 'x': X has 2 rows but Y has 3"):
        Split("x", X, sp.csr_matrix((3, 2)), None)
    tr = Split("train", X, Y, None)
    with pytest.raises(ShapeError, match=r"dataset 'd': train has 3 features, test has 4"):
        Dataset("d", tr, Split("test", sp.csr_matrix((1, 4)), sp.csr_matrix((1, 2)), None))
    with pytest.raises(ShapeError, match=r"dataset 'd': train has 2 labels, test has 3"):
        Dataset("d", tr, Split("test", sp.csr_matrix((1, 3)), sp.csr_matrix((1, 3)), None))
    with pytest.raises(ShapeError, match=r"dataset 'd': 1 label names for 2 labels"):
        Dataset("d", tr, tr, label_names=["only one"])
    ds = Dataset("d", tr, tr)
    assert ds.propensity_a == 0.55 and ds.propensity_b == 1.5 and ds.extras == {}
    # the propensity constants follow the dataset's name (mlgp.metrics.propensity_params)
    amazon = Dataset("AmazonCat-13K", tr, tr)
    assert (amazon.propensity_a, amazon.propensity_b) == (0.6, 2.6)
    np.testing.assert_allclose(amazon.inverse_propensity(), inverse_propensity(tr.Y, 0.6, 2.6), rtol=0, atol=0)
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'name'"):
        ds.name = "other"  # frozen
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'Y'"):
        tr.Y = Y  # frozen


def test_statistics_rejects_other_objects():
    with pytest.raises(ArgumentError, match=r"^expected a Dataset or Split, got int$"):
        statistics(42)


def test_statistics_table(tmp_path):
    _toy(tmp_path)
    ds = load("toy", tmp_path)
    table = statistics_table([ds])
    assert isinstance(table, pd.DataFrame)
    assert list(table.index) == ["toy"]
    assert table.loc["toy", "labels_per_point"] == pytest.approx(3 / 3)
    assert table.loc["toy", "points_per_label"] == pytest.approx(3 / 3)
    t2 = statistics_table({"a": ds.train, "b": ds.test})
    assert list(t2.index) == ["a", "b"] and "rows_without_labels" in t2.columns


def test_no_tensorflow_import():
    import subprocess
    import sys

    code = "import sys, mlgp.data; assert 'tensorflow' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_copy_of_real_dataset_loads_without_labels(data_home, tmp_path):
    dst = tmp_path / "emotions"
    dst.mkdir()
    for f in ("train.txt.gz", "test.txt.gz"):
        shutil.copy(data_home / "emotions" / f, dst / f)
    ds = load("emotions", tmp_path)
    assert ds.label_names is None and ds.num_labels == 6
