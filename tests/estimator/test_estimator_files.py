"""Tests of mlgp.estimator.persistence: every estimator of mlgp.baselines saves and loads with
identical scores at each batch size (dense and CSR X, both kinds of training features), and scores
at another batch size equal to rounding; a truncated, altered or edited file, one of another class
and one with a missing or extra array raise DataFormatError naming the file; saving is atomic."""

from __future__ import annotations

import io
import json
import re

import numpy as np
import pytest
import scipy.sparse as sp
from _rounding import FLOAT64, assert_decisions_agree, assert_topk_close
from _small import SMALL, data
from sklearn.exceptions import NotFittedError

from mlgp.baselines import LSPC, FastXML, LabelFrequency, MLkNN, PfastreXML, PfastXML
from mlgp.errors import ArgumentError, DataFormatError, ModelNotFoundError
from mlgp.estimator import FORMAT, MultiLabelEstimator, persistence


def _assert_same_params(loaded: dict, saved: dict) -> None:
    assert loaded.keys() == saved.keys()
    for name, value in saved.items():
        if isinstance(value, np.random.RandomState):
            assert loaded[name] is None, name  # not plain data: the default (None)
        elif isinstance(value, np.ndarray):
            np.testing.assert_array_equal(loaded[name], value, err_msg=name)
        else:
            assert loaded[name] == value and type(loaded[name]) is type(value), name


#: 13 test rows: blocks of 5, 5 and 3, and one block of 13
BATCH_SIZES = (5, 1000)


def _assert_same_scores(a, b, X) -> None:
    """``a`` and ``b`` (the same parameters) score ``X`` bit for bit at each batch size: the very same
    computation runs."""
    for batch_size in BATCH_SIZES:
        np.testing.assert_array_equal(a.decision_function(X, batch_size=batch_size),
                                      b.decision_function(X, batch_size=batch_size))
        ta, tb = a.predict_topk(X, 2, batch_size=batch_size), b.predict_topk(X, 2, batch_size=batch_size)
        np.testing.assert_array_equal(ta.indices, tb.indices)
        np.testing.assert_array_equal(ta.scores, tb.scores)
        np.testing.assert_array_equal(a.predict(X, batch_size=batch_size), b.predict(X, batch_size=batch_size))
        assert hasattr(a, "predict_proba") == hasattr(b, "predict_proba")
        if hasattr(b, "predict_proba"):
            np.testing.assert_array_equal(a.predict_proba(X, batch_size=batch_size),
                                          b.predict_proba(X, batch_size=batch_size))


@pytest.mark.parametrize("sparse_fit", [False, True], ids=["dense-fit", "csr-fit"])
@pytest.mark.parametrize("name", sorted(SMALL))
def test_save_and_load_score_identically(fitted, tmp_path, name, sparse_fit) -> None:
    est = fitted(name, sparse_fit)
    path = est.save(tmp_path / "model")
    assert path == tmp_path / "model.npz" and path.is_file()
    loaded = type(est).load(path)
    assert type(loaded) is type(est) and loaded is not est
    _assert_same_params(loaded.get_params(), est.get_params())
    X_test = data(seed=1, N=13)[0]
    for X in (X_test, sp.csr_matrix(X_test)):
        _assert_same_scores(loaded, est, X)
    assert type(MultiLabelEstimator.load(path)) is type(est)
    with np.load(path, allow_pickle=False) as f:  # plain arrays only: nothing to unpickle
        assert all(f[key].dtype.kind != "O" for key in f.files)
        header = json.loads(str(f["__header__"]))
    assert header["format"] == FORMAT and header["class"] == type(est).__name__


