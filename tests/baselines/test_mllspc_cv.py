"""Tests of mlgp.baselines.MLLSPCCV: its cross-validation equals GridSearchCV over MLLSPC on the
same folds (every score, the ranks, the refitted model), for each scoring; bad grids are refused."""

from __future__ import annotations

import numpy as np
import pytest
from _rounding import assert_decisions_agree, assert_topk_close
from scipy.stats import rankdata
from sklearn.metrics import f1_score, hamming_loss, make_scorer
from sklearn.model_selection import GridSearchCV, KFold

from mlgp.baselines import MLLSPC, MLLSPCCV
from mlgp.data import lspc_toy
from mlgp.errors import ShapeError

SCORERS = {
    "hamming_loss": make_scorer(hamming_loss, greater_is_better=False),
    "f1_example": make_scorer(f1_score, average="samples", zero_division=0),
    "f1_micro": make_scorer(f1_score, average="micro", zero_division=0),
    "f1_macro": make_scorer(f1_score, average="macro", zero_division=0),
    # precision@3 of the decision_function ranking, written independently of mlgp.metrics
    "precision@3": lambda est, X, Y: float(np.mean(np.take_along_axis(
        np.asarray(Y), np.argsort(-est.decision_function(X), axis=1, kind="stable")[:, :3], axis=1).sum(1) / 3)),
}


def _data(seed: int = 0):
    ds = lspc_toy(150, 50, num_labels=6, num_features=5, noise=0.05, seed=seed)
    return ds.train.X.toarray(), ds.train.Y.toarray(), ds.test.X.toarray()


@pytest.mark.parametrize("scoring", sorted(SCORERS))
def test_cross_validation_equals_grid_search(scoring) -> None:
    X, Y, X_test = _data()
    grid = dict(alpha=[0.01, 0.1], coupling=[0.0, 0.1, 1.0], kernel_width=[1.0, 2.0])
    folds = KFold(4, shuffle=True, random_state=3)
    ours = MLLSPCCV(kernel_widths=grid["kernel_width"], alphas=grid["alpha"], couplings=grid["coupling"],
                    n_basis=60, cv=folds, scoring=scoring, random_state=0).fit(X, Y)
    ref = GridSearchCV(MLLSPC(n_basis=60, random_state=0), grid, cv=folds, scoring=SCORERS[scoring]).fit(X, Y)
    assert ours.n_splits_ == 4 and ours.cv_results_["params"] == ref.cv_results_["params"]
    for key in ["mean_test_score", "std_test_score"] + [f"split{i}_test_score" for i in range(4)]:
        np.testing.assert_allclose(ours.cv_results_[key], ref.cv_results_[key], atol=1e-12, err_msg=key)
    # ranks of means rounded to 12 decimals (GridSearchCV ranks exact means, where equal counts
    # averaged in another order can differ in the last bit)
    expected_rank = rankdata(-np.round(ref.cv_results_["mean_test_score"], 12), method="min")
    np.testing.assert_array_equal(ours.cv_results_["rank_test_score"], expected_rank)
    assert ours.best_index_ == int(np.argmin(expected_rank))
    if ref.best_index_ != ours.best_index_:  # a tie GridSearchCV broke on the last bit: refit its choice
        assert ref.cv_results_["mean_test_score"][ref.best_index_] == pytest.approx(ours.best_score_, abs=1e-12)
        ref = GridSearchCV(MLLSPC(n_basis=60, random_state=0), {k: [v] for k, v in ours.best_params_.items()},
                           cv=folds, scoring=SCORERS[scoring]).fit(X, Y)
    assert ours.best_params_ == ref.best_params_
    assert ours.best_score_ == pytest.approx(ref.best_score_, abs=1e-12)
    np.testing.assert_allclose(ours.best_estimator_.coef_, ref.best_estimator_.coef_, rtol=1e-8, atol=1e-10)
    # two fits by other solvers: equal to 1e-9, so decisions and rankings agree away from near-ties
    np.testing.assert_allclose(ours.decision_function(X_test), ref.best_estimator_.decision_function(X_test), atol=1e-9)
    proba = ref.best_estimator_.predict_proba(X_test)
    np.testing.assert_allclose(ours.predict_proba(X_test), proba, atol=1e-9)
    assert_decisions_agree(ours.predict(X_test), ref.best_estimator_.predict(X_test), proba,
                           ref.best_estimator_.threshold, rtol=0.0, atol=1e-9)
    assert_topk_close(ours.predict_topk(X_test, 2), ref.best_estimator_.decision_function(X_test), rtol=0.0, atol=1e-9)


