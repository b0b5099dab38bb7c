"""Mistakes at the estimators' public methods outside fit and scoring are MLGPErrors naming the
problem: a constructor parameter outside its constraints (mlgp's ArgumentError and scikit-learn's
InvalidParameterError at once), FastXML.select_trees with bad tree indices, and saving (estimators
and MLGPF) where no file can be written. Each case raised a plain ValueError or a raw OSError before (FileNotFoundError,
NotADirectoryError, IsADirectoryError), or a plain MLGPError that no ``except OSError`` caught.
"""

from __future__ import annotations

import pytest
from _small import data, fit_small

from mlgp import baselines
from mlgp.errors import ArgumentError, FileAccessError, MLGPError


@pytest.fixture(scope="module")
def fastxml():
    return fit_small("FastXML", False)  # two trees


@pytest.mark.parametrize("trees", [[], [2], [-1], [0, 5], [0.5], [True, False], "0", [[0], [0, 1]]],
                         ids=["empty", "too large", "negative", "one too large", "float", "bool", "text", "ragged"])
def test_select_trees_refuses_bad_indices_with_an_argument_error(fastxml, trees):
    with pytest.raises(ArgumentError, match=r"trees must be a non-empty list of integer indices in \[0, 2\)"):
        fastxml.select_trees(trees)


def test_select_trees_still_takes_good_indices(fastxml):
    assert fastxml.select_trees([1, 1, 0]).forest_.n_trees == 3


@pytest.mark.parametrize("name", ["FastXML", "LabelFrequency", "MLkNN"])
def test_saving_into_a_folder_that_does_not_exist_names_the_file(tmp_path, name):
    path = tmp_path / "no" / "such" / "folder" / "model.npz"
    with pytest.raises(FileAccessError, match=f"cannot write {path}: No such file or directory") as info:
        fit_small(name, False).save(path)
    assert isinstance(info.value, OSError) and isinstance(info.value, MLGPError)
    assert not (tmp_path / "no").exists()


def test_saving_below_a_file_names_the_file(tmp_path, fastxml):
    (tmp_path / "a-file").write_text("not a folder")
    with pytest.raises(FileAccessError, match=r"cannot write .*a-file/model\.npz: Not a directory"):
        fastxml.save(tmp_path / "a-file" / "model")


def test_saving_over_a_folder_names_it_and_leaves_nothing_behind(tmp_path, fastxml):
    (tmp_path / "model.npz").mkdir()
    with pytest.raises(FileAccessError, match=r"cannot write .*model\.npz: Is a directory"):
        fastxml.save(tmp_path / "model.npz")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.npz"]  # no temporary file left


def test_saving_to_an_empty_path_is_an_argument_error(fastxml):
    with pytest.raises(ArgumentError, match=r"'\.' names no file to save to"):
        fastxml.save("")


def test_an_mlgpf_save_that_cannot_write_is_a_file_access_error(tmp_path):
    import numpy as np

    from mlgp.models import mlgpf_from_data

    rng = np.random.default_rng(0)
    model = mlgpf_from_data(rng.random((12, 3)), (rng.random((12, 4)) < 0.5).astype(int), num_latent_gps=2,
                            num_inducing=3)
    (tmp_path / "a-file").write_text("not a folder")
    with pytest.raises(FileAccessError, match=r"cannot save the model in .*a-file/m: ") as info:
        model.save(tmp_path / "a-file" / "m")
    assert isinstance(info.value, OSError)


@pytest.mark.parametrize("make, message", [
    (lambda: baselines.MLkNN(n_neighbors=0), r"'n_neighbors' parameter of MLkNN must be an int in the range \[1, inf\)"),
    (lambda: baselines.MLkNN(n_jobs=0), r"'n_jobs' parameter of MLkNN must be an int in the range \(-inf, -1\], "
                                        r"an int in the range \[1, inf\) or None\. Got 0"),
    (lambda: baselines.FastXML(n_jobs=0), r"'n_jobs' parameter of FastXML must be"),
    (lambda: baselines.PfastreXML(n_jobs=0), r"'n_jobs' parameter of PfastreXML must be"),
    (lambda: baselines.LabelFrequency(smoothing=-1.0), r"'smoothing' parameter of LabelFrequency"),
    (lambda: baselines.LSPC(n_basis=0), r"'n_basis' parameter of LSPC"),
], ids=["MLkNN k", "MLkNN n_jobs 0", "FastXML n_jobs 0", "PfastreXML n_jobs 0", "LabelFrequency smoothing", "LSPC n_basis"])
def test_a_bad_parameter_is_an_mlgp_error_and_sklearns(make, message):
    from sklearn.utils._param_validation import InvalidParameterError

    X, Y = data()
    with pytest.raises(ArgumentError, match=message) as info:
        make().fit(X, Y)
    assert isinstance(info.value, MLGPError) and isinstance(info.value, InvalidParameterError)


@pytest.mark.parametrize("path", [None, 3, 2.5], ids=["None", "int", "float"])
def test_a_path_that_is_not_a_path_is_an_argument_error(fastxml, path):
    from mlgp.models import MLGPF

    for call in (lambda: fastxml.save(path), lambda: baselines.FastXML.load(path), lambda: MLGPF.load(path)):
        with pytest.raises(ArgumentError, match=r"a file path must be a str or os\.PathLike, got"):
            call()
