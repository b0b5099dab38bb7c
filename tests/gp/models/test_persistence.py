"""Saving and loading MLGPF: models built from their parts round-trip exactly (any GPflow or mlgp
kernel and inducing variable, either parameterisation, custom transforms, trainable flags); every
failure is an MLGPError that names the path. Folders of the earlier formats: test_convert.py."""

from __future__ import annotations

import json

import gpflow
import numpy as np
import pytest
import tensorflow_probability as tfp
from gpflow.inducing_variables import InducingPoints
from gpflow.utilities import parameter_dict, positive

from mlgp.data import mlgpf_prior
from mlgp.errors import DataFormatError, MLGPError, ModelNotFoundError
from mlgp.inducing import UnitSphereInducingPoints
from mlgp.kernels import SharedScaleSEPlusLinear, make_kernel
from mlgp.likelihoods import MultiLabelBernoulli
from mlgp.models import load_mlgpf, load_parameters, MLGPF, mlgpf_from_data, save_mlgpf

D, K, P, M, N = 3, 5, 2, 4, 12
k = gpflow.kernels
KERNELS = {
    "se": lambda: k.SquaredExponential(lengthscales=np.ones(D)),
    "linear": lambda: k.Linear(variance=np.ones(D)),
    "se+linear": lambda: k.SquaredExponential() + k.Linear(),
    "matern32": lambda: k.Matern32(lengthscales=np.ones(D)),
    "product": lambda: k.Matern52(active_dims=[0, 1]) * k.Linear(active_dims=slice(1, 3)),
    "se+linear-shared": lambda: make_kernel("se+linear-shared", D),
    "polynomial": lambda: k.Polynomial(degree=2.0, active_dims=[0, 2]),
}
INDUCING = {"points": InducingPoints, "sphere": UnitSphereInducingPoints}


class MyKernel(gpflow.kernels.SquaredExponential):
    """A kernel from outside gpflow and mlgp: the format cannot promise to rebuild it."""


class MyExp(tfp.bijectors.Exp):
    """A transform from outside TFP, gpflow and mlgp."""


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    return rng.normal(size=(N, D)), (rng.random((N, K)) < 0.4).astype(np.float64)


def build(kernel, inducing="points", whiten=False, seed=0):
    rng = np.random.default_rng(seed)
    model = MLGPF(kernel, MultiLabelBernoulli(K, P), INDUCING[inducing](rng.normal(size=(M, D))), num_data=N, q_family="whitened" if whiten else "cholesky")
    for p in parameter_dict(model).values():  # away from the placeholders a rebuild starts from
        u = p.unconstrained_variable
        u.assign(u.numpy() + 0.2 * rng.normal(size=u.shape))
    return model


def scores(model, X) -> np.ndarray:
    """The mean utilities f̄ (N, K) of raw rows ``X``, computed by the model directly."""
    return model.mean_utilities(model.model_inputs(X))


def assert_same_model(a, b, data):
    np.testing.assert_allclose(b.elbo(data).numpy(), a.elbo(data).numpy(), rtol=1e-12, atol=0)
    np.testing.assert_allclose(scores(b, data[0]), scores(a, data[0]), rtol=1e-12, atol=0)
    pa, pb = parameter_dict(a), parameter_dict(b)
    assert pa.keys() == pb.keys()
    for name in pa:
        assert np.array_equal(pa[name].unconstrained_variable.numpy(), pb[name].unconstrained_variable.numpy()), name
        assert np.array_equal(pa[name].numpy(), pb[name].numpy()), name
        assert pa[name].trainable == pb[name].trainable, name
        assert type(pa[name].transform) is type(pb[name].transform), name
    assert (a.whiten, a.num_data, a.spec) == (b.whiten, b.num_data, b.spec)


# ----------------------------------------------------------------------------- round trips
def _round_trip_cases() -> list[tuple[str, str, bool]]:
    """Every kernel once, cycling through the (inducing variable, whiten) pairs, and every pair with
    SE+LR: each kernel, each inducing variable and both forms of q(u) are covered."""
    pairs = [(i, w) for i in sorted(INDUCING) for w in (False, True)]
    cases = {(k, *pairs[n % len(pairs)]) for n, k in enumerate(sorted(KERNELS))}
    cases |= {("se+linear", i, w) for i, w in pairs}
    return sorted(cases)


@pytest.mark.slow
@pytest.mark.parametrize("kname, inducing, whiten", _round_trip_cases())
def test_model_built_from_parts_round_trips(tmp_path, data, kname, inducing, whiten):
    model = build(KERNELS[kname](), inducing, whiten)
    gpflow.set_trainable(model.likelihood.loadings, False)
    gpflow.set_trainable(model.kernel, False)
    loaded = MLGPF.load(model.save(tmp_path / "m"))
    assert type(loaded.inducing_variable.inducing_variable) is INDUCING[inducing]
    assert type(loaded.kernel.kernel) is type(model.kernel.kernel)
    assert_same_model(model, loaded, data)
    assert len(loaded.trainable_variables) == len(model.trainable_variables)
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == ["model.json", "parameters.npz"]


