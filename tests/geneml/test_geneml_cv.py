"""GenEMLCV: its choice is the argmax of GenEML refitted by hand on the same held-out split, its model
is GenEML fitted at that point on all rows, bad searches are refused before any GenEML is fitted,
save / load keep the model and the search, and scikit-learn's clone / get_params contract holds."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.stats import rankdata
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import ParameterGrid
from sklearn.utils.estimator_checks import (check_get_params_invariance, check_no_attributes_set_in_init,
                                            check_parameters_default_constructible, check_set_params)

from mlgp.errors import ArgumentError, DataFormatError
from mlgp.estimator import ParameterError
from mlgp.geneml import GenEML, GenEMLCV
from mlgp.metrics import precision_at_k

GRID = {"n_components": [1, 2, 3], "lambda_v": [0.1, 30.0]}
FIXED = {"max_iter": 4, "alpha": 2.0, "beta": 2.0, "threshold": 0.3}


@pytest.fixture(scope="module")
def drawn():
    """150 training and 30 test rows drawn from GenEML itself (D = 12, K = 8, k = 2)."""
    from mlgp.geneml import geneml_joint

    X = sp.random(180, 12, density=0.4, random_state=2, format="csr")
    values = geneml_joint(X, 8, 2, lambda_v=0.3, alpha=2.0, beta=2.0).sample(seed=(2, 3))
    Y = sp.csr_matrix(values["Y"].numpy().astype(np.float64))
    return X[:150], Y[:150], X[150:]


def _search(**kwargs) -> GenEMLCV:
    return GenEMLCV(**{"param_grid": GRID, "estimator_params": FIXED, "validation_fraction": 0.3,
                       "scoring": "precision@3", "random_state": 5, **kwargs})


@pytest.mark.parametrize("scoring", ["precision@1", "precision@3"])
def test_the_choice_is_the_argmax_of_geneml_refitted_by_hand_on_the_split(drawn, scoring):
    X, Y, _ = drawn
    cv = _search(scoring=scoring, refit=False).fit(X, Y)
    order = np.random.default_rng(5).permutation(150)  # the first 30 % (45 rows) are held out
    fit_rows, held = np.sort(order[45:]), np.sort(order[:45])
    points = list(ParameterGrid(GRID))
    k = int(scoring[-1])
    scores = np.array([precision_at_k(Y[held], GenEML(**FIXED, **p).fit(X[fit_rows], Y[fit_rows])
                                      .decision_function(X[held]), k) for p in points])
    assert len(set(scores)) > 1  # the grid points differ, so the choice means something
    np.testing.assert_array_equal(cv.cv_results_["mean_test_score"], scores)
    assert cv.cv_results_["params"] == points
    assert cv.best_index_ == int(np.argmax(scores)) and cv.best_params_ == points[int(np.argmax(scores))]
    assert cv.best_score_ == scores.max()
    np.testing.assert_array_equal(cv.cv_results_["rank_test_score"], rankdata(-scores, method="min"))
    np.testing.assert_array_equal(cv.cv_results_["param_n_components"], [p["n_components"] for p in points])
    np.testing.assert_array_equal(cv.cv_results_["param_lambda_v"], [p["lambda_v"] for p in points])
    fit_time = cv.cv_results_["mean_fit_time"]
    assert fit_time.shape == (6,) and np.all(np.isfinite(fit_time)) and np.all(fit_time > 0)
    assert (cv.n_samples_, cv.n_features_in_, cv.n_labels_) == (150, 12, 8)


def test_ties_go_to_the_first_grid_point(drawn, monkeypatch):
    X, Y, _ = drawn
    monkeypatch.setattr("mlgp.estimator.search_scores.precision_at_k", lambda Y, S, k: 0.5)
    cv = GenEMLCV(param_grid={"n_components": [3, 1, 2]}, estimator_params={"max_iter": 1}, refit=False).fit(X, Y)
    assert cv.best_index_ == 0 and cv.best_params_ == {"n_components": 3}
    np.testing.assert_array_equal(cv.cv_results_["rank_test_score"], [1, 1, 1])


def test_the_refitted_model_is_geneml_at_the_best_point_on_all_rows(drawn):
    X, Y, X_test = drawn
    cv = _search().fit(X, Y)
    ref = GenEML(**FIXED, **cv.best_params_).fit(X, Y)
    assert isinstance(cv.best_estimator_, GenEML) and cv.best_estimator_.get_params() == ref.get_params()
    np.testing.assert_array_equal(cv.decision_function(X_test), ref.decision_function(X_test))
    np.testing.assert_array_equal(cv.predict_proba(X_test), ref.predict_proba(X_test))
    proba = ref.predict_proba(X_test)
    assert np.any((proba >= 0.3) & (proba < 0.5))  # so GenEML's threshold, 0.3, decides some labels
    np.testing.assert_array_equal(cv.predict(X_test), ref.predict(X_test))
    np.testing.assert_array_equal(cv.predict(X_test), proba >= 0.3)
    top, ref_top = cv.predict_topk(X_test, 3), ref.predict_topk(X_test, 3)
    np.testing.assert_array_equal(top.indices, ref_top.indices)
    np.testing.assert_array_equal(top.scores, ref_top.scores)


def test_without_refit_it_reports_the_search_and_refuses_to_score_or_save(drawn, monkeypatch, tmp_path):
    X, Y, X_test = drawn
    fits = []
    real_fit = GenEML.fit
    monkeypatch.setattr(GenEML, "fit", lambda self, X, Y: fits.append((self.get_params(), X, Y)) or real_fit(self, X, Y))
    cv = _search(refit=False, estimator_params={**FIXED, "calibration": None}).fit(X, Y)  # the search's fits alone
    assert len(fits) == 6 and not hasattr(cv, "best_estimator_")
    assert [{name: params[name] for name in GRID} for params, _, _ in fits] == cv.cv_results_["params"]
    fit_rows = np.sort(np.random.default_rng(5).permutation(150)[45:])  # in row order
    for _, X_fit, Y_fit in fits:
        assert (X_fit != X[fit_rows]).nnz == 0 and (Y_fit != Y[fit_rows]).nnz == 0
    for call in (lambda: cv.decision_function(X_test), lambda: cv.predict_topk(X_test, 2), lambda: cv.predict(X_test),
                 lambda: cv.save(tmp_path / "cv")):
        with pytest.raises(ArgumentError, match="refit=False"):
            call()
    with pytest.raises(NotFittedError, match="is not fitted yet"):
        _search().decision_function(X_test)


def _refuse_fit(*args, **kwargs):
    raise AssertionError("a GenEML was fitted before the search was refused")


@pytest.mark.parametrize("kwargs, error, message", [
    ({"param_grid": {"n_components": [2], "lamda_u": [1.0]}}, ArgumentError,
     r"param_grid names 'lamda_u': not GenEML parameter"),
    ({"estimator_params": {"max_iters": 3}}, ArgumentError, r"estimator_params names 'max_iters': not GenEML parameter"),
    ({"param_grid": {"n_components": []}}, ArgumentError, r"param_grid\['n_components'\] is empty"),
    ({"param_grid": {"n_components": 2}}, ArgumentError, r"param_grid\['n_components'\] must be a list of values"),
    ({"param_grid": {"exposure": "global"}}, ArgumentError, r"param_grid\['exposure'\] must be a list of values"),
    ({"param_grid": {"n_components": [2]}, "estimator_params": {"n_components": 3, "max_iter": 2}}, ArgumentError,
     r"\['n_components'\] in both param_grid and estimator_params"),
    ({"param_grid": None, "estimator_params": {"lambda_u": 3.0}}, ArgumentError,  # the default grid searches lambda_u
     r"\['lambda_u'\] in both param_grid and estimator_params"),
    ({"validation_fraction": 0.001}, ArgumentError, r"holds out 0 row\(s\), leaving 150 to fit"),
    ({"validation_fraction": 0.999}, ArgumentError, r"holds out 150 row\(s\), leaving 0 to fit"),
    ({"param_grid": {"n_components": [2, 0]}}, ParameterError, r"'n_components' parameter of GenEML"),  # GenEML's own
    ({"param_grid": {"lambda_v": [1.0, -1.0]}}, ParameterError, r"'lambda_v' parameter of GenEML"),
    ({"validation_fraction": 1.0}, ParameterError, r"'validation_fraction' parameter of GenEMLCV"),
    ({"scoring": "precision@10"}, ParameterError, r"'scoring' parameter of GenEMLCV"),
    ({"param_grid": [{"n_components": [2]}]}, ParameterError, r"'param_grid' parameter of GenEMLCV"),
])
def test_bad_searches_are_refused_before_any_geneml_is_fitted(drawn, monkeypatch, kwargs, error, message):
    X, Y, _ = drawn
    monkeypatch.setattr(GenEML, "fit", _refuse_fit)
    with pytest.raises(error, match=message):
        GenEMLCV(**{"param_grid": {"n_components": [2]}, "estimator_params": {"max_iter": 2}, **kwargs}).fit(X, Y)


def test_a_cut_off_above_k_is_refused_before_any_geneml_is_fitted(drawn, monkeypatch):
    X, Y, _ = drawn
    monkeypatch.setattr(GenEML, "fit", _refuse_fit)
    with pytest.raises(ArgumentError, match=r"scoring='precision@5' ranks the top 5 labels, but Y has only K=4"):
        GenEMLCV(scoring="precision@5").fit(X, Y[:, :4])


def test_save_and_load_keep_the_model_and_the_search(drawn, tmp_path):
    X, Y, X_test = drawn
    grid = {"n_components": np.array([1, 2]), "precision_prior": [None], "exposure": ["global", None]}
    cv = GenEMLCV(param_grid=grid, estimator_params={"max_iter": 3, "threshold": 0.3}, random_state=1).fit(X, Y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing is lost, so nothing is warned about
        path = cv.save(tmp_path / "cv")
    loaded = GenEMLCV.load(path)
    np.testing.assert_array_equal(loaded.decision_function(X_test), cv.decision_function(X_test))
    np.testing.assert_array_equal(loaded.predict(X_test), cv.predict(X_test))
    assert loaded.get_params() == {**cv.get_params(), "param_grid": {**grid, "n_components": [1, 2]}}
    assert (loaded.best_params_, loaded.best_index_, loaded.best_score_) == (cv.best_params_, cv.best_index_,
                                                                              cv.best_score_)
    assert loaded.cv_results_.keys() == cv.cv_results_.keys() and loaded.cv_results_["params"] == cv.cv_results_["params"]
    for key in set(cv.cv_results_) - {"params"}:
        np.testing.assert_array_equal(loaded.cv_results_[key], cv.cv_results_[key], err_msg=key)
    assert loaded.best_estimator_.get_params() == cv.best_estimator_.get_params()

    # a file whose best_index_ is not the best of its scores is refused
    with np.load(path) as archive:
        arrays = dict(archive)
    header = json.loads(str(arrays["__header__"]))
    header["fitted"]["best_index_"] = (cv.best_index_ + 1) % 4
    arrays["__header__"] = np.array(json.dumps(header))
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(DataFormatError, match="is not the first best of the saved scores"):
        GenEMLCV.load(tmp_path / "bad.npz")


def test_clone_and_get_params_follow_scikit_learn():
    est = GenEMLCV(param_grid=GRID, estimator_params=FIXED, validation_fraction=0.25, scoring="precision@5",
                   random_state=3, refit=False)
    params = est.get_params()
    assert params == {"param_grid": GRID, "estimator_params": FIXED, "validation_fraction": 0.25,
                      "scoring": "precision@5", "random_state": 3, "refit": False}
    assert params["param_grid"] is GRID and params["estimator_params"] is FIXED  # stored as given
    twin = clone(est)
    assert twin.get_params() == params and twin.get_params()["param_grid"] is not GRID
    assert clone(est.set_params(validation_fraction=0.5)).validation_fraction == 0.5
    check_parameters_default_constructible("GenEMLCV", GenEMLCV())
    check_no_attributes_set_in_init("GenEMLCV", GenEMLCV())
    check_get_params_invariance("GenEMLCV", GenEMLCV())
    check_set_params("GenEMLCV", GenEMLCV())


def test_the_search_equals_grid_search_cv_on_the_same_held_out_split(drawn):
    """scikit-learn's GridSearchCV over GenEML, on the same split (HeldOutSplit is a splitter) with
    precision@3 written independently of mlgp.metrics, scores, ranks and refits the same."""
    from sklearn.model_selection import GridSearchCV

    from mlgp.estimator import HeldOutSplit

    def precision_at_3(est, X, Y):
        top = np.argsort(-est.decision_function(X), axis=1, kind="stable")[:, :3]
        return float(np.mean(np.take_along_axis(Y.toarray(), top, axis=1).sum(axis=1) / 3))

    X, Y, X_test = drawn
    ours = _search().fit(X, Y)
    ref = GridSearchCV(GenEML(**FIXED), GRID, cv=HeldOutSplit(0.3, 5), scoring=precision_at_3).fit(X, Y)
    assert ours.cv_results_["params"] == ref.cv_results_["params"] and ours.n_splits_ == 1
    for key in ("split0_test_score", "mean_test_score", "std_test_score"):  # the same counts, averaged in
        np.testing.assert_allclose(ours.cv_results_[key], ref.cv_results_[key], rtol=0, atol=1e-12, err_msg=key)
    np.testing.assert_array_equal(ours.cv_results_["rank_test_score"],  # another order: equal to rounding
                                  rankdata(-np.round(ref.cv_results_["mean_test_score"], 12), method="min"))
    assert set(ours.cv_results_) == set(ref.cv_results_)
    assert (ours.best_params_, ours.best_index_) == (ref.best_params_, ref.best_index_)
    assert ours.best_score_ == pytest.approx(ref.best_score_, abs=1e-12)
    np.testing.assert_array_equal(ours.decision_function(X_test), ref.best_estimator_.decision_function(X_test))
    np.testing.assert_array_equal(ours.predict(X_test), ref.best_estimator_.predict(X_test))


def test_a_file_of_the_earlier_layout_loads(drawn, tmp_path):
    """A file as GenEMLCV saved it before the search moved to the floor (written out here from that
    layout: scalars best_index_, search, cv_params and the nested best_estimator_; arrays
    cv_results_.mean_test_score, cv_results_.mean_fit_time and best_estimator_.*) loads, its one split's
    scores the means, its std 0 and the score times it lacks NaN."""
    X, Y, X_test = drawn
    grid, fixed = {"n_components": [1, 2], "lambda_v": [0.1, 30.0]}, {"max_iter": 3, "threshold": 0.3}
    points = [dict(p) for p in ParameterGrid(grid)]
    scores, seconds = np.array([0.5, 0.6, 0.55, 0.6]), np.array([0.1, 0.2, 0.1, 0.2])
    model = GenEML(**fixed, **points[1]).fit(X, Y)
    with np.load(model.save(tmp_path / "best.npz")) as archive:
        nested = dict(archive)
    nested_header = json.loads(str(nested.pop("__header__")))
    header = {"format": "mlgp.estimator/1", "class": "GenEMLCV",
              "params": {"param_grid": {"unsaved": repr(grid)}, "estimator_params": {"unsaved": repr(fixed)},
                         "validation_fraction": 0.3, "scoring": "precision@3", "random_state": 5, "refit": True},
              "fitted": {"n_samples_": 150, "n_features_in_": 12, "n_labels_": 8, "best_index_": 1,
                         "search": {"param_grid": grid, "estimator_params": fixed}, "cv_params": points,
                         "best_estimator_": nested_header["fitted"]},
              "sparse": {f"best_estimator_.{k}": v for k, v in nested_header["sparse"].items()}}
    arrays = {"cv_results_.mean_test_score": scores, "cv_results_.mean_fit_time": seconds,
              **{f"best_estimator_.{k}": v for k, v in nested.items()}}
    np.savez(tmp_path / "old.npz", __header__=np.array(json.dumps(header)), **arrays)
    loaded = GenEMLCV.load(tmp_path / "old.npz")
    np.testing.assert_array_equal(loaded.decision_function(X_test), model.decision_function(X_test))
    np.testing.assert_array_equal(loaded.predict(X_test), model.predict(X_test))
    assert loaded.param_grid == grid and loaded.estimator_params == fixed and loaded.cv_results_["params"] == points
    assert (loaded.best_index_, loaded.best_params_, loaded.best_score_, loaded.n_splits_) == (1, points[1], 0.6, 1)
    results = loaded.cv_results_
    np.testing.assert_array_equal(results["split0_test_score"], scores)
    np.testing.assert_array_equal(results["mean_test_score"], scores)
    np.testing.assert_array_equal(results["rank_test_score"], [4, 1, 3, 1])
    np.testing.assert_array_equal(results["mean_fit_time"], seconds)
    assert not results["std_test_score"].any() and not results["std_fit_time"].any()
    assert np.isnan(results["mean_score_time"]).all() and np.isnan(results["std_score_time"]).all()
