"""A model with an input map: D = 10⁶ sparse features projected to R = 50 before anything densifies
them — training, scoring, top-k, predict_f, saving and loading never form a dense (B, D) block."""

from __future__ import annotations

import threading

import numpy as np
import psutil
import pytest
import scipy.sparse as sp

from mlgp.blocks import LinearInputMap
from mlgp.errors import ShapeError
from mlgp.kernels import make_kernel
from mlgp.likelihoods import MultiLabelBernoulli
from mlgp.models import MLGPF, mlgpf_from_data
from mlgp.recipes import MLGPFClassifier
from mlgp.training import fit
from mlgp.variational import make_q

D, R, N, K, P, M = 1_000_000, 50, 300, 6, 2, 8


def _sparse_rows(rng, n: int, nnz_per_row: int = 20) -> sp.csr_matrix:
    """(n, D) CSR built from its index arrays (scipy.sparse.random would allocate the index space)."""
    indices = np.sort(rng.integers(0, D, size=(n, nnz_per_row)), axis=1).ravel()
    indptr = np.arange(0, n * nnz_per_row + 1, nnz_per_row)
    X = sp.csr_matrix((rng.random(n * nnz_per_row), indices, indptr), shape=(n, D))
    X.sum_duplicates()
    return X


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    X = _sparse_rows(rng, N)
    # a sparse random projection: each raw feature lands on one of the R directions with a sign
    proj = sp.csr_matrix((rng.choice([-1.0, 1.0], size=D), (np.arange(D), rng.integers(0, R, size=D))), shape=(D, R))
    Y = sp.csr_matrix((rng.random((N, K)) < 0.3).astype(float))
    return X, Y, LinearInputMap(proj)


def _model(input_map, rng) -> MLGPF:
    Z = rng.normal(size=(M, R))
    return MLGPF(make_kernel("se", R), MultiLabelBernoulli(K, P), Z, num_data=N, q=make_q("whitened", M, P),
                 input_map=input_map)


def _peak_rss_growth(fn):
    """Run ``fn()``; return its result and the largest growth of the process's resident memory
    seen while it ran (sampled every millisecond by a second thread), in bytes."""
    proc = psutil.Process()
    base = proc.memory_info().rss
    peak = [base]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], proc.memory_info().rss)
            done.wait(0.001)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        out = fn()
    finally:
        done.set()
        thread.join()
    return out, max(peak[0], proc.memory_info().rss) - base


@pytest.fixture
def no_wide_dense(forbid_dense_blocks):
    """Fail on any densifying of a CSR block as wide as the raw features."""
    forbid_dense_blocks(D)


