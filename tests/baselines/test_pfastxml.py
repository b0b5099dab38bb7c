"""Tests of mlgp.baselines.PfastXML and PfastreXML: the inverse propensities and the propensity-weighted
DCG split loss the trees are grown with, PfastreXML with alpha = 1 ranking as PfastXML, the re-ranked
scores against a dense NumPy computation of the tail classifier, and the validation of gamma and
alpha."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from _rounding import assert_topk_close
from sklearn.utils._param_validation import InvalidParameterError

import mlgp.baselines._fastxml.growing
import mlgp.baselines.fastxml
from mlgp.baselines import FastXML, PfastreXML, PfastXML
from mlgp.metrics import inverse_propensity
from mlgp.scores import topk


def _data(rng: np.random.Generator, N: int = 80, D: int = 10, K: int = 6):
    """Non-negative features (no empty rows) and labels with very different frequencies."""
    X = rng.random((N, D)) * (rng.random((N, D)) < 0.5)
    X[np.arange(N), rng.integers(0, D, size=N)] += 1.0
    Y = (rng.random((N, K)) < np.linspace(0.08, 0.6, K)).astype(np.int64)
    Y[np.arange(N), np.argmax(X[:, :K], axis=1)] = 1
    return X, Y


def _assert_same_forest(a, b) -> None:
    A, B = a.forest_.to_arrays(), b.forest_.to_arrays()
    assert A.keys() == B.keys()
    for key in A:
        np.testing.assert_array_equal(A[key], B[key], err_msg=key)


@pytest.mark.parametrize("a, b", [(0.55, 1.5), (0.6, 2.6), (0.5, 0.4)])
def test_inverse_propensities_weight_the_dcg_split_loss(rng, monkeypatch, a, b) -> None:
    grown = []
    original = mlgp.baselines._fastxml.growing.grow_tree

    def recording(X, Y, G, discount, *args):
        grown.append((Y, G, discount))
        return original(X, Y, G, discount, *args)

    monkeypatch.setattr(mlgp.baselines._fastxml.growing, "grow_tree", recording)
    X, Y = _data(rng)
    est = PfastXML(n_estimators=2, max_leaf=8, propensity_a=a, propensity_b=b, random_state=0,
                   calibration=None).fit(X, Y)
    assert est.split_loss == "dcg"
    # w_l = 1 + (ln N − 1)(b + 1)^a (N_l + b)^(−a), written out
    N, counts = Y.shape[0], Y.sum(axis=0)
    w = 1.0 + (np.log(N) - 1.0) * (b + 1.0) ** a * (counts + b) ** (-a)
    np.testing.assert_allclose(est.inv_propensity_, w, rtol=1e-13)
    np.testing.assert_allclose(est.inv_propensity_, inverse_propensity(Y, a, b), rtol=1e-15)
    assert len(grown) == 2
    for Y_seen, G, discount in grown:
        np.testing.assert_array_equal(Y_seen.toarray(), Y)  # leaves count plain labels
        np.testing.assert_allclose(G.toarray(), Y * w[None, :], rtol=1e-13)  # DCG: no point weights
        np.testing.assert_allclose(discount, 1.0 / np.log2(np.arange(6) + 2.0), rtol=1e-15)
    # the weights change the trees: plain DCG grows others from the same seeds
    plain = FastXML(n_estimators=2, max_leaf=8, split_loss="dcg", random_state=0).fit(X, Y)
    np.testing.assert_array_equal(plain.tree_seeds_, est.tree_seeds_)
    A, B = plain.forest_.to_arrays(), est.forest_.to_arrays()
    assert any(A[k].shape != B[k].shape or not np.array_equal(A[k], B[k]) for k in ("W.data", "bias", "leaf_size"))


def test_pfastrexml_with_alpha_one_ranks_as_pfastxml(rng) -> None:
    X, Y = _data(rng)
    X_test = _data(np.random.default_rng(5), N=30)[0]
    common = dict(n_estimators=3, max_leaf=6, propensity_a=0.6, propensity_b=2.6, random_state=3)
    p = PfastXML(**common).fit(X, Y)
    re = PfastreXML(alpha=1.0, gamma=7.0, **common).fit(X, Y)
    _assert_same_forest(p, re)
    np.testing.assert_array_equal(re.decision_function(X_test), p.decision_function(X_test))
    for k in (1, 4, 6):
        np.testing.assert_array_equal(re.predict_topk(X_test, k).indices, p.predict_topk(X_test, k).indices)


def _unit_rows(A: np.ndarray) -> np.ndarray:
    norm = np.sqrt((A ** 2).sum(axis=1, keepdims=True))
    return np.divide(A, norm, out=np.zeros_like(A), where=norm > 0)


@pytest.mark.parametrize("gamma, alpha", [(30.0, 0.8), (3.0, 0.5), (1.0, 0.0), (0.0, 0.3)])
def test_rerank_is_the_tail_classifier_on_the_candidates(rng, gamma, alpha) -> None:
    X, Y = _data(rng, N=60)
    X_test = _data(np.random.default_rng(9), N=25)[0]
    X_test[3] *= 7.0  # the scale of a point does not matter
    est = PfastreXML(n_estimators=3, max_leaf=6, gamma=gamma, alpha=alpha, random_state=1).fit(sp.csr_matrix(X), Y)
    # the tree scores pf: the reached leaves' distributions averaged over the trees
    dist = est.forest_.leaf_labels.toarray()
    for Xe in (X, X_test):
        pf = dist[est.forest_.leaves(sp.csr_matrix(Xe))].mean(axis=1)
        Xn = _unit_rows(Xe)
        counts = Y.sum(axis=0).astype(float)
        C = (Y.T.astype(float) @ _unit_rows(X)) / np.maximum(counts, 1)[:, None]   # c_l: mean of x̂, (K, D)
        d2 = ((Xn[:, None, :] - C[None, :, :]) ** 2).sum(axis=-1)    # ‖x̂ − c_l‖², (n, K)
        tail = 1.0 / (1.0 + np.exp(gamma * d2))
        expected = np.where(pf > 0, pf ** alpha * tail ** (1.0 - alpha), 0.0)
        S = est.decision_function(Xe)
        np.testing.assert_allclose(S, expected, rtol=1e-10, atol=1e-300)
        assert np.array_equal(S > 0, pf > 0) and S.max() <= 1.0
        # `expected` is another computation (equal to 1e-10): the ranking agrees away from near-ties
        assert_topk_close(est.predict_topk(Xe, 4), expected, rtol=1e-10, atol=1e-300)
    np.testing.assert_allclose(est.centroids_.toarray(), C, rtol=1e-12, atol=1e-15)


def test_predict_topk_matches_decision_function_when_the_tail_underflows(rng) -> None:
    """With a large gamma σ(−γ d²) is 0 in float64 for distant candidates: they score exactly 0,
    like the labels no leaf reached, and rank among them by label index."""
    X, Y = _data(rng, N=60)
    est = PfastreXML(n_estimators=3, max_leaf=5, gamma=1e4, random_state=0).fit(X, Y)
    with np.errstate(over="ignore"):
        S = est.decision_function(X)
        t = est.predict_topk(X, 6)
    ref = topk(S, 6)
    np.testing.assert_array_equal(t.scores, ref.scores)
    np.testing.assert_array_equal(t.indices, ref.indices)


@pytest.mark.parametrize("params, message", [
    ({"alpha": -0.1}, r"'alpha' parameter of PfastreXML must be a float in the range \[0(\.0)?, 1(\.0)?\]"),
    ({"alpha": 1.5}, r"'alpha' parameter of PfastreXML must be a float in the range \[0(\.0)?, 1(\.0)?\]"),
    ({"gamma": -1.0}, r"'gamma' parameter of PfastreXML must be a float in the range \[0(\.0)?, inf\)"),
    ({"propensity_a": 0.0}, r"'propensity_a' parameter of PfastreXML must be a float in the range"),
    ({"propensity_b": -1.0}, r"'propensity_b' parameter of PfastreXML must be a float in the range"),
])
def test_bad_parameters_are_refused(rng, params, message) -> None:
    est = PfastreXML(n_estimators=2, **params)
    with pytest.raises(InvalidParameterError, match=message):
        est.fit(*_data(rng, N=20))
    assert not hasattr(est, "forest_")
    with pytest.raises(ValueError, match=message):  # InvalidParameterError is a ValueError
        est.fit(*_data(rng, N=20))


@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_alpha_bounds_are_accepted(rng, alpha) -> None:
    X, Y = _data(rng, N=30)
    S = PfastreXML(n_estimators=2, max_leaf=10, alpha=alpha, random_state=0).fit(X, Y).decision_function(X)
    assert S.min() >= 0.0 and S.max() <= 1.0 and np.any(S > 0)
