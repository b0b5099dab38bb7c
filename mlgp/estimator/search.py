"""GridSearch: one grid search of a multi-label estimator, on K folds or on one held-out split, with
its scores in :class:`~sklearn.model_selection.GridSearchCV`'s layout and its best point refitted.

Contract: a subclass names the estimator class it searches (``_searched``), the constructor
arguments fixed across the grid (``_fixed_params()``), the grid (``_param_grid(X, Y, context)``:
name → values, searched in :class:`~sklearn.model_selection.ParameterGrid` order) and the split
(``_cv()``, default the parameter ``cv``); it may refuse its own parameters before any work
(``_check_search(X, Y)``, which returns the ``context`` of the later hooks) and score a split faster
than by fitting every point (``_split_scores``). ``fit(X, Y)`` checks the data, the subclass's search
and the scoring (``precision@k`` with k > K: :class:`~mlgp.errors.ArgumentError`); makes every split
before any work — a :class:`HeldOutSplit` (ArgumentError when a side would be empty) or the folds of
``check_cv(cv, Y, classifier=True)``, GridSearchCV's (:class:`~mlgp.errors.ShapeError` for fewer than
2 rows, more K-fold folds than rows, or folds the splitter refuses); checks every candidate
``_searched(**_fixed_params(), **point)`` (:class:`~mlgp.estimator.ParameterError`) before any fit;
scores each point on each split by :data:`SCORINGS` ``[scoring]`` (greater is better); ranks the
mean scores (equal to 12 decimals: the better rank), takes the first best point and, unless the
subclass has a false ``refit`` parameter, fits it on all rows (``best_estimator_``).

``cv_results_`` holds ``mean_fit_time``, ``std_fit_time``, ``mean_score_time``, ``std_score_time``,
``param_<name>``, ``params``, ``split<i>_test_score``, ``mean_test_score``, ``std_test_score`` and
``rank_test_score``, as GridSearchCV's does. The scoring methods are ``best_estimator_``'s (its block
hooks and ``predict`` rule; ``predict_proba`` where the searched class has one). ``save`` / ``load``
keep the whole search: scores, times, grid points, ``best_index_``, ``best_estimator_`` nested, and
the parameters JSON cannot hold as parameters (``_params_in_state``, e.g. a dict grid); files of an
earlier release (MLLSPCCV's or GenEMLCV's own layout) load too, the times they lack as NaN.
"""

from __future__ import annotations

import re
import time
import warnings
from numbers import Integral
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.stats import rankdata
from sklearn.base import _fit_context
from sklearn.model_selection import GroupKFold, KFold, ParameterGrid, StratifiedKFold, check_cv
from sklearn.utils.validation import check_is_fitted

from ..errors import ArgumentError, ShapeError
from ..metrics import f1_scores, precision_at_k
from .base import MultiLabelEstimator, ParameterError
from .saved_state import SavedState

__all__ = ["SCORINGS", "TOP_K", "GridSearch", "HeldOutSplit"]


def _dense(Y) -> np.ndarray:
    return Y.toarray() if sp.issparse(Y) else np.asarray(Y)


#: Selection criteria (greater is better): a function of the true 0/1 labels ``Y`` (dense or
#: sparse), the 0/1 predictions ``P`` and the decision scores ``S`` of the validation rows.
SCORINGS = {
    "hamming_loss": lambda Y, P, S: -float(np.mean(_dense(Y) != P)),
    "f1_example": lambda Y, P, S: f1_scores(Y, P)["example"],
    "f1_micro": lambda Y, P, S: f1_scores(Y, P)["micro"],
    "f1_macro": lambda Y, P, S: f1_scores(Y, P)["macro"],
    "precision@1": lambda Y, P, S: precision_at_k(Y, S, 1),
    "precision@3": lambda Y, P, S: precision_at_k(Y, S, 3),
    "precision@5": lambda Y, P, S: precision_at_k(Y, S, 5),
}

#: The scorings of the ranking alone (they need no predictions) → their cut-off k.
TOP_K = {"precision@1": 1, "precision@3": 3, "precision@5": 5}

_TIMES = ("mean_fit_time", "std_fit_time", "mean_score_time", "std_score_time")


