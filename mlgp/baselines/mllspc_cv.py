"""MLLSPCCV: :class:`~mlgp.baselines.MLLSPC` with its kernel width, regularisation and coupling
chosen by K-fold cross-validation over a grid, at the cost of one eigendecomposition per fold and
width.

Contract: a :class:`~mlgp.estimator.GridSearch` of ``MLLSPC(solver="eig", ...)`` over
``kernel_widths`` × ``alphas`` × ``couplings`` (:class:`sklearn.model_selection.ParameterGrid`
order) on the folds of ``check_cv(cv, Y, classifier=True)`` (the folds
:class:`~sklearn.model_selection.GridSearchCV` would use): ``fit(X, Y)`` checks its input as
:class:`MLLSPC` does, refuses a bad grid or ``similarity`` and (the floor's) fewer than 2 rows, fewer
rows than ``cv``'s folds, or folds ``cv`` cannot make with a :class:`~mlgp.errors.ShapeError` before
any work, scores every grid point on each fold with the same model an ``MLLSPC(...).fit`` on the fold
would give, and refits ``MLLSPC`` with the best point on all of ``(X, Y)``. ``cv_results_``,
``best_params_``, the scoring methods (the refitted model's) and ``save`` / ``load`` are the floor's.
The candidates are scored one kernel width at a time (every α and c of the width on every fold), so
that ``max_seconds`` stops the search between widths, or between the folds of a width, keeping the
best of the widths scored on every fold (:class:`~mlgp.estimator.GridSearch`'s budget).

The saving: with ``C = α I + c L`` (L the Laplacian of the similarity W), the eigenvectors of C are
those of L for every (α, c), and ``ΦᵀΦ`` does not depend on them, so each fold and width needs one
``eigh`` of ``ΦᵀΦ`` (B × B) and one of L (K × K); each (α, c) then costs O(B²K + N_val B K).
"""

from __future__ import annotations

import time
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import Interval, StrOptions

from ..errors import ShapeError
from ..estimator import GridSearch, SavedState
from ..estimator.search_scores import SCORINGS
from ..estimator.prior_map import CALIBRATION
from ..estimator.budget import MAX_SECONDS
from ..validation import check_thresholds
from ._kernel_basis import choose_centres, gaussian_design, median_heuristic, row_norms_squared
from ._least_squares import binary_posterior
from ._sylvester import pearson_similarity
from .mllspc import MLLSPC, check_similarity

__all__ = ["MLLSPCCV", "SCORINGS"]


