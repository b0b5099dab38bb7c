"""GenEMLCV: :class:`~mlgp.geneml.GenEML` with its settings chosen per dataset on held-out rows.

Contract: ``fit(X, Y)`` checks the data once (:class:`~mlgp.estimator.MultiLabelEstimator`) and
refuses, with an :class:`~mlgp.errors.ArgumentError` naming the problem and before any GenEML is
fitted: a ``param_grid`` or ``estimator_params`` key that is not a GenEML parameter, a key in both, a
grid entry that is not a non-empty list of values, a ``validation_fraction`` that leaves no row to fit
or to validate on, a ``scoring`` cut-off k larger than K, and (GenEML's own
:class:`~mlgp.estimator.ParameterError`) any grid point whose GenEML parameters are invalid. It then
draws a permutation of the N rows with ``np.random.default_rng(random_state)``, holds out its last
``round(validation_fraction * N)`` rows (both sides kept in row order), fits
``GenEML(**estimator_params, **point)`` on the rest for every point of
:class:`sklearn.model_selection.ParameterGrid` ``(param_grid)`` in its order, scores the held-out
rows by :func:`mlgp.metrics.precision_at_k` of its ``decision_function``, takes the first best point
and, with ``refit``, fits GenEML at it on all N rows (``best_estimator_``). ``cv_results_`` and
``best_params_`` follow :class:`~sklearn.model_selection.GridSearchCV`'s layout for one split.

``decision_function``, ``predict_proba``, ``predict`` and ``predict_topk`` are ``best_estimator_``'s,
through its block hooks. ``save`` / ``load`` keep ``best_estimator_``, the search's scores and the
grid (``param_grid`` and ``estimator_params`` travel in the fitted state, as JSON: tuples load as
lists, NumPy values as Python ones).
"""

from __future__ import annotations

import re
import time
import warnings
from collections.abc import Sequence
from numbers import Integral, Real
from pathlib import Path

import numpy as np
from scipy.stats import rankdata
from sklearn.base import _fit_context
from sklearn.model_selection import ParameterGrid
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..errors import ArgumentError
from ..estimator import MultiLabelEstimator, SavedState
from ..metrics import precision_at_k
from .estimator import GenEML

__all__ = ["DEFAULT_PARAM_GRID", "SCORINGS", "GenEMLCV"]

#: The grid searched when ``param_grid`` is None.
DEFAULT_PARAM_GRID: dict[str, list] = {"n_components": [50, 100], "lambda_u": [1.0, 10.0], "lambda_v": [1.0, 5.0]}

#: Selection criteria of :class:`GenEMLCV` → the cut-off k of precision@k on the held-out rows.
SCORINGS = {"precision@1": 1, "precision@3": 3, "precision@5": 5}


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


