"""Scoring MLGPF: the model's mean utilities f̄ = Φ m(x) + b and E_q[σ(f)] of a block of the kernel's
inputs (one compiled function per model, no retracing warnings when many models predict in one
process, a copy scoring with its own parameters), and the one entrance to scoring raw rows, the
estimator around the model (``MLGPFClassifier.from_model``): its scores are the model's mean
utilities of the mapped rows, for CSR or dense input and any batch size, float64, with the
estimator's input checks. The model has no scoring methods of its own."""

from __future__ import annotations

import logging

import gpflow
import numpy as np
import pytest
import scipy.sparse as sp
import tensorflow as tf
from _rounding import assert_topk_close

from mlgp.errors import ArgumentError, ShapeError
from mlgp.kernels import make_kernel
from mlgp.likelihoods import MultiLabelBernoulli
from mlgp.models import MLGPF, mlgpf_from_data
from mlgp.models._mean import compiled_mean_utilities
from mlgp.recipes import MLGPFClassifier
from mlgp.scores import TopK

D, K, P, M = 4, 7, 3, 5


def small_model(seed: int, kernel: str = "se+linear", whiten: bool = False) -> MLGPF:
    rng = np.random.default_rng(seed)
    lik = MultiLabelBernoulli(K, P, loadings=rng.normal(size=(K, P)), bias=rng.normal(size=K))
    q_sqrt = np.stack([np.tril(0.2 * rng.normal(size=(M, M)), -1) + np.diag(rng.uniform(0.3, 0.9, M)) for _ in range(P)])
    return MLGPF(make_kernel(kernel, D), lik, rng.normal(size=(M, D)), num_data=50,
                 q_mu=rng.normal(size=(M, P)), q_sqrt=q_sqrt, q_family="whitened" if whiten else "cholesky")


@pytest.fixture(scope="module")
def model_and_inputs():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(11, D))
    X[rng.random(X.shape) < 0.4] = 0.0
    return small_model(1), X, sp.csr_matrix(X)


