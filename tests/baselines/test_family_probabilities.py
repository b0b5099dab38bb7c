"""The probabilities of the baseline families (commit 6e36a50): LabelFrequency's smoothed training
frequencies, the trees' leaf distributions smoothed toward the label prior (FastXML, PfastXML,
PfastreXML), and LSPC / MLLSPCCV's prior-weighted least-squares posteriors, each against a dense
NumPy reference written out here."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.model_selection import GridSearchCV, KFold

from mlgp.baselines import LSPC, MLLSPC, MLLSPCCV, FastXML, LabelFrequency, PfastreXML, PfastXML
from mlgp.data import lspc_toy
from mlgp.estimator import ParameterError

# ------------------------------------------------------------------------------ LabelFrequency --


def _frequency_data(rng: np.random.Generator, N: int = 37, K: int = 6):
    """Labels of varied frequency, label 4 never present and label 5 always present."""
    Y = (rng.random((N, K)) < np.linspace(0.1, 0.8, K)).astype(np.int64)
    Y[:, 4] = 0
    Y[:, 5] = 1
    return rng.normal(size=(N, 3)), Y


def test_label_frequency_probabilities_are_the_jeffreys_smoothed_frequencies(rng) -> None:
    """predict_proba is (count + 0.5) / (N + 1) on every row (the default smoothing 0.5), counted
    here by a loop; a label with no training positive gets 0.5 / (N + 1), not 0, and one present
    everywhere gets (N + 0.5) / (N + 1), not 1."""
    X, Y = _frequency_data(rng)
    N, K = Y.shape
    est = LabelFrequency().fit(X, sp.csr_matrix(Y))
    counts = np.array([sum(int(Y[i, j]) for i in range(N)) for j in range(K)], dtype=np.float64)
    expected = (counts + 0.5) / (N + 1.0)
    X_new = rng.normal(size=(9, 3))
    proba = est.predict_proba(X_new)
    assert proba.shape == (9, K) and proba.dtype == np.float64
    np.testing.assert_array_equal(proba, np.tile(expected, (9, 1)))
    assert proba[0, 4] == 0.5 / (N + 1) and proba[0, 5] == (N + 0.5) / (N + 1)
    assert proba.min() > 0 and proba.max() < 1


@pytest.mark.parametrize("threshold", [0.0, 0.3, "exact", 1.0])
def test_label_frequency_predict_thresholds_the_probabilities(rng, threshold) -> None:
    """predict is predict_proba >= threshold (int64), also at a threshold equal to one label's
    probability (the ``>=`` boundary) and at the ends 0 (every label) and 1 (none)."""
    X, Y = _frequency_data(rng)
    if threshold == "exact":
        threshold = float((Y[:, 2].sum() + 0.5) / (Y.shape[0] + 1.0))
    est = LabelFrequency(threshold=threshold).fit(X, Y)
    proba = est.predict_proba(X[:4])
    pred = est.predict(X[:4])
    assert pred.dtype == np.int64
    np.testing.assert_array_equal(pred, (proba >= threshold).astype(np.int64))
    if threshold == 0.0:
        assert pred.all()
    if threshold == 1.0:
        assert not pred.any()


# ------------------------------------------------------------------------------------ the trees --


def _tree_data(rng: np.random.Generator, N: int = 80, D: int = 6, K: int = 7):
    """Sparse non-negative features (no empty row) and labels of varied frequency; label 6 never
    occurs, so only the prior gives it a probability."""
    X = rng.random((N, D)) * (rng.random((N, D)) < 0.6)
    X[np.arange(N), rng.integers(0, D, size=N)] += 1.0
    Y = (rng.random((N, K)) < np.linspace(0.1, 0.6, K)).astype(np.int64)
    Y[np.arange(N), rng.integers(0, K - 1, size=N)] = 1
    Y[:, K - 1] = 0
    return sp.csr_matrix(X), Y


def _dense_tree_probabilities(est, X) -> np.ndarray:
    """The mean over trees of (n q_l + a π_l) / (n + a) at the leaf each point reaches, clipped at
    1, from dense copies of the forest's leaf arrays and a loop over the trees."""
    f = est.forest_
    leaves = f.leaves(sp.csr_matrix(X))
    Q = f.leaf_labels.toarray()
    n = f.leaf_size.astype(np.float64)
    a = float(est.prior_strength)
    prior = est.label_prior_
    T = f.n_trees
    P = np.zeros((X.shape[0], Q.shape[1]))
    for t in range(T):
        leaf = leaves[:, t]
        P += (n[leaf, None] * Q[leaf] + a * prior[None, :]) / (n[leaf, None] + a)
    return np.minimum(P / T, 1.0)