def _decided_on(est, X, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
    """The scores ``predict`` thresholds and their thresholds; for LSPC's classes (an argmax) the
    gap of the best class over the runner-up, against 0."""
    scores = est.predict_proba(X, batch_size=batch_size) if hasattr(est, "predict_proba") \
        else est.decision_function(X, batch_size=batch_size)
    if not getattr(est, "multilabel_", True):
        top2 = -np.sort(-scores, axis=1)[:, :2]
        return top2[:, 0] - top2[:, 1], np.zeros(scores.shape[0])
    return scores, est.threshold


@pytest.mark.parametrize("sparse_fit", [False, True], ids=["dense-fit", "csr-fit"])
@pytest.mark.parametrize("name", sorted(SMALL))
def test_other_batch_sizes_score_equally_to_rounding(fitted, name, sparse_fit) -> None:
    """Another batch size is another computation (the LSPC family's design-matrix products take
    other BLAS kernels for 5 rows than for 13: up to 7.8e-16 apart on an AVX-512 machine), so
    scores agree to rounding, and rankings and decisions where no near-tie can flip."""
    est = fitted(name, sparse_fit)
    X_test = data(seed=1, N=13)[0]
    for X in (X_test, sp.csr_matrix(X_test)):
        small, whole = (est.decision_function(X, batch_size=b) for b in BATCH_SIZES)
        # other block sizes take other BLAS kernels: equal to rounding, not bit for bit
        np.testing.assert_allclose(small, whole, **FLOAT64)
        if small.ndim == 2:
            assert_topk_close(est.predict_topk(X, 2, batch_size=5), whole, **FLOAT64)
        assert_decisions_agree(est.predict(X, batch_size=5), est.predict(X), *_decided_on(est, X, 1000), **FLOAT64)
        if hasattr(est, "predict_proba"):
            np.testing.assert_allclose(est.predict_proba(X, batch_size=5), est.predict_proba(X), **FLOAT64)


def test_parameters_that_json_cannot_hold_are_tagged(fitted, tmp_path) -> None:
    header = _archive(fitted("MLLSPCCV").save(tmp_path / "cv"))[0]
    assert header["params"]["alphas"] == {"tuple": [0.1, 1.0]}
    header = _archive(fitted("MLLSPC").save(tmp_path / "ml"))[0]
    assert header["params"]["threshold"] == {"ndarray": [0.4, 0.5, 0.6, 0.5], "dtype": "<f8"}
    header = _archive(fitted("PfastXML").save(tmp_path / "p"))[0]
    assert list(header["params"]["random_state"]) == ["unsaved"]
    assert header["params"]["random_state"]["unsaved"].startswith("RandomState(MT19937)")


def test_a_parameter_that_cannot_be_written_warns(tmp_path) -> None:
    """A CSR similarity matrix is not a JSON value: the file loads and predicts the same, with a warning
    at save time that get_params() will show the default."""
    import scipy.sparse as sp

    from mlgp.baselines import MLLSPC

    rng = np.random.default_rng(0)
    X, Y = rng.random((40, 3)), (rng.random((40, 3)) < 0.4).astype(int)
    est = MLLSPC(similarity=sp.csr_matrix(np.eye(3)), coupling=0.1, n_basis=20, random_state=0).fit(X, Y)
    with pytest.warns(UserWarning, match=r"MLLSPC: parameter\(s\) \['similarity'\] cannot be written without pickle"):
        path = est.save(tmp_path / "s")
    loaded = MLLSPC.load(path)
    np.testing.assert_array_equal(loaded.decision_function(X), est.decision_function(X))
    assert loaded.get_params()["similarity"] == "pearson"


def test_saving_needs_a_fitted_estimator_and_plain_arrays(fitted, tmp_path, monkeypatch) -> None:
    with pytest.raises(NotFittedError, match="This LabelFrequency instance is not fitted yet"):
        LabelFrequency().save(tmp_path / "x")
    est = fitted("LSPC-classes")
    monkeypatch.setattr(est, "classes_", np.array(["a", 1, None], dtype=object))
    with pytest.raises(ArgumentError, match="LSPC.classes_ has dtype object; only numbers, booleans and strings"):
        est.save(tmp_path / "x")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ModelNotFoundError, match="no saved estimator at this path"):
        LSPC.load(tmp_path / "x")


