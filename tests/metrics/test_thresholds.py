"""Tests of mlgp.metrics._thresholds.select_thresholds against brute force over every candidate
threshold, scored by scikit-learn's f1_score (zero_division=0), an independent reference."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import f1_score

from mlgp.errors import ArgumentError, MLGPError, ShapeError
from mlgp.metrics._classification import f1_scores
from mlgp.metrics._thresholds import ThresholdChoice, select_thresholds
from mlgp.validation import check_thresholds

TOL = 1e-12
N, K = 30, 6


def make_problem(seed: int, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Y (N, K) 0/1 and proba (N, K): "ties" (values on a 0.1 grid, with 0 and 1 exactly),
    "smooth" (continuous), "scores" (outside [0, 1]) or "empty_label" (ties, label 2 has no 1)."""
    rng = np.random.default_rng(seed)
    if kind == "smooth":
        P = rng.random((N, K))
    elif kind == "scores":
        P = 3.0 * rng.standard_normal((N, K))
    else:
        P = rng.integers(0, 11, (N, K)) / 10.0
    Y = (rng.random((N, K)) < np.clip(P, 0.15, 0.85)).astype(np.int64)
    if kind == "empty_label":
        Y[:, 2] = 0
    return Y, P


PROBLEMS = [(seed, kind) for seed in range(3) for kind in ("ties", "smooth", "scores", "empty_label")]


def candidates(values: np.ndarray) -> np.ndarray:
    """Every distinct cut of ``values``: above the largest, each midpoint, the smallest; in [0, 1]."""
    u = np.unique(values)
    cuts = np.concatenate(([np.nextafter(u[-1], np.inf)], (u[1:] + u[:-1]) / 2, [u[0]]))
    return np.clip(cuts, 0.0, 1.0)


def ref_f1(Y: np.ndarray, P: np.ndarray, thresholds, average: str) -> float:
    return f1_score(Y, (P >= thresholds).astype(np.int64), average=average, zero_division=0)


def assert_is_midpoint(t: float, values: np.ndarray) -> None:
    """``t`` is one of :func:`candidates`: a midpoint of consecutive distinct values (not a value
    itself), the smallest value or above all (each clipped into [0, 1])."""
    assert np.min(np.abs(candidates(values) - t)) <= TOL, f"{t} is not a midpoint of {np.unique(values)}"


# --------------------------------------------------------------------------- brute force
@pytest.mark.slow
@pytest.mark.parametrize("average", ["micro", "macro"])
@pytest.mark.parametrize("seed, kind", PROBLEMS)
def test_global_threshold_attains_the_brute_force_maximum(seed, kind, average):
    Y, P = make_problem(seed, kind)
    choice = select_thresholds(Y, P, average=average)
    t = choice.thresholds
    assert np.all(t == t[0])
    best = max(ref_f1(Y, P, c, average) for c in candidates(P))
    assert ref_f1(Y, P, t, average) == pytest.approx(best, abs=TOL)
    assert choice.score == pytest.approx(best, abs=TOL)
    assert_is_midpoint(t[0], P.ravel())


@pytest.mark.slow
@pytest.mark.parametrize("seed, kind", PROBLEMS)
def test_per_label_macro_maximises_each_label(seed, kind):
    Y, P = make_problem(seed, kind)
    choice = select_thresholds(Y, P, average="macro", per_label=True)
    t_global = select_thresholds(Y, P, average="macro").thresholds[0]
    for k in range(K):
        if Y[:, k].sum() == 0:
            assert choice.thresholds[k] == t_global, "a label without positives keeps the global one"
            continue
        f1_k = lambda c: f1_score(Y[:, k], (P[:, k] >= c).astype(np.int64), zero_division=0)
        assert f1_k(choice.thresholds[k]) == pytest.approx(max(f1_k(c) for c in candidates(P[:, k])), abs=TOL)
        assert_is_midpoint(choice.thresholds[k], P[:, k])
    assert choice.score >= select_thresholds(Y, P, average="macro").score - TOL


@pytest.mark.parametrize("max_sweeps", [1, 3, 1000])
@pytest.mark.parametrize("seed, kind", PROBLEMS)
def test_per_label_micro_never_below_the_global_start(seed, kind, max_sweeps):
    Y, P = make_problem(seed, kind)
    start = select_thresholds(Y, P, average="micro")
    choice = select_thresholds(Y, P, average="micro", per_label=True, max_sweeps=max_sweeps)
    assert choice.score >= start.score
    for k in np.flatnonzero(Y.sum(axis=0) == 0):
        assert choice.thresholds[k] == start.thresholds[0]