def _dense_label_prior(est) -> np.ndarray:
    """(c_l + 0.5) / (N + 1), c_l = (1/T) Σ_t Σ_{leaves of tree t} leaf_size · leaf_labels[leaf, l],
    by a loop over trees and their leaves."""
    f = est.forest_
    Q = f.leaf_labels.toarray()
    T = f.n_trees
    c = np.zeros(Q.shape[1])
    for t in range(T):
        for leaf in np.flatnonzero(f.leaf_tree == t):
            c += f.leaf_size[leaf] * Q[leaf]
    return (c / T + 0.5) / (est.n_samples_ + 1.0)


TREES = {"FastXML": FastXML, "PfastXML": PfastXML, "PfastreXML": PfastreXML}


@pytest.fixture(scope="module")
def tree_fits():
    """Each tree family fitted on the same small problem (4 trees, max_leaf 5, max_leaf_labels 2:
    the cut drops labels), with held-out points."""
    rng = np.random.default_rng(71)
    X, Y = _tree_data(rng)
    X_test, _ = _tree_data(rng, N=25)
    fits = {name: cls(n_estimators=4, max_leaf=5, max_leaf_labels=2, prior_strength=1.5, threshold=0.3,
                      random_state=0, calibration=None).fit(X, Y)
            for name, cls in TREES.items()}
    return X, Y, X_test, fits


@pytest.mark.parametrize("name", sorted(TREES))
def test_tree_probabilities_equal_the_dense_reference(tree_fits, name) -> None:
    """predict_proba equals the mean over trees of (n q + a π) / (n + a) at the reached leaves,
    computed densely with a loop over trees, to 1e-12, on training and held-out points."""
    X, _, X_test, fits = tree_fits
    est = fits[name]
    for Z in (X, X_test):
        np.testing.assert_allclose(est.predict_proba(Z), _dense_tree_probabilities(est, Z), rtol=1e-12, atol=0)


@pytest.mark.parametrize("name", sorted(TREES))
def test_label_prior_is_the_smoothed_count_the_leaves_keep(tree_fits, name) -> None:
    """label_prior_ equals (c_l + 0.5) / (N + 1) with c_l the kept count averaged over trees (a
    loop over trees and leaves); the top-2 cut makes it fall short of the training count for some
    label, never exceed it, and the never-seen label 6 gets 0.5 / (N + 1)."""
    _, Y, _, fits = tree_fits
    est = fits[name]
    N = Y.shape[0]
    np.testing.assert_allclose(est.label_prior_, _dense_label_prior(est), rtol=1e-12, atol=0)
    raw = (Y.sum(axis=0) + 0.5) / (N + 1.0)
    assert np.all(est.label_prior_ <= raw * (1 + 1e-12))
    assert np.any(est.label_prior_ < raw * (1 - 1e-6))  # the cut matters on these data
    assert est.label_prior_[6] == pytest.approx(0.5 / (N + 1), rel=1e-15)


def test_label_prior_is_the_training_frequency_when_no_label_is_cut(rng) -> None:
    """With max_leaf_labels >= K every leaf keeps every label it holds, so c_l is the training count
    of l: label_prior_ = (count_l + 0.5) / (N + 1), counted from Y directly."""
    X, Y = _tree_data(rng)
    est = FastXML(n_estimators=3, max_leaf=5, max_leaf_labels=Y.shape[1], random_state=1).fit(X, Y)
    np.testing.assert_allclose(est.label_prior_, (Y.sum(axis=0) + 0.5) / (Y.shape[0] + 1.0), rtol=1e-12, atol=0)


@pytest.mark.parametrize("name", sorted(TREES))
def test_tree_probabilities_are_positive_and_at_most_one(tree_fits, name) -> None:
    """With a > 0 every probability lies in (0, 1], every label (the never-seen label 6 too, which
    no leaf keeps and decision_function scores 0) has probability > 0 at every point."""
    _, _, X_test, fits = tree_fits
    est = fits[name]
    proba = est.predict_proba(X_test)
    assert proba.min() > 0 and proba.max() <= 1
    assert np.all(est.decision_function(X_test)[:, 6] == 0) and np.all(proba[:, 6] > 0)


def test_pfastrexml_probabilities_are_its_trees_not_its_reranked_scores(tree_fits) -> None:
    """PfastreXML re-ranks decision_function, but predict_proba is the smoothed leaf average of its
    own trees (its reference above), which differs from the re-ranked scores."""
    _, _, X_test, fits = tree_fits
    est = fits["PfastreXML"]
    proba = est.predict_proba(X_test)
    np.testing.assert_allclose(proba, _dense_tree_probabilities(est, X_test), rtol=1e-12, atol=0)
    assert np.abs(proba - est.decision_function(X_test)).max() > 1e-3


