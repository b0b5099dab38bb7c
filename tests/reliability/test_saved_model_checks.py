"""What the fuzz of saved models (test_fuzz_saved_models.py) found, pinned: each edited file below was
loaded before (and then crashed, raised a raw exception or scored NaN), or failed to load with
another exception than DataFormatError; each is now a DataFormatError naming the file."""

from __future__ import annotations

import io
import json
import re
import zipfile

import numpy as np
import pytest
from _small import fit_small

from mlgp.errors import DataFormatError


def _archive(path) -> tuple[dict, dict]:
    with np.load(path, allow_pickle=False) as f:
        arrays = {k: f[k] for k in f.files}
    return json.loads(str(arrays.pop("__header__"))), arrays


def _set(arrays: dict, key: str, index, value) -> None:
    arrays[key] = arrays[key].astype(np.result_type(arrays[key], np.asarray(value)))
    arrays[key][index] = value


def _label_twice(a):
    """The second label of the first row with two becomes its first."""
    start = a["labels_.indptr"]
    row = int(np.flatnonzero(np.diff(start) >= 2)[0])
    _set(a, "labels_.indices", start[row] + 1, a["labels_.indices"][start[row]])


def _two_parents(h, a):
    """The last tree's root gets its first child twice (a DAG, not a tree; the second is orphaned)."""
    children, root = a["forest_.children"].copy(), a["forest_.tree_root"][-1]
    assert children[root, 0] >= 0, "the last tree must not be a single leaf"
    children[root] = [children[root, 0], children[root, 0]]
    a["forest_.children"] = children


EDITS = {  # name → (estimator, edit of (header, arrays), message)
    "CSR indptr ending in 0 (scipy skipped its checks; scoring segfaulted)":
        ("MLkNN-csr", lambda h, a: _set(a, "features_.indptr", -1, 0), r"'features_' is malformed \(indptr must"),
    "a label stored twice in a row (scoring raised IndexError)":
        ("MLkNN", lambda h, a: _label_twice(a), r"'labels_' is malformed \(an entry stored twice\)"),
    "sparse shape beyond int64 (OverflowError)":
        ("FastXML", lambda h, a: h["sparse"]["forest_.W"].__setitem__(1, 10 ** 30), r"the shape of 'forest_.W' must be"),
    "n_labels_ of 2^40 (classes_ would take 8 TiB: MemoryError)":
        ("LabelFrequency", lambda h, a: h["fitted"].update(n_labels_=2 ** 40), r"n_labels_ = 1099511627776 is larger"),
    "a node with two parents":
        ("FastXML", _two_parents, r"each be the child of exactly one node"),
    "trees out of order":
        ("FastXML", lambda h, a: a.update({"forest_.node_tree": a["forest_.node_tree"][::-1].copy()}),
         r"(contiguous run|roots out of range|tree numbers)"),
    "kernel width 1e300 (OverflowError when scoring)":
        ("LSPC", lambda h, a: h["fitted"].update(kernel_width_=1e300), r"has no finite non-zero square"),
    "kernel width 1e-300 (ZeroDivisionError when scoring)":
        ("LSPC-classes", lambda h, a: h["fitted"].update(kernel_width_=1e-300), r"has no finite non-zero square"),
    "basis centre 1e300 (ValueError when scoring)":
        ("MLLSPC", lambda h, a: _set(a, "basis_.centres", (0, 0), 1e300), r"squared norms overflow"),
    "coefficients that overflow":
        ("LSPC", lambda h, a: _set(a, "coef_", (0, 0, 0), 1.7e308) or _set(a, "coef_", (0, 1, 0), 1.7e308),
         r"the sum of its absolute values overflows"),
    "centroid longer than 1":
        ("PfastreXML", lambda h, a: _set(a, "centroids_.data", 0, 5.0), r"norms <= 1"),
    "gamma = inf (NaN scores)":
        ("PfastreXML", lambda h, a: h["params"].update(gamma=float("inf")), r"gamma = inf holds NaN or inf"),
    "float16 separators (ValueError when scoring)":
        ("FastXML", lambda h, a: a.update({"forest_.W.data": a["forest_.W.data"].astype(np.float16)}),
         r"dtype float16, expected kind 'f' \(floats: 32 or 64 bits\)"),
    "n_jobs = 0 (ValueError when scoring)":
        ("MLkNN", lambda h, a: h["params"].update(n_jobs=0), r"invalid parameter: The 'n_jobs' parameter of MLkNN must be an int in the range \(-inf, -1\]"),
}