class MLLSPCCV(GridSearch):
    """ML-LSPC with cross-validated ``kernel_width``, ``alpha`` and ``coupling``.

    Parameters
    ----------
    kernel_widths : sequence of float or None, default=None
        Candidate widths σ; None: 0.5, 1 and 2 times the median heuristic on the training points.
    alphas : sequence of float, default=(1e-3, 1e-2, 1e-1, 1.0)
        Candidate regularisations λ > 0.
    couplings : sequence of float, default=(0.0, 0.01, 0.03, 0.1, 0.3)
        Candidate coupling scales c >= 0 (0 is plain LSPC per label).
    n_basis, prior_weight, similarity, threshold, random_state
        As in :class:`MLLSPC` (each fold draws its own centres with ``random_state``, as an
        ``MLLSPC`` fitted on the fold would).
    cv : int, cross-validation generator or iterable, default=5
        Folds, resolved by ``check_cv(cv, Y, classifier=True)`` (an int gives unshuffled KFold for
        label matrices).
    scoring : {"hamming_loss", "f1_example", "f1_micro", "f1_macro", "precision@1", "precision@3", \
"precision@5"}, default="hamming_loss"
        Criterion on the 0/1 predictions ``predict_proba >= threshold`` ("hamming_loss" is the
        misclassification rate over all (point, label) pairs, the paper's toy-study criterion), or
        precision at k of the ranking by ``decision_function`` (k <= K).
    calibration : {"prior"} or None, default="prior"
        ``"prior"``: ``predict_proba`` through the map toward the label prior fitted on held-out rows
        (:mod:`mlgp.estimator.prior_map`, ``proba_map_``; docs/probabilities.md); None: its own.
    max_seconds : float or None, default=None
        Wall seconds of ``fit`` from its start (:class:`mlgp.estimator.budget.Budget`). The search
        takes :data:`~mlgp.estimator.search.SEARCH_SHARE` (0.7) of them: the budget is looked at
        before each kernel width and each of its folds (after the first width, which is always
        scored whole); once that share is spent, the width in progress is dropped, the best of the
        widths scored on every fold is kept, ``search_stopped_`` is True and a
        :class:`~mlgp.errors.BudgetWarning` says how many grid points were tried. The refit is an
        ``MLLSPC`` with the seconds left as its ``max_seconds`` (its solve runs whole; its prior map
        is bounded by them). A fit overruns the bound by at most one fold of one width, plus the refit.

    Attributes
    ----------
    best_estimator_ : MLLSPC
        Refitted on all the data with ``best_params_``.
    best_params_ : dict
        ``alpha``, ``coupling`` and ``kernel_width`` of the best grid point.
    best_score_, best_index_ : float, int
        Its mean score over folds (greater is better) and position in ``cv_results_``.
    cv_results_ : dict of np.ndarray
        GridSearchCV's layout (:class:`~mlgp.estimator.GridSearch`), of the grid points tried.
    search_stopped_ : bool
        Whether ``max_seconds`` stopped the search before every grid point was tried.
    n_splits_ : int
        Number of folds.
    n_samples_, n_features_in_, n_labels_, classes_
        N, D, K and ``arange(K)``.
    """

    _parameter_constraints: dict = {
        "kernel_widths": ["array-like", None],
        "alphas": ["array-like"],
        "couplings": ["array-like"],
        "n_basis": [Interval(Integral, 1, None, closed="left"), None],
        "similarity": [StrOptions({"pearson"}), "array-like", "sparse matrix"],
        "cv": ["cv_object"],
        "scoring": [StrOptions(set(SCORINGS))],
        "threshold": [Interval(Real, 0, 1, closed="both"), "array-like"],
        "random_state": ["random_state"],
        "prior_weight": [Interval(Real, 0, None, closed="left")],
        "calibration": CALIBRATION,
        "max_seconds": MAX_SECONDS,
    }

    _searched = MLLSPC
    _GRID_PARAMS = ("alpha", "coupling", "kernel_width")

    def __init__(self, *, kernel_widths=None, alphas=(1e-3, 1e-2, 1e-1, 1.0), couplings=(0.0, 0.01, 0.03, 0.1, 0.3),
                 n_basis: int | None = 1000, similarity="pearson", cv=5, scoring: str = "hamming_loss",
                 threshold=0.5, random_state=None, prior_weight: float = 0.1, calibration: str | None = "prior",
                 max_seconds: float | None = None) -> None:
        self.kernel_widths = kernel_widths
        self.alphas = alphas
        self.couplings = couplings
        self.n_basis = n_basis
        self.similarity = similarity
        self.cv = cv
        self.scoring = scoring
        self.threshold = threshold
        self.random_state = random_state
        self.prior_weight = prior_weight
        self.calibration = calibration
        self.max_seconds = max_seconds

    @staticmethod
    def _grid_values(values, name: str, lower: float, closed: bool) -> list[float]:
        v = np.atleast_1d(np.asarray(values, dtype=np.float64))
        if v.ndim != 1 or v.size == 0 or not np.all(np.isfinite(v)) or np.any(v < lower) or (not closed and np.any(v == lower)):
            bound = f">= {lower:g}" if closed else f"> {lower:g}"
            raise ShapeError(f"{name} must be a non-empty sequence of finite numbers {bound}, got {values!r}")
        return [float(x) for x in v]

    def _fixed_params(self) -> dict:
        return dict(n_basis=self.n_basis, similarity=self.similarity, solver="eig", threshold=self.threshold,
                    random_state=self.random_state, prior_weight=self.prior_weight, calibration=None)

    def _check_search(self, X, Y) -> dict:
        """The user similarity (None: Pearson's on each fold), thresholds, alphas and couplings,
        checked before any work (ShapeError)."""
        K = Y.shape[1]
        W = None if (isinstance(self.similarity, str) and self.similarity == "pearson") \
            else check_similarity(self.similarity, K)
        return {"W": W, "thresholds": check_thresholds(self.threshold, K),
                "alpha": self._grid_values(self.alphas, "alphas", 0.0, closed=False),
                "coupling": self._grid_values(self.couplings, "couplings", 0.0, closed=True)}

    def _param_grid(self, X, Y, context: dict) -> dict:
        if self.kernel_widths is None:
            median = median_heuristic(X, random_state=self.random_state)
            widths = [f * median for f in (0.5, 1.0, 2.0)]
        else:
            widths = self._grid_values(self.kernel_widths, "kernel_widths", 0.0, closed=False)
        return {"alpha": context["alpha"], "coupling": context["coupling"], "kernel_width": widths}

    def _candidate_blocks(self, points: list[dict]) -> list[list[int]]:
        """One block per kernel width (in the order the widths first appear), every (α, c) of it:
        a fold's eigendecomposition of ΦᵀΦ serves them all."""
        widths = dict.fromkeys(p["kernel_width"] for p in points)
        return [[j for j, p in enumerate(points) if p["kernel_width"] == w] for w in widths]

    def _check_saved_points(self, state: SavedState, points: list[dict]) -> None:
        if not all(set(p) == set(self._GRID_PARAMS) for p in points):
            raise state.error(f"the fitted value 'cv_params' must list dicts of {self._GRID_PARAMS}")

    def _split_scores(self, X_fit, Y_fit, X_val, Y_val, points: list[dict], context: dict) -> tuple:
        """Scores and seconds (fitting, scoring; shared work split evenly) of every grid point trained
        on (X_fit, Y_fit), scored on (X_val, Y_val): the eigenvectors of L and of a width's ΦᵀΦ
        serve every (α, c)."""
        score, clock, n = SCORINGS[self.scoring], time.perf_counter, len(points)
        start = clock()
        Y_val = Y_val.toarray()
        W = pearson_similarity(Y_fit) if context["W"] is None else context["W"]
        ell, U = np.linalg.eigh(np.diag(W.sum(axis=1)) - W)          # Laplacian: C = αI + cL
        prior = np.asarray(Y_fit.mean(axis=0)).ravel()
        centres = X_fit[choose_centres(X_fit.shape[0], self.n_basis, self.random_state)]
        if sp.issparse(centres):
            centres = sp.csr_matrix(centres)
        norms = row_norms_squared(centres)
        out, fit_time, score_time = np.empty(n), np.full(n, (clock() - start) / n), np.zeros(n)
        for width in dict.fromkeys(p["kernel_width"] for p in points):
            at = [j for j, p in enumerate(points) if p["kernel_width"] == width]
            start = clock()
            Phi = gaussian_design(X_fit, centres, width, norms)
            f, F = np.linalg.eigh(Phi.T @ Phi)
            R1 = np.asarray((Y_fit.T @ Phi).T)
            A1 = F.T @ R1 @ U
            A0 = F.T @ (Phi.sum(axis=0)[:, None] - R1) @ U
            middle = clock()
            P = gaussian_design(X_val, centres, width, norms) @ F
            fit_time[at] += (middle - start) / len(at)
            score_time[at] += (clock() - middle) / len(at)
            for j in at:
                start = clock()
                denom = f[:, None] + points[j]["alpha"] + points[j]["coupling"] * ell[None, :]
                theta1, theta0 = A1 / denom, A0 / denom
                middle = clock()
                q1 = P @ theta1 @ U.T
                q0 = P @ theta0 @ U.T
                proba = binary_posterior(q1, q0, prior, float(self.prior_weight), Y_fit.shape[0])
                out[j] = score(Y_val, (proba >= context["thresholds"]).astype(np.int64), q1 - q0)
                fit_time[j] += middle - start
                score_time[j] += clock() - middle
        return out, fit_time, score_time