@pytest.mark.parametrize("name", sorted(TREES))
def test_zero_prior_strength_gives_the_bare_leaf_average(tree_fits, name) -> None:
    """prior_strength = 0: predict_proba is the plain average of the reached leaves' distributions,
    i.e. FastXML's decision_function (PfastreXML: its forest's scores, before re-ranking)."""
    X, Y, X_test, fits = tree_fits
    est = fits[name]
    bare = type(est)(**{**est.get_params(), "prior_strength": 0.0}).fit(X, Y)
    proba = bare.predict_proba(X_test)
    np.testing.assert_array_equal(proba, bare.forest_.scores(sp.csr_matrix(X_test)).toarray())
    if name != "PfastreXML":
        np.testing.assert_array_equal(proba, bare.decision_function(X_test))
    np.testing.assert_allclose(proba, _dense_tree_probabilities(bare, X_test), rtol=1e-12, atol=1e-300)
    assert np.any(proba == 0)  # labels no reached leaf keeps are impossible without the prior


@pytest.mark.parametrize("name", sorted(TREES))
def test_tree_predict_thresholds_the_probabilities(tree_fits, name) -> None:
    """predict is predict_proba >= threshold (0.3 here)."""
    _, _, X_test, fits = tree_fits
    est = fits[name]
    np.testing.assert_array_equal(est.predict(X_test), (est.predict_proba(X_test) >= 0.3).astype(np.int64))


@pytest.mark.parametrize("name", sorted(TREES))
def test_tree_probabilities_survive_save_and_load(tree_fits, name, tmp_path) -> None:
    """save → load gives the same label_prior_ and identical predict_proba (same computation)."""
    _, _, X_test, fits = tree_fits
    est = fits[name]
    path = est.save(tmp_path / name)
    loaded = type(est).load(path)
    assert loaded.prior_strength == est.prior_strength
    np.testing.assert_array_equal(loaded.label_prior_, est.label_prior_)
    np.testing.assert_array_equal(loaded.predict_proba(X_test), est.predict_proba(X_test))


def test_tree_probabilities_do_not_depend_on_the_batch_size(tree_fits) -> None:
    """Scoring one row at a time or all at once gives the same probabilities to 1e-12."""
    _, _, X_test, fits = tree_fits
    est = fits["FastXML"]
    np.testing.assert_allclose(est.predict_proba(X_test, batch_size=1), est.predict_proba(X_test, batch_size=1000),
                               rtol=1e-12, atol=0)


@pytest.mark.parametrize("name", sorted(TREES))
def test_negative_prior_strength_is_refused_at_fit(tree_fits, name) -> None:
    """prior_strength < 0 raises ParameterError naming the parameter, before any tree is grown."""
    X, Y, _, _ = tree_fits
    with pytest.raises(ParameterError, match="prior_strength"):
        TREES[name](n_estimators=1, prior_strength=-0.5).fit(X, Y)


# ------------------------------------------------------------------------------ LSPC / MLLSPCCV --


def _dense_design(X, centres, width) -> np.ndarray:
    """exp(−‖x − c‖² / (2 width²)) (N, B), by broadcasting."""
    C = centres.toarray() if sp.issparse(centres) else np.asarray(centres)
    return np.exp(-((X[:, None, :] - C[None, :, :]) ** 2).sum(-1) / (2.0 * width ** 2))


def _skewed_three_classes(rng: np.random.Generator, N: int = 150):
    """Classes "a", "b", "c" of 60 %, 30 %, 10 % depending on the features."""
    X = rng.normal(size=(N, 2))
    score = X[:, 0] + 0.5 * rng.normal(size=N)
    y = np.where(score < np.quantile(score, 0.6), "a", np.where(score < np.quantile(score, 0.9), "b", "c"))
    return X, y


