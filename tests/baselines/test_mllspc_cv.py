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
                    n_basis=60, cv=folds, scoring=scoring, random_state=0, calibration=None).fit(X, Y)
    ref = GridSearchCV(MLLSPC(n_basis=60, random_state=0, calibration=None), grid, cv=folds,
                       scoring=SCORERS[scoring]).fit(X, Y)
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
        ref = GridSearchCV(MLLSPC(n_basis=60, random_state=0, calibration=None),
                           {k: [v] for k, v in ours.best_params_.items()},
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
    monkeypatch.setattr(MLLSPCCV, "_split_scores", no_work)
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


def test_a_cut_off_above_k_is_refused_before_any_work(monkeypatch) -> None:
    """precision@k with k > K: the floor's ArgumentError before the widths or any fold are computed."""
    import mlgp.baselines.mllspc_cv as module
    from mlgp.errors import ArgumentError

    monkeypatch.setattr(module, "median_heuristic", lambda *a, **k: pytest.fail("work started"))
    X, Y, _ = _data()
    with pytest.raises(ArgumentError, match=r"scoring='precision@5' ranks the top 5 labels, but Y has only K=4"):
        MLLSPCCV(n_basis=5, cv=3, scoring="precision@5").fit(X, Y[:, :4])


def _old_file(tmp_path, rank_edit=None):
    """A file as MLLSPCCV saved it before the search moved to the floor (mlgp.estimator/1, written out
    here from that layout): scalars best_index_, best_score_, best_params_, n_splits_, cv_params and the
    nested best_estimator_; arrays cv_results_.{param_*, split<i>_test_score, mean_test_score,
    std_test_score, rank_test_score} and best_estimator_.*; no times. Returns (path, model, scores)."""
    import json

    from sklearn.model_selection import ParameterGrid

    X, Y, _ = _data()
    grid = [dict(p) for p in ParameterGrid({"alpha": [0.01, 0.1], "coupling": [0.0, 0.3], "kernel_width": [1.0]})]
    splits = np.array([[-0.2, -0.15, -0.18, -0.1], [-0.25, -0.1, -0.2, -0.15]])  # points 1 and 3 tie
    mean = splits.mean(axis=0)
    rank = rankdata(-np.round(mean, 12), method="min").astype(np.int32)
    best = int(np.argmin(rank))
    model = MLLSPC(n_basis=30, solver="eig", random_state=0, **grid[best]).fit(X, Y)
    with np.load(model.save(tmp_path / "best.npz")) as archive:
        nested = dict(archive)
    nested_header = json.loads(str(nested.pop("__header__")))
    header = {"format": "mlgp.estimator/1", "class": "MLLSPCCV",
              "params": {"alphas": [0.01, 0.1], "couplings": [0.0, 0.3], "kernel_widths": [1.0], "n_basis": 30,
                         "similarity": "pearson", "cv": 2, "scoring": "hamming_loss", "threshold": 0.5,
                         "random_state": 0, "prior_weight": 0.1},
              "fitted": {"n_samples_": 150, "n_features_in_": 5, "n_labels_": 6, "best_index_": best,
                         "best_score_": float(mean[best]), "best_params_": grid[best], "n_splits_": 2,
                         "cv_params": grid, "best_estimator_": nested_header["fitted"]},
              "sparse": {f"best_estimator_.{k}": v for k, v in nested_header["sparse"].items()}}
    arrays = {f"cv_results_.param_{name}": np.array([p[name] for p in grid]) for name in grid[0]}
    arrays.update({"cv_results_.split0_test_score": splits[0], "cv_results_.split1_test_score": splits[1],
                   "cv_results_.mean_test_score": mean, "cv_results_.std_test_score": splits.std(axis=0),
                   "cv_results_.rank_test_score": rank if rank_edit is None else rank_edit(rank)})
    arrays.update({f"best_estimator_.{k}": v for k, v in nested.items()})
    path = tmp_path / "old.npz"
    np.savez(path, __header__=np.array(json.dumps(header)), **arrays)
    return path, model, splits


def test_a_file_of_the_earlier_layout_loads(tmp_path) -> None:
    from mlgp.errors import DataFormatError

    path, model, splits = _old_file(tmp_path)
    loaded = MLLSPCCV.load(path)
    X_test = _data()[2]
    np.testing.assert_array_equal(loaded.decision_function(X_test), model.decision_function(X_test))
    np.testing.assert_array_equal(loaded.predict(X_test), model.predict(X_test))
    results = loaded.cv_results_
    for i in range(2):
        np.testing.assert_array_equal(results[f"split{i}_test_score"], splits[i])
    np.testing.assert_array_equal(results["mean_test_score"], splits.mean(axis=0))
    np.testing.assert_array_equal(results["rank_test_score"], [4, 1, 3, 1])
    np.testing.assert_array_equal(results["param_coupling"], [0.0, 0.3, 0.0, 0.3])
    assert all(np.isnan(results[k]).all() for k in ("mean_fit_time", "std_fit_time", "mean_score_time"))
    assert loaded.best_index_ == 1 and loaded.best_params_ == {"alpha": 0.01, "coupling": 0.3, "kernel_width": 1.0}
    assert loaded.best_score_ == splits.mean(axis=0)[1] and loaded.n_splits_ == 2
    # saved again, it loads in the floor's layout with the same search
    again = MLLSPCCV.load(loaded.save(tmp_path / "again"))
    for key in set(results) - {"params"}:
        np.testing.assert_array_equal(again.cv_results_[key], results[key], err_msg=key)
    bad, _, _ = _old_file(tmp_path, rank_edit=lambda r: r[::-1].copy())
    with pytest.raises(DataFormatError, match="'cv_results_.rank_test_score' is not that of the saved grid"):
        MLLSPCCV.load(bad)
