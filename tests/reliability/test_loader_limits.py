"""Loaders allocate no more than a file holds and raise only MLGPErrors: each edited file below made
a loader allocate memory from a number in a header alone (a raw ``MemoryError``, or many gigabytes
really taken), recurse without end on nested JSON (a raw ``RecursionError``), crash on a manifest of
the wrong shape, or accept a malformed score file; each is now refused with an error naming the file.
"""

from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pytest
import scipy.sparse as sp
from _small import data, fit_small

from mlgp.errors import ArgumentError, CheckpointMismatchError, DataFormatError, FileAccessError

DEEP = "[" * 100_000  # JSON nested past any recursion limit


def _archive(path) -> tuple[dict, dict]:
    with np.load(path, allow_pickle=False) as f:
        arrays = {k: f[k] for k in f.files}
    return json.loads(str(arrays.pop("__header__"))), arrays


def _write_archive(path, header, arrays) -> None:
    np.savez(path, __header__=np.array(header if isinstance(header, str) else json.dumps(header)), **arrays)


def _refused(path, message: str = ""):
    return pytest.raises(DataFormatError, match=re.escape(str(path)) + r".*: .*" + message)


# ----------------------------------------------------------------------------- 1. MLGPF: sizes
@pytest.fixture(scope="module")
def mlgpf_save(tmp_path_factory):
    from _save_loop_child import mlgpf_data

    from mlgp.models import mlgpf_from_data

    X, Y, _ = mlgpf_data()
    model = mlgpf_from_data(X, Y, num_latent_gps=2, num_inducing=5, seed=0)
    return model, model.save(tmp_path_factory.mktemp("mlgpf") / "plain")


def _edited_mlgpf(source, tmp_path, meta_edit=None, arrays_edit=None):
    path = shutil.copytree(source, tmp_path / "m")
    if meta_edit is not None:
        meta = json.loads((path / "model.json").read_text())
        meta_edit(meta)
        (path / "model.json").write_text(json.dumps(meta))
    if arrays_edit is not None:
        with np.load(path / "parameters.npz", allow_pickle=False) as f:
            arrays = {k: f[k] for k in f.files}
        arrays_edit(arrays)
        np.savez(path / "parameters.npz", **arrays)
    return path


def _kernel(meta) -> dict:
    return meta["kernel"]["children"]["kernel"]["children"]["kernels"][0]


def _load_mlgpf(path):
    from mlgp.models import MLGPF

    return MLGPF.load(path)


def test_a_placeholder_larger_than_its_saved_value_is_refused(tmp_path, mlgpf_save):
    """Old: a 10^6-element array made 10^6 a valid size, and a lengthscales placeholder of
    [10^6, 10^6] raised a raw MemoryError (7.3 TiB); [6e4, 6e4] would have taken 29 GB."""
    path = _edited_mlgpf(mlgpf_save[1], tmp_path, lambda m: _kernel(m)["parameters"].update(lengthscales=[10 ** 6] * 2),
                         lambda a: a.update(big=np.zeros(10 ** 6, np.float32)))
    with _refused(path, r"kernel\.kernel\.kernels\[0\]\.lengthscales"):
        _load_mlgpf(path)


def test_an_empty_array_of_huge_dimensions_justifies_no_size(tmp_path, mlgpf_save):
    """Old: a (0, 10^6) array (no bytes) made 10^6 a valid size for the Z placeholder (48 MB allocated
    before the shapes were compared), and made q(u) of M = 10^6 inducing points: a raw MemoryError."""
    def meta(m):
        m["inducing_variable"]["children"]["inducing_variable"]["parameters"]["Z"] = [10 ** 6, 6]
    path = _edited_mlgpf(mlgpf_save[1], tmp_path, meta, lambda a: a.update(big=np.zeros((0, 10 ** 6))))
    with _refused(path):
        _load_mlgpf(path)


