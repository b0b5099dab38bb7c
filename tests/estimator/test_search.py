"""Tests of mlgp.estimator.search: the one grid search, through a small ridge estimator searched by
its default path (a fit of each candidate on each fold), against scikit-learn's GridSearchCV on the
same folds and scorers; the held-out split; bad folds refused before any fit; save / load of the whole
search; predict_proba only where the searched class has probabilities."""

from __future__ import annotations

from numbers import Real

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.stats import rankdata
from sklearn.metrics import f1_score, hamming_loss, make_scorer
from sklearn.model_selection import GridSearchCV, KFold, ParameterGrid, ShuffleSplit
from sklearn.utils._param_validation import Interval, StrOptions

from mlgp.errors import ArgumentError, BudgetWarning, ShapeError
from mlgp.estimator import GridSearch, HeldOutSplit, MultiLabelEstimator, ParameterError
from mlgp.estimator.search_scores import SCORINGS
from mlgp.estimator.budget import MAX_SECONDS


class SearchProbeRidge(MultiLabelEstimator):
    """Ridge regression of the 0/1 labels; probabilities its clipped outputs."""

    _parameter_constraints = {"alpha": [Interval(Real, 0, None, closed="neither")], "threshold": [Real]}

    def __init__(self, *, alpha: float = 1.0, threshold: float = 0.5) -> None:
        self.alpha = alpha
        self.threshold = threshold

    def fit(self, X, Y):
        X, Y = self._validate_fit_data(X, Y)
        X = X.toarray() if sp.issparse(X) else X
        self.coef_ = np.linalg.solve(X.T @ X + self.alpha * np.eye(X.shape[1]), X.T @ Y.toarray())
        self._set_fitted_shape(X.shape[0], X.shape[1], Y.shape[1])
        return self

    def _decision_block(self, xb):
        return xb @ self.coef_

    def _proba_block(self, xb):
        return np.clip(xb @ self.coef_, 0.0, 1.0)

    def _fitted_arrays(self) -> dict:
        return {"coef_": self.coef_}

    def _restore_fitted(self, state) -> None:
        super()._restore_fitted(state)
        self.coef_ = state.array("coef_", (self.n_features_in_, self.n_labels_))


class SearchProbeRidgeCV(GridSearch):
    """The ridge's ``alpha`` and ``threshold`` by K-fold cross-validation."""

    _parameter_constraints = {"alphas": [list, None], "thresholds": [list, None], "cv": ["cv_object"],
                              "scoring": [StrOptions(set(SCORINGS))]}
    _searched = SearchProbeRidge

    def __init__(self, *, alphas=None, thresholds=None, cv=3, scoring="hamming_loss") -> None:
        self.alphas = alphas
        self.thresholds = thresholds
        self.cv = cv
        self.scoring = scoring

    def _param_grid(self, X, Y, context) -> dict:
        return {"alpha": self.alphas or [1.0], "threshold": self.thresholds or [0.5]}


class SearchProbeRanker(MultiLabelEstimator):
    """Scores without probabilities: the training label frequencies plus ``shift`` times feature 0."""

    _parameter_constraints = {"shift": [Real]}

    def __init__(self, *, shift: float = 0.0) -> None:
        self.shift = shift

    def fit(self, X, Y):
        X, Y = self._validate_fit_data(X, Y)
        self.freq_ = np.asarray(Y.mean(axis=0)).ravel()
        self._set_fitted_shape(X.shape[0], X.shape[1], Y.shape[1])
        return self

    def _decision_block(self, xb):
        return self.freq_ + self.shift * np.arange(self.n_labels_) * xb[:, :1]


class SearchProbeRankerCV(GridSearch):
    """The ranker's ``shift`` on one held-out split, optionally not refitted."""

    _parameter_constraints = {"shifts": [list, None], "refit": ["boolean"], "scoring": [StrOptions(set(SCORINGS))]}
    _searched = SearchProbeRanker

    def __init__(self, *, shifts=None, refit=True, scoring="precision@1") -> None:
        self.shifts = shifts
        self.refit = refit
        self.scoring = scoring

    def _cv(self):
        return HeldOutSplit(0.25, 3)

    def _param_grid(self, X, Y, context) -> dict:
        return {"shift": self.shifts or [0.0]}


def _data(seed=0, N=80, D=5, K=6):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, D))
    Y = (X @ rng.normal(size=(D, K)) + 0.8 * rng.normal(size=(N, K)) > 0.3).astype(np.int64)
    return X, Y, rng.normal(size=(20, D))


def _precision_at_3(est, X, Y):  # written independently of mlgp.metrics
    top = np.argsort(-est.decision_function(X), axis=1, kind="stable")[:, :3]
    return float(np.mean(np.take_along_axis(np.asarray(Y), top, axis=1).sum(axis=1) / 3))


