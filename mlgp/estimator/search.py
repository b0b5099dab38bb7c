"""GridSearch: one grid search of a multi-label estimator, on K folds or on one held-out split, with
its scores in :class:`~sklearn.model_selection.GridSearchCV`'s layout and its best point refitted.

Contract: a subclass names the estimator class it searches (``_searched``), the constructor
arguments fixed across the grid (``_fixed_params()``), the grid (``_param_grid(X, Y, context)``:
name → values, searched in :class:`~sklearn.model_selection.ParameterGrid` order) and the split
(``_cv()``, default the parameter ``cv``); it may refuse its own parameters before any work
(``_check_search(X, Y)``, which returns the ``context`` of the later hooks) and score a split faster
than by fitting every point (``_split_scores``). ``fit(X, Y)`` checks the data, the subclass's search
and the scoring (``precision@k`` with k > K: :class:`~mlgp.errors.ArgumentError`); makes every split
before any work — a :class:`HeldOutSplit` (the rows every family holds out for its seed,
:func:`~mlgp.estimator.held_out_split.held_out_split`; ArgumentError when a side would be empty) or the folds of
``check_cv(cv, Y, classifier=True)``, GridSearchCV's (:class:`~mlgp.errors.ShapeError` for fewer than
2 rows, more K-fold folds than rows, or folds the splitter refuses); checks every candidate
``_searched(**_fixed_params(), **point)`` (:class:`~mlgp.estimator.ParameterError`) before any fit;
scores each point on each split by :data:`SCORINGS` ``[scoring]`` (greater is better); ranks the
mean scores (equal to 12 decimals: the better rank), takes the first best point and, unless the
subclass has a false ``refit`` parameter, fits it on all rows (``best_estimator_``).

The budget: a subclass with a ``max_seconds`` parameter (its constraint
:data:`~mlgp.estimator.budget.MAX_SECONDS`) has one :class:`~mlgp.estimator.budget.Budget`,
started when ``fit`` begins. The candidates are scored a block at a time (``_candidate_blocks``: one
point each by default; points sharing work, e.g. one kernel width, together), each block on every
split in turn, and the budget is looked at before every block and every split but those of the first
block (one block is always scored whole). Once :data:`SEARCH_SHARE` of it is spent (all of it with
``refit=False``) the search stops: the block in progress is dropped, ``cv_results_`` holds the points
scored on every split (in grid order), ``search_stopped_`` is True, a
:class:`~mlgp.errors.BudgetWarning` says how many points were tried, and the refit (where the searched
class takes ``max_seconds``) gets what the budget has left.

``cv_results_`` holds ``mean_fit_time``, ``std_fit_time``, ``mean_score_time``, ``std_score_time``,
``param_<name>``, ``params``, ``split<i>_test_score``, ``mean_test_score``, ``std_test_score`` and
``rank_test_score``, as GridSearchCV's does (of the points tried: every point unless the budget stopped
the search). The scoring methods are ``best_estimator_``'s (its block
hooks and ``predict`` rule; ``predict_proba`` where the searched class has one). ``save`` / ``load``
keep the whole search: scores, times, grid points, ``best_index_``, ``best_estimator_`` nested, and
the parameters JSON cannot hold as parameters (``_params_in_state``, e.g. a dict grid); files of an
earlier release (MLLSPCCV's or GenEMLCV's own layout) load too, the times they lack as NaN.
"""

from __future__ import annotations

import math
import re
import time
import warnings
from numbers import Integral
from pathlib import Path

import numpy as np
from sklearn.base import _fit_context
from sklearn.model_selection import GroupKFold, KFold, ParameterGrid, StratifiedKFold, check_cv
from sklearn.utils.validation import check_is_fitted

from ..errors import ArgumentError, BudgetWarning, ShapeError, warn
from .base import MultiLabelEstimator, ParameterError
from .held_out_split import HeldOutSplit
from .saved_state import SavedState
from .search_scores import SCORINGS, TIMES, TOP_K, plain, results_table
from .budget import Budget

__all__ = ["SEARCH_SHARE", "GridSearch", "HeldOutSplit"]  # HeldOutSplit: .held_out_split