def test_q_u_of_more_latent_gps_than_saved_is_refused(tmp_path, mlgpf_save):
    """Old: Z really saved as (10^4, 6) and P = 100 latent GPs passed every size check; building q(u)
    asked for P x M x M = 80 GB (a raw MemoryError)."""
    Z = "inducing_variable.inducing_variable.Z"

    def meta(m):
        m["inducing_variable"]["children"]["inducing_variable"]["parameters"]["Z"] = [10 ** 4, 6]
        m["parameters"][Z]["shape"] = [10 ** 4, 6]
        m["likelihood"]["num_latent"] = 100
    path = _edited_mlgpf(mlgpf_save[1], tmp_path, meta,
                         lambda a: a.update({Z: np.random.default_rng(0).normal(size=(10 ** 4, 6))}))
    with _refused(path, r"q\.q_mu"):
        _load_mlgpf(path)


def _chain(depth: int) -> dict:
    node = {"class": "tensorflow_probability.python.bijectors.identity:Identity", "arguments": {"validate_args": False}}
    for _ in range(depth):
        node = {"class": "tensorflow_probability.python.bijectors.chain:Chain",
                "arguments": {"bijectors": [{"transform": node}], "validate_args": False}}
    return node


def test_a_transform_nested_too_deeply_is_refused(tmp_path, mlgpf_save):
    """Old: rebuilding a saved transform of nested Chains took time exponential in the depth (12: 5 s,
    16: 75 s, 30: days) before any error; 200 deep, a RecursionError."""
    path = _edited_mlgpf(mlgpf_save[1], tmp_path,
                         lambda m: m["parameters"]["likelihood.bias"].update(transform=_chain(12)))
    with _refused(path, "the transform of likelihood.bias is nested more than 8 deep"):
        _load_mlgpf(path)


@pytest.mark.parametrize("error", [MemoryError, RecursionError])
def test_running_out_while_rebuilding_an_mlgpf_is_a_data_format_error(mlgpf_save, monkeypatch, error):
    """Old: the MemoryError or RecursionError of a rebuild escaped raw."""
    import mlgp.models.rebuild as rebuild

    def make_q(*args, **kwargs):
        raise error("simulated")
    monkeypatch.setattr(rebuild, "make_q", make_q)
    with _refused(mlgpf_save[1], error.__name__):
        _load_mlgpf(mlgpf_save[1])


# ----------------------------------------------------------------------------- 2. estimators: n_labels_
def _edited_estimator(tmp_path, name: str, edit):
    est = fit_small(name, False)
    header, arrays = _archive(est.save(tmp_path / "model.npz"))
    edit(header, arrays)
    path = tmp_path / "edited.npz"
    _write_archive(path, header, arrays)
    return type(est), path


def test_a_fake_sparse_entry_does_not_justify_n_labels(tmp_path):
    """Old: a sparse entry no class reads, [2^40, 1], let n_labels_ = 2^40 pass; classes_ =
    arange(2^40) raised a raw MemoryError."""
    def edit(h, a):
        h["sparse"]["zzz"] = [2 ** 40, 1]
        a.update({"zzz.data": np.zeros(0), "zzz.indices": np.zeros(0, np.int32), "zzz.indptr": np.zeros(1, np.int32)})
        h["fitted"]["n_labels_"] = 2 ** 40
    cls, path = _edited_estimator(tmp_path, "LabelFrequency", edit)
    with _refused(path, "n_labels_ = 1099511627776"):
        cls.load(path)


def test_an_empty_array_does_not_justify_n_labels(tmp_path):
    """Old: an extra (0, 2^40) array (no bytes) let n_labels_ = 2^40 pass: a raw MemoryError."""
    def edit(h, a):
        a["zzz"] = np.zeros((0, 2 ** 40))
        h["fitted"]["n_labels_"] = 2 ** 40
    cls, path = _edited_estimator(tmp_path, "LabelFrequency", edit)
    with _refused(path, "n_labels_ = 1099511627776"):
        cls.load(path)


def test_an_unread_sparse_entry_is_refused(tmp_path):
    """Old: a sparse entry whose parts are missing and that the class never reads loaded silently."""
    cls, path = _edited_estimator(tmp_path, "LabelFrequency", lambda h, a: h["sparse"].update(zzz=[2, 2]))
    with _refused(path, r"the sparse matrix 'zzz' lacks its array\(s\)"):
        cls.load(path)