SCORERS = {"hamming_loss": make_scorer(hamming_loss, greater_is_better=False),
           "f1_example": make_scorer(f1_score, average="samples", zero_division=0),
           "f1_macro": make_scorer(f1_score, average="macro", zero_division=0),
           "precision@3": _precision_at_3}


@pytest.mark.parametrize("scoring", sorted(SCORERS))
def test_k_fold_search_equals_grid_search_cv(scoring):
    X, Y, X_test = _data()
    grid = {"alpha": [0.1, 1.0, 30.0], "threshold": [0.3, 0.5]}
    folds = KFold(4, shuffle=True, random_state=1)
    ours = SearchProbeRidgeCV(alphas=grid["alpha"], thresholds=grid["threshold"], cv=folds, scoring=scoring).fit(X, Y)
    ref = GridSearchCV(SearchProbeRidge(), grid, cv=folds, scoring=SCORERS[scoring]).fit(X, Y)
    assert ours.cv_results_["params"] == ref.cv_results_["params"] and ours.n_splits_ == 4
    for key in ["mean_test_score", "std_test_score", *(f"split{i}_test_score" for i in range(4))]:
        np.testing.assert_allclose(ours.cv_results_[key], ref.cv_results_[key], rtol=0, atol=1e-12, err_msg=key)
    np.testing.assert_array_equal(ours.cv_results_["rank_test_score"],
                                  rankdata(-np.round(ref.cv_results_["mean_test_score"], 12), method="min"))
    for name in grid:
        np.testing.assert_array_equal(ours.cv_results_[f"param_{name}"], ref.cv_results_[f"param_{name}"])
    assert set(ref.cv_results_) == set(ours.cv_results_)  # scikit-learn's key layout
    assert ours.best_params_ == ref.best_params_ and ours.best_index_ == ref.best_index_
    assert ours.best_score_ == pytest.approx(ref.best_score_, abs=1e-12)
    np.testing.assert_array_equal(ours.decision_function(X_test), ref.best_estimator_.decision_function(X_test))
    np.testing.assert_array_equal(ours.predict(X_test), ref.best_estimator_.predict(X_test))
    np.testing.assert_array_equal(ours.predict_proba(X_test), ref.best_estimator_.predict_proba(X_test))
    for key in ("mean_fit_time", "mean_score_time"):
        assert np.all(ours.cv_results_[key] > 0) and np.all(np.isfinite(ours.cv_results_[f"std{key[4:]}"]))


def test_held_out_split_equals_grid_search_cv_on_the_same_split():
    X, Y, X_test = _data(1)
    ours = SearchProbeRankerCV(shifts=[-1.0, 0.0, 0.5, 2.0]).fit(X, Y)
    split = HeldOutSplit(0.25, 3)
    ref = GridSearchCV(SearchProbeRanker(), {"shift": [-1.0, 0.0, 0.5, 2.0]}, cv=split,
                       scoring=lambda est, Xv, Yv: float(np.mean(np.asarray(Yv)[
                           np.arange(len(Yv)), np.argmax(est.decision_function(Xv), axis=1)]))).fit(X, Y)
    np.testing.assert_array_equal(ours.cv_results_["mean_test_score"], ref.cv_results_["mean_test_score"])
    np.testing.assert_array_equal(ours.cv_results_["split0_test_score"], ref.cv_results_["split0_test_score"])
    assert ours.best_params_ == ref.best_params_ and ours.n_splits_ == 1
    fitting, held = next(split.split(X))
    order = np.random.default_rng(3).permutation(80)  # the first 20 entries held out (held_out_split)
    np.testing.assert_array_equal(held, np.sort(order[:20]))
    np.testing.assert_array_equal(fitting, np.sort(order[20:]))
    assert not hasattr(ours, "predict_proba") and hasattr(SearchProbeRidgeCV(), "predict_proba")


@pytest.mark.parametrize("n, cv, error, message", [
    (1, 2, ShapeError, r"SearchProbeRidgeCV needs at least 2 rows to cross-validate, got 1 sample"),
    (3, 4, ShapeError, r"SearchProbeRidgeCV: cv=4 folds need at least 4 rows, got 3"),
    (10, ShuffleSplit(2, test_size=15), ShapeError, r"cv=ShuffleSplit\(.*\) cannot split the 10 rows"),
    (3, HeldOutSplit(0.1), ArgumentError, r"validation_fraction=0.1 of N=3 rows holds out 0 row\(s\)"),
])
def test_bad_splits_are_refused_before_any_fit(monkeypatch, n, cv, error, message):
    X, Y, _ = _data()
    monkeypatch.setattr(SearchProbeRidge, "fit", lambda *a: pytest.fail("fitted before the split was checked"))
    with pytest.raises(error, match=message):
        SearchProbeRidgeCV(cv=cv).fit(X[:n], Y[:n])