@pytest.mark.slow
@pytest.mark.parametrize("seed, kind", PROBLEMS)
def test_per_label_micro_is_a_coordinatewise_optimum(seed, kind):
    Y, P = make_problem(seed, kind)
    choice = select_thresholds(Y, P, average="micro", per_label=True, max_sweeps=1000)
    t_global = select_thresholds(Y, P, average="micro").thresholds[0]
    for k in np.flatnonzero(Y.sum(axis=0) > 0):
        if choice.thresholds[k] != t_global:  # moved by the ascent: a cut of its own label
            assert_is_midpoint(choice.thresholds[k], P[:, k])
        for c in candidates(P[:, k]):
            t = np.array(choice.thresholds)
            t[k] = c
            assert ref_f1(Y, P, t, "micro") <= choice.score + TOL, f"label {k} at {c} improves micro-F1"


def test_per_label_micro_ascent_moves_somewhere():
    """On these problems per-label thresholds beat the global one: the ascent is not a no-op."""
    gains = [select_thresholds(*make_problem(s, k), per_label=True).score
             - select_thresholds(*make_problem(s, k)).score for s, k in PROBLEMS]
    assert max(gains) > 0.01


# --------------------------------------------------------------------------- hand-checked cases
def test_ties_are_never_split():
    """Splitting the tie at 0.5 would give F1 = 1; the best whole cut keeps both 0.5s (F1 = 0.8)."""
    Y = np.array([[1], [1], [0], [0]])
    P = np.array([[0.9], [0.5], [0.5], [0.1]])
    for average in ("micro", "macro"):
        for per_label in (False, True):
            choice = select_thresholds(Y, P, average=average, per_label=per_label)
            assert choice.thresholds[0] == pytest.approx(0.3)
            assert choice.score == pytest.approx(0.8)


def test_all_equal_probabilities_predict_everything():
    Y = np.array([[1, 0], [0, 1], [0, 0]])
    P = np.full((3, 2), 0.25)
    choice = select_thresholds(Y, P, per_label=True)
    np.testing.assert_array_equal(choice.thresholds, [0.25, 0.25])
    assert choice.score == pytest.approx(2 * 2 / (2 + 6))
    assert choice.default_score == 0.0


def test_macro_global_differs_from_micro_where_it_should():
    """A frequent label wants a low threshold, a rare one a high one: micro and macro disagree."""
    Y = np.array([[1, 0], [1, 0], [1, 0], [1, 1], [0, 0], [0, 0]])
    P = np.array([[0.2, 0.1], [0.3, 0.1], [0.4, 0.1], [0.9, 0.8], [0.1, 0.6], [0.1, 0.7]])
    for average in ("micro", "macro"):
        choice = select_thresholds(Y, P, average=average)
        best = max(ref_f1(Y, P, c, average) for c in candidates(P))
        assert choice.score == pytest.approx(best, abs=TOL)
    np.testing.assert_allclose(select_thresholds(Y, P, average="macro", per_label=True).thresholds, [0.15, 0.75])


# --------------------------------------------------------------------------- the returned values
@pytest.mark.parametrize("average", ["micro", "macro"])
@pytest.mark.parametrize("per_label", [False, True])
@pytest.mark.parametrize("seed, kind", PROBLEMS[:8])
def test_scores_are_f1_of_the_thresholded_matrix(seed, kind, average, per_label):
    Y, P = make_problem(seed, kind)
    choice = select_thresholds(sp.csr_matrix(Y), P, average=average, per_label=per_label)
    assert isinstance(choice, ThresholdChoice)
    assert choice.average == average and choice.per_label is per_label
    t = choice.thresholds
    assert t.shape == (K,) and t.dtype == np.float64
    assert np.all((t >= 0) & (t <= 1))
    np.testing.assert_array_equal(check_thresholds(t, K), t)
    assert choice.score == f1_scores(Y, (P >= t).astype(np.int64))[average]
    assert choice.score == pytest.approx(ref_f1(Y, P, t, average), abs=TOL)
    assert choice.default_score == f1_scores(Y, (P >= 0.5).astype(np.int64))[average]
    assert choice.score >= choice.default_score - TOL  # every cut a threshold in [0, 1] can make is searched
    dense = select_thresholds(Y, P, average=average, per_label=per_label)
    np.testing.assert_array_equal(dense.thresholds, t)


