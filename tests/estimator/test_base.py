"""Tests of mlgp.estimator.MultiLabelEstimator: the scoring methods over dense and sparse block hooks
(batches, the last partial block, top-k ties, thresholds), predict_proba only where a hook exists,
the one check of X per call and of (X, Y) per fit (the caller's matrices untouched), and the
keyword-only constructors and public surface of every estimator of mlgp.baselines."""

from __future__ import annotations

import doctest
import inspect

import numpy as np
import pytest
import scipy.sparse as sp
from _rounding import FLOAT64, assert_decisions_agree
from _small import SMALL, data
from sklearn.exceptions import NotFittedError

import mlgp.estimator.base as base_module
from mlgp import baselines
from mlgp.errors import ShapeError
from mlgp.estimator import MultiLabelEstimator
from mlgp.scores import TopK


class DenseScores(MultiLabelEstimator):
    """Scores ``X @ W`` with a fixed W (D, K); records the blocks its hook receives."""

    def __init__(self, *, threshold=0.5):
        self.threshold = threshold

    def fit(self, X, Y):
        X, Y = self._validate_fit_data(X, Y)
        self.fit_input_ = (X, Y)
        self.W_ = np.arange(X.shape[1] * Y.shape[1], dtype=np.float64).reshape(X.shape[1], Y.shape[1]) / 10.0
        self.blocks_ = []
        self._set_fitted_shape(X.shape[0], X.shape[1], Y.shape[1])
        return self

    def _decision_block(self, xb):
        self.blocks_.append(xb)
        return xb @ self.W_


class DenseScoresWithProba(DenseScores):
    """As DenseScores, with probabilities σ(scores) and ``predict`` from them."""

    _predict_from = "proba"

    def _proba_block(self, xb):
        return 1.0 / (1.0 + np.exp(-(xb @ self.W_)))


class SparseScores(MultiLabelEstimator):
    """CSR blocks in, sparse scores out: row i scores label j by ``x_ij`` where it is stored (a
    stored 0 stays a stored score); needs D = K."""

    _block_format = "csr"

    def __init__(self, *, threshold=0.5):
        self.threshold = threshold

    def fit(self, X, Y):
        X, Y = self._validate_fit_data(X, Y)
        self.fit_input_ = (X, Y)
        self.blocks_ = []
        self._set_fitted_shape(X.shape[0], X.shape[1], Y.shape[1])
        return self

    def _decision_block(self, xb):
        self.blocks_.append(xb)
        return sp.csr_matrix(xb, copy=True)