# --------------------------------------------------------------------------- #
# Damaged and altered files
# --------------------------------------------------------------------------- #
def _archive(path) -> tuple[dict, dict]:
    with np.load(path, allow_pickle=False) as f:
        arrays = {k: f[k] for k in f.files}
    return json.loads(str(arrays.pop("__header__"))), arrays


def _write(path, header, arrays) -> None:
    text = header if isinstance(header, str) else json.dumps(header)
    np.savez(path, __header__=np.array(text), **arrays)


def _edited(fitted, tmp_path, name: str, edit) -> tuple:
    """The path of ``name``'s file after ``edit(header, arrays)``, and the class to load it with."""
    est = fitted(name)
    header, arrays = _archive(est.save(tmp_path / "model.npz"))
    text = edit(header, arrays)  # edits in place, or returns the header text to write instead
    header = text if isinstance(text, str) else header
    path = tmp_path / "edited.npz"
    _write(path, header, arrays)
    return path, type(est)


def _raises_naming(path, message: str):
    return pytest.raises(DataFormatError, match=re.escape(f"{path}: ") + message)


def test_every_flipped_byte_is_an_error_or_changes_nothing(fitted, tmp_path) -> None:
    """Each of the file's bytes flipped in turn: a DataFormatError naming the file, or (a byte zip
    does not check, e.g. a timestamp) a model that scores exactly as the saved one."""
    est = fitted("LabelFrequency")
    raw = est.save(tmp_path / "model.npz").read_bytes()
    X, path, errors = data(seed=2, N=5)[0], tmp_path / "flipped.npz", 0
    for i in range(len(raw)):
        path.write_bytes(raw[:i] + bytes([raw[i] ^ 0x01]) + raw[i + 1:])
        try:
            loaded = LabelFrequency.load(path)
        except DataFormatError as err:
            assert str(err).startswith(f"{path}: "), err
            errors += 1
            continue
        np.testing.assert_array_equal(loaded.decision_function(X), est.decision_function(X))
    assert errors > 0.8 * len(raw)


@pytest.mark.parametrize("name", ["LabelFrequency", "FastXML"])
def test_a_truncated_file_is_a_data_format_error(fitted, tmp_path, name) -> None:
    raw = fitted(name).save(tmp_path / "model.npz").read_bytes()
    path = tmp_path / "cut.npz"
    for n in range(0, len(raw), 1 if name == "LabelFrequency" else 37):
        path.write_bytes(raw[:n])
        with _raises_naming(path, ""):
            type(fitted(name)).load(path)