def test_structure_is_recorded_as_a_tree(tmp_path, data):
    model = build(KERNELS["product"]())
    meta = json.loads((save_mlgpf(model, tmp_path / "m") / "model.json").read_text())
    assert meta["format"] == "mlgp.MLGPF/5" and meta["spec"] == {}
    assert meta["files"] == {"parameters": "parameters.npz", "constants": None}
    shared = meta["kernel"]
    assert shared["class"] == "gpflow.kernels.multioutput.kernels:SharedIndependent"
    assert shared["arguments"] == {"output_dim": P}
    matern, linear = shared["children"]["kernel"]["children"]["kernels"]
    assert matern["class"].endswith(":Matern52") and matern["active_dims"] == [0, 1]
    assert matern["parameters"] == {"variance": [], "lengthscales": []}
    assert linear["active_dims"] == {"slice": [1, 3, None]}
    assert meta["inducing_variable"]["children"]["inducing_variable"]["parameters"] == {"Z": [M, D]}
    assert meta["likelihood"]["num_labels"] == K and meta["likelihood"]["num_latent"] == P
    assert meta["parameters"]["q.q_sqrt"]["transform"]["class"].endswith(":LowerTriangular")
    assert meta["parameters"]["kernel.kernel.kernels[0].variance"]["transform"]["class"].endswith(":Softplus")


def test_non_default_transforms_are_rebuilt(tmp_path, data):
    """positive(lower=1e-6) (Chain of Shift and Softplus) and Exp are not what the constructors make."""
    kern = k.SquaredExponential(lengthscales=np.ones(D))
    kern.variance = gpflow.Parameter(0.7, transform=positive(lower=1e-6))
    kern.lengthscales = gpflow.Parameter(np.full(D, 1.3), transform=tfp.bijectors.Exp())
    model = build(kern, whiten=True)
    loaded = load_mlgpf(save_mlgpf(model, tmp_path / "m"))
    assert isinstance(loaded.kernel.kernel.variance.transform, tfp.bijectors.Chain)
    np.testing.assert_array_equal(loaded.kernel.kernel.variance.transform.forward(np.float64(-30.0)),
                                  model.kernel.kernel.variance.transform.forward(np.float64(-30.0)))  # the 1e-6 floor
    assert isinstance(loaded.kernel.kernel.lengthscales.transform, tfp.bijectors.Exp)
    assert_same_model(model, loaded, data)


def test_from_data_model_keeps_its_spec(tmp_path):
    ds = mlgpf_prior(num_train=25, num_test=9, num_features=4, num_labels=6, num_latent=2, seed=5)
    model = mlgpf_from_data(ds.train.X, ds.train.Y, kernel="se+linear-shared", num_latent_gps=2, num_inducing=4,
                            fixed_inducing=True, unit_sphere_inducing=True, seed=2)
    loaded = MLGPF.load(model.save(tmp_path / "m"))
    assert isinstance(loaded.kernel.kernel, SharedScaleSEPlusLinear) and loaded.spec == model.spec
    assert not loaded.inducing_variable.inducing_variable.Z.trainable
    assert np.array_equal(scores(loaded, ds.test.X), scores(model, ds.test.X))


def test_load_parameters_checks_the_saved_transforms(tmp_path, data):
    model = build(KERNELS["se"]())
    path = model.save(tmp_path / "m")
    twin = build(KERNELS["se"](), seed=1)
    load_parameters(twin, path)
    assert_same_model(model, twin, data)
    other = build(KERNELS["se"](), seed=1)
    other.kernel.kernel.variance = gpflow.Parameter(1.0, transform=tfp.bijectors.Exp())
    with pytest.raises(DataFormatError, match=r"kernel\.kernel\.variance was saved with transform Softplus but has Exp"):
        other.load_parameters(path)


# ----------------------------------------------------------------------------- refusals when saving
def test_kernel_from_outside_gpflow_and_mlgp_is_refused_at_save(tmp_path):
    model = build(k.Sum([MyKernel(), k.Linear()]))
    with pytest.raises(DataFormatError, match=r"kernel\.kernel\.kernels\[0\] of class test_persistence\.MyKernel"):
        model.save(tmp_path / "m")
    assert not (tmp_path / "m").exists()  # nothing written


def test_transform_from_outside_is_refused_at_save(tmp_path):
    model = build(KERNELS["se"]())
    model.kernel.kernel.variance = gpflow.Parameter(1.0, transform=MyExp())
    with pytest.raises(DataFormatError, match=r"transform of kernel\.kernel\.variance of class test_persistence\.MyExp"):
        save_mlgpf(model, tmp_path / "m")
    assert not (tmp_path / "m").exists()


# ----------------------------------------------------------------------------- refusals when loading
@pytest.fixture
def saved(tmp_path):
    return build(KERNELS["se+linear"]()).save(tmp_path / "m")