#: Share of ``max_seconds`` the candidates take together when a refit on every row follows (the
#: refit has the rest); MLGPF's choice of kernel leaves its refit the same share
#: (:data:`mlgp.recipes.kernel_choice.CHOICE_SHARE`).
SEARCH_SHARE = 0.7


class _Tried(list):
    """The indices of the points tried, with ``arrays`` (scores, fit and score seconds: splits ×
    points) and ``elapsed`` (the budget's seconds at its last look)."""

    def __init__(self, indices: list[int], arrays: tuple, elapsed: float) -> None:
        super().__init__(indices)
        self.arrays, self.elapsed = arrays, elapsed


class GridSearch(MultiLabelEstimator):
    """Base of the grid searches (module docstring): subclasses set ``_searched`` and implement
    ``__init__`` (their parameters, with ``scoring`` one of :data:`SCORINGS`), ``_param_grid`` and,
    as needed, ``_fixed_params``, ``_cv``, ``_check_search``, ``_split_scores`` and
    ``_check_saved_points``. ``_block_format`` and ``_predict_from`` are the searched class's.

    Fitted: ``best_estimator_`` (``_searched(**fixed, **best_params_)`` on all rows; absent with
    ``refit=False``), ``best_params_``, ``best_score_`` and ``best_index_`` (the first best point, its
    mean score, its position), ``cv_results_``, ``n_splits_``, ``search_stopped_`` (whether the
    budget stopped the search before every point was tried), and N, D, K as every estimator.
    """

    #: The estimator class searched (set by each subclass).
    _searched: type | None = None
    #: Constructor parameters saved in the fitted state (JSON that is not a parameter value).
    _params_in_state: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        searched = cls.__dict__.get("_searched")
        for name in ("_block_format", "_predict_from"):
            if searched is not None and name not in cls.__dict__:
                setattr(cls, name, getattr(searched, name))

    # ----------------------------------------------------------------------- subclass hooks --
    def _check_search(self, X, Y):
        """Refuse bad parameters before any work; returns the later hooks' ``context``."""
        return None

    def _param_grid(self, X, Y, context) -> dict:
        """Parameter name → the values to try (after the splits are made: it may work on ``X``)."""
        raise NotImplementedError(f"{type(self).__name__} must implement _param_grid")

    def _fixed_params(self) -> dict:
        """Constructor arguments of every candidate besides the grid point."""
        return {}

    def _cv(self):
        """The splitter: a :class:`HeldOutSplit` or what ``check_cv`` takes (default: ``cv``)."""
        return self.cv

    def _check_saved_points(self, state: SavedState, points: list[dict]) -> None:
        """Refuse a file's grid ``points`` the subclass could not have searched."""

    def _candidate_blocks(self, points: list[dict]) -> list[list[int]]:
        """The points scored together (indices into ``points``, every index once), in the order
        tried: the budget is looked at between blocks. Default: one point per block, in grid order."""
        return [[j] for j in range(len(points))]

    def _new_estimator(self, point: dict, calibration="keep") -> MultiLabelEstimator:
        """The unfitted estimator at ``point``, its parameters checked (ParameterError), its
        ``calibration`` (where it has one) set to ``calibration`` unless ``"keep"``: the candidates
        are scored without the map (None), the refit takes the search's own."""
        estimator = self._searched(**self._fixed_params(), **point)
        estimator._validate_params()
        if calibration != "keep" and "calibration" in estimator.get_params(deep=False):
            estimator.set_params(calibration=calibration)
        return estimator

    # ----------------------------------------------------------------------------------- fit --
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, Y) -> "GridSearch":
        """Score every grid point on every split, then refit the best on all rows; returns ``self``.

        Parameters
        ----------
        X : np.ndarray or scipy sparse matrix of shape (N, D)
        Y : np.ndarray or scipy sparse matrix of shape (N, K)
            0/1 labels.
        """
        budget = Budget.trusted(getattr(self, "max_seconds", None))
        X, Y = self._validate_fit_data(X, Y)
        context = self._check_search(X, Y)
        self._check_scoring(Y.shape[1])
        splits = self._splits(X, Y)
        points = list(ParameterGrid(self._param_grid(X, Y, context)))
        if not points:
            raise ArgumentError(f"{type(self).__name__}: the grid has no point to try")
        for point in points:  # every invalid value refused before any fit
            self._new_estimator(point)
        refit = getattr(self, "refit", True)
        tried = self._score_candidates(X, Y, splits, points, context,
                                       Budget.trusted(budget.seconds * (SEARCH_SHARE if refit else 1.0), budget.started))
        scores, fit_time, score_time = (a[:, list(tried)] for a in tried.arrays)
        times = dict(zip(TIMES, (fit_time.mean(axis=0), fit_time.std(axis=0), score_time.mean(axis=0),
                                  score_time.std(axis=0))))
        kept = [points[j] for j in tried]
        self.cv_results_ = results_table(kept, list(scores), scores.mean(axis=0), scores.std(axis=0), times)
        self._set_best(int(np.argmin(self.cv_results_["rank_test_score"])), len(splits))
        self.search_stopped_ = len(kept) < len(points)
        if self.search_stopped_:
            warn(f"{type(self).__name__}: max_seconds={budget.seconds:g} stopped the search after "
                 f"{len(kept)} of the {len(points)} grid points ({tried.elapsed:.3g} s): the best of those "
                 f"tried is kept", BudgetWarning)
        self.__dict__.pop("best_estimator_", None)  # from an earlier fit
        if refit:
            best = self._new_estimator(self.best_params_, getattr(self, "calibration", "keep"))
            if math.isfinite(budget.seconds) and "max_seconds" in best.get_params(deep=False):
                budget.spent()  # the refit has what the search left (a sliver once it is spent)
                best.set_params(max_seconds=max(budget.seconds - budget.elapsed, 1e-6))
            self.best_estimator_ = best.fit(X, Y)
        self._set_fitted_shape(X.shape[0], X.shape[1], Y.shape[1])
        return self

    def _score_candidates(self, X, Y, splits: list, points: list[dict], context, budget: Budget) -> "_Tried":
        """Score the blocks of :meth:`_candidate_blocks` on every split until ``budget`` is spent
        (looked at before every block and split but the first block's); returns the sorted indices of
        the points scored on every split, with the scores and times of every point (splits × points)."""
        scores, fit_time, score_time = (np.full((len(splits), len(points)), np.nan) for _ in range(3))
        one = [(X[f], Y[f], X[h], Y[h]) for f, h in splits] if len(splits) == 1 else None  # sliced once
        done: list[int] = []
        for block in self._candidate_blocks(points):
            for i, (fitting, held) in enumerate(splits):
                if done and budget.spent():
                    return _Tried(sorted(done), (scores, fit_time, score_time), budget.elapsed)
                data = one[0] if one else (X[fitting], Y[fitting], X[held], Y[held])
                scores[i, block], fit_time[i, block], score_time[i, block] = self._split_scores(
                    *data, [points[j] for j in block], context)
            done.extend(block)
        return _Tried(sorted(done), (scores, fit_time, score_time), budget.elapsed)

    def _check_scoring(self, num_labels: int) -> None:
        k = TOP_K.get(self.scoring)
        if k is not None and k > num_labels:
            raise ArgumentError(f"scoring={self.scoring!r} ranks the top {k} labels, but Y has only K={num_labels}")

    def _splits(self, X, Y) -> list[tuple[np.ndarray, np.ndarray]]:
        """The ``(fitting, validation)`` row indices of every split, made before any work."""
        n, name, cv = X.shape[0], type(self).__name__, self._cv()
        if isinstance(cv, HeldOutSplit):
            return [cv.rows(n)]
        if n < 2:
            raise ShapeError(f"{name} needs at least 2 rows to cross-validate, got {n} sample{'' if n == 1 else 's'}")
        Y_dense = Y.toarray()
        folds = check_cv(cv, Y_dense, classifier=True)
        k = folds.n_splits if isinstance(folds, (KFold, StratifiedKFold, GroupKFold)) else 0
        if k > n:
            what = f"cv={k} folds need" if isinstance(cv, Integral) else f"cv={cv!r} makes {k} folds, which need"
            raise ShapeError(f"{name}: {what} at least {k} rows, got {n}")
        try:
            return list(folds.split(X, Y_dense))
        except ValueError as err:
            raise ShapeError(f"{name}: cv={cv!r} cannot split the {n} rows: {err}") from None

    def _split_scores(self, X_fit, Y_fit, X_val, Y_val, points: list[dict], context) -> tuple:
        """Scores, fitting seconds and scoring seconds, each (n,), of every point fitted on
        ``(X_fit, Y_fit)`` and scored on ``(X_val, Y_val)``: one candidate fitted at a time."""
        n = len(points)
        scores, fit_time, score_time = np.empty(n), np.empty(n), np.empty(n)
        for i, point in enumerate(points):
            estimator = self._new_estimator(point, calibration=None)
            start = time.perf_counter()
            estimator.fit(X_fit, Y_fit)
            middle = time.perf_counter()
            S = estimator.decision_function(X_val)
            P = None if self.scoring in TOP_K else estimator.predict(X_val)
            scores[i] = SCORINGS[self.scoring](Y_val, P, S)
            fit_time[i], score_time[i] = middle - start, time.perf_counter() - middle
        return scores, fit_time, score_time

    def _set_best(self, index: int, n_splits: int) -> None:
        self.best_index_ = index
        self.best_params_ = dict(self.cv_results_["params"][index])
        self.best_score_ = float(self.cv_results_["mean_test_score"][index])
        self.n_splits_ = n_splits

    # ------------------------------------------------------------------- the refitted model --
    def _refitted(self) -> MultiLabelEstimator:
        """``best_estimator_``; an ArgumentError when the search ran with ``refit=False``."""
        check_is_fitted(self)
        best = getattr(self, "best_estimator_", None)
        if best is None:
            raise ArgumentError(f"this {type(self).__name__} was fitted with refit=False: it holds no model to score "
                                f"with or save; fit {self._searched.__name__} at best_params_ or use refit=True")
        return best

    def _validate_score_data(self, X):
        self._refitted()
        return super()._validate_score_data(X)

    def _decision_block(self, xb):
        """``best_estimator_``'s ``_decision_block``: (B, K)."""
        return self.best_estimator_._decision_block(xb)

    @property
    def _proba_block(self):
        """``best_estimator_``'s ``_proba_block``; absent (so is ``predict_proba``) when the searched
        class has none."""
        if not hasattr(self._searched, "_proba_block"):
            raise AttributeError(f"{type(self).__name__} searches {getattr(self._searched, '__name__', None)}, "
                                 "which has no probabilities")
        return self._best_proba_block

    def _best_proba_block(self, xb):
        return self.best_estimator_._mapped_proba_block(xb)

    def _decide(self, scores: np.ndarray) -> np.ndarray:
        """``best_estimator_``'s ``predict`` rule on (N, K) scores."""
        return self.best_estimator_._decide(scores)

    # ---------------------------------------------------------------------------- persistence --
    def save(self, path: str | Path) -> Path:
        """Write the fitted search and ``best_estimator_`` to ``path`` (see
        :meth:`MultiLabelEstimator.save`); a search without ``best_estimator_`` cannot be saved."""
        self._refitted()
        names = "|".join(re.escape(repr(name)) for name in self._params_in_state)
        # these parameters travel in the fitted state (restored by _restore_fitted): nothing is lost
        unsaved = re.escape(f"{type(self).__name__}: parameter(s) ") + rf"\[(?:{names})(?:, (?:{names}))*\] cannot"
        with warnings.catch_warnings():
            if names:
                warnings.filterwarnings("ignore", message=unsaved, category=UserWarning)
            return super().save(path)

    def _fitted_scalars(self) -> dict:
        scalars = {**super()._fitted_scalars(), "best_index_": self.best_index_, "n_splits_": self.n_splits_,
                   "search_stopped_": bool(self.search_stopped_), "cv_params": plain(self.cv_results_["params"]),
                   "best_estimator_": self.best_estimator_._fitted_scalars()}
        if self._params_in_state:
            scalars["search"] = {name: plain(getattr(self, name)) for name in self._params_in_state}
        return scalars

    def _fitted_arrays(self) -> dict:
        names = [*(f"split{i}_test_score" for i in range(self.n_splits_)), "mean_test_score", "std_test_score", *TIMES]
        arrays = {f"cv_results_.{name}": self.cv_results_[name] for name in names}
        arrays.update({f"best_estimator_.{k}": v for k, v in self.best_estimator_._fitted_arrays().items()})
        return arrays

    def _restore_fitted(self, state: SavedState) -> None:
        super()._restore_fitted(state)
        if self._params_in_state:
            self._restore_params(state)
        points = self._restore_points(state)
        n = len(points)
        splits, mean, std, times = self._restore_scores(state, n)
        self.cv_results_ = results_table(points, splits, mean, std, times)
        self._restore_columns(state)
        best = state.scalar("best_index_", int, low=0)
        if best >= n:
            raise state.error(f"best_index_ = {best} is not an index into the {n} grid points")
        if best != int(np.argmin(self.cv_results_["rank_test_score"])):
            raise state.error(f"best_index_ = {best} is not the first best of the saved scores")
        self._set_best(best, len(splits))
        # files of an earlier release (no budget) searched every point
        self.search_stopped_ = state.scalar("search_stopped_", bool) if state.has_scalar("search_stopped_") else False
        self.best_estimator_ = estimator = self._new_estimator(self.best_params_, getattr(self, "calibration", "keep"))
        nested = state.nested("best_estimator_")
        estimator._restore_fitted(nested)
        estimator._restore_proba_map(nested, estimator._n_outputs)
        if (estimator.n_features_in_, estimator.n_labels_) != (self.n_features_in_, self.n_labels_):
            raise state.error("the refitted model's n_features_in_ / n_labels_ differ from the search's")

    def _restore_params(self, state: SavedState) -> None:
        """The ``_params_in_state`` parameters from the fitted value ``search``, checked."""
        search = state.scalar("search", dict)
        if set(search) != set(self._params_in_state):
            raise state.error(f"the fitted value 'search' must hold {', '.join(sorted(self._params_in_state))}")
        for name in self._params_in_state:
            setattr(self, name, search[name])
        try:
            self._validate_params()
        except ParameterError as err:
            raise state.error(f"the saved search is invalid: {err}") from None

    def _restore_points(self, state: SavedState) -> list[dict]:
        points = state.scalar("cv_params", list)
        if not points or not all(isinstance(p, dict) and set(p) == set(points[0]) for p in points):
            raise state.error("the fitted value 'cv_params' must be a non-empty list of dicts of the same keys")
        self._check_saved_points(state, points)
        return points

    @staticmethod
    def _restore_scores(state: SavedState, n: int) -> tuple[list, np.ndarray, np.ndarray, dict]:
        """The split scores, means, stds and times of a file. Files of an earlier release hold a rank
        array and no times (MLLSPCCV's layout: times NaN), or means and fit times only (GenEMLCV's
        one split: std 0, score times NaN); any other file holds every array."""
        def array(name: str, **bounds) -> np.ndarray:
            return state.array(f"cv_results_.{name}", (n,), **bounds)

        mean, nan = array("mean_test_score", low=-1, high=1), np.full(n, np.nan)
        if not state.has("cv_results_.rank_test_score") and not any(
                state.has(f"cv_results_.{name}") for name in ("split0_test_score", "std_test_score", *TIMES[1:])):
            return [mean], mean, np.zeros(n), dict(zip(TIMES, (array("mean_fit_time", finite=False, low=0),
                                                                np.zeros(n), nan, nan)))
        splits = [array(f"split{i}_test_score", low=-1, high=1) for i in range(state.count("n_splits_"))]
        std = array("std_test_score", low=0)
        if state.has("cv_results_.rank_test_score"):
            return splits, mean, std, dict.fromkeys(TIMES, nan)
        return splits, mean, std, {name: array(name, finite=False, low=0) for name in TIMES}

    def _restore_columns(self, state: SavedState) -> None:
        """The ``param_<name>`` and rank arrays that files of an earlier release (MLLSPCCV's layout)
        hold must be those of the saved grid and scores."""
        for key, value in self.cv_results_.items():
            name = f"cv_results_.{key}"
            if (key.startswith("param_") or key == "rank_test_score") and state.has(name):
                if not np.array_equal(state.array(name, value.shape, "biufU"), value):
                    raise state.error(f"the array {name!r} is not that of the saved grid and scores")