def test_docstring_example_runs() -> None:
    result = doctest.testmod(base_module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 5 and result.failed == 0


def _fit(cls, D: int = 4, K: int = 4):
    return cls().fit(np.ones((3, D)), np.eye(3, K, dtype=int))


# --------------------------------------------------------------------------- #
# Scoring
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("batch_size", [1, 3, 4, 10, 1000])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense X", "CSR X"])
def test_dense_hook_scores_every_block_and_keeps_the_last_partial_one(rng, batch_size, sparse) -> None:
    est = _fit(DenseScores, D=3, K=5)
    X = rng.normal(size=(10, 3))
    S = est.decision_function(sp.csr_matrix(X) if sparse else X, batch_size=batch_size)
    assert S.dtype == np.float64 and S.shape == (10, 5)
    # blocks of 1 to 10 rows take other BLAS kernels (gemv, gemm, with or without FMA) than one
    # product of 10 rows: equal to rounding
    np.testing.assert_allclose(S, X @ est.W_, **FLOAT64)
    sizes = [b.shape[0] for b in est.blocks_]
    assert sizes == [min(batch_size, 10 - s) for s in range(0, 10, batch_size)]  # e.g. 4, 4, 2
    assert all(isinstance(b, np.ndarray) and b.dtype == np.float64 for b in est.blocks_)


def test_topk_breaks_ties_by_the_lower_label_index_and_keeps_the_last_block() -> None:
    est = _fit(DenseScores, D=1, K=6)
    est.W_ = np.array([[1.0, 3.0, 3.0, 0.0, 3.0, 1.0]])
    X = np.arange(1.0, 8.0)[:, None]  # 7 rows: blocks of 3, 3, 1
    t = est.predict_topk(X, 4, batch_size=3)
    assert isinstance(t, TopK) and t.indices.shape == (7, 4)
    np.testing.assert_array_equal(t.indices, np.tile([1, 2, 4, 0], (7, 1)))
    np.testing.assert_array_equal(t.scores, X * np.array([3.0, 3.0, 3.0, 1.0]))
    with pytest.raises(ShapeError, match="top_k=7 exceeds the number of labels K=6"):
        est.predict_topk(X, 7)
    assert [b.shape[0] for b in est.blocks_] == [3, 3, 1]


def test_sparse_hook_gets_canonical_csr_and_absent_labels_rank_last(rng) -> None:
    # row 0 stores labels 3 and 1 (unsorted) with equal scores, and an explicit 0 for label 2
    X = sp.csr_matrix((np.array([0.5, 0.5, 0.0, 0.9]), np.array([3, 1, 2, 0]), np.array([0, 3, 3, 4])), shape=(3, 4))
    assert not X.has_sorted_indices
    before = (X.data.copy(), X.indices.copy(), X.indptr.copy())
    est = _fit(SparseScores)
    S = est.decision_function(X, batch_size=2)
    np.testing.assert_array_equal(S, [[0, 0.5, 0, 0.5], [0, 0, 0, 0], [0.9, 0, 0, 0]])
    assert all(sp.isspmatrix_csr(b) and b.has_canonical_format for b in est.blocks_)
    assert [b.shape[0] for b in est.blocks_] == [2, 1]
    t = est.predict_topk(X, 4, batch_size=2)
    np.testing.assert_array_equal(t.indices, [[1, 3, 2, 0], [0, 1, 2, 3], [0, 1, 2, 3]])
    np.testing.assert_array_equal(t.scores, [[0.5, 0.5, 0, 0], [0, 0, 0, 0], [0.9, 0, 0, 0]])
    for got, want in zip((X.data, X.indices, X.indptr), before):  # the caller's matrix is untouched
        np.testing.assert_array_equal(got, want)
    assert not X.has_sorted_indices
    est.decision_function(X.toarray())  # dense X reaches the hook as CSR too
    assert sp.isspmatrix_csr(est.blocks_[-1])


@pytest.mark.parametrize("threshold, expected", [(0.5, [[1, 0, 0, 1]]), (0.0, [[1, 1, 1, 1]]),
                                                 ([0.4, 0.0, 1.0, 0.6], [[1, 1, 0, 0]])])
def test_predict_thresholds_the_scores(threshold, expected) -> None:
    est = SparseScores(threshold=threshold).fit(np.ones((3, 4)), np.eye(3, 4, dtype=int))
    pred = est.predict(np.array([[0.5, 0.0, 0.2, 0.5]]))
    assert pred.dtype == np.int64
    np.testing.assert_array_equal(pred, expected)


def test_predict_proba_exists_only_with_its_hook(rng) -> None:
    plain, proba = _fit(DenseScores, D=2, K=3), _fit(DenseScoresWithProba, D=2, K=3)
    assert not hasattr(plain, "predict_proba") and not hasattr(DenseScores(), "predict_proba")
    assert hasattr(proba, "predict_proba")
    X = rng.normal(size=(5, 2))
    P = proba.predict_proba(sp.csr_matrix(X), batch_size=2)
    np.testing.assert_allclose(P, 1 / (1 + np.exp(-(X @ proba.W_))), **FLOAT64)  # blocks of 2 against one
    # from the probabilities (one block here, blocks of 2 above: equal to rounding, so no P near 0.5)
    assert_decisions_agree(proba.predict(X), (P >= 0.5).astype(np.int64), P, 0.5)


def test_each_call_checks_x_once_before_any_block(rng, monkeypatch) -> None:
    est = _fit(DenseScoresWithProba, D=2, K=3)
    calls = []
    original = base_module.check_features
    monkeypatch.setattr(base_module, "check_features", lambda *a, **k: calls.append(1) or original(*a, **k))
    X = rng.normal(size=(6, 2))
    for method, args in (("decision_function", ()), ("predict_topk", (2,)), ("predict", ()), ("predict_proba", ())):
        calls.clear()
        getattr(est, method)(X, *args, batch_size=2)
        assert len(calls) == 1, method
    X_bad = X.copy()
    X_bad[5, 1] = np.nan
    est.blocks_.clear()
    with pytest.raises(ShapeError, match=r"X contains NaN or inf \(first in row 5\)"):
        est.decision_function(X_bad, batch_size=1)
    with pytest.raises(ShapeError, match="X has 3 features, but DenseScoresWithProba is expecting 2 features"):
        est.predict_topk(np.ones((2, 3)), 1)
    assert est.blocks_ == []
    with pytest.raises(NotFittedError, match="This DenseScores instance is not fitted yet"):
        DenseScores().decision_function(X)


def test_fit_validation_converts_once_and_copies() -> None:
    X = sp.csr_matrix((np.array([2.0, 1.0]), np.array([2, 0]), np.array([0, 2, 2])), shape=(2, 3))
    Y = sp.csr_matrix((np.array([1, 0, 1]), np.array([1, 0, 0]), np.array([0, 2, 3])), shape=(2, 2))
    saved = [(m.data.copy(), m.indices.copy(), m.indptr.copy()) for m in (X, Y)]
    for cls in (DenseScores, SparseScores):
        Xf, Yf = cls().fit(X, Y).fit_input_
        assert sp.isspmatrix_csr(Yf) and Yf.dtype == np.float64 and Yf.has_canonical_format and Yf.nnz == 2
        assert sp.isspmatrix_csr(Xf) and Xf.dtype == np.float64
        assert Xf.has_canonical_format  # duplicates summed and indices sorted for every block format
    Xd, _ = DenseScores().fit(X.toarray(), Y.toarray()).fit_input_
    assert isinstance(Xd, np.ndarray) and Xd.dtype == np.float64
    for m, (data_, indices, indptr) in zip((X, Y), saved):  # the caller's matrices are untouched
        np.testing.assert_array_equal(m.data, data_)
        np.testing.assert_array_equal(m.indices, indices)
        np.testing.assert_array_equal(m.indptr, indptr)
    with pytest.raises(ShapeError, match=r"Y has 1 rows but the features have 2"):
        DenseScores().fit(X, Y[:1])


def test_fastxml_does_not_sort_the_callers_matrix() -> None:
    X, Y = data(N=30)
    Xu = sp.csr_matrix(X)
    Xu.indices, Xu.data = Xu.indices.copy(), Xu.data.copy()
    for r in range(Xu.shape[0]):  # reverse every row: the same matrix with unsorted indices
        s, e = Xu.indptr[r], Xu.indptr[r + 1]
        Xu.indices[s:e], Xu.data[s:e] = Xu.indices[s:e][::-1].copy(), Xu.data[s:e][::-1].copy()
    Xu.has_sorted_indices = False
    indices = Xu.indices.copy()
    est = baselines.FastXML(n_estimators=2, max_leaf=6, random_state=0).fit(Xu, Y)
    ref = baselines.FastXML(n_estimators=2, max_leaf=6, random_state=0).fit(X, Y)
    np.testing.assert_array_equal(est.decision_function(Xu), ref.decision_function(X))
    np.testing.assert_array_equal(Xu.indices, indices)


# --------------------------------------------------------------------------- #
# The estimators of mlgp.baselines on this base
# --------------------------------------------------------------------------- #
ESTIMATORS = [getattr(baselines, name) for name in baselines.__all__ if isinstance(getattr(baselines, name), type)]
HAS_PROBA = {cls.__name__ for cls in ESTIMATORS}  # every family states its probabilities


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_constructor_parameters_are_keyword_only(cls) -> None:
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    assert params and all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params)
    with pytest.raises(TypeError, match="takes 1 positional argument but 2 were given"):
        cls(params[0].default)


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_public_surface(cls) -> None:
    est = cls()
    assert isinstance(est, MultiLabelEstimator)
    assert hasattr(est, "predict_proba") == (cls.__name__ in HAS_PROBA)
    for method in ("fit", "decision_function", "predict_topk", "predict", "save", "load"):
        assert callable(getattr(est, method))


