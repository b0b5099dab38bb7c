"""FastXML, PfastXML and PfastreXML files: saved and loaded with identical predictions, the class
checked, a file that is not a model refused with a DataFormatError naming it, NumPy parameters and
sub-forests saved as such."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp
from _fastxml_helpers import _assert_same_forest, _data

from mlgp.baselines import FastXML, PfastreXML, PfastXML
from mlgp.errors import DataFormatError
from mlgp.estimator import FORMAT


@pytest.mark.parametrize("cls, extra", [(FastXML, {}), (PfastXML, {"propensity_a": 0.6}),
                                        (PfastreXML, {"gamma": 5.0, "alpha": 0.6})])
def test_save_and_load_predict_identically(rng, tmp_path, cls, extra) -> None:
    X, Y = _data(rng)
    est = cls(n_estimators=3, max_leaf=6, max_leaf_labels=4, threshold=0.25, c_rank=1.5, random_state=2,
              **extra).fit(sp.csr_matrix(X), Y)
    path = est.save(tmp_path / "model")
    assert path == tmp_path / "model.npz" and path.exists()
    loaded = cls.load(path)
    assert type(loaded) is cls
    assert loaded.get_params() == est.get_params()
    assert (loaded.n_samples_, loaded.n_features_in_, loaded.n_labels_) == (90, 12, 7)
    np.testing.assert_array_equal(loaded.classes_, est.classes_)
    _assert_same_forest(est, loaded)
    for name in ("tree_balance_", "labels_per_leaf_", "n_leaves_"):
        np.testing.assert_array_equal(getattr(loaded, name), getattr(est, name), err_msg=name)
    X_test = _data(np.random.default_rng(1), N=30)[0]
    np.testing.assert_array_equal(loaded.decision_function(X_test), est.decision_function(X_test))
    np.testing.assert_array_equal(loaded.predict_topk(X_test, 4).indices, est.predict_topk(X_test, 4).indices)
    np.testing.assert_array_equal(loaded.predict(X_test), est.predict(X_test))
    if cls is not FastXML:
        np.testing.assert_array_equal(loaded.inv_propensity_, est.inv_propensity_)
    if cls is PfastreXML:
        assert (loaded.centroids_ != est.centroids_).nnz == 0
    # the file is plain arrays: it loads without pickle and holds no object arrays
    with np.load(path, allow_pickle=False) as f:
        assert "__header__" in f.files
        for key in f.files:
            assert f[key].dtype.kind != "O", key
        header = json.loads(str(f["__header__"]))
    assert header["class"] == cls.__name__ and header["params"] == est.get_params()


def test_loading_checks_the_class(rng, tmp_path) -> None:
    X, Y = _data(rng, N=40)
    re_path = PfastreXML(n_estimators=2, max_leaf=8, random_state=0).fit(X, Y).save(tmp_path / "re.npz")
    plain_path = FastXML(n_estimators=2, max_leaf=8, random_state=0).fit(X, Y).save(tmp_path / "plain.npz")
    assert type(FastXML.load(re_path)) is PfastreXML
    assert type(PfastXML.load(re_path)) is PfastreXML
    assert type(FastXML.load(tmp_path / "plain")) is FastXML  # .npz added when missing
    with pytest.raises(ValueError, match=r"plain\.npz: holds a FastXML, not a PfastreXML"):
        PfastreXML.load(plain_path)
    with pytest.raises(FileNotFoundError, match=r"missing\.npz: no saved estimator at this path"):
        FastXML.load(tmp_path / "missing.npz")


def _bad_file(kind: str, path) -> None:
    if kind == "npz without a header":
        np.savez(path, a=np.arange(3))
    elif kind == "npz of another format":
        np.savez(path, __header__=np.array(json.dumps({"format": "something/2"})))
    elif kind == "text":
        path.write_text("this is not a model\n")
    elif kind == "npy array":
        with open(path, "wb") as f:
            np.save(f, np.arange(3))
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "model header without arrays":
        header = {"format": FORMAT, "class": "FastXML", "params": {}, "fitted": {}, "sparse": {}}
        np.savez(path, __header__=np.array(json.dumps(header)))


@pytest.mark.parametrize("kind", ["npz without a header", "npz of another format", "text", "npy array", "empty",
                                  "model header without arrays"])
def test_a_file_that_is_not_a_model_is_a_data_format_error(tmp_path, kind) -> None:
    path = tmp_path / "bad.npz"
    _bad_file(kind, path)
    with pytest.raises(DataFormatError, match=r"bad\.npz"):
        FastXML.load(path)


def test_numpy_integer_parameters_can_be_saved(rng, tmp_path) -> None:
    """Parameters from a NumPy grid (e.g. GridSearchCV over np.arange) are valid integers."""
    X, Y = _data(rng, N=40)
    est = FastXML(n_estimators=np.int64(2), max_leaf=np.int64(8), random_state=np.int64(0)).fit(X, Y)
    loaded = FastXML.load(est.save(tmp_path / "np.npz"))
    assert loaded.get_params() == est.get_params()
    np.testing.assert_array_equal(loaded.decision_function(X), est.decision_function(X))


def test_a_subset_of_trees_is_saved_as_such(rng, tmp_path) -> None:
    X, Y = _data(rng, N=60)
    est = FastXML(n_estimators=3, max_leaf=6, random_state=0).fit(X, Y)
    sub = est.select_trees([1])
    loaded = FastXML.load(sub.save(tmp_path / "sub.npz"))
    np.testing.assert_array_equal(loaded.decision_function(X), sub.decision_function(X))