def test_fastxml_leaf_scores_of_2_40_empty_columns_are_refused(tmp_path):
    """Old: FastXML's leaf-score CSR with nnz = 0 and 2^40 columns, and n_labels_ = 2^40, passed the
    n_labels_ check (the header's shape counted): a raw MemoryError."""
    def edit(h, a):
        rows = h["sparse"]["forest_.leaf_labels"][0]
        h["sparse"]["forest_.leaf_labels"] = [rows, 2 ** 40]
        h["fitted"]["n_labels_"] = 2 ** 40
        a.update({"forest_.leaf_labels.data": np.zeros(0), "forest_.leaf_labels.indices": np.zeros(0, np.int32),
                  "forest_.leaf_labels.indptr": np.zeros(rows + 1, np.int32)})
    cls, path = _edited_estimator(tmp_path, "FastXML", edit)
    with _refused(path, "n_labels_ = 1099511627776"):
        cls.load(path)


@pytest.mark.parametrize("error", [MemoryError, RecursionError])
def test_running_out_while_restoring_an_estimator_is_a_data_format_error(tmp_path, monkeypatch, error):
    """Old: the MemoryError or RecursionError of a restore escaped raw."""
    est = fit_small("LabelFrequency", False)
    path = est.save(tmp_path / "model.npz")

    def restore(self, state):
        raise error("simulated")
    monkeypatch.setattr(type(est), "_restore_fitted", restore)
    with _refused(path, error.__name__):
        type(est).load(path)


# ----------------------------------------------------------------------------- 3. deeply nested JSON
def test_a_deeply_nested_estimator_header_is_refused(tmp_path):
    """Old: a raw RecursionError from json.loads."""
    from mlgp.baselines import FastXML

    path = tmp_path / "deep.npz"
    _write_archive(path, DEEP, {})
    with _refused(path, "JSON"):
        FastXML.load(path)


def test_a_deeply_nested_model_json_is_refused_and_saved_over(tmp_path, mlgpf_save):
    """Old: loading raised a raw RecursionError, and so did a save into the folder (reading which
    parameter file the damaged model.json names)."""
    model, source = mlgpf_save
    path = shutil.copytree(source, tmp_path / "m")
    (path / "model.json").write_text(DEEP)
    with _refused(path / "model.json", "JSON"):
        _load_mlgpf(path)
    model.save(path)
    _load_mlgpf(path)


# ----------------------------------------------------------------------------- 4. checkpoint manifests
@pytest.fixture(scope="module")
def small_fit(tmp_path_factory):
    """How to build and fit the small model, and the checkpoint folder of its first epoch (fitted
    once for the module; each test edits its own copy, :func:`_first_epoch`)."""
    from _save_loop_child import mlgpf_data

    X, Y, _ = mlgpf_data()

    def make():
        from mlgp.models import mlgpf_from_data

        return mlgpf_from_data(X, Y, num_latent_gps=2, num_inducing=5, seed=0)

    folder = tmp_path_factory.mktemp("first_epoch") / "ckpt"
    _fit((make, (X, Y), None), folder)
    return make, (X, Y), folder


def _fit(small_fit, folder, epochs: int = 1):
    from mlgp.training import fit

    make, xy, _ = small_fit
    return fit(make(), xy, epochs=epochs, batch_size=12, seed=0, progress=False, checkpoint_dir=folder)


def _first_epoch(small_fit, tmp_path):
    """A copy of the checkpoint folder that one epoch of :func:`_fit` writes."""
    return shutil.copytree(small_fit[2], tmp_path / "ckpt")


@pytest.mark.parametrize("edit", [lambda m: m.update(model=[]),
                                  lambda m: m["model"].update(variables=["a"]),
                                  lambda m: m.update(data=[1]),
                                  lambda m: m.update(settings="x"),
                                  lambda m: m["model"]["variables"][0].pop("shape")],
                         ids=["model list", "variables of strings", "data list", "settings string", "no shape"])
