"""MLLSPCCV: :class:`~mlgp.baselines.MLLSPC` with its kernel width, regularisation and coupling
chosen by K-fold cross-validation over a grid, at the cost of one eigendecomposition per fold and
width.

Contract: ``fit(X, Y)`` checks its input as :class:`MLLSPC` does, scores every grid point
(``kernel_widths`` × ``alphas`` × ``couplings``, in :class:`sklearn.model_selection.ParameterGrid`
order) on each fold of ``cv`` (``sklearn.model_selection.check_cv(cv, Y, classifier=True)``: the
folds :class:`~sklearn.model_selection.GridSearchCV` would use) with the same model an
``MLLSPC(...).fit`` on the fold would give, and refits ``MLLSPC`` with the best point on all of
``(X, Y)``. ``cv_results_`` and ``best_params_`` follow GridSearchCV's layout (scores greater is
better: a loss is negated). ``decision_function``, ``predict_proba``, ``predict`` and
``predict_topk`` are the refitted model's.

The saving: with ``C = α I + c L`` (L the Laplacian of the similarity W), the eigenvectors of C are
those of L for every (α, c), and ``ΦᵀΦ`` does not depend on them, so each fold and width needs one
``eigh`` of ``ΦᵀΦ`` (B × B) and one of L (K × K); each (α, c) then costs O(B²K + N_val B K).
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from scipy.stats import rankdata
from sklearn.base import BaseEstimator, ClassifierMixin, MultiOutputMixin, _fit_context
from sklearn.model_selection import ParameterGrid, check_cv
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..errors import ShapeError
from ..metrics import f1_scores, precision_at_k
from ..scores import TopK
from ..validation import check_estimator_features, check_estimator_labels, check_features
from ._estimator import MultiLabelScoringMixin
from ._kernel_basis import choose_centres, gaussian_design, median_heuristic, row_norms_squared
from ._least_squares import binary_posterior, check_threshold
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


class MLLSPCCV(MultiLabelScoringMixin, MultiOutputMixin, ClassifierMixin, BaseEstimator):
    """ML-LSPC with cross-validated ``kernel_width``, ``alpha`` and ``coupling``.

    Parameters
    ----------
    kernel_widths : sequence of float or None, default=None
        Candidate widths σ; None: 0.5, 1 and 2 times the median heuristic on the training points.
    alphas : sequence of float, default=(1e-3, 1e-2, 1e-1, 1.0)
        Candidate regularisations λ > 0.
    couplings : sequence of float, default=(0.0, 0.01, 0.03, 0.1, 0.3)
        Candidate coupling scales c >= 0 (0 is plain LSPC per label).
    n_basis, similarity, threshold, random_state
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
    }

    def __init__(self, kernel_widths=None, alphas=(1e-3, 1e-2, 1e-1, 1.0), couplings=(0.0, 0.01, 0.03, 0.1, 0.3),
                 n_basis: int | None = 1000, similarity="pearson", cv=5, scoring: str = "hamming_loss",
                 threshold=0.5, random_state=None) -> None:
        self.kernel_widths = kernel_widths
        self.alphas = alphas
        self.couplings = couplings
        self.n_basis = n_basis
        self.similarity = similarity
        self.cv = cv
        self.scoring = scoring
        self.threshold = threshold
        self.random_state = random_state

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
        """
        X = check_features(check_estimator_features(X, None, type(self).__name__))
        Y = check_estimator_labels(Y, X.shape[0], type(self).__name__).astype(np.float64)
        K = Y.shape[1]
        user_W = None if (isinstance(self.similarity, str) and self.similarity == "pearson") \
            else check_similarity(self.similarity, K)
        thresholds = check_threshold(self.threshold, K)
        alphas = self._grid_values(self.alphas, "alphas", 0.0, closed=False)
        couplings = self._grid_values(self.couplings, "couplings", 0.0, closed=True)
        if self.kernel_widths is None:
            median = median_heuristic(X, random_state=self.random_state)
            widths = [f * median for f in (0.5, 1.0, 2.0)]
        else:
            widths = self._grid_values(self.kernel_widths, "kernel_widths", 0.0, closed=False)
        grid = list(ParameterGrid({"alpha": alphas, "coupling": couplings, "kernel_width": widths}))
        Y_dense = Y.toarray()
        splits = list(check_cv(self.cv, Y_dense, classifier=True).split(X, Y_dense))
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
        self.best_estimator_ = MLLSPC(n_basis=self.n_basis, similarity=self.similarity, solver="eig",
                                      threshold=self.threshold, random_state=self.random_state,
                                      **self.best_params_).fit(X, Y)
        self._set_fitted_shape(X.shape[0], X.shape[1], K)
        return self

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
                pred = (binary_posterior(q1, q0, prior) >= thresholds).astype(np.int64)
                out[j] = score(Y_va, pred, q1 - q0)
        return out

    # ------------------------------------------------------- the refitted model
    def decision_function(self, X, batch_size: int = 1000) -> np.ndarray:
        """:meth:`MLLSPC.decision_function` of ``best_estimator_``: float64 (N, K)."""
        check_is_fitted(self)
        return self.best_estimator_.decision_function(X, batch_size)

    def predict_proba(self, X, batch_size: int = 1000) -> np.ndarray:
        """:meth:`MLLSPC.predict_proba` of ``best_estimator_``: float64 (N, K)."""
        check_is_fitted(self)
        return self.best_estimator_.predict_proba(X, batch_size)

    def predict(self, X, batch_size: int = 1000) -> np.ndarray:
        """:meth:`MLLSPC.predict` of ``best_estimator_``: int64 0/1 (N, K)."""
        check_is_fitted(self)
        return self.best_estimator_.predict(X, batch_size)

    def predict_topk(self, X, k: int, batch_size: int = 1000) -> TopK:
        """:meth:`MLLSPC.predict_topk` of ``best_estimator_``: TopK (N, k)."""
        check_is_fitted(self)
        return self.best_estimator_.predict_topk(X, k, batch_size)