@pytest.mark.parametrize("case", list(EDITS))
def test_an_edited_estimator_file_is_refused(tmp_path, case):
    name, edit, message = EDITS[case]
    est = fit_small(name.removesuffix("-csr"), name.endswith("-csr"))
    header, arrays = _archive(est.save(tmp_path / "model.npz"))
    edit(header, arrays)
    path = tmp_path / "edited.npz"
    np.savez(path, __header__=np.array(json.dumps(header)), **arrays)
    with pytest.raises(DataFormatError, match=re.escape(f"{path}: ") + ".*" + message):
        type(est).load(path)


def _rewritten(raw: bytes, member: str, change) -> bytes:
    """``raw`` (an .npz) as a valid zip whose ``member`` has ``change(bytes)`` applied."""
    with zipfile.ZipFile(io.BytesIO(raw)) as z:
        members = {i.filename: z.read(i.filename) for i in z.infolist()}
    members[member] = change(members[member])
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for n, content in members.items():
            z.writestr(n, content)
    return out.getvalue()


@pytest.mark.parametrize("change, message", [
    (lambda b: b.replace(b"), }", b"( }", 1), r"unreadable saved estimator \("),  # raised tokenize.TokenError
    (lambda b: b.replace(b"'shape': (", b"'shape': (1000000000, ", 1), r".*promises \d+ bytes, the member holds"),
], ids=["unbalanced header", "shape larger than the data"])
def test_a_damaged_npy_header_inside_a_valid_zip_is_refused(tmp_path, change, message):
    est = fit_small("LabelFrequency", False)
    path = tmp_path / "edited.npz"
    path.write_bytes(_rewritten(est.save(tmp_path / "model.npz").read_bytes(), "scores_.npy", change))
    with pytest.raises(DataFormatError, match=re.escape(f"{path}: ") + message):
        type(est).load(path)


# ----------------------------------------------------------------------------- MLGPF
@pytest.fixture(scope="module")
def mlgpf_saves(tmp_path_factory):
    from _save_loop_child import mlgpf_pair

    folder = tmp_path_factory.mktemp("mlgpf")
    a, b = mlgpf_pair()
    return a.save(folder / "plain"), b.save(folder / "mapped")


def _edit_mlgpf(source, tmp_path, file: str, edit):
    import shutil

    path = shutil.copytree(source, tmp_path / "m")
    if file == "model.json":
        meta = json.loads((path / file).read_text())
        edit(meta)
        (path / file).write_text(json.dumps(meta))
    else:
        with np.load(path / file, allow_pickle=False) as f:
            arrays = {k: f[k] for k in f.files}
        edit(arrays)
        np.savez(path / file, **arrays)
    return path


MLGPF_EDITS = {  # name → (save, file, edit, message)
    "NaN parameter (NaN scores)": (0, "parameters.npz", lambda a: _set(a, "likelihood.bias", 0, np.nan),
                                   r"the saved values of likelihood.bias must be finite float64"),
    "variance 1e30 (NaN scores)": (0, "parameters.npz", lambda a: _set(a, "kernel.kernel.kernels[1].variance", 0, 1e30),
                                   r"non-finite predictions"),
    "input map entry 1e300 (NaN probabilities)": (1, "constants.npz",
                                                  lambda a: _set(a, "input_map.matrix.data", 0, 1e300),
                                                  r"non-finite predictions"),
    "a placeholder of 10^6 x 6 (8 TiB: MemoryError)": (
        0, "model.json", lambda m: m["inducing_variable"]["children"]["inducing_variable"]["parameters"].update(
            Z=[10 ** 6, 6]), r"the placeholder of inducing_variable\.inducing_variable\.Z has shape \[1000000, 6\]"),
    "no quadrature points (ShapeError)": (0, "model.json", lambda m: m["likelihood"].update(num_gauss_hermite_points=0),
                                          r"num_gauss_hermite_points must be a whole number"),
    "a parameter renamed (ShapeError)": (0, "parameters.npz", lambda a: a.update(extra=a.pop("likelihood.bias")),
                                         r"saved parameters do not match the model the save describes"),
    "files naming another folder": (0, "model.json", lambda m: m.update(files={"parameters": "../x.npz", "constants": None}),
                                    r"'files' must name one of the array file sets"),
}


@pytest.mark.parametrize("case", list(MLGPF_EDITS))
def test_an_edited_mlgpf_save_is_refused(tmp_path, mlgpf_saves, case):
    from mlgp.models import MLGPF

    which, file, edit, message = MLGPF_EDITS[case]
    path = _edit_mlgpf(mlgpf_saves[which], tmp_path, file, edit)
    with pytest.raises(DataFormatError, match=re.escape(str(path)) + r".*: .*" + message):
        MLGPF.load(path)