@pytest.mark.parametrize("edit, message", [
    (lambda h, a: "{not json", "the header is not JSON"),
    (lambda h, a: "[1, 2]", "format 'list', expected 'mlgp.estimator/1'"),
    (lambda h, a: h.update(format="mlgp.FastXML/1"), "format 'mlgp.FastXML/1', expected 'mlgp.estimator/1'"),
    (lambda h, a: h.update({"class": "NoSuchEstimator"}), "unknown estimator class 'NoSuchEstimator'"),
    (lambda h, a: h.update({"class": 3}), "the header's 'class' must be a str, got 3"),
    (lambda h, a: h.pop("fitted"), "the header's 'fitted' must be a dict, got None"),
    (lambda h, a: h["params"].update(colour="red"), r"unknown parameter\(s\) \['colour'\] for FastXML"),
    (lambda h, a: h["params"].update(n_estimators=0), "invalid parameter: The 'n_estimators' parameter of FastXML "
                                                      "must be an int in the range"),
    (lambda h, a: h["params"].update(threshold=1.5), "invalid parameter: The 'threshold' parameter of FastXML"),
    (lambda h, a: h["params"].update(split_loss={"pickle": "x"}), "a parameter value {'pickle': 'x'} is not in"),
    (lambda h, a: h["params"].update(n_estimators=3), "the forest has 2 trees but n_estimators is 3"),
    (lambda h, a: h["fitted"].update(n_labels_=5), r"the sparse matrix 'forest_.leaf_labels' has shape \(\d+, 4\), "
                                                   r"expected \(None, None\)|forest field leaf_labels has shape"),
    (lambda h, a: h["fitted"].update(n_features_in_=7), "forest field W has shape"),
    (lambda h, a: h["fitted"].update(n_samples_=41), "the leaves of some tree do not hold the n_samples_ = 41"),
    (lambda h, a: h["fitted"].update(n_samples_=0), "the fitted value 'n_samples_' must be a int >= 1, got 0"),
    (lambda h, a: h["fitted"].update(n_labels_="4"), "the fitted value 'n_labels_' must be a int >= 1, got '4'"),
    (lambda h, a: h["sparse"].update({"forest_.W": [1, 2, 3]}), r"the shape of 'forest_.W' must be \[rows, cols\]"),
    (lambda h, a: a.update(surprise=np.zeros(2)), r"unexpected array\(s\) \['surprise'\] for a FastXML"),
    (lambda h, a: a.update({"tree_seeds_": np.zeros(2)}), "the array 'tree_seeds_' has dtype float64, expected kind 'iu'"),
    (lambda h, a: a["forest_.children"].__setitem__((0, 0), 0), "forest children out of range"),
    (lambda h, a: a["forest_.leaf_labels.indices"].__setitem__(0, 4), "forest field leaf_labels|malformed|column index"),
    (lambda h, a: a["forest_.leaf_labels.data"].__setitem__(0, np.nan), "the array 'forest_.leaf_labels.data' holds NaN"),
    (lambda h, a: a["forest_.bias"].__setitem__(0, np.inf), "the array 'forest_.bias' holds NaN or inf"),
], ids=["not JSON", "not an object", "old format", "unknown class", "class not a string", "no fitted", "unknown param",
        "param out of range", "threshold out of range", "unknown encoding", "n_estimators", "n_labels_",
        "n_features_in_", "n_samples_", "n_samples_ zero", "n_labels_ string", "sparse shape", "extra array",
        "seeds dtype", "child loop", "label index", "leaf score NaN", "bias inf"])
def test_an_edited_fastxml_file_is_a_data_format_error(fitted, tmp_path, edit, message) -> None:
    path, cls = _edited(fitted, tmp_path, "FastXML", edit)
    with _raises_naming(path, f"(.*)({message})"):
        cls.load(path)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_every_missing_array_is_a_data_format_error(fitted, tmp_path, name) -> None:
    est = fitted(name)
    header, arrays = _archive(est.save(tmp_path / "model.npz"))
    path = tmp_path / "missing.npz"
    for key in arrays:
        _write(path, header, {k: v for k, v in arrays.items() if k != key})
        with _raises_naming(path, f"the (array|sparse matrix) '{re.escape(key.rsplit('.', 1)[0])}"):
            type(est).load(path)


@pytest.mark.parametrize("name", sorted(n for n in SMALL if not n.startswith("LSPC")))
def test_a_changed_number_of_labels_is_a_data_format_error(fitted, tmp_path, name) -> None:
    path, cls = _edited(fitted, tmp_path, name, lambda h, a: h["fitted"].update(n_labels_=h["fitted"]["n_labels_"] + 1))
    with _raises_naming(path, ".*(shape|differ)"):
        cls.load(path)


@pytest.mark.parametrize("name", sorted(n for n in SMALL if n != "LabelFrequency"))
def test_a_changed_number_of_features_is_a_data_format_error(fitted, tmp_path, name) -> None:
    path, cls = _edited(fitted, tmp_path, name, lambda h, a: h["fitted"].update(n_features_in_=7))
    with _raises_naming(path, ".*(shape|differ)"):
        cls.load(path)