def test_default_widths_are_multiples_of_the_median_heuristic() -> None:
    from mlgp.baselines import median_heuristic

    X, Y, _ = _data(1)
    cv = MLLSPCCV(alphas=[0.1], couplings=[0.0], n_basis=40, cv=3, random_state=0).fit(X, Y)
    m = median_heuristic(X, random_state=0)
    np.testing.assert_allclose(sorted(set(cv.cv_results_["param_kernel_width"])), [0.5 * m, m, 2 * m])
    assert len(cv.cv_results_["params"]) == 3 and cv.best_estimator_.solver_ == "eig"


@pytest.mark.parametrize("kwargs, message", [
    ({"alphas": [0.1, 0.0]}, r"alphas must be a non-empty sequence of finite numbers > 0, got \[0\.1, 0\.0\]"),
    ({"alphas": []}, r"alphas must be a non-empty sequence"),
    ({"couplings": [-1.0]}, r"couplings must be a non-empty sequence of finite numbers >= 0, got \[-1\.0\]"),
    ({"kernel_widths": [np.nan]}, r"kernel_widths must be a non-empty sequence of finite numbers > 0"),
    ({"similarity": np.eye(3)}, r"similarity must be a \(K, K\) = \(6, 6\) matrix, got shape \(3, 3\)"),
])
def test_bad_grids_are_refused(kwargs, message) -> None:
    X, Y, _ = _data()
    with pytest.raises(ShapeError, match=message):
        MLLSPCCV(**kwargs).fit(X, Y)


@pytest.mark.parametrize("n, cv, message", [
    (3, 5, r"MLLSPCCV: cv=5 folds need at least 5 rows, got 3"),
    (4, KFold(5), r"MLLSPCCV: cv=KFold\(n_splits=5, .*\) makes 5 folds, which need at least 5 rows, got 4"),
    (1, 2, r"MLLSPCCV needs at least 2 rows to cross-validate, got 1 sample"),
    (1, [(np.array([0]), np.array([0]))], r"MLLSPCCV needs at least 2 rows to cross-validate, got 1 sample"),
])
def test_too_few_rows_for_the_folds_are_refused_before_any_work(monkeypatch, n, cv, message) -> None:
    import mlgp.baselines.mllspc_cv as module

    def no_work(*args, **kwargs):
        raise AssertionError("work started before the rows were checked")

    monkeypatch.setattr(module, "median_heuristic", no_work)
    monkeypatch.setattr(MLLSPCCV, "_fold_scores", no_work)
    X, Y, _ = _data()
    with pytest.raises(ShapeError, match=message):
        MLLSPCCV(n_basis=5, cv=cv).fit(X[:n], Y[:n])


def test_as_many_rows_as_folds_cross_validate() -> None:
    X, Y, _ = _data()
    search = MLLSPCCV(alphas=[0.1], couplings=[0.0], kernel_widths=[1.0], n_basis=5, cv=3).fit(X[:3], Y[:3])
    assert search.n_splits_ == 3 and np.isfinite(search.best_score_)


def test_folds_that_cannot_split_the_rows_are_refused() -> None:
    """A splitter's own refusal (here a ShuffleSplit whose test set is larger than the data) comes
    as a ShapeError naming cv, not as scikit-learn's bare ValueError."""
    from sklearn.model_selection import ShuffleSplit

    X, Y, _ = _data()
    with pytest.raises(ShapeError, match=r"MLLSPCCV: cv=ShuffleSplit\(.*\) cannot split the 10 rows: test_size=15"):
        MLLSPCCV(n_basis=5, cv=ShuffleSplit(2, test_size=15)).fit(X[:10], Y[:10])