@pytest.mark.parametrize("weight", [0.1, 2.0])
def test_lspc_multiclass_probabilities_are_prior_weighted_and_sum_to_one(rng, weight) -> None:
    """Multi-class LSPC with w > 0: rows of (max(0, q) + w π) / (Σ max(0, q) + w), q from a dense
    design written here and π the class counts from y smoothed by Jeffreys' prior,
    (n_c + 0.5) / (N + C / 2); rows sum to 1 (1e-12), every entry strictly inside (0, 1), far points
    get π."""
    X, y = _skewed_three_classes(rng)
    est = LSPC(n_basis=40, alpha=0.3, kernel_width=0.8, prior_weight=weight, random_state=0).fit(X, y)
    prior = np.array([(np.sum(y == c) + 0.5) / (y.size + 1.5) for c in ("a", "b", "c")])
    X_test = np.vstack([rng.normal(size=(30, 2)), [[1e3, -1e3]]])
    Q = _dense_design(X_test, est.basis_.centres, est.kernel_width_) @ est.coef_
    assert (Q[:-1] < 0).any()  # the clipping matters
    pos = np.maximum(Q, 0.0)
    expected = (pos + weight * prior) / (pos.sum(axis=1, keepdims=True) + weight)
    proba = est.predict_proba(X_test)
    np.testing.assert_allclose(proba, expected, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    assert proba.min() > 0 and proba.max() < 1
    np.testing.assert_allclose(proba[-1], prior, rtol=1e-12)


def _multilabel_toy(seed: int = 0):
    ds = lspc_toy(120, 40, num_labels=5, num_features=4, noise=0.05, seed=seed)
    return ds.train.X.toarray(), ds.train.Y.toarray(), ds.test.X.toarray()


def test_lspc_label_matrix_probabilities_are_prior_weighted_and_strictly_inside(rng) -> None:
    """Label-matrix LSPC with w = 0.1: (max(0, q1) + w π) / (max(0, q1) + max(0, q0) + w) from a
    dense design written here (π = (count + 0.5) / (N + 1) from Y); every probability strictly inside
    (0, 1) although some q1 <= 0 (the paper's w = 0 gives exactly 0 there), even for a label that
    no training row carries."""
    X, Y, X_test = _multilabel_toy()
    Y = np.hstack([Y, np.zeros((Y.shape[0], 1), dtype=Y.dtype)])  # a label absent from training
    est = LSPC(n_basis=50, prior_weight=0.1, random_state=0, calibration=None).fit(X, Y)
    Phi = _dense_design(X_test, est.basis_.centres, est.kernel_width_)
    q1, q0 = Phi @ est.coef_[0], Phi @ est.coef_[1]
    assert (q1 <= 0).any()
    prior = (Y.sum(axis=0) + 0.5) / (Y.shape[0] + 1)
    p1, p0 = np.maximum(q1, 0), np.maximum(q0, 0)
    proba = est.predict_proba(X_test)
    np.testing.assert_allclose(proba, (p1 + 0.1 * prior) / (p1 + p0 + 0.1), rtol=1e-12, atol=1e-15)
    assert proba.min() > 0 and proba.max() < 1
    paper = LSPC(n_basis=50, prior_weight=0.0, random_state=0, calibration=None).fit(X, Y).predict_proba(X_test)
    assert paper.min() == 0  # what w > 0 repairs


def test_mllspccv_uses_prior_weight_in_its_folds_and_its_refit() -> None:
    """MLLSPCCV(prior_weight=w) scores every fold as GridSearchCV over MLLSPC(prior_weight=w) does
    (the weight moves predictions across the threshold, so it changes the hamming scores), passes w
    to best_estimator_, whose probabilities are an MLLSPC(prior_weight=w) refit's and lie strictly
    inside (0, 1)."""
    X, Y, X_test = _multilabel_toy(1)
    grid = dict(alpha=[0.01, 0.1], coupling=[0.0, 0.3], kernel_width=[1.0, 2.0])
    folds = KFold(3, shuffle=True, random_state=5)
    w = 3.0
    ours = MLLSPCCV(kernel_widths=grid["kernel_width"], alphas=grid["alpha"], couplings=grid["coupling"],
                    n_basis=50, cv=folds, prior_weight=w, random_state=0, calibration=None).fit(X, Y)

    def grid_search(weight):
        return GridSearchCV(MLLSPC(n_basis=50, prior_weight=weight, random_state=0, calibration=None), grid, cv=folds,
                            scoring=lambda est, Xv, Yv: -float(np.mean(est.predict(Xv) != Yv))).fit(X, Y)

    ref, unweighted = grid_search(w), grid_search(0.0)
    assert ours.cv_results_["params"] == ref.cv_results_["params"]
    for i in range(3):
        key = f"split{i}_test_score"
        np.testing.assert_allclose(ours.cv_results_[key], ref.cv_results_[key], atol=1e-12, err_msg=key)
    # the test can tell: without the weight the fold scores differ
    assert np.abs(unweighted.cv_results_["mean_test_score"] - ref.cv_results_["mean_test_score"]).max() > 1e-3
    best = ours.best_estimator_
    assert best.prior_weight == w
    refit = MLLSPC(n_basis=50, prior_weight=w, solver="eig", random_state=0, calibration=None,
                   **ours.best_params_).fit(X, Y)
    proba = ours.predict_proba(X_test)
    np.testing.assert_allclose(proba, refit.predict_proba(X_test), atol=1e-9)
    assert proba.min() > 0 and proba.max() < 1
