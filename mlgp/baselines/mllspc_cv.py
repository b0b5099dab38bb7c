"""MLLSPCCV: :class:`~mlgp.baselines.MLLSPC` with its kernel width, regularisation and coupling
chosen by K-fold cross-validation over a grid, at the cost of one eigendecomposition per fold and
width.

Contract: ``fit(X, Y)`` checks its input as :class:`MLLSPC` does, scores every grid point
(``kernel_widths`` × ``alphas`` × ``couplings``, in :class:`sklearn.model_selection.ParameterGrid`
order) on each fold of ``cv`` (``sklearn.model_selection.check_cv(cv, Y, classifier=True)``: the
folds :class:`~sklearn.model_selection.GridSearchCV` would use) with the same model an
``MLLSPC(...).fit`` on the fold would give, and refits ``MLLSPC`` with the best point on all of
``(X, Y)``. Fewer than 2 rows, fewer rows than ``cv``'s folds, or folds ``cv`` cannot make are
refused with a :class:`~mlgp.errors.ShapeError` before any work. ``cv_results_`` and
``best_params_`` follow GridSearchCV's layout (scores greater is better: a loss is negated).
``decision_function``, ``predict_proba``, ``predict`` and
``predict_topk`` are the refitted model's (its block hooks under
:class:`~mlgp.estimator.MultiLabelEstimator`'s scoring methods); ``save`` / ``load`` keep the refitted
model and ``cv_results_``.

The saving: with ``C = α I + c L`` (L the Laplacian of the similarity W), the eigenvectors of C are
those of L for every (α, c), and ``ΦᵀΦ`` does not depend on them, so each fold and width needs one
``eigh`` of ``ΦᵀΦ`` (B × B) and one of L (K × K); each (α, c) then costs O(B²K + N_val B K).
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from scipy.stats import rankdata
from sklearn.base import _fit_context
from sklearn.model_selection import GroupKFold, KFold, ParameterGrid, StratifiedKFold, check_cv
from sklearn.utils._param_validation import Interval, StrOptions

from ..errors import ShapeError
from ..estimator import MultiLabelEstimator, SavedState
from ..metrics import f1_scores, precision_at_k
from ..validation import check_thresholds
from ._kernel_basis import choose_centres, gaussian_design, median_heuristic, row_norms_squared
from ._least_squares import binary_posterior
from ._sylvester import pearson_similarity
from .mllspc import MLLSPC, check_similarity

__all__ = ["MLLSPCCV", "SCORINGS"]

#: Model-selection criteria of :class:`MLLSPCCV` (greater is better): of the 0/1 predictions, or
#: (``precision@k``) of the ranking by ``decision_function``.
SCORINGS = {
    "hamming_loss": lambda Y, P, S: -float(np.mean(Y != P)),
    "f1_example": lambda Y, P, S: f1_scores(Y, P)["example"],
    "f1_micro": lambda Y, P, S: f1_scores(Y, P)["micro"],
    "f1_macro": lambda Y, P, S: f1_scores(Y, P)["macro"],
    "precision@1": lambda Y, P, S: precision_at_k(Y, S, 1),
    "precision@3": lambda Y, P, S: precision_at_k(Y, S, 3),
    "precision@5": lambda Y, P, S: precision_at_k(Y, S, 5),
}

_GRID = [Interval(Real, 0, None, closed="neither")]


class MLLSPCCV(MultiLabelEstimator):
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
        precision at k of the ranking by ``decision_function``.

    Attributes
    ----------
    best_estimator_ : MLLSPC
        Refitted on all the data with ``best_params_``.
    best_params_ : dict
        ``alpha``, ``coupling`` and ``kernel_width`` of the best grid point.
    best_score_, best_index_ : float, int
        Its mean score over folds (greater is better) and position in ``cv_results_``.
    cv_results_ : dict of np.ndarray
        ``params``, ``param_<name>``, ``split<i>_test_score``, ``mean_test_score``,
        ``std_test_score``, ``rank_test_score``, as in GridSearchCV.
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
    }

    _predict_from = "proba"
    _GRID_PARAMS = ("alpha", "coupling", "kernel_width")

    def __init__(self, *, kernel_widths=None, alphas=(1e-3, 1e-2, 1e-1, 1.0), couplings=(0.0, 0.01, 0.03, 0.1, 0.3),
                 n_basis: int | None = 1000, similarity="pearson", cv=5, scoring: str = "hamming_loss",
                 threshold=0.5, random_state=None, prior_weight: float = 0.1) -> None:
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

    @staticmethod
    def _grid_values(values, name: str, lower: float, closed: bool) -> list[float]:
        v = np.atleast_1d(np.asarray(values, dtype=np.float64))
        if v.ndim != 1 or v.size == 0 or not np.all(np.isfinite(v)) or np.any(v < lower) or (not closed and np.any(v == lower)):
            bound = f">= {lower:g}" if closed else f"> {lower:g}"
            raise ShapeError(f"{name} must be a non-empty sequence of finite numbers {bound}, got {values!r}")
        return [float(x) for x in v]

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, Y) -> "MLLSPCCV":
        """Cross-validate the grid, then refit the best point on all of ``(X, Y)``; returns ``self``.

        Parameters
        ----------
        X : np.ndarray or scipy sparse matrix of shape (N, D)
        Y : np.ndarray or scipy sparse matrix of shape (N, K)
            0/1 labels.

        Raises
        ------
        ShapeError
            Before any work, for bad data (as :class:`MLLSPC`), a bad grid or ``similarity``, fewer
            than 2 rows, fewer rows than ``cv``'s folds, or folds ``cv`` cannot make on the rows.
        """
        X, Y = self._validate_fit_data(X, Y)
        K = Y.shape[1]
        user_W = None if (isinstance(self.similarity, str) and self.similarity == "pearson") \
            else check_similarity(self.similarity, K)
        thresholds = check_thresholds(self.threshold, K)
        alphas = self._grid_values(self.alphas, "alphas", 0.0, closed=False)
        couplings = self._grid_values(self.couplings, "couplings", 0.0, closed=True)
        splits = self._splits(X, Y.toarray())
        if self.kernel_widths is None:
            median = median_heuristic(X, random_state=self.random_state)
            widths = [f * median for f in (0.5, 1.0, 2.0)]
        else:
            widths = self._grid_values(self.kernel_widths, "kernel_widths", 0.0, closed=False)
        grid = list(ParameterGrid({"alpha": alphas, "coupling": couplings, "kernel_width": widths}))
        scores = np.empty((len(splits), len(grid)))
        for i, (train, val) in enumerate(splits):
            scores[i] = self._fold_scores(X[train], Y[train], X[val], Y[val], grid, widths, user_W, thresholds)
        mean = scores.mean(axis=0)
        # equal means share the better rank, as in GridSearchCV; means equal to 12 decimals are
        # taken as equal (fold averages of the same counts can differ in the last bit)
        rank = rankdata(-np.round(mean, 12), method="min").astype(np.int32)
        self.cv_results_ = {
            "params": grid,
            **{f"param_{k}": np.array([p[k] for p in grid]) for k in ("alpha", "coupling", "kernel_width")},
            **{f"split{i}_test_score": scores[i] for i in range(len(splits))},
            "mean_test_score": mean,
            "std_test_score": scores.std(axis=0),
            "rank_test_score": rank,
        }
        self.best_index_ = int(np.argmin(rank))
        self.best_params_ = dict(grid[self.best_index_])
        self.best_score_ = float(mean[self.best_index_])
        self.n_splits_ = len(splits)
        self.best_estimator_ = self._refit_estimator()._fit(X, Y)   # X, Y checked above
        self._set_fitted_shape(X.shape[0], X.shape[1], K)
        return self

    def _splits(self, X, Y_dense: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """The ``(train, validation)`` row indices of the folds of ``cv``, made before any work.

        Parameters
        ----------
        X : np.ndarray or scipy sparse matrix of shape (N, D)
        Y_dense : np.ndarray of shape (N, K)

        Raises
        ------
        ShapeError
            When N < 2, when an int ``cv`` or a K-fold splitter asks for more folds than rows, or
            when the splitter refuses the rows (its reason quoted).
        """
        n, name = X.shape[0], type(self).__name__
        if n < 2:
            raise ShapeError(f"{name} needs at least 2 rows to cross-validate, got {n} sample{'' if n == 1 else 's'}")
        folds = check_cv(self.cv, Y_dense, classifier=True)
        k = folds.n_splits if isinstance(folds, (KFold, StratifiedKFold, GroupKFold)) else 0
        if k > n:
            what = f"cv={k} folds need" if isinstance(self.cv, Integral) else f"cv={self.cv!r} makes {k} folds, which need"
            raise ShapeError(f"{name}: {what} at least {k} rows, got {n}")
        try:
            return list(folds.split(X, Y_dense))
        except ValueError as err:
            raise ShapeError(f"{name}: cv={self.cv!r} cannot split the {n} rows: {err}") from None

    def _refit_estimator(self) -> MLLSPC:
        """The unfitted MLLSPC of the best grid point."""
        return MLLSPC(n_basis=self.n_basis, similarity=self.similarity, solver="eig", threshold=self.threshold,
                      random_state=self.random_state, prior_weight=self.prior_weight, **self.best_params_)

    def _fold_scores(self, X_tr, Y_tr, X_va, Y_va, grid, widths, user_W, thresholds) -> np.ndarray:
        """Scores (len(grid),) of every grid point trained on (X_tr, Y_tr), scored on (X_va, Y_va)."""
        score = SCORINGS[self.scoring]
        Y_va = Y_va.toarray()
        W = pearson_similarity(Y_tr) if user_W is None else user_W
        ell, U = np.linalg.eigh(np.diag(W.sum(axis=1)) - W)          # Laplacian: C = αI + cL
        prior = np.asarray(Y_tr.mean(axis=0)).ravel()
        centres = X_tr[choose_centres(X_tr.shape[0], self.n_basis, self.random_state)]
        if sp.issparse(centres):
            centres = sp.csr_matrix(centres)
        norms = row_norms_squared(centres)
        out = np.empty(len(grid))
        for width in widths:
            Phi = gaussian_design(X_tr, centres, width, norms)
            f, F = np.linalg.eigh(Phi.T @ Phi)
            R1 = np.asarray((Y_tr.T @ Phi).T)
            A1 = F.T @ R1 @ U
            A0 = F.T @ (Phi.sum(axis=0)[:, None] - R1) @ U
            P = gaussian_design(X_va, centres, width, norms) @ F
            for j, p in enumerate(grid):
                if p["kernel_width"] != width:
                    continue
                denom = f[:, None] + p["alpha"] + p["coupling"] * ell[None, :]
                q1 = P @ (A1 / denom) @ U.T
                q0 = P @ (A0 / denom) @ U.T
                proba = binary_posterior(q1, q0, prior, float(self.prior_weight), Y_tr.shape[0])
                pred = (proba >= thresholds).astype(np.int64)
                out[j] = score(Y_va, pred, q1 - q0)
        return out

    # ------------------------------------------------------- the refitted model
    def _decision_block(self, xb: np.ndarray) -> np.ndarray:
        """:meth:`MLLSPC._decision_block` of ``best_estimator_``: (B, K)."""
        return self.best_estimator_._decision_block(xb)

    def _proba_block(self, xb: np.ndarray) -> np.ndarray:
        """:meth:`MLLSPC._proba_block` of ``best_estimator_``: (B, K)."""
        return self.best_estimator_._proba_block(xb)

    # ------------------------------------------------------------ persistence
    def _fitted_scalars(self) -> dict:
        return {**super()._fitted_scalars(), "best_index_": self.best_index_, "best_score_": self.best_score_,
                "best_params_": self.best_params_, "n_splits_": self.n_splits_,
                "cv_params": self.cv_results_["params"], "best_estimator_": self.best_estimator_._fitted_scalars()}

    def _fitted_arrays(self) -> dict:
        arrays = {f"cv_results_.{k}": v for k, v in self.cv_results_.items() if k != "params"}
        arrays.update({f"best_estimator_.{k}": v for k, v in self.best_estimator_._fitted_arrays().items()})
        return arrays

    def _restore_fitted(self, state: SavedState) -> None:
        super()._restore_fitted(state)
        self.n_splits_ = state.count("n_splits_")
        grid = state.scalar("cv_params", list)
        n = len(grid)
        if n == 0 or not all(isinstance(p, dict) and set(p) == set(self._GRID_PARAMS) for p in grid):
            raise state.error(f"the fitted value 'cv_params' must list dicts of {self._GRID_PARAMS}")
        self.best_index_ = state.scalar("best_index_", int, low=0)
        if self.best_index_ >= n:
            raise state.error(f"best_index_ = {self.best_index_} is not an index into the {n} grid points")
        self.best_score_ = state.scalar("best_score_", float)
        self.best_params_ = state.scalar("best_params_", dict)
        if self.best_params_ != grid[self.best_index_]:
            raise state.error("best_params_ is not the grid point at best_index_")
        self.cv_results_ = {"params": grid}
        for name in ("param_alpha", "param_coupling", "param_kernel_width", "mean_test_score", "std_test_score",
                     *(f"split{i}_test_score" for i in range(self.n_splits_))):
            self.cv_results_[name] = state.array(f"cv_results_.{name}", (n,))
        self.cv_results_["rank_test_score"] = state.array("cv_results_.rank_test_score", (n,), "iu", low=1, high=n)
        self.best_estimator_ = best = self._refit_estimator()
        best._validate_params()
        best._restore_fitted(state.nested("best_estimator_"))
        if (best.n_features_in_, best.n_labels_) != (self.n_features_in_, self.n_labels_):
            raise state.error("the refitted model's n_features_in_ / n_labels_ differ from the search's")
