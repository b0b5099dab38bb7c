"""The GenEML estimator with ARD (``relevance_prior``): the fitted relevances and effective rank,
save / load, ``n_components`` above min(N, K), and the priors it refuses."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from mlgp.errors import ArgumentError
from mlgp.geneml import GenEML
from mlgp.geneml.relevance import components_in_use, effective_rank


@pytest.fixture(scope="module")
def data():
    from _clock import random_problem

    return random_problem(200, 20, 12, seed=2)


@pytest.mark.parametrize("inference", ["em", "online-em", "gibbs"])
def test_a_fit_with_relevances_keeps_them_and_saves_them(data, inference, tmp_path):
    """relevance_ (k,) > 0 (the mode at V_ for EM), the effective rank of the training ψ, and a
    saved and loaded estimator with the same relevances, rank and scores."""
    X, Y = data
    est = GenEML(n_components=5, max_iter=3, num_results=3, num_burnin_steps=1, num_chains=1, inference=inference,
                 relevance_prior=(2.0, 1.0)).fit(X, Y)
    assert est.relevance_.shape == (5,) and np.all(est.relevance_ > 0)
    if inference == "em":
        np.testing.assert_allclose(est.relevance_, (2.0 - 1 + 6) / (1.0 + 0.5 * np.sum(est.V_ ** 2, axis=0)), rtol=1e-12)
    assert est.effective_rank_ == effective_rank(np.asarray(X @ est.W_), est.V_)
    loaded = GenEML.load(est.save(tmp_path / "ard"))
    np.testing.assert_array_equal(loaded.relevance_, est.relevance_)
    assert (loaded.n_components_, loaded.effective_rank_) == (5, est.effective_rank_)
    assert loaded.components_in_use_ == est.components_in_use_ == components_in_use(est.W_, est.V_)
    np.testing.assert_array_equal(loaded.predict_proba(X[:7]), est.predict_proba(X[:7]))
    assert GenEML(n_components=5, max_iter=1).fit(X, Y).relevance_ is None
    if inference == "gibbs":  # no U kept: u's spread about x W is its prior's, which the relevances do not scale
        np.testing.assert_array_equal(est.residual_covariance_, np.eye(5))


def test_ard_with_a_small_rate_switches_dimensions_off(tmp_path):
    """Rank-two labels of sparse features, k = K = 12: with a relevance rate of 1e-3 ARD switches
    dimensions off (``components_in_use_`` below k, their relevances at the conditional's cap
    (a − 1 + K/2) / b), where without ARD every dimension stays in use."""
    from scipy import sparse

    rng = np.random.default_rng(0)
    N, D, K = 200, 20, 12
    X = sparse.random(N, D, density=0.3, random_state=1, format="csr")
    logits = (X @ rng.standard_normal((D, 2))) @ rng.standard_normal((2, K)) * 2.0 - 1.5
    Y = sparse.csr_matrix((rng.random((N, K)) < 1 / (1 + np.exp(-logits))).astype(float))
    assert GenEML(n_components=K, exposure=None).fit(X, Y).components_in_use_ == K
    ard = GenEML(n_components=K, exposure=None, relevance_prior=(1.0, 1e-3)).fit(X, Y)
    assert 2 <= ard.components_in_use_ < K
    capped = ard.relevance_ > 0.99 * (K / 2) / 1e-3
    assert np.count_nonzero(capped) == K - ard.components_in_use_
    assert GenEML.load(ard.save(tmp_path / "ard")).components_in_use_ == ard.components_in_use_


def test_more_components_than_min_n_k_are_cut_with_a_warning(data):
    X, Y = data
    with pytest.warns(UserWarning, match="n_components=40 is more than min\\(N, K\\) = min\\(200, 12\\); using 12"):
        est = GenEML(n_components=40, max_iter=1).fit(X, Y)
    assert est.n_components_ == 12 and est.V_.shape == (12, 12) and est.W_.shape == (20, 12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert GenEML(n_components=12, max_iter=1).fit(X, Y).n_components_ == 12


@pytest.mark.parametrize("params, message", [
    (dict(relevance_prior=(0.0, 1.0)), "relevance_prior's shape and rate must be finite and > 0"),
    (dict(relevance_prior=(1.0, np.inf)), "relevance_prior's shape and rate must be finite and > 0"),
    (dict(relevance_prior=(1.0, 2.0, 3.0)), "relevance_prior must be None or a pair"),
    (dict(relevance_prior=(1.0, 1.0), precision_prior=(1.0, 1.0), inference="gibbs"), "choose one"),
])
def test_bad_relevance_priors_are_refused_before_any_work(data, params, message, monkeypatch):
    import mlgp.geneml.estimator as estimator_module

    monkeypatch.setattr(estimator_module, "INFERENCES", {})  # any inference reached would raise KeyError
    with pytest.raises(ArgumentError, match=message):
        GenEML(**params).fit(*data)