class GenEMLCV(MultiLabelEstimator):
    """GenEML with ``param_grid``'s settings chosen on held-out rows (a single validation split).

    Parameters
    ----------
    param_grid : dict of str to list, or None, default=None
        GenEML parameter name → the values to try; None: :data:`DEFAULT_PARAM_GRID`
        (``n_components`` [50, 100] × ``lambda_u`` [1, 10] × ``lambda_v`` [1, 5]).
    estimator_params : dict of str to value, or None, default=None
        GenEML parameters fixed for every fit (e.g. ``inference``, ``normalize_rows``, ``max_iter``,
        GenEML's own ``random_state``); None: GenEML's defaults.
    validation_fraction : float in (0, 1), default=0.2
        Share of the rows held out to score the grid points: ``round(validation_fraction * N)``.
    scoring : {"precision@1", "precision@3", "precision@5"}, default="precision@1"
        Criterion on the held-out rows (greater is better).
    random_state : int >= 0, default=0
        Seeds the permutation that picks the held-out rows.
    refit : bool, default=True
        Fit GenEML at the best point on all rows. Without it the estimator only reports the search
        and cannot score or be saved.

    Attributes
    ----------
    best_estimator_ : GenEML
        ``GenEML(**estimator_params, **best_params_)`` fitted on all rows (``refit`` only).
    best_params_ : dict
        The best grid point (the first of equal scores, in ``ParameterGrid`` order).
    best_score_ : float
        Its held-out score.
    best_index_ : int
        Its position in ``cv_results_``.
    cv_results_ : dict
        GridSearchCV's layout for one split: ``params`` (list of n dicts), ``param_<name>`` (n,)
        arrays, ``mean_test_score`` (n,), ``rank_test_score`` (n,) int32 (equal scores share the
        better rank), ``mean_fit_time`` (n,) seconds of each GenEML fit.
    n_samples_, n_features_in_, n_labels_, classes_
        N, D, K and ``arange(K)``.
    """

    _block_format = GenEML._block_format
    _predict_from = GenEML._predict_from
    _parameter_constraints: dict = {
        "param_grid": [dict, None],
        "estimator_params": [dict, None],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "scoring": [StrOptions(set(SCORINGS))],
        "random_state": [Interval(Integral, 0, None, closed="left")],
        "refit": ["boolean"],
    }

    def __init__(self, *, param_grid: dict | None = None, estimator_params: dict | None = None,
                 validation_fraction: float = 0.2, scoring: str = "precision@1", random_state: int = 0,
                 refit: bool = True) -> None:
        self.param_grid = param_grid
        self.estimator_params = estimator_params
        self.validation_fraction = validation_fraction
        self.scoring = scoring
        self.random_state = random_state
        self.refit = refit

    # ------------------------------------------------------------------------------------ fit --
    def _checked_search(self) -> tuple[dict, dict]:
        """``(fixed, grid)``: ``estimator_params`` and ``param_grid`` (None resolved), checked."""
        grid = DEFAULT_PARAM_GRID if self.param_grid is None else self.param_grid
        fixed = {} if self.estimator_params is None else self.estimator_params
        names = set(GenEML._get_param_names())
        for where, params in (("param_grid", grid), ("estimator_params", fixed)):
            unknown = sorted(repr(key) for key in params if key not in names)
            if unknown:
                raise ArgumentError(f"{where} names {', '.join(unknown)}: not GenEML parameter(s) "
                                    f"(GenEML's parameters: {', '.join(sorted(names))})")
        both = sorted(set(grid) & set(fixed))
        if both:
            raise ArgumentError(f"{both} in both param_grid and estimator_params: a parameter is either searched "
                                f"or fixed")
        for name, values in grid.items():
            if isinstance(values, str) or not isinstance(values, (Sequence, np.ndarray)) \
                    or isinstance(values, np.ndarray) and values.ndim != 1:
                raise ArgumentError(f"param_grid[{name!r}] must be a list of values to try, got {values!r} (wrap a "
                                    f"single value in a list)")
            if len(values) == 0:
                raise ArgumentError(f"param_grid[{name!r}] is empty: give at least one value to try")
        return fixed, grid

    def _split(self, num_rows: int) -> tuple[np.ndarray, np.ndarray]:
        """Sorted row indices ``(fitting, held_out)``: the last ``round(validation_fraction * N)``
        entries of ``default_rng(random_state).permutation(N)`` are held out."""
        held = int(round(float(self.validation_fraction) * num_rows))
        if not 1 <= held <= num_rows - 1:
            raise ArgumentError(f"validation_fraction={self.validation_fraction} of N={num_rows} rows holds out "
                                f"{held} row(s), leaving {num_rows - held} to fit: each side needs at least one row")
        order = np.random.default_rng(int(self.random_state)).permutation(num_rows)
        return np.sort(order[:num_rows - held]), np.sort(order[num_rows - held:])

    @staticmethod
    def _geneml(fixed: dict, point: dict) -> GenEML:
        """The unfitted ``GenEML(**fixed, **point)``, its parameters checked (ParameterError)."""
        estimator = GenEML(**fixed, **point)
        estimator._validate_params()
        return estimator

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, Y) -> "GenEMLCV":
        """Score every grid point on the held-out rows, then refit the best on all rows; returns ``self``.

        Parameters
        ----------
        X : np.ndarray or scipy sparse matrix of shape (N, D)
            Features.
        Y : np.ndarray or scipy sparse matrix of shape (N, K)
            0/1 labels.
        """
        fixed, grid = self._checked_search()
        X, Y = self._validate_fit_data(X, Y)
        (N, D), K = X.shape, Y.shape[1]
        k = SCORINGS[self.scoring]
        if k > K:
            raise ArgumentError(f"scoring={self.scoring!r} ranks the top {k} labels, but Y has only K={K}")
        fitting, held_out = self._split(N)
        points = list(ParameterGrid(grid))
        candidates = [self._geneml(fixed, p) for p in points]  # every invalid value refused before any fit
        X_fit, Y_fit, X_val, Y_val = X[fitting], Y[fitting], X[held_out], Y[held_out]
        scores, seconds = np.empty(len(points)), np.empty(len(points))
        for i, estimator in enumerate(candidates):
            start = time.perf_counter()
            estimator.fit(X_fit, Y_fit)
            seconds[i] = time.perf_counter() - start
            scores[i] = precision_at_k(Y_val, estimator.decision_function(X_val), k)
            candidates[i] = None  # one fitted model at a time
        self.cv_results_ = self._results(points, sorted(grid), scores, seconds)
        self.best_index_ = int(np.argmax(scores))  # the first of equal scores
        self.best_params_ = dict(points[self.best_index_])
        self.best_score_ = float(scores[self.best_index_])
        self.__dict__.pop("best_estimator_", None)  # from an earlier fit
        if self.refit:
            self.best_estimator_ = self._geneml(fixed, self.best_params_).fit(X, Y)
        self._set_fitted_shape(N, D, K)
        return self

    @staticmethod
    def _results(points: list[dict], names: list[str], scores: np.ndarray, seconds: np.ndarray) -> dict:
        """``cv_results_`` of the grid ``points`` (n dicts over ``names``), their scores and fit times (n,)."""
        return {
            "params": points,
            **{f"param_{name}": _param_column([p[name] for p in points]) for name in names},
            "mean_test_score": scores,
            "rank_test_score": rankdata(-scores, method="min").astype(np.int32),
            "mean_fit_time": seconds,
        }

    # ----------------------------------------------------------------------- the refitted model --
    def _refitted(self) -> GenEML:
        """``best_estimator_``; an ArgumentError when the search ran with ``refit=False``."""
        check_is_fitted(self)
        best = getattr(self, "best_estimator_", None)
        if best is None:
            raise ArgumentError(f"this {type(self).__name__} was fitted with refit=False: it holds no model to score "
                                f"with or save; fit GenEML(**estimator_params, **best_params_) or refit=True")
        return best

    def _validate_score_data(self, X):
        self._refitted()
        return super()._validate_score_data(X)

    def _decision_block(self, xb) -> np.ndarray:
        """:meth:`GenEML._decision_block` of ``best_estimator_``: CSR (B, D) → (B, K)."""
        return self.best_estimator_._decision_block(xb)

    def _proba_block(self, xb) -> np.ndarray:
        """:meth:`GenEML._proba_block` of ``best_estimator_``: CSR (B, D) → (B, K)."""
        return self.best_estimator_._proba_block(xb)

    def _decide(self, scores: np.ndarray) -> np.ndarray:
        """``best_estimator_``'s ``predict`` rule (its ``threshold``) on (N, K) probabilities."""
        return self.best_estimator_._decide(scores)

    # ---------------------------------------------------------------------------- persistence --
    def save(self, path: str | Path) -> Path:
        """Write the fitted search and ``best_estimator_`` to ``path`` (see
        :meth:`MultiLabelEstimator.save`); ``refit=False`` searches cannot be saved (ArgumentError)."""
        self._refitted()
        # param_grid and estimator_params (dicts) are not constructor data the format holds: they are
        # saved in the fitted state and set again by _restore_fitted, so nothing is lost
        unsaved = re.escape(f"{type(self).__name__}: parameter(s) ") \
            + r"\[('estimator_params'(, 'param_grid')?|'param_grid')\] cannot"
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=unsaved, category=UserWarning)
            return super().save(path)

    def _fitted_scalars(self) -> dict:
        return {**super()._fitted_scalars(), "best_index_": self.best_index_,
                "search": {"param_grid": _plain(self.param_grid), "estimator_params": _plain(self.estimator_params)},
                "cv_params": _plain(self.cv_results_["params"]),
                "best_estimator_": self.best_estimator_._fitted_scalars()}

    def _fitted_arrays(self) -> dict:
        arrays = {f"cv_results_.{name}": self.cv_results_[name] for name in ("mean_test_score", "mean_fit_time")}
        arrays.update({f"best_estimator_.{k}": v for k, v in self.best_estimator_._fitted_arrays().items()})
        return arrays

    def _restore_fitted(self, state: SavedState) -> None:
        super()._restore_fitted(state)
        search = state.scalar("search", dict)
        if set(search) != {"param_grid", "estimator_params"} \
                or not all(v is None or isinstance(v, dict) for v in search.values()):
            raise state.error("the fitted value 'search' must hold the dicts (or nulls) param_grid and "
                              "estimator_params")
        self.param_grid, self.estimator_params = search["param_grid"], search["estimator_params"]
        try:
            fixed, grid = self._checked_search()
        except ArgumentError as err:
            raise state.error(f"the saved search is invalid: {err}") from None
        points = [dict(p) for p in ParameterGrid(grid)]
        if state.scalar("cv_params", list) != points:
            raise state.error("the fitted value 'cv_params' is not the saved param_grid's ParameterGrid")
        n = len(points)
        scores = state.array("cv_results_.mean_test_score", (n,), low=0, high=1)
        seconds = state.array("cv_results_.mean_fit_time", (n,), low=0)
        self.best_index_ = state.scalar("best_index_", int, low=0)
        if self.best_index_ != int(np.argmax(scores)):
            raise state.error(f"best_index_ = {self.best_index_} is not the first best of the saved scores")
        self.cv_results_ = self._results(points, sorted(grid), scores, seconds)
        self.best_params_ = dict(points[self.best_index_])
        self.best_score_ = float(scores[self.best_index_])
        self.best_estimator_ = best = self._geneml(fixed, self.best_params_)
        best._restore_fitted(state.nested("best_estimator_"))
        if (best.n_features_in_, best.n_labels_) != (self.n_features_in_, self.n_labels_):
            raise state.error("the refitted model's n_features_in_ / n_labels_ differ from the search's")
