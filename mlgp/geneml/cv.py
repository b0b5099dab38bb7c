"""GenEMLCV: :class:`~mlgp.geneml.GenEML` with its settings chosen per dataset on held-out rows.

Contract: a :class:`~mlgp.estimator.GridSearch` of ``GenEML(**estimator_params, **point)`` over
:class:`sklearn.model_selection.ParameterGrid` ``(param_grid)`` on one
:class:`~mlgp.estimator.HeldOutSplit`: ``fit(X, Y)`` refuses, with an
:class:`~mlgp.errors.ArgumentError` naming the problem and before any GenEML is fitted, a
``param_grid`` or ``estimator_params`` key that is not a GenEML parameter, a key in both, a grid entry
that is not a non-empty list of values (these before the data are checked), a ``validation_fraction``
that leaves no row to fit or to validate on, a ``scoring`` cut-off k larger than K, and (GenEML's own
:class:`~mlgp.estimator.ParameterError`) any grid point whose GenEML parameters are invalid. It then
holds out the first ``round(validation_fraction * N)`` rows of a permutation drawn with
``np.random.default_rng(random_state)`` (both sides kept in row order), fits GenEML on the rest at
every point in grid order, scores the held-out rows by :func:`mlgp.metrics.precision_at_k` of its
``decision_function``, takes the first best point and, with ``refit``, fits GenEML at it on all N rows
(``best_estimator_``). ``cv_results_``, ``best_params_``, the scoring methods (``best_estimator_``'s)
and ``save`` / ``load`` are the floor's; ``param_grid`` and ``estimator_params`` travel in the fitted
state, as JSON: tuples load as lists, NumPy values as Python ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral, Real

import numpy as np
from sklearn.model_selection import ParameterGrid
from sklearn.utils._param_validation import Interval, StrOptions

from ..errors import ArgumentError
from ..estimator import GridSearch, HeldOutSplit, SavedState
from ..estimator.search_scores import TOP_K
from .estimator import GenEML

__all__ = ["DEFAULT_PARAM_GRID", "SCORINGS", "GenEMLCV"]

#: The grid searched when ``param_grid`` is None.
DEFAULT_PARAM_GRID: dict[str, list] = {"n_components": [50, 100], "lambda_u": [1.0, 10.0], "lambda_v": [1.0, 5.0]}

#: Selection criteria of :class:`GenEMLCV` → the cut-off k of precision@k on the held-out rows.
SCORINGS = {name: TOP_K[name] for name in ("precision@1", "precision@3", "precision@5")}


class GenEMLCV(GridSearch):
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
    best_score_, best_index_ : float, int
        Its held-out score and its position in ``cv_results_``.
    cv_results_ : dict
        GridSearchCV's layout for one split (:class:`~mlgp.estimator.GridSearch`); ``mean_fit_time``
        holds the seconds of each GenEML fit.
    n_splits_ : int
        1.
    n_samples_, n_features_in_, n_labels_, classes_
        N, D, K and ``arange(K)``.
    """

    _parameter_constraints: dict = {
        "param_grid": [dict, None],
        "estimator_params": [dict, None],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "scoring": [StrOptions(set(SCORINGS))],
        "random_state": [Interval(Integral, 0, None, closed="left")],
        "refit": ["boolean"],
    }

    _searched = GenEML
    _params_in_state = ("param_grid", "estimator_params")

    def __init__(self, *, param_grid: dict | None = None, estimator_params: dict | None = None,
                 validation_fraction: float = 0.2, scoring: str = "precision@1", random_state: int = 0,
                 refit: bool = True) -> None:
        self.param_grid = param_grid
        self.estimator_params = estimator_params
        self.validation_fraction = validation_fraction
        self.scoring = scoring
        self.random_state = random_state
        self.refit = refit

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

    def _validate_fit_data(self, X, Y) -> tuple:
        self._checked_search()  # a bad search is refused before the data are checked
        return super()._validate_fit_data(X, Y)

    def _fixed_params(self) -> dict:
        return {} if self.estimator_params is None else self.estimator_params

    def _param_grid(self, X, Y, context) -> dict:
        return self._checked_search()[1]

    def _cv(self) -> HeldOutSplit:
        return HeldOutSplit(self.validation_fraction, self.random_state)

    def _check_saved_points(self, state: SavedState, points: list[dict]) -> None:
        try:
            _, grid = self._checked_search()
        except ArgumentError as err:
            raise state.error(f"the saved search is invalid: {err}") from None
        if points != [dict(p) for p in ParameterGrid(grid)]:
            raise state.error("the fitted value 'cv_params' is not the saved param_grid's ParameterGrid")