def test_thresholds_stay_in_unit_interval_at_the_ends():
    """Largest value 1.0: 'predict nothing' cannot be had; scores far outside [0, 1] are clipped."""
    Y = np.array([[0, 1], [0, 0], [1, 0]])
    P = np.array([[1.0, 1.0], [1.0, 0.0], [0.0, 0.0]])
    choice = select_thresholds(Y, P, average="micro", per_label=True)
    assert np.all((choice.thresholds >= 0) & (choice.thresholds <= 1))
    assert choice.score == f1_scores(Y, P >= choice.thresholds)["micro"]
    S = np.array([[5.0, -7.0], [-2.0, 9.0], [3.0, 4.0]])
    choice = select_thresholds(Y, S, average="macro", per_label=True)
    assert np.all((choice.thresholds >= 0) & (choice.thresholds <= 1))
    assert choice.score == f1_scores(Y, S >= choice.thresholds)["macro"]


def test_choice_is_frozen_and_its_thresholds_read_only():
    choice = select_thresholds(*make_problem(0, "ties"))
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'score'"):
        choice.score = 1.0
    with pytest.raises(ValueError, match="read-only"):
        choice.thresholds[0] = 0.0


def test_inputs_are_not_changed():
    Y, P = make_problem(1, "smooth")
    Y0, P0 = Y.copy(), P.copy()
    select_thresholds(Y, P, average="macro", per_label=True)
    select_thresholds(Y, P, average="micro", per_label=True)
    np.testing.assert_array_equal(Y, Y0)
    np.testing.assert_array_equal(P, P0)


# --------------------------------------------------------------------------- bad input
Y_OK, P_OK = make_problem(0, "ties")


@pytest.mark.parametrize("Y, P, kwargs, error, match", [
    (Y_OK, P_OK[:, :5], {}, ShapeError, r"proba has 5 labels but Y_true has K = 6"),
    (Y_OK, np.hstack([P_OK, P_OK[:, :1]]), {}, ShapeError, r"proba has 7 labels but Y_true has K = 6"),
    (Y_OK, P_OK[:29], {}, ShapeError, r"proba has 29 rows but Y_true has 30"),
    (Y_OK, np.where(P_OK > 0.5, np.nan, P_OK), {}, ShapeError, r"NaN or inf"),
    (Y_OK, np.where(P_OK > 0.5, np.inf, P_OK), {}, ShapeError, r"NaN or inf"),
    (np.zeros((N, K)), P_OK, {}, ShapeError, r"no positive label"),
    (np.zeros((0, K)), np.zeros((0, K)), {}, ShapeError, r"no rows"),
    (Y_OK, P_OK[:, 0], {}, ShapeError, r"proba must be 2-D"),
    (Y_OK, sp.csr_matrix(P_OK), {}, ShapeError, r"proba must be a dense"),
    (Y_OK, [["a"] * K] * N, {}, ShapeError, r"proba must be a numeric"),
    (2 * Y_OK, P_OK, {}, ShapeError, r"Y_true must contain only 0/1"),
    (Y_OK, P_OK, {"average": "samples"}, ArgumentError, r"average must be 'micro' or 'macro', got 'samples'"),
    (Y_OK, P_OK, {"average": None}, ArgumentError, r"average must be 'micro' or 'macro'"),
    (Y_OK, P_OK, {"max_sweeps": 0}, ArgumentError, r"max_sweeps must be a positive integer, got 0"),
    (Y_OK, P_OK, {"max_sweeps": 2.0}, ArgumentError, r"max_sweeps must be a positive integer"),
    (Y_OK, P_OK, {"per_label": "yes"}, ArgumentError, r"per_label must be True or False"),
])
def test_bad_input_is_refused_with_a_message(Y, P, kwargs, error, match):
    with pytest.raises(error, match=match) as info:
        select_thresholds(Y, P, **kwargs)
    assert isinstance(info.value, MLGPError) and isinstance(info.value, ValueError)


def test_options_are_checked_before_the_data():
    with pytest.raises(ArgumentError, match="average"):
        select_thresholds(np.zeros((0, 3)), np.full((2, 2), np.nan), average="weighted")
