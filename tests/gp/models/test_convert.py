"""MLGPF save folders of the earlier formats (mlgp.MLGPF/1 to /4): loading refuses them by name,
pointing at ``python -m mlgp.models.convert``, which converts each once, in place, to a folder that
loads to the very model that was saved; a folder already in format 5 is left as it is, and a
damaged old folder is refused and left untouched.

The old folders are made from format-5 saves the way each earlier format wrote them (checked
against folders written by the package at the commits of formats 1 to 4)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import gpflow
import numpy as np
import pytest
import scipy.sparse as sp
from gpflow.utilities import parameter_dict

from mlgp.blocks import LinearInputMap
from mlgp.data import mlgpf_prior
from mlgp.errors import DataFormatError, ModelNotFoundError
from mlgp.likelihoods import MultiLabelBernoulli
from mlgp.models import load_mlgpf, load_parameters, MLGPF, mlgpf_from_data
from mlgp.models.convert import convert_folder, main
from mlgp.models.persistence import rebuild_mlgpf
from mlgp.models.save_folder import Saved

D, K = 4, 6
#: q(u)'s parameter paths in formats 1 and 2.
OLD_NAMES = {"q.q_mu": "q_mu", "q.q_sqrt": "q_sqrt"}


@pytest.fixture(scope="module")
def ds():
    return mlgpf_prior(num_train=25, num_test=9, num_features=D, num_labels=K, num_latent=2, seed=5)


def _jiggled(model, seed):
    """Values away from those the constructors start from (a rebuild starts there)."""
    rng = np.random.default_rng(seed)
    for p in parameter_dict(model).values():
        u = p.unconstrained_variable
        u.assign(u.numpy() + (0.2 * rng.normal(size=u.shape)).astype(u.dtype.as_numpy_dtype))
    return model


def _from_data(ds, **kwargs):
    model = mlgpf_from_data(ds.train.X, ds.train.Y, num_latent_gps=2, num_inducing=4, seed=2, **kwargs)
    gpflow.set_trainable(model.likelihood.bias, False)
    return _jiggled(model, 1)


def _parts(ds):
    kernel = gpflow.kernels.Matern52(active_dims=[0, 1]) * gpflow.kernels.Linear(active_dims=slice(1, 3))
    model = MLGPF(kernel, MultiLabelBernoulli(K, 2), np.random.default_rng(3).normal(size=(4, D)), num_data=25,
                  q_family="whitened")
    gpflow.set_trainable(model.kernel, False)
    return _jiggled(model, 2)


def _mapped(ds):
    matrix = sp.random(D, 3, density=0.6, format="csr", random_state=1) + sp.eye(D, 3, format="csr")
    return _jiggled(mlgpf_from_data(ds.train.X, ds.train.Y, kernel="se", num_latent_gps=2, num_inducing=4, seed=5,
                                    input_map=LinearInputMap(matrix)), 3)


MODELS = {
    "from_data": lambda ds: _from_data(ds, kernel="se+linear"),
    "from_data shared sphere whitened": lambda ds: _from_data(ds, kernel="se+linear-shared", unit_sphere_inducing=True,
                                                               fixed_inducing=True, q_family="whitened"),
    "parts": _parts,
    "float32 preconditioned": lambda ds: _from_data(ds, kernel="se", dtype="float32", q_family="preconditioned"),
    "input map": _mapped,
}
#: (format, model): each format with the kinds of model it could hold.
CASES = [(1, "from_data"), (1, "from_data shared sphere whitened"), (2, "from_data"), (2, "parts"),
         (3, "parts"), (3, "float32 preconditioned"), (4, "input map"), (4, "from_data")]


def as_old_format(path, n: int, oldest_spec: bool = False):
    """Rewrite the (first) format-5 save in the folder ``path`` as format ``n`` wrote it: format 4
    had no ``files``, format 3 no input map, format 2 ``whiten`` for ``q`` and float64 only, q(u)'s
    values under ``q_mu`` / ``q_sqrt``; format 1 only ``spec`` and the trainable flags
    (``oldest_spec``: without ``unit_sphere_inducing``, as the first saves)."""
    meta = json.loads((path / "model.json").read_text())
    assert meta.pop("files")["parameters"] == "parameters.npz"
    if n <= 3:
        assert meta.pop("input_map") is None
    if n <= 2:
        family, float_type = meta.pop("q")["family"], meta.pop("float_type")
        assert family in ("cholesky", "whitened") and float_type == "float64"
        meta["whiten"] = family == "whitened"
        meta["parameters"] = {OLD_NAMES.get(k, k): v for k, v in meta["parameters"].items()}
        with np.load(path / "parameters.npz") as npz:
            values = {OLD_NAMES.get(k, k): npz[k] for k in npz.files}
        np.savez(path / "parameters.npz", **values)
    if n == 1:
        spec = {k: v for k, v in meta["spec"].items() if not (oldest_spec and k == "unit_sphere_inducing")}
        meta = {"spec": spec, "trainable": {k: v["trainable"] for k, v in meta["parameters"].items()}}
    (path / "model.json").write_text(json.dumps({**meta, "format": f"mlgp.MLGPF/{n}"}))
    return path


def snapshot(path) -> dict:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir())}


def assert_same_model(a, b, x, spec=None):
    """``b`` is ``a``: every parameter to the bit (with its trainable flag and transform), the q(u)
    family, float type, N and ``spec`` (``spec``: ``b``'s, when not ``a``'s), the classes of the
    kernel, inducing variable and input map, and the scores."""
    pa, pb = parameter_dict(a), parameter_dict(b)
    assert pa.keys() == pb.keys()
    for name in pa:
        ua, ub = pa[name].unconstrained_variable.numpy(), pb[name].unconstrained_variable.numpy()
        assert ua.dtype == ub.dtype and ua.tobytes() == ub.tobytes(), name  # bit-identical
        assert pa[name].trainable == pb[name].trainable, name
        assert type(pa[name].transform) is type(pb[name].transform), name
    assert (a.q_family, a.float_type, a.num_data, a.spec if spec is None else spec) == \
        (b.q_family, b.float_type, b.num_data, b.spec)
    for part in (lambda m: m.kernel.kernel, lambda m: m.inducing_variable.inducing_variable, lambda m: m.input_map):
        assert type(part(a)) is type(part(b))
    assert np.array_equal(a.mean_utilities(a.model_inputs(x)), b.mean_utilities(b.model_inputs(x)))


def refusal(path, n: int) -> str:
    """The message of loading an old folder: the folder, its format and the command."""
    return (re.escape(f"{path}: this MLGPF save is in the earlier format 'mlgp.MLGPF/{n}', which is no longer read; ")
            + re.escape(f"convert it once to 'mlgp.MLGPF/5' with: python -m mlgp.models.convert {path}") + "$")


# ----------------------------------------------------------------------------- (a) loading refuses
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_loading_an_old_folder_is_refused_with_the_command(tmp_path, ds, n, monkeypatch):
    model = MODELS["from_data"](ds)
    path = as_old_format(model.save(tmp_path / "m"), n)
    before = snapshot(path)

    def no_build(*args, **kwargs):
        raise AssertionError("a model was built")

    monkeypatch.setattr("mlgp.models.persistence.build_model", no_build)
    with pytest.raises(DataFormatError, match=refusal(path, n)):
        MLGPF.load(path)
    with pytest.raises(DataFormatError, match=refusal(path, n)):
        load_mlgpf(path)
    twin = _jiggled(MODELS["from_data"](ds), 9)
    values = {k: p.numpy().copy() for k, p in parameter_dict(twin).items()}
    with pytest.raises(DataFormatError, match=refusal(path, n)):
        load_parameters(twin, path)
    meta = json.loads((path / "model.json").read_text())
    with pytest.raises(DataFormatError, match=refusal(path, n)):
        rebuild_mlgpf(Saved(meta, {}, None), path, MLGPF)
    assert snapshot(path) == before
    assert all(np.array_equal(values[k], p.numpy()) for k, p in parameter_dict(twin).items())  # nothing assigned


def test_a_format_that_never_was_keeps_its_error(tmp_path, ds):
    path = MODELS["from_data"](ds).save(tmp_path / "m")
    (path / "model.json").write_text(json.dumps({"format": "mlgp.MLGPF/6"}))
    with pytest.raises(DataFormatError, match=r"m/model\.json: not an MLGPF save \(format 'mlgp\.MLGPF/6'; this "
                                              r"version reads 'mlgp\.MLGPF/5'\)"):
        MLGPF.load(path)
    with pytest.raises(DataFormatError, match=r"m/model\.json: not an MLGPF save of an earlier format \(format "
                                              r"'mlgp\.MLGPF/6'"):
        convert_folder(path)


# ----------------------------------------------------------------------------- (b) converting
@pytest.mark.slow
@pytest.mark.parametrize("n, kind", CASES, ids=[f"{n}-{kind}" for n, kind in CASES])
def test_a_converted_folder_loads_to_the_saved_model(tmp_path, ds, capsys, n, kind):
    model = MODELS[kind](ds)
    oldest = n == 1 and kind == "from_data"  # the first saves' spec lacks unit_sphere_inducing
    path = as_old_format(model.save(tmp_path / "m"), n, oldest_spec=oldest)
    spec = {k: v for k, v in model.spec.items() if k != "unit_sphere_inducing"} if oldest else None
    assert main([str(path)]) == 0
    assert capsys.readouterr().out == f"{path}: converted from mlgp.MLGPF/{n} to mlgp.MLGPF/5\n"
    meta = json.loads((path / "model.json").read_text())
    constants = "constants-1.npz" if kind == "input map" else None
    assert meta["format"] == "mlgp.MLGPF/5" and meta["files"] == {"parameters": "parameters-1.npz", "constants": constants}
    assert sorted(snapshot(path)) == sorted(["model.json", "parameters-1.npz"] + [constants] * (constants is not None))
    assert_same_model(model, MLGPF.load(path), ds.test.X, spec)
    twin = _jiggled(MODELS[kind](ds), 9)
    load_parameters(twin, path)
    assert_same_model(model, twin, ds.test.X)


@pytest.mark.slow
def test_the_command_runs_as_a_module(tmp_path, ds):
    model = MODELS["from_data"](ds)
    old = as_old_format(model.save(tmp_path / "old"), 2)
    current = model.save(tmp_path / "current")
    bare = as_old_format(model.save(tmp_path / "bare"), 1)
    _edit(bare, lambda meta: meta.update(spec={}))
    run = subprocess.run([sys.executable, "-m", "mlgp.models.convert", str(old), str(current), str(bare)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 2, run.stderr
    lines = run.stdout.splitlines()
    assert lines[:2] == [f"{old}: converted from mlgp.MLGPF/2 to mlgp.MLGPF/5", f"{current}: already current (mlgp.MLGPF/5)"]
    assert len(lines) == 3 and lines[2].startswith(f"{bare}: error: {bare}/model.json: a size in the structure is None")
    assert_same_model(model, MLGPF.load(old), ds.test.X)


# ----------------------------------------------------------------------------- (c) a current folder
def test_converting_a_current_folder_writes_nothing(tmp_path, ds, capsys):
    path = MODELS["input map"](ds).save(tmp_path / "m")
    before, stamps = snapshot(path), {p.name: p.stat().st_mtime_ns for p in path.iterdir()}
    assert main([str(path)]) == 0
    assert capsys.readouterr().out == f"{path}: already current (mlgp.MLGPF/5)\n"
    assert snapshot(path) == before and {p.name: p.stat().st_mtime_ns for p in path.iterdir()} == stamps
    assert convert_folder(path) is None


def test_converting_twice_says_so(tmp_path, ds, capsys):
    path = as_old_format(MODELS["from_data"](ds).save(tmp_path / "m"), 3)
    assert main([str(path), str(path)]) == 0
    assert capsys.readouterr().out.splitlines() == [f"{path}: converted from mlgp.MLGPF/3 to mlgp.MLGPF/5",
                                                    f"{path}: already current (mlgp.MLGPF/5)"]


# ----------------------------------------------------------------------------- (d) damaged old folders
def _edit(path, change):
    meta = json.loads((path / "model.json").read_text())
    change(meta)
    (path / "model.json").write_text(json.dumps(meta))


def _nan_bias(path):
    with np.load(path / "parameters.npz") as npz:
        values = {k: npz[k] for k in npz.files}
    values["likelihood.bias"][0] = np.nan
    np.savez(path / "parameters.npz", **values)


DAMAGES = {  # name → (format, model, damage, message)
    "format 1 of a model not from from_data": (1, "from_data", lambda p: _edit(p, lambda m: m["spec"].update(kernel=None)),
                                               r"m/model\.json: this save \(format mlgp\.MLGPF/1\) holds no model structure"),
    "format 1 of sizes beyond its arrays": (1, "from_data", lambda p: _edit(p, lambda m: m["spec"].update(num_inducing=10 ** 6)),
                                            r"m/model\.json: a size in the structure is 1000000, not a whole number up to"),
    "format 1 trainable flags not booleans": (1, "from_data", lambda p: _edit(p, lambda m: m["trainable"].update(q_mu="yes")),
                                              r"m/model\.json: the trainable flags must be true or false"),
    "format 2 without whiten": (2, "parts", lambda p: _edit(p, lambda m: m.pop("whiten")),
                                r"m/model\.json: malformed MLGPF save \(KeyError: 'whiten'\)"),
    "format 2 NaN value": (2, "from_data", _nan_bias, r"m: the saved values of likelihood\.bias must be finite float64"),
    "format 3 parameters not a zip": (3, "parts", lambda p: (p / "parameters.npz").write_bytes(b"not a zip"),
                                      r"m/parameters\.npz: unreadable parameter file"),
    "format 3 class from elsewhere": (3, "parts", lambda p: _edit(p, lambda m: m["kernel"]["children"]["kernel"].update(
        {"class": "os:system"})), r"m: refusing to load class 'os:system'"),
    "format 4 constants missing": (4, "input map", lambda p: (p / "constants.npz").unlink(),
                                   r"m: the constant 'input_map\.matrix' of input_map is missing"),
}


@pytest.mark.parametrize("case", list(DAMAGES))
def test_a_damaged_old_folder_is_refused_and_left_untouched(tmp_path, ds, capsys, case):
    n, kind, damage, message = DAMAGES[case]
    path = as_old_format(MODELS[kind](ds).save(tmp_path / "m"), n)
    damage(path)
    before = snapshot(path)
    with pytest.raises(DataFormatError, match=message):
        convert_folder(path)
    assert snapshot(path) == before
    assert main([str(path)]) == 2
    out = capsys.readouterr().out
    assert out.startswith(f"{path}: error: ") and re.search(message, out) and out.count("\n") == 1
    assert snapshot(path) == before


def test_a_missing_folder_is_an_error_line(tmp_path, capsys):
    with pytest.raises(ModelNotFoundError, match=r"nowhere: no saved MLGPF here"):
        convert_folder(tmp_path / "nowhere")
    assert main([str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr().out == f"{tmp_path / 'nowhere'}: error: {tmp_path / 'nowhere'}: no saved MLGPF here (not a folder)\n"
