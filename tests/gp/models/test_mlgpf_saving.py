"""MLGPF models saved and loaded: the round trip of every kernel and q(u) form, a mismatched load
refused and the model left as it was, retired formats refused by name."""

from __future__ import annotations

import json

import gpflow
import numpy as np
import pytest
from _mlgpf_perturb import perturb as _perturb

from mlgp.data import mlgpf_prior
from mlgp.errors import MLGPError
from mlgp.kernels import make_kernel
from mlgp.likelihoods import MultiLabelBernoulli
from mlgp.models import MLGPF, mlgpf_from_data
from mlgp.models.convert import convert_folder
from mlgp.recipes import MLGPFClassifier

KERNELS = ["linear", "se", "se+linear"]


SAVE_CASES = [(k, w, False) for k in KERNELS for w in (False, True)] + [("se", False, True)]


@pytest.mark.slow
@pytest.mark.parametrize("kname, whiten, fixed", SAVE_CASES)
def test_save_load_round_trip(tmp_path, kname, whiten, fixed):
    rng = np.random.default_rng(11)
    ds = mlgpf_prior(num_train=25, num_test=9, num_features=4, num_labels=6, num_latent=2, seed=5)
    model = mlgpf_from_data(ds.train.X, ds.train.Y, kernel=kname, num_latent_gps=2, num_inducing=4,
                            q_family="whitened" if whiten else "cholesky", fixed_inducing=fixed, seed=2)
    _perturb(model, rng)
    if fixed:
        assert not model.inducing_variable.inducing_variable.Z.trainable
    path = model.save(tmp_path / "m")
    loaded = MLGPF.load(path)
    assert loaded.whiten == whiten and loaded.spec == model.spec
    X = ds.test.X
    a, b = MLGPFClassifier.from_model(model), MLGPFClassifier.from_model(loaded)
    assert np.array_equal(b.decision_function(X), a.decision_function(X))
    assert np.array_equal(b.predict_proba(X), a.predict_proba(X))
    assert np.array_equal(loaded.elbo((ds.train.X.toarray(), ds.train.Y.toarray())).numpy(),
                          model.elbo((ds.train.X.toarray(), ds.train.Y.toarray())).numpy())
    a, b = gpflow.utilities.parameter_dict(model), gpflow.utilities.parameter_dict(loaded)
    assert a.keys() == b.keys()
    for name in a:
        assert np.array_equal(a[name].unconstrained_variable.numpy(), b[name].unconstrained_variable.numpy()), name
        assert a[name].trainable == b[name].trainable, name
    assert len(loaded.trainable_variables) == len(model.trainable_variables)
    # no pickle anywhere: plain arrays and JSON
    with np.load(path / "parameters.npz", allow_pickle=False) as npz:
        assert set(npz.files) == {k.lstrip(".") for k in a}
        for k in npz.files:
            assert npz[k].dtype == np.float64
    json.loads((path / "model.json").read_text())
    assert sorted(p.name for p in path.iterdir()) == ["model.json", "parameters.npz"]


def test_load_parameters_into_mismatched_model_raises(tmp_path):
    ds = mlgpf_prior(num_train=25, num_test=5, num_features=4, num_labels=6, num_latent=2, seed=5)
    X, Y = ds.train.X, ds.train.Y
    src = mlgpf_from_data(X, Y, kernel="se", num_latent_gps=2, num_inducing=4)
    path = src.save(tmp_path / "m")
    # different P: same parameter names, different shapes
    other = mlgpf_from_data(X, Y, kernel="se", num_latent_gps=3, num_inducing=4, seed=3)
    before = {k: p.numpy().copy() for k, p in gpflow.utilities.parameter_dict(other).items()}
    with pytest.raises(MLGPError, match="shape"):
        other.load_parameters(path)
    after = gpflow.utilities.parameter_dict(other)
    for k in before:  # a failed load leaves the model untouched
        assert np.array_equal(before[k], after[k].numpy()), k
    # different kernel: different parameter names
    lin = mlgpf_from_data(X, Y, kernel="linear", num_latent_gps=2, num_inducing=4)
    with pytest.raises(MLGPError, match="do not match"):
        lin.load_parameters(path)
    # a model not built by from_data, saved in format 1 (which recorded only from_data's arguments):
    # load refuses the old format by name, and the converter finds no structure to convert
    # (the formats and their conversion: test_convert.py)
    bare = MLGPF(make_kernel("se", 4), MultiLabelBernoulli(6, 2), np.zeros((3, 4)), num_data=25)
    p2 = bare.save(tmp_path / "bare")
    meta = json.loads((p2 / "model.json").read_text())
    (p2 / "model.json").write_text(json.dumps({"format": "mlgp.MLGPF/1", "spec": {}, "trainable":
                                               {k: v["trainable"] for k, v in meta["parameters"].items()}}))
    with pytest.raises(MLGPError, match=r"bare: this MLGPF save is in the earlier format 'mlgp\.MLGPF/1', which is no "
                                        r"longer read; .* python -m mlgp\.models\.convert \S*bare$"):
        MLGPF.load(p2)
    with pytest.raises(MLGPError, match=r"bare/model\.json: a size in the structure is None"):
        convert_folder(p2)
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "model.json").write_text(json.dumps({"format": "something else"}))
    with pytest.raises(MLGPError, match="not an MLGPF save"):
        MLGPF.load(tmp_path / "junk")