@pytest.mark.parametrize("name, edit, message", [
    ("LabelFrequency", lambda h, a: h["fitted"].update(n_samples_=41), "scores_ are not the smoothed frequencies"),
    ("LabelFrequency", lambda h, a: h["params"].update(smoothing=-1.0), "invalid parameter: The 'smoothing'"),
    ("LSPC-classes", lambda h, a: h["fitted"].update(multilabel_=True), "a label-matrix LSPC must have classes_"),
    ("LSPC", lambda h, a: h["fitted"].update(kernel_width_=0.0), "'kernel_width_' must be > 0"),
    ("MLLSPC", lambda h, a: h["params"].update(threshold=[0.5, 0.5]), r"threshold must be a number or an array"),
    ("MLLSPC", lambda h, a: h["fitted"].update(solver_="magic"), "the fitted value 'solver_' must be a str in"),
    ("MLLSPCCV", lambda h, a: h["fitted"].update(best_index_=99), "best_index_ = 99 is not an index"),
    ("MLLSPCCV", lambda h, a: a.pop("best_estimator_.coef_"), "the array 'best_estimator_.coef_' is missing"),
    ("MLkNN", lambda h, a: h["params"].update(n_neighbors=2), r"the array 'cond_prob_true_' has shape \(4, 4\)"),
    ("MLkNN", lambda h, a: a["labels_.data"].__setitem__(0, 2.0), "the array 'labels_.data' has values outside"),
    ("PfastXML", lambda h, a: a.pop("inv_propensity_"), "the array 'inv_propensity_' is missing"),
    ("PfastreXML", lambda h, a: h["sparse"].update({"centroids_": [4, 5]}), r"'centroids_' has shape \(4, 5\)"),
])
def test_other_edits_are_data_format_errors(fitted, tmp_path, name, edit, message) -> None:
    path, cls = _edited(fitted, tmp_path, name, edit)
    with _raises_naming(path, f".*{message}"):
        cls.load(path)


def test_a_file_of_another_class_is_refused(fitted, tmp_path) -> None:
    path = fitted("FastXML").save(tmp_path / "plain.npz")
    with _raises_naming(path, "holds a FastXML, not a PfastXML"):
        PfastXML.load(path)
    with _raises_naming(path, "holds a FastXML, not a MLkNN"):
        MLkNN.load(path)
    re_path = fitted("PfastreXML").save(tmp_path / "re.npz")
    assert type(FastXML.load(re_path)) is PfastreXML and type(PfastXML.load(re_path)) is PfastreXML


# --------------------------------------------------------------------------- #
# Atomic saving
# --------------------------------------------------------------------------- #
def _half_then_fail(file, arrays) -> None:
    """An array writer that dies midway: half an archive written, then an error."""
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    file.write(buffer.getvalue()[: len(buffer.getvalue()) // 2])
    raise OSError("No space left on device")


@pytest.mark.parametrize("error", [OSError, KeyboardInterrupt])
def test_an_interrupted_save_leaves_the_old_file(fitted, tmp_path, monkeypatch, error) -> None:
    old, new = fitted("LabelFrequency"), fitted("PfastreXML")
    path = old.save(tmp_path / "model.npz")
    before = path.read_bytes()

    def writer(file, arrays):
        try:
            _half_then_fail(file, arrays)
        except OSError:
            raise error("No space left on device") from None

    monkeypatch.setattr(persistence, "_write_arrays", writer)
    with pytest.raises(error, match="No space left on device"):
        new.save(path)
    assert [p.name for p in tmp_path.iterdir()] == ["model.npz"]  # no temporary file left behind
    assert path.read_bytes() == before
    X = data(seed=3, N=4)[0]
    np.testing.assert_array_equal(LabelFrequency.load(path).decision_function(X), old.decision_function(X))
    monkeypatch.undo()
    assert new.save(path) == path and [p.name for p in tmp_path.iterdir()] == ["model.npz"]
    np.testing.assert_array_equal(PfastreXML.load(path).decision_function(X), new.decision_function(X))