class _Messages(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_the_model_has_no_scoring_methods_of_its_own():
    for name in ("decision_function", "predict_topk", "predict_scores", "predict_proba"):
        assert not hasattr(MLGPF, name), name
    assert callable(MLGPF.mean_utilities) and callable(MLGPF.label_probabilities)


@pytest.mark.slow
def test_no_retracing_warning_when_many_models_predict():
    """Six models, each scoring with two batch sizes and then CSR input for its top labels, then six
    more that score once each: a model's first trace is not retracing. Under the former
    ``@tf.function(reduce_retracing=True)`` method TensorFlow warned "5 out of the last 11 calls to
    <function MLGPF._mean_utilities …> triggered tf.function retracing"; with a closure compiled
    per model (one Python code object for all models) the second phase still warned."""
    handler = _Messages()
    logger = tf.get_logger()
    logger.addHandler(handler)
    try:
        rng = np.random.default_rng(5)
        for i, (kernel, whiten) in enumerate([("se", False), ("linear", True), ("se+linear", False)] * 2):
            est = MLGPFClassifier.from_model(small_model(10 + i, kernel, whiten))
            X = rng.normal(size=(7, D))
            est.decision_function(X, batch_size=7)
            est.decision_function(X, batch_size=3)
            est.predict_topk(sp.csr_matrix(X), 2)
        for i in range(6):
            MLGPFClassifier.from_model(small_model(20 + i)).predict_topk(rng.normal(size=(5, D)), 2)
    finally:
        logger.removeHandler(handler)
    assert not [m for m in handler.messages if "retracing" in m], handler.messages


def test_one_trace_per_model_for_every_batch_size(model_and_inputs):
    _, X, _ = model_and_inputs
    model = small_model(2)
    est = MLGPFClassifier.from_model(model)
    for batch_size in (1, 4, 11, 100):
        est.decision_function(X, batch_size=batch_size)
    assert compiled_mean_utilities(model) is compiled_mean_utilities(model)
    assert compiled_mean_utilities(model).experimental_get_tracing_count() == 1


def test_mean_utilities_are_phi_times_latent_mean_plus_bias(model_and_inputs):
    model, X, _ = model_and_inputs
    mu, _ = model.predict_f(X)
    ref = mu.numpy() @ model.likelihood.loadings.numpy().T + model.likelihood.bias.numpy()
    f = model.mean_utilities(model.model_inputs(X))
    assert f.shape == (11, K) and f.dtype == np.float64
    np.testing.assert_allclose(f, ref, rtol=1e-12, atol=1e-12)


def test_the_estimators_scores_are_the_models_mean_utilities(model_and_inputs):
    """One block: the estimator's scores are ``mean_utilities(model_inputs(X))`` bit for bit; other
    batch sizes are other kernels, equal to rounding (labels exactly away from near-ties); CSR
    and dense input alike; float64."""
    model, X, Xs = model_and_inputs
    est = MLGPFClassifier.from_model(model)
    f = model.mean_utilities(model.model_inputs(X))
    for features in (X, Xs):
        scores = est.decision_function(features)
        assert scores.dtype == np.float64
        np.testing.assert_array_equal(scores, f)
        top = est.predict_topk(features, 3)
        np.testing.assert_array_equal(top.indices, np.argsort(-f, axis=1, kind="stable")[:, :3])
        np.testing.assert_array_equal(top.scores, np.take_along_axis(f, top.indices, axis=1))
        for batch_size in (1, 4, 11):
            np.testing.assert_allclose(est.decision_function(features, batch_size=batch_size), f, rtol=1e-12, atol=1e-12)
            top = est.predict_topk(features, 3, batch_size=batch_size)
            assert isinstance(top, TopK)
            assert_topk_close(top, f, rtol=1e-12, atol=1e-12)


def test_top_k_ties_go_to_the_lower_label(model_and_inputs):
    """Equal utilities (Φ = 0, a bias with repeated values) rank by label index."""
    model, X, _ = model_and_inputs
    twin = gpflow.utilities.deepcopy(model)
    twin.likelihood.loadings.assign(np.zeros((K, P)))
    twin.likelihood.bias.assign(np.array([0.0, 1.0, 0.0, 1.0, 2.0, 1.0, 0.0]))
    top = MLGPFClassifier.from_model(twin).predict_topk(X, 5, batch_size=4)
    np.testing.assert_array_equal(top.indices, np.tile([4, 1, 3, 5, 0], (X.shape[0], 1)))


def test_predict_f_accepts_csr(model_and_inputs):
    model, X, Xs = model_and_inputs
    for dense, sparse in zip(model.predict_f(X), model.predict_f(Xs)):
        np.testing.assert_array_equal(sparse.numpy(), dense.numpy())
    mu, var = model.predict_f(sp.csr_matrix(X, dtype=np.float32))
    np.testing.assert_allclose(mu.numpy(), model.predict_f(X)[0].numpy(), rtol=1e-6)


def test_predict_proba_in_batches(model_and_inputs):
    model, X, Xs = model_and_inputs
    mu, var = model.predict_f(X)
    ref = model.likelihood.predict_mean_and_var(X, mu, var)[0].numpy()
    assert model.label_probabilities(model.model_inputs(X)).dtype == np.float64
    est = MLGPFClassifier.from_model(model)
    for batch_size in (1, 5, 11):
        for features in (X, Xs):
            np.testing.assert_allclose(est.predict_proba(features, batch_size=batch_size), ref, rtol=1e-12, atol=1e-14)


def test_a_float32_model_scores_in_float64():
    rng = np.random.default_rng(3)
    X, Y = rng.normal(size=(30, D)), (rng.random((30, K)) < 0.4).astype(float)
    model = mlgpf_from_data(X, Y, kernel="se", num_latent_gps=2, num_inducing=5, dtype="float32")
    est = MLGPFClassifier.from_model(model)
    f = est.decision_function(X[:6])
    assert model.float_type == np.float32 and f.dtype == np.float64 and est.predict_proba(X[:6]).dtype == np.float64
    np.testing.assert_array_equal(f, model.mean_utilities(model.model_inputs(X[:6])))


def test_scoring_rejects_bad_arguments(model_and_inputs):
    model, X, _ = model_and_inputs
    est = MLGPFClassifier.from_model(model)
    with pytest.raises(ShapeError, match="X has 5 features, but MLGPFClassifier is expecting 4 features"):
        est.decision_function(np.zeros((3, 5)))
    with pytest.raises(ShapeError, match="NaN"):
        est.decision_function(np.full((3, 4), np.nan))
    with pytest.raises(ArgumentError, match="batch_size must be a positive integer"):
        est.predict_proba(X, batch_size=0)
    with pytest.raises(ShapeError, match="top_k=8 exceeds the number of labels K=7"):
        est.predict_topk(X, 8)
    with pytest.raises(ShapeError, match="features but the model expects D = 4"):
        model.model_inputs(np.zeros((3, 5)))


def test_a_copy_scores_with_its_own_parameters(model_and_inputs):
    """The compiled function is per model: a deep copy made after predicting does not reuse the original's."""
    model, X, _ = model_and_inputs
    inputs = model.model_inputs(X)
    before = model.mean_utilities(inputs)
    twin = gpflow.utilities.deepcopy(model)
    twin.likelihood.bias.assign(twin.likelihood.bias.numpy() + 1.0)
    assert compiled_mean_utilities(twin) is not compiled_mean_utilities(model)
    np.testing.assert_allclose(twin.mean_utilities(inputs), before + 1.0, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(model.mean_utilities(inputs), before)