@pytest.mark.slow
def test_a_mapped_model_trains_and_scores_without_a_dense_block_of_the_raw_width(problem, no_wide_dense):
    X, Y, input_map = problem
    model = _model(input_map, np.random.default_rng(1))
    assert (model.num_features, model.input_dim) == (D, R)

    def work():
        trace = fit(model, (X, Y), epochs=1, batch_size=100, progress=False)
        est = MLGPFClassifier.from_model(model, trace)
        return trace, est.predict_topk(X, 3, batch_size=100), est.decision_function(X[:50])

    (trace, top, scores), growth = _peak_rss_growth(work)
    # one dense (100, 10⁶) float64 block alone would be 800 MB (TensorFlow's tracing takes some tens)
    assert growth < 250e6, f"resident memory grew by {growth / 1e6:.0f} MB"
    # the probe itself sees a dense block of the raw width: (50, 10⁶) float64 is 400 MB
    _, dense_growth = _peak_rss_growth(lambda: float(np.ones((50, D)).sum()))
    assert dense_growth > 350e6
    assert np.isfinite(trace["elbo"]).all() and top.indices.shape == (N, 3)
    # the scores are those of the model applied to the projected inputs
    direct = model.predict_latent(model.model_inputs(X[:50]))[0].numpy() @ model.likelihood.loadings.numpy().T \
        + model.likelihood.bias.numpy()
    np.testing.assert_allclose(scores, direct, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(model.model_inputs(X[:5]).numpy(), (X[:5] @ input_map.matrix).toarray(), rtol=1e-12)


def test_the_guard_sees_a_dense_block_of_the_raw_width(problem, no_wide_dense):
    """Without the map the same scoring path densifies (B, D) blocks: the guard stops it first."""
    from mlgp.scores import score_in_batches

    X, _, _ = problem
    with pytest.raises(AssertionError, match=r"a dense block of shape \(10, 1000000\) was formed"):
        score_in_batches(lambda xb: np.zeros((xb.shape[0], K)), X, batch_size=10)


def test_the_input_map_is_saved_and_loaded_with_the_model(tmp_path, problem, no_wide_dense):
    X, Y, input_map = problem
    model = _model(input_map, np.random.default_rng(2))
    fit(model, (X, Y), epochs=1, batch_size=150, progress=False)
    path = model.save(tmp_path / "m")
    assert (path / "constants.npz").is_file()
    loaded = MLGPF.load(path)
    assert isinstance(loaded.input_map, LinearInputMap) and sp.issparse(loaded.input_map.matrix)
    assert (loaded.input_map.matrix != input_map.matrix).nnz == 0
    np.testing.assert_array_equal(MLGPFClassifier.from_model(loaded).decision_function(X[:40]),
                                  MLGPFClassifier.from_model(model).decision_function(X[:40]))


def test_a_map_that_does_not_fit_the_inducing_variables_is_refused(problem):
    _, _, input_map = problem
    rng = np.random.default_rng(3)
    with pytest.raises(ShapeError, match=r"the input map gives 50 columns but the inducing variables live in d = 7"):
        MLGPF(make_kernel("se", 7), MultiLabelBernoulli(K, P), rng.normal(size=(M, 7)), q=make_q("whitened", M, P),
              input_map=input_map)


def test_a_tampered_input_map_is_refused_before_anything_is_built(tmp_path, problem):
    """Loading builds only registered input maps (a file naming another class builds nothing), and a
    non-finite projection in constants.npz is a DataFormatError naming the file."""
    import json

    from mlgp.errors import DataFormatError

    X, Y, input_map = problem
    path = _model(input_map, np.random.default_rng(4)).save(tmp_path / "m")
    meta = json.loads((path / "model.json").read_text())
    logs = tmp_path / "written-by-a-constructor"
    meta["input_map"] = {"class": "gpflow.monitor.tensorboard:ScalarToTensorBoard",
                         "arguments": {"log_dir": str(logs), "callback": "x", "name": "y"}}
    (path / "model.json").write_text(json.dumps(meta))
    with pytest.raises(DataFormatError, match=r"/m: 'gpflow.monitor.tensorboard:ScalarToTensorBoard' is not a "
                                              r"LinearInputMap"):
        MLGPF.load(path)
    assert not logs.exists()
    bad = path.parent / "n"
    _model(input_map, np.random.default_rng(4)).save(bad)
    arrays = dict(np.load(bad / "constants.npz"))
    key = next(k for k in arrays if k.endswith(".data"))
    arrays[key] = arrays[key].copy()
    arrays[key][0] = np.nan
    np.savez(bad / "constants.npz", **arrays)
    with pytest.raises(DataFormatError, match=r"could not rebuild input_map.*NaN or inf"):
        MLGPF.load(bad)


def test_from_data_builds_a_mapped_model_without_a_dense_block_of_the_raw_width(problem, no_wide_dense):
    """from_data with an input map: the kernel is built for R inputs, k-means and the warm start see
    mapped blocks; the model trains one epoch, all under the guard."""
    X, Y, input_map = problem
    model = mlgpf_from_data(X, Y, kernel="se+linear", num_latent_gps=P, num_inducing=M, q_family="whitened",
                            warm_start=True, unit_sphere_inducing=True, input_map=input_map)
    assert (model.num_features, model.input_dim) == (D, R) and model.input_map is input_map
    assert model.kernel.kernel.kernels[0].lengthscales.shape == (R,)
    trace = fit(model, (X, Y), epochs=1, batch_size=100, progress=False)
    assert np.isfinite(trace["elbo"]).all()
    with pytest.raises(ShapeError, match=r"the input map takes D = 1000000 features but X has 7"):
        mlgpf_from_data(np.ones((10, 7)), np.eye(10, 3), num_latent_gps=2, num_inducing=3, input_map=input_map)


def test_parameters_load_only_behind_the_same_input_map(tmp_path, problem):
    from mlgp.errors import DataFormatError

    X, Y, input_map = problem
    path = _model(input_map, np.random.default_rng(6)).save(tmp_path / "m")
    same = _model(LinearInputMap(input_map.matrix), np.random.default_rng(7))
    same.load_parameters(path)  # an equal map (another object) is fine
    other = sp.csr_matrix(input_map.matrix, copy=True)
    other.data[:10] *= -1.0
    with pytest.raises(DataFormatError, match=r"trained behind another input map than this model's"):
        _model(LinearInputMap(other), np.random.default_rng(7)).load_parameters(path)