def test_a_manifest_of_the_wrong_shape_is_refused(tmp_path, small_fit, edit):
    """Old: AttributeError, TypeError, AttributeError, AttributeError and KeyError from ``mismatch``."""
    folder = _first_epoch(small_fit, tmp_path)
    manifest = json.loads((folder / "manifest.json").read_text())
    edit(manifest)
    (folder / "manifest.json").write_text(json.dumps(manifest))
    message = re.escape(str(folder / "manifest.json")) + ": the manifest is not readable"
    with pytest.raises(CheckpointMismatchError, match=message):
        _fit(small_fit, folder, epochs=2)


def test_a_deeply_nested_manifest_is_refused(tmp_path, small_fit):
    """Old: a raw RecursionError."""
    folder = _first_epoch(small_fit, tmp_path)
    (folder / "manifest.json").write_text(DEEP)
    with pytest.raises(CheckpointMismatchError, match="cannot be read"):
        _fit(small_fit, folder, epochs=2)


def test_a_checkpoint_dir_that_is_not_a_path_is_an_argument_error(small_fit):
    """Old: a raw TypeError from Path(3)."""
    with pytest.raises(ArgumentError, match="a file path must be a str or os.PathLike, got 3"):
        _fit(small_fit, 3)


def test_a_state_file_that_cannot_be_written_on_resume_is_a_file_access_error(tmp_path, small_fit):
    """Before atomic_write raised FileAccessError itself (commit 2dba5f6): the IsADirectoryError of
    TensorFlow's ``checkpoint`` state file, written on resume, raw."""
    folder = _first_epoch(small_fit, tmp_path)
    (folder / "checkpoint").unlink()
    (folder / "checkpoint").mkdir()
    with pytest.raises(FileAccessError, match=re.escape(str(folder / "checkpoint"))):
        _fit(small_fit, folder, epochs=2)


# ----------------------------------------------------------------------------- 5. score files
def test_a_sparse_score_file_with_a_malformed_indptr_is_refused(tmp_path):
    """Old: indptr [0, 5, 0] (scipy skips its checks when the last entry is 0) loaded as a malformed CSR."""
    from mlgp.scores import load_scores

    path = tmp_path / "s.npz"
    np.savez(path, format=np.array(b"csr"), shape=np.array([2, 3]), data=np.zeros(0), indices=np.zeros(0, np.int32),
             indptr=np.array([0, 5, 0], np.int32))
    with _refused(path, "indptr"):
        load_scores(path)


def test_sparse_score_files_still_load(tmp_path):
    from mlgp.scores import load_scores

    S = sp.random(5, 4, density=0.5, format="csr", random_state=0)
    for name, matrix in (("csr.npz", S), ("csc.npz", S.tocsc()), ("array.npz", sp.csr_array(S))):
        sp.save_npz(tmp_path / name, matrix)
        loaded = load_scores(tmp_path / name)
        assert sp.isspmatrix_csr(loaded) and np.array_equal(loaded.toarray(), S.toarray()), name
    X, _ = data()
    np.save(tmp_path / "dense.npy", X)
    assert np.array_equal(load_scores(tmp_path / "dense.npy"), X)


def _npy_with_header_shape(path, shape) -> None:
    """A .npy file of one float64 whose (version 1.0) header promises ``shape``."""
    header = f"{{'descr': '<f8', 'fortran_order': False, 'shape': {shape}, }}".encode()
    header += b" " * ((64 - (10 + len(header) + 1) % 64) % 64) + b"\n"
    path.write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + bytes(8))


def test_a_npy_header_promising_more_than_the_file_holds_is_refused(tmp_path):
    """Old: np.load allocated what the header promised first: a raw MemoryError for (10^6, 10^6)."""
    from mlgp.scores import load_scores

    path = tmp_path / "s.npy"
    _npy_with_header_shape(path, (10 ** 6, 10 ** 6))
    with _refused(path, "promises"):
        load_scores(path)


def test_a_npy_file_with_bytes_after_its_array_is_refused(tmp_path):
    """Old: the trailing bytes were ignored and the file loaded."""
    from mlgp.scores import load_scores

    path = tmp_path / "s.npy"
    np.save(path, np.zeros((2, 3)))
    path.write_bytes(path.read_bytes() + b"\0" * 8)
    with _refused(path, "promises"):
        load_scores(path)