def _plain(value):
    """``value`` as the JSON header stores it: NumPy scalars and arrays as Python numbers and lists,
    tuples as lists, dict keys as strings."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def _param_column(values: list) -> np.ndarray:
    """``cv_results_["param_<name>"]``: (n,) numbers or strings, else objects (None, tuples, mixes)."""
    try:
        column = np.asarray(values)
    except ValueError:  # ragged sequences
        column = None
    if column is None or column.ndim != 1 or column.dtype.kind not in "biufU":
        column = np.empty(len(values), dtype=object)
        for i, v in enumerate(values):
            column[i] = v
    return column


def _results(points: list[dict], splits: list, mean: np.ndarray, std: np.ndarray, times: dict) -> dict:
    """``cv_results_`` of the grid ``points``, their scores on each split, mean and std, and times."""
    # equal means share the better rank, as in GridSearchCV; means equal to 12 decimals are taken as
    # equal (fold averages of the same counts can differ in the last bit)
    rank = rankdata(-np.round(mean, 12), method="min").astype(np.int32)
    return {**times,
            **{f"param_{name}": _param_column([p[name] for p in points]) for name in sorted(points[0])},
            "params": points,
            **{f"split{i}_test_score": s for i, s in enumerate(splits)},
            "mean_test_score": mean, "std_test_score": std, "rank_test_score": rank}


class HeldOutSplit:
    """One split of N rows: the last ``round(validation_fraction * N)`` entries of
    ``np.random.default_rng(random_state).permutation(N)`` are held out, both sides in row order. A
    scikit-learn splitter (``split``, ``get_n_splits``), so GridSearchCV can score the same split."""

    def __init__(self, validation_fraction: float, random_state: int = 0) -> None:
        self.validation_fraction = validation_fraction
        self.random_state = random_state

    def __repr__(self) -> str:
        return f"HeldOutSplit(validation_fraction={self.validation_fraction!r}, random_state={self.random_state!r})"

    def get_n_splits(self, X=None, y=None, groups=None) -> int:
        return 1

    def rows(self, num_rows: int) -> tuple[np.ndarray, np.ndarray]:
        """Sorted row indices ``(fitting, held_out)``; an ArgumentError when a side would be empty."""
        held = int(round(float(self.validation_fraction) * num_rows))
        if not 1 <= held <= num_rows - 1:
            raise ArgumentError(f"validation_fraction={self.validation_fraction} of N={num_rows} rows holds out "
                                f"{held} row(s), leaving {num_rows - held} to fit: each side needs at least one row")
        order = np.random.default_rng(int(self.random_state)).permutation(num_rows)
        return np.sort(order[:num_rows - held]), np.sort(order[num_rows - held:])

    def split(self, X, y=None, groups=None):
        yield self.rows(np.shape(X)[0])


class GridSearch(MultiLabelEstimator):
    """Base of the grid searches (module docstring): subclasses set ``_searched`` and implement
    ``__init__`` (their parameters, with ``scoring`` one of :data:`SCORINGS`), ``_param_grid`` and,
    as needed, ``_fixed_params``, ``_cv``, ``_check_search``, ``_split_scores`` and
    ``_check_saved_points``. ``_block_format`` and ``_predict_from`` are the searched class's.

    Fitted: ``best_estimator_`` (``_searched(**fixed, **best_params_)`` on all rows; absent with
    ``refit=False``), ``best_params_``, ``best_score_`` and ``best_index_`` (the first best point, its
    mean score, its position), ``cv_results_``, ``n_splits_``, and N, D, K as every estimator.
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
        X, Y = self._validate_fit_data(X, Y)
        context = self._check_search(X, Y)
        self._check_scoring(Y.shape[1])
        splits = self._splits(X, Y)
        points = list(ParameterGrid(self._param_grid(X, Y, context)))
        if not points:
            raise ArgumentError(f"{type(self).__name__}: the grid has no point to try")
        for point in points:  # every invalid value refused before any fit
            self._new_estimator(point)
        scores, fit_time, score_time = (np.empty((len(splits), len(points))) for _ in range(3))
        for i, (fitting, held) in enumerate(splits):
            scores[i], fit_time[i], score_time[i] = self._split_scores(X[fitting], Y[fitting], X[held], Y[held],
                                                                       points, context)
        times = dict(zip(_TIMES, (fit_time.mean(axis=0), fit_time.std(axis=0), score_time.mean(axis=0),
                                  score_time.std(axis=0))))
        self.cv_results_ = _results(points, list(scores), scores.mean(axis=0), scores.std(axis=0), times)
        self._set_best(int(np.argmin(self.cv_results_["rank_test_score"])), len(splits))
        self.__dict__.pop("best_estimator_", None)  # from an earlier fit
        if getattr(self, "refit", True):
            self.best_estimator_ = self._new_estimator(self.best_params_, getattr(self, "calibration", "keep")).fit(X, Y)
        self._set_fitted_shape(X.shape[0], X.shape[1], Y.shape[1])
        return self

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
                   "cv_params": _plain(self.cv_results_["params"]),
                   "best_estimator_": self.best_estimator_._fitted_scalars()}
        if self._params_in_state:
            scalars["search"] = {name: _plain(getattr(self, name)) for name in self._params_in_state}
        return scalars

    def _fitted_arrays(self) -> dict:
        names = [*(f"split{i}_test_score" for i in range(self.n_splits_)), "mean_test_score", "std_test_score", *_TIMES]
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
        self.cv_results_ = _results(points, splits, mean, std, times)
        self._restore_columns(state)
        best = state.scalar("best_index_", int, low=0)
        if best >= n:
            raise state.error(f"best_index_ = {best} is not an index into the {n} grid points")
        if best != int(np.argmin(self.cv_results_["rank_test_score"])):
            raise state.error(f"best_index_ = {best} is not the first best of the saved scores")
        self._set_best(best, len(splits))
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
                state.has(f"cv_results_.{name}") for name in ("split0_test_score", "std_test_score", *_TIMES[1:])):
            return [mean], mean, np.zeros(n), dict(zip(_TIMES, (array("mean_fit_time", finite=False, low=0),
                                                                np.zeros(n), nan, nan)))
        splits = [array(f"split{i}_test_score", low=-1, high=1) for i in range(state.count("n_splits_"))]
        std = array("std_test_score", low=0)
        if state.has("cv_results_.rank_test_score"):
            return splits, mean, std, dict.fromkeys(_TIMES, nan)
        return splits, mean, std, {name: array(name, finite=False, low=0) for name in _TIMES}

    def _restore_columns(self, state: SavedState) -> None:
        """The ``param_<name>`` and rank arrays that files of an earlier release (MLLSPCCV's layout)
        hold must be those of the saved grid and scores."""
        for key, value in self.cv_results_.items():
            name = f"cv_results_.{key}"
            if (key.startswith("param_") or key == "rank_test_score") and state.has(name):
                if not np.array_equal(state.array(name, value.shape, "biufU"), value):
                    raise state.error(f"the array {name!r} is not that of the saved grid and scores")