def _edit(path, change):
    meta = json.loads((path / "model.json").read_text())
    change(meta)
    (path / "model.json").write_text(json.dumps(meta))


def test_missing_folder_and_files(tmp_path, saved):
    with pytest.raises(ModelNotFoundError, match=r"nowhere: no saved MLGPF here") as info:
        MLGPF.load(tmp_path / "nowhere")
    assert isinstance(info.value, FileNotFoundError) and isinstance(info.value, MLGPError)
    (saved / "parameters.npz").rename(tmp_path / "elsewhere.npz")
    with pytest.raises(ModelNotFoundError, match=r"m/parameters\.npz: missing"):
        MLGPF.load(saved)
    (saved / "model.json").unlink()
    with pytest.raises(ModelNotFoundError, match=r"m/model\.json: missing"):
        MLGPF.load(saved)
    (tmp_path / "elsewhere.npz").rename(saved / "parameters.npz")  # a lone parameters.npz is no save
    with pytest.raises(ModelNotFoundError, match=r"m/model\.json: missing"):
        build(KERNELS["se+linear"]()).load_parameters(saved)
    with pytest.raises(ModelNotFoundError, match=r"nowhere: no saved MLGPF here"):
        build(KERNELS["se+linear"]()).load_parameters(tmp_path / "nowhere")


def test_corrupt_files(saved):
    good = (saved / "model.json").read_text()
    (saved / "model.json").write_text('{"format": "mlgp.MLGPF/2", ')
    with pytest.raises(DataFormatError, match=r"m/model\.json: invalid JSON"):
        MLGPF.load(saved)
    (saved / "model.json").write_text(json.dumps({"format": "mlgp.Other/7"}))
    with pytest.raises(DataFormatError, match=r"m/model\.json: not an MLGPF save \(format 'mlgp\.Other/7'"):
        MLGPF.load(saved)
    (saved / "model.json").write_text(json.dumps([1, 2]))
    with pytest.raises(DataFormatError, match=r"m/model\.json: not an MLGPF save"):
        MLGPF.load(saved)
    (saved / "model.json").write_text(good)
    (saved / "parameters.npz").write_bytes(b"not a zip file")
    with pytest.raises(DataFormatError, match=r"m/parameters\.npz: unreadable parameter file"):
        MLGPF.load(saved)


def test_malformed_structure(saved):
    _edit(saved, lambda meta: meta.pop("likelihood"))
    with pytest.raises(DataFormatError, match=r"m/model\.json: malformed MLGPF save \(KeyError"):
        MLGPF.load(saved)


def test_parameter_mismatch(saved):
    _edit(saved, lambda meta: meta["parameters"].pop("q.q_mu"))
    # the save does not match itself: a DataFormatError (load_parameters into another model: a ShapeError)
    with pytest.raises(DataFormatError, match=r"m: saved parameters do not match the model the save describes: "
                                              r"missing \['q.q_mu'\]"):
        MLGPF.load(saved)


def test_classes_from_elsewhere_are_not_imported(saved):
    def swap(meta):
        meta["kernel"]["children"]["kernel"]["class"] = "os:system"

    _edit(saved, swap)
    with pytest.raises(DataFormatError, match=r"refusing to load class 'os:system'"):
        MLGPF.load(saved)


def test_transform_that_cannot_be_rebuilt_is_refused(saved):
    def swap(meta):
        meta["parameters"]["kernel.kernel.kernels[1].variance"]["transform"] = {"class": "mymodule:MyExp", "arguments": {}}

    _edit(saved, swap)
    with pytest.raises(DataFormatError, match=r"refusing to load class 'mymodule:MyExp'"):
        MLGPF.load(saved)


def test_an_interrupted_save_leaves_the_earlier_files_whole(tmp_path, monkeypatch):
    """Saving over an earlier model and failing half-way through parameters.npz keeps the earlier
    model loadable, with no temporary file left in the folder."""
    import mlgp.models.persistence as persistence

    rng = np.random.default_rng(11)
    first = MLGPF(make_kernel("se", D), MultiLabelBernoulli(K, P), rng.normal(size=(M, D)), num_data=N)
    path = first.save(tmp_path / "m")
    second = MLGPF(make_kernel("se", D), MultiLabelBernoulli(K, P), rng.normal(size=(M, D)), num_data=N)

    def failing_savez(file, **arrays):  # writes the start of an archive, then the disk is full
        file = file if hasattr(file, "write") else open(file, "wb")
        file.write(b"PK\x03\x04 partial")
        file.flush()
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(persistence.np, "savez", failing_savez)
    with pytest.raises(MLGPError, match=r"cannot save the model in .*m: No space left on device"):
        second.save(path)
    monkeypatch.undo()
    assert sorted(p.name for p in path.iterdir()) == ["model.json", "parameters.npz"]
    x = np.random.default_rng(11).normal(size=(4, D))
    np.testing.assert_array_equal(scores(MLGPF.load(path), x), scores(first, x))