@pytest.mark.parametrize("name", sorted(SMALL))
def test_fitted_estimators_check_x_like_the_base(fitted, name) -> None:
    est = fitted(name)
    with pytest.raises(ShapeError, match=f"X has 5 features, but {type(est).__name__} is expecting 6 features"):
        est.decision_function(np.ones((2, 5)))
    assert hasattr(est, "predict_proba") == (type(est).__name__ in HAS_PROBA)


def test_lspc_keeps_its_class_label_outputs(fitted) -> None:
    est = fitted("LSPC-classes")
    X = data(seed=4, N=7)[0]
    assert est.decision_function(X).shape == (7, 3) and est.predict(X).dtype.kind == "U"
    two = baselines.LSPC(n_basis=10, random_state=0).fit(X, np.array([0, 1, 0, 1, 1, 0, 1]))
    d = two.decision_function(X, batch_size=3)
    q = two.basis_.design(X) @ two.coef_
    assert d.shape == (7,)
    np.testing.assert_allclose(d, q[:, 1] - q[:, 0], rtol=1e-12, atol=1e-12)


def test_fitted_estimators_keep_no_reference_to_the_callers_features() -> None:
    """MLkNN keeps its training features: a copy, so changing the caller's X later changes nothing."""
    from mlgp.baselines import MLkNN

    rng = np.random.default_rng(5)
    query = rng.random((6, 4))
    for X in (rng.random((30, 4)), sp.csr_matrix(rng.random((30, 4)))):
        Y = (rng.random((30, 3)) < 0.4).astype(int)
        est = MLkNN(n_neighbors=3).fit(X, Y)
        before = est.decision_function(query)
        (X.data if sp.issparse(X) else X)[:] = 0.0
        np.testing.assert_array_equal(est.decision_function(query), before)
        kept = est.features_.data if sp.issparse(est.features_) else est.features_
        assert not np.shares_memory(kept, X.data if sp.issparse(X) else X)
