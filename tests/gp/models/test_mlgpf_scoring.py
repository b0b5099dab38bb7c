"""MLGPF's scoring interface: decision_function and predict_topk (CSR or dense, any batch size)
against the latent marginals, predict_f on CSR, one compiled function per model and no retracing
warnings when many models predict in one process."""

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
from mlgp.models import MLGPF
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
            model = small_model(10 + i, kernel, whiten)
            X = rng.normal(size=(7, D))
            model.predict_scores(X, batch_size=7)
            model.predict_scores(X, batch_size=3)
            model.predict_scores(sp.csr_matrix(X), top_k=2)
        for i in range(6):
            small_model(20 + i).predict_scores(rng.normal(size=(5, D)), top_k=2)
    finally:
        logger.removeHandler(handler)
    assert not [m for m in handler.messages if "retracing" in m], handler.messages


def test_one_trace_per_model_for_every_batch_size(model_and_inputs):
    _, X, _ = model_and_inputs
    model = small_model(2)
    for batch_size in (1, 4, 11, 100):
        model.decision_function(X, batch_size=batch_size)
    assert model._compiled_mean_utilities().experimental_get_tracing_count() == 1


def test_decision_function_is_phi_times_latent_mean_plus_bias(model_and_inputs):
    model, X, Xs = model_and_inputs
    mu, _ = model.predict_f(X)
    ref = mu.numpy() @ model.likelihood.loadings.numpy().T + model.likelihood.bias.numpy()
    f = model.decision_function(X)
    assert f.shape == (11, K) and f.dtype == np.float64
    np.testing.assert_allclose(f, ref, rtol=1e-12, atol=1e-12)
    # other batch sizes are other kernels: equal to rounding, labels exactly away from near-ties
    for batch_size in (1, 4, 11):
        for features in (X, Xs):
            np.testing.assert_allclose(model.decision_function(features, batch_size=batch_size), f, rtol=1e-12, atol=1e-12)
            top = model.predict_topk(features, 3, batch_size=batch_size)
            assert isinstance(top, TopK)
            assert_topk_close(top, f, rtol=1e-12, atol=1e-12)
    # the alias for existing callers
    np.testing.assert_array_equal(model.predict_scores(X), model.decision_function(X))
    np.testing.assert_array_equal(model.predict_scores(X, top_k=3).indices, model.predict_topk(X, 3).indices)


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
    for batch_size in (1, 5, 11):
        np.testing.assert_allclose(model.predict_proba(Xs, batch_size=batch_size), ref, rtol=1e-12, atol=1e-14)


def test_scoring_rejects_bad_arguments(model_and_inputs):
    model, X, _ = model_and_inputs
    with pytest.raises(ShapeError, match="features but the model expects D = 4"):
        model.decision_function(np.zeros((3, 5)))
    with pytest.raises(ArgumentError, match="batch_size must be a positive integer"):
        model.predict_proba(X, batch_size=0)
    with pytest.raises(ShapeError, match="top_k=8 exceeds the number of labels K=7"):
        model.predict_topk(X, 8)


def test_a_copy_scores_with_its_own_parameters(model_and_inputs):
    """The compiled function is per model: a deep copy made after predicting does not reuse the original's."""
    model, X, _ = model_and_inputs
    before = model.decision_function(X)
    twin = gpflow.utilities.deepcopy(model)
    twin.likelihood.bias.assign(twin.likelihood.bias.numpy() + 1.0)
    np.testing.assert_allclose(twin.decision_function(X), before + 1.0, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(model.decision_function(X), before)