def test_bad_points_and_cut_offs_are_refused_before_any_fit(monkeypatch):
    X, Y, _ = _data()
    monkeypatch.setattr(SearchProbeRidge, "fit", lambda *a: pytest.fail("fitted before the grid was checked"))
    with pytest.raises(ParameterError, match="'alpha' parameter of SearchProbeRidge"):
        SearchProbeRidgeCV(alphas=[1.0, -1.0]).fit(X, Y)
    with pytest.raises(ArgumentError, match=r"scoring='precision@5' ranks the top 5 labels, but Y has only K=3"):
        SearchProbeRidgeCV(scoring="precision@5").fit(X, Y[:, :3])


def test_save_and_load_keep_the_whole_search(tmp_path):
    X, Y, X_test = _data(2)
    search = SearchProbeRidgeCV(alphas=[0.1, 3.0], thresholds=[0.4, 0.6], cv=KFold(3), scoring="f1_micro").fit(X, Y)
    loaded = SearchProbeRidgeCV.load(search.save(tmp_path / "search"))
    assert loaded.cv_results_.keys() == search.cv_results_.keys()
    assert loaded.cv_results_["params"] == search.cv_results_["params"]
    for key in set(search.cv_results_) - {"params"}:
        np.testing.assert_array_equal(loaded.cv_results_[key], search.cv_results_[key], err_msg=key)
    assert (loaded.best_params_, loaded.best_index_, loaded.best_score_, loaded.n_splits_) == \
        (search.best_params_, search.best_index_, search.best_score_, 3)
    np.testing.assert_array_equal(loaded.predict(X_test), search.predict(X_test))
    np.testing.assert_array_equal(loaded.decision_function(X_test), search.decision_function(X_test))


def test_without_refit_the_search_reports_but_neither_scores_nor_saves(tmp_path):
    X, Y, X_test = _data()
    search = SearchProbeRankerCV(shifts=[0.0, 1.0], refit=False).fit(X, Y)
    assert not hasattr(search, "best_estimator_") and len(search.cv_results_["params"]) == 2
    assert search.cv_results_["params"] == list(ParameterGrid({"shift": [0.0, 1.0]}))
    for call in (lambda: search.decision_function(X_test), lambda: search.save(tmp_path / "s")):
        with pytest.raises(ArgumentError, match="refit=False"):
            call()


class SearchProbeBudgetedCV(SearchProbeRidgeCV):
    """The ridge search with the one budget (``max_seconds``), one candidate per block."""

    _parameter_constraints = {**SearchProbeRidgeCV._parameter_constraints, "max_seconds": MAX_SECONDS}

    def __init__(self, *, alphas=None, thresholds=None, cv=3, scoring="hamming_loss", max_seconds=None) -> None:
        super().__init__(alphas=alphas, thresholds=thresholds, cv=cv, scoring=scoring)
        self.max_seconds = max_seconds


def test_the_budget_stops_the_search_between_candidates_and_keeps_the_best_tried(monkeypatch):
    """Fake clock (1 s a reading): the first candidate is fitted on its 3 folds unlooked, then the
    budget is looked at before each (candidate, fold): 1, 2, 3 s for the second, 4 s before the
    third. 5 s leave the search 3.5 s: stopped at 4 s, the first two of the five candidates kept,
    and their best is the best of a search over those two alone."""
    from _clock import fake_clock

    X, Y, _ = _data()
    alphas = [0.1, 3.0, 10.0, 30.0, 100.0]
    fake_clock(monkeypatch)
    with pytest.warns(BudgetWarning, match=r"SearchProbeBudgetedCV: max_seconds=5 stopped the search after 2 of the "
                                           r"5 grid points \(4 s\): the best of those tried is kept"):
        cut = SearchProbeBudgetedCV(alphas=alphas, max_seconds=5.0).fit(X, Y)
    two = SearchProbeBudgetedCV(alphas=alphas[:2]).fit(X, Y)
    assert cut.search_stopped_ and not two.search_stopped_
    assert cut.cv_results_["params"] == two.cv_results_["params"] == [{"alpha": a, "threshold": 0.5} for a in alphas[:2]]
    for key in ("mean_test_score", "split2_test_score", "rank_test_score"):
        np.testing.assert_array_equal(cut.cv_results_[key], two.cv_results_[key])
    assert (cut.best_params_, cut.best_score_) == (two.best_params_, two.best_score_)
    np.testing.assert_array_equal(cut.best_estimator_.coef_, two.best_estimator_.coef_)
    fake_clock(monkeypatch)
    with pytest.warns(BudgetWarning, match="after 1 of the 5"):  # 2.5 s: 1.75 s, spent at the look at 2 s
        assert len(SearchProbeBudgetedCV(alphas=alphas, max_seconds=2.5).fit(X, Y).cv_results_["params"]) == 1
    fake_clock(monkeypatch)
    whole = SearchProbeBudgetedCV(alphas=alphas, max_seconds=100.0).fit(X, Y)
    assert not whole.search_stopped_ and len(whole.cv_results_["params"]) == 5
