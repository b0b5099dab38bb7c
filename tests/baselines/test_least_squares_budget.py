"""``max_seconds`` in LSPC, ML-LSPC, ML-LSPC-CV and ML-kNN: wall seconds from the start of ``fit``
(:class:`mlgp.estimator.budget.Budget`), on a fake clock that moves 1 s per reading
(:mod:`tests._clock`): ML-LSPC-CV's search stops between kernel widths and between folds, keeping
the best width scored on every fold; ML-kNN counts its likelihoods on the query blocks done; the
single least-squares solves run whole and their prior map is left out once the budget is spent; bad
values are refused; the parameter survives save / load and ``mlgp params``."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
from _clock import fake_clock, random_problem, slowed

import mlgp.baselines.mlknn as mlknn_module
import mlgp.baselines.mllspc_cv as mllspc_cv_module
from mlgp.baselines import LSPC, MLLSPC, MLLSPCCV, MLkNN
from mlgp.errors import ArgumentError, BudgetWarning
from mlgp.estimator import ParameterError

FAMILIES = [LSPC, MLLSPC, MLLSPCCV, MLkNN]
WIDTHS = (0.5, 1.0, 2.0, 4.0)


@pytest.fixture(scope="module")
def data():
    return random_problem(60, 6, 4, seed=3)


def _search(**kwargs) -> MLLSPCCV:
    return MLLSPCCV(kernel_widths=WIDTHS, alphas=(0.01, 0.1), couplings=(0.0, 0.1), n_basis=20, cv=2,
                    random_state=0, calibration=None, **kwargs)


def test_the_search_stops_between_widths_and_keeps_the_best_tried(data, monkeypatch) -> None:
    """2 folds, 4 widths of 4 (α, c) each: the first width is scored whole, then the budget is looked
    at before each (width, fold): readings 1 s, 2 s, 3 s. 4 s leave the search 0.7 · 4 = 2.8 s, so
    the look at 3 s (before the third width) stops it: the first two widths (8 points) are kept, and
    their best is that of the whole search over those two widths."""
    fake_clock(monkeypatch)
    with pytest.warns(BudgetWarning, match=r"MLLSPCCV: max_seconds=4 stopped the search after 8 of the 16 grid points"):
        cut = _search(max_seconds=4.0).fit(*data)
    assert cut.search_stopped_ is True
    assert len(cut.cv_results_["params"]) == 8
    assert {p["kernel_width"] for p in cut.cv_results_["params"]} == set(WIDTHS[:2])
    two = MLLSPCCV(kernel_widths=WIDTHS[:2], alphas=(0.01, 0.1), couplings=(0.0, 0.1), n_basis=20, cv=2,
                   random_state=0, calibration=None).fit(*data)
    assert two.search_stopped_ is False
    assert cut.cv_results_["params"] == two.cv_results_["params"]
    np.testing.assert_array_equal(cut.cv_results_["mean_test_score"], two.cv_results_["mean_test_score"])
    assert (cut.best_params_, cut.best_index_, cut.best_score_) == (two.best_params_, two.best_index_,
                                                                    two.best_score_)
    np.testing.assert_allclose(cut.best_estimator_.coef_, two.best_estimator_.coef_, rtol=1e-12, atol=1e-12)


def test_the_search_stops_between_the_folds_of_a_width(data, monkeypatch) -> None:
    """3.5 s leave the search 2.45 s: the look at 2 s (the second width's second fold) passes and the
    one at 3 s (before the third width) stops it; 2.5 s leave 1.75 s: the look at 2 s, between the
    second width's folds, stops it and drops that width (scored on one fold only)."""
    fake_clock(monkeypatch)
    with pytest.warns(BudgetWarning):
        assert len(_search(max_seconds=3.5).fit(*data).cv_results_["params"]) == 8
    fake_clock(monkeypatch)
    with pytest.warns(BudgetWarning, match="after 4 of the 16 grid points"):
        cut = _search(max_seconds=2.5).fit(*data)
    assert {p["kernel_width"] for p in cut.cv_results_["params"]} == {WIDTHS[0]}
    assert not np.isnan(cut.cv_results_["split1_test_score"]).any()


def test_the_first_width_is_always_scored_and_the_search_without_a_budget_is_whole(data, monkeypatch) -> None:
    """Each fold's work made to take 100 s (its label similarity) spends a 50 s budget within the
    first width: it is still scored on every fold and refitted. Without a budget every point is tried,
    and nothing is said."""
    clock = fake_clock(monkeypatch)
    slowed(monkeypatch, clock, mllspc_cv_module, "pearson_similarity")
    with pytest.warns(BudgetWarning, match="after 4 of the 16"):
        est = _search(max_seconds=50.0).fit(*data)
    assert est.best_params_["kernel_width"] == WIDTHS[0] and est.best_estimator_.coef_.shape[0] == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error", BudgetWarning)
        whole = _search().fit(*data)
    assert whole.search_stopped_ is False and len(whole.cv_results_["params"]) == 16


def test_a_stopped_search_saves_and_loads(data, monkeypatch, tmp_path) -> None:
    fake_clock(monkeypatch)
    with pytest.warns(BudgetWarning):
        est = _search(max_seconds=4.0).fit(*data)
    est.save(tmp_path / "cut.npz")
    back = MLLSPCCV.load(tmp_path / "cut.npz")
    assert back.search_stopped_ is True and back.max_seconds == 4.0
    assert back.cv_results_["params"] == est.cv_results_["params"] and back.best_index_ == est.best_index_
    np.testing.assert_array_equal(back.decision_function(data[0]), est.decision_function(data[0]))


def test_the_refit_gets_what_the_search_left(data, monkeypatch) -> None:
    """10 s: the search's 7 s are not reached by its six looks (1..6 s), the refit's look reads 7 s
    and leaves it 3 s. 4 s: the search stops at its look at 3 s, the refit's reads 4 s: a sliver."""
    fake_clock(monkeypatch)
    whole = _search(max_seconds=10.0).fit(*data)
    assert whole.search_stopped_ is False and whole.best_estimator_.max_seconds == pytest.approx(3.0)
    fake_clock(monkeypatch)
    with pytest.warns(BudgetWarning):
        cut = _search(max_seconds=4.0).fit(*data)
    assert cut.best_estimator_.max_seconds == pytest.approx(1e-6)


@pytest.mark.parametrize("cls", [LSPC, MLLSPC])
def test_a_single_solve_runs_whole_and_its_map_is_left_out_once_the_budget_is_spent(cls, data, monkeypatch) -> None:
    """The closed-form solve cannot stop; the basis made to take 100 s spends a 50 s budget, so the
    prior map is left out (the model's own probabilities), with a warning; 500 s leave it room."""
    clock = fake_clock(monkeypatch)
    slowed(monkeypatch, clock, mlgp_module(cls), "fit_basis")
    with pytest.warns(BudgetWarning, match=rf"{cls.__name__}: calibration='prior' left out.*max_seconds=50 was spent"):
        cut = cls(n_basis=20, random_state=0, max_seconds=50.0).fit(*data)
    assert cut.proba_map_ is None
    plain = cls(n_basis=20, random_state=0, calibration=None).fit(*data)
    np.testing.assert_array_equal(cut.coef_, plain.coef_)
    np.testing.assert_array_equal(cut.predict_proba(data[0]), plain.predict_proba(data[0]))


def test_the_map_of_a_single_solve_shares_what_is_left(data, monkeypatch) -> None:
    """The solve's set-up takes 100 s of 120: the map's copies get min(120 / 4, 4 × what is left) s."""
    import mlgp.baselines.mllspc as mllspc
    import mlgp.estimator.base as base

    seen = []
    monkeypatch.setattr(base.MultiLabelEstimator, "_fit_proba_map",
                        lambda self, X, Y, budget=None: seen.append(None if budget is None else budget.seconds))
    fake_clock(monkeypatch)
    MLLSPC(n_basis=20, random_state=0, max_seconds=120.0).fit(*data)  # the look reads 1 s: 119 s left
    MLLSPC(n_basis=20, random_state=0).fit(*data)
    slowed(monkeypatch, fake_clock(monkeypatch), mllspc, "fit_basis")
    MLLSPC(n_basis=20, random_state=0, max_seconds=120.0).fit(*data)  # the look reads 101 s: 19 s left
    assert seen == [120.0, None, pytest.approx(4 * 19.0)]  # cross_fitted_map gives its copies a quarter


def mlgp_module(cls):
    import mlgp.baselines.lspc as lspc
    import mlgp.baselines.mllspc as mllspc

    return {LSPC: lspc, MLLSPC: mllspc}[cls]


def test_mlknn_counts_the_query_blocks_done(monkeypatch) -> None:
    """Blocks of 10 rows (QUERY_BLOCK made small), one look after each: 3.5 s count 4 blocks = 40 of
    the 100 rows; the counts are those of an MLkNN whose likelihoods come from those 40 rows' neighbours
    among all 100, the prior from all 100."""
    X, Y = random_problem(100, 4, 3, seed=5)
    monkeypatch.setattr(mlknn_module, "QUERY_BLOCK", 10)
    fake_clock(monkeypatch)
    cut = MLkNN(n_neighbors=3, calibration=None, max_seconds=3.5).fit(X, Y)
    assert cut.n_counted_ == 40
    whole = MLkNN(n_neighbors=3, calibration=None).fit(X, Y)
    assert whole.n_counted_ == 100
    np.testing.assert_array_equal(cut.prior_, whole.prior_)
    # the reference: scikit-learn's neighbours of every training point, counted on the first 40 rows
    neighbours = whole.nn_.kneighbors(return_distance=False)[:40]
    Yd = Y.toarray()
    carried = Yd[neighbours].sum(axis=1).astype(int)       # (40, K)
    s, k = 1.0, 3
    for label in range(3):
        pos = Yd[:40, label] == 1
        c1 = np.bincount(carried[pos, label], minlength=k + 1)
        np.testing.assert_allclose(cut.cond_prob_true_[:, label], (s + c1) / (s * (k + 1) + pos.sum()))
        c0 = np.bincount(carried[~pos, label], minlength=k + 1)
        np.testing.assert_allclose(cut.cond_prob_false_[:, label], (s + c0) / (s * (k + 1) + (~pos).sum()))


def test_mlknn_blocks_without_a_stop_equal_the_whole_query(monkeypatch) -> None:
    """A budget never spent, blocks of 7 rows (duplicates included): the fit of the one query."""
    X, Y = random_problem(50, 3, 4, seed=6)
    X = X.toarray()
    X[10:14] = X[3]  # 5 equal rows: more duplicates of a row than its 3 neighbours
    monkeypatch.setattr(mlknn_module, "QUERY_BLOCK", 7)
    fake_clock(monkeypatch)
    cut = MLkNN(n_neighbors=3, calibration=None, max_seconds=1e6).fit(X, Y)
    whole = MLkNN(n_neighbors=3, calibration=None).fit(X, Y)
    assert cut.n_counted_ == whole.n_counted_ == 50
    for name in ("cond_prob_true_", "cond_prob_false_", "posterior_"):
        np.testing.assert_array_equal(getattr(cut, name), getattr(whole, name), err_msg=name)


def test_mlknn_warns_when_only_the_first_block_is_counted_and_saves_its_count(monkeypatch, tmp_path) -> None:
    X, Y = random_problem(100, 4, 3, seed=5)
    monkeypatch.setattr(mlknn_module, "QUERY_BLOCK", 10)
    fake_clock(monkeypatch)
    with pytest.warns(BudgetWarning, match="MLkNN: max_seconds=0.5 was spent.*first 10 of the 100 training points"):
        cut = MLkNN(n_neighbors=3, calibration=None, max_seconds=0.5).fit(X, Y)
    assert cut.n_counted_ == 10
    cut.save(tmp_path / "knn.npz")
    back = MLkNN.load(tmp_path / "knn.npz")
    assert back.n_counted_ == 10 and back.max_seconds == 0.5
    np.testing.assert_array_equal(back.predict_proba(X), cut.predict_proba(X))


def test_mlknn_map_comes_first_within_a_quarter_then_the_count_has_the_rest(monkeypatch) -> None:
    """With ``calibration="prior"`` the map's copies come first (a quarter of 12 s, and the copy begun
    by then), then the count, which stops at the look that spends the 12 s: 7 blocks of 10 rows."""
    X, Y = random_problem(100, 4, 3, seed=5)
    monkeypatch.setattr(mlknn_module, "QUERY_BLOCK", 10)
    clock = fake_clock(monkeypatch)
    est = MLkNN(n_neighbors=3, max_seconds=12.0).fit(X, Y)
    assert est.proba_map_ is not None and est.n_counted_ == 70 and clock.now == 12.0


@pytest.mark.parametrize("cls", FAMILIES)
@pytest.mark.parametrize("bad", [-1.0, 0, 0.0, math.nan, "10", True])
def test_bad_budgets_are_refused_before_any_work(cls, bad, data) -> None:
    with pytest.raises(ParameterError, match="max_seconds"):
        cls(max_seconds=bad).fit(*data)


@pytest.mark.parametrize("name", ["lspc", "mllspc", "mllspccv", "mlknn"])
def test_the_budget_reaches_the_family_and_round_trips_through_mlgp_params(name, tmp_path) -> None:
    from mlgp.cli.params import file_changes, params_document
    from mlgp.families import make_estimator

    document = params_document(name, budget=7.5)
    assert document["params"]["max_seconds"] == 7.5
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(document))
    est = make_estimator(name, file_changes(name, path), budget=None)
    assert est.max_seconds == 7.5 and est.get_params() == make_estimator(name, budget=7.5).get_params()
    with pytest.raises(ArgumentError, match="budget"):
        make_estimator(name, budget=-1.0)
