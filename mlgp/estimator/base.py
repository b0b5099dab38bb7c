"""The base of mlgp's multi-label scikit-learn estimators: tags, one fit-time validation, the scoring
methods over per-block hooks, saving and loading.

Contract: :class:`MultiLabelEstimator` declares scikit-learn's tags for estimators fitted on a 2-D
0/1 label matrix with CSR or dense features and marks ``batch_size`` as a non-routed argument of the
scoring methods. ``fit`` starts with ``X, Y = self._validate_fit_data(X, Y)``, the one place where
the data are checked and converted (:mod:`mlgp.validation`); everything below trusts them. The
public scoring methods are written here once, each checking ``X`` once (fitted, D columns, finite)
and scoring it ``batch_size`` rows at a time through :func:`mlgp.scores.score_in_batches`:

- ``decision_function(X)`` → float64 (N, K) from the hook ``_decision_block(xb)``, which returns a
  block's (B, K) scores, dense or sparse (absent entries are 0);
- ``predict_topk(X, k)`` → :class:`~mlgp.scores.TopK` (N, k) ranking the same scores (ties to the
  lower label index) without forming the dense (N, K) matrix;
- ``predict_proba(X)`` → float64 (N, K) from ``_proba_block(xb)``, and ``predict_proba_blocks(X)``
  the same a block of rows at a time; they exist only on classes that define that hook (``hasattr(est, "predict_proba")`` is False elsewhere, as scikit-learn expects);
- ``predict(X)`` → ``_decide(scores)`` of the decision scores, or of the probabilities when the
  class sets ``_predict_from = "proba"``; by default the int64 0/1 (N, K) matrix
  ``scores >= threshold`` (a number, or one value per label).

``_block_format`` says what the hooks receive: ``"dense"`` float64 (B, D) arrays (``fit`` gets ``X``
as float64 CSR or array), or ``"csr"`` canonical float64 CSR blocks (``fit`` gets canonical CSR
too). Sparse input is canonicalised first (duplicate entries summed, indices sorted: the same model
as the clean matrix), and either way ``fit`` and the hooks get their own copy: the caller's arrays
are never changed (nor sorted in place) and never kept. ``save(path)`` /
``Class.load(path)`` use :mod:`mlgp.estimator.persistence`; a subclass describes its fitted state by
``_fitted_scalars()``, ``_fitted_arrays()`` and ``_restore_fitted(state)``, and is registered by name
(:mod:`mlgp.estimator.registry`) when it is defined. No TensorFlow.
"""

from __future__ import annotations

from numbers import Integral
from pathlib import Path
from typing import Callable

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, MultiOutputMixin
from sklearn.utils import metadata_routing
from sklearn.utils._param_validation import Interval, InvalidParameterError, validate_parameter_constraints
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from ..errors import ArgumentError
from ..scores import TopK, score_in_batches, scored_blocks
from ..validation import (canonical_csr, check_estimator_features, check_estimator_labels, check_features,
                          check_thresholds)
from .persistence import load_estimator, save_estimator
from .saved_state import SavedState
from .registry import register

__all__ = ["N_JOBS", "MultiLabelEstimator", "ParameterError"]

#: The ``_parameter_constraints`` entry of an ``n_jobs``: None (one job), ≥ 1, or ≤ −1 (all CPUs but
#: |n_jobs| − 1, joblib's convention); 0, which joblib refuses mid-fit, is refused before any work.
N_JOBS = [Interval(Integral, None, -1, closed="right"), Interval(Integral, 1, None, closed="left"), None]


class ParameterError(ArgumentError, InvalidParameterError):
    """A constructor parameter outside the estimator's ``_parameter_constraints``: mlgp's
    :class:`~mlgp.errors.ArgumentError` and scikit-learn's ``InvalidParameterError`` (so both
    ``except`` clauses, and scikit-learn's own checks, recognise it)."""


def _has_proba_block(estimator) -> bool:
    return hasattr(estimator, "_proba_block")


class MultiLabelEstimator(MultiOutputMixin, ClassifierMixin, BaseEstimator):
    """Base class of a multi-label estimator: subclasses implement ``__init__`` (keyword-only
    parameters, stored as given), ``fit`` and the hooks of the module docstring.

    Class attributes
    ----------------
    _block_format : {"dense", "csr"}
        What ``fit`` and the block hooks receive (see the module docstring).
    _predict_from : {"decision", "proba"}
        Which scores ``predict`` thresholds.

    Every fitted estimator has ``n_features_in_`` (int: the number of features D seen in ``fit``;
    ``X`` passed later must have D columns), ``n_labels_`` (int: the number of labels K),
    ``classes_`` (``arange(K)``, scikit-learn's label names for multi-label indicator targets) and
    ``n_samples_`` (int: the number of training points N).

    Examples
    --------
    >>> import numpy as np
    >>> from mlgp.estimator import MultiLabelEstimator
    >>> class Constant(MultiLabelEstimator):
    ...     def __init__(self, *, threshold=0.5):
    ...         self.threshold = threshold
    ...     def fit(self, X, Y):
    ...         X, Y = self._validate_fit_data(X, Y)
    ...         self.scores_ = np.asarray(Y.mean(axis=0)).ravel()
    ...         self._set_fitted_shape(X.shape[0], X.shape[1], Y.shape[1])
    ...         return self
    ...     def _decision_block(self, xb):
    ...         return np.broadcast_to(self.scores_, (xb.shape[0], self.n_labels_))
    >>> est = Constant().fit(np.zeros((4, 2)), np.array([[1, 0], [1, 1], [0, 0], [1, 0]]))
    >>> est.predict_topk(np.zeros((1, 2)), k=2).indices
    array([[0, 1]])
    >>> est.predict(np.zeros((1, 2))), hasattr(est, "predict_proba")
    (array([[1, 0]]), False)
    """

    _block_format: str = "dense"
    _predict_from: str = "decision"

    # batch_size only sets how many rows are scored at a time: not metadata to route
    __metadata_request__decision_function = {"batch_size": metadata_routing.UNUSED}
    __metadata_request__predict = {"batch_size": metadata_routing.UNUSED}
    __metadata_request__predict_proba = {"batch_size": metadata_routing.UNUSED}
    __metadata_request__predict_topk = {"batch_size": metadata_routing.UNUSED}

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        register(cls)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.required = True
        tags.target_tags.two_d_labels = True
        tags.target_tags.single_output = False
        tags.classifier_tags.multi_label = True
        tags.classifier_tags.multi_class = False
        return tags

    # ----------------------------------------------------------------------------------- fit --
    def _validate_params(self, trusted: tuple[str, ...] = ()) -> None:
        """scikit-learn's check of the parameters against ``_parameter_constraints``, raising
        :class:`ParameterError` (an :class:`~mlgp.errors.MLGPError`); the parameters named in
        ``trusted`` were checked by the caller and are not checked again."""
        try:
            if trusted:
                constraints = {k: v for k, v in self._parameter_constraints.items() if k not in trusted}
                params = self.get_params(deep=False)
                validate_parameter_constraints(constraints, params, caller_name=type(self).__name__)
            else:
                super()._validate_params()
        except InvalidParameterError as err:
            if isinstance(err, ParameterError):
                raise
            raise ParameterError(str(err)) from None

    def _validate_fit_data(self, X, Y) -> tuple:
        """Check and convert the training data once; returns ``(X, Y)``.

        ``X`` (N, D): float64 CSR or 2-D float64 array (canonical CSR when ``_block_format`` is
        ``"csr"``), finite, N, D >= 1; ``Y``: whatever :meth:`_validate_targets` returns (by
        default a canonical float64 0/1 CSR (N, K), a copy). Raises
        :class:`~mlgp.errors.ShapeError` naming the problem.
        """
        X = check_features(check_estimator_features(X, None, type(self).__name__))  # the estimator's own copy
        if self._block_format == "csr":
            X = canonical_csr(X)
        return X, self._validate_targets(Y, X.shape[0])

    def _validate_targets(self, Y, num_points: int):
        """The targets of ``fit`` for ``num_points`` rows: a 0/1 label matrix as CSR float64 (N, K)."""
        return check_estimator_labels(Y, num_points, type(self).__name__)

    def _set_fitted_shape(self, num_samples: int, num_features: int, num_labels: int) -> None:
        """Record N, D and K after ``fit``: ``n_samples_``, ``n_features_in_``, ``n_labels_`` and
        ``classes_ = arange(K)`` (scikit-learn's label names for indicator targets)."""
        self.n_samples_ = int(num_samples)
        self.n_features_in_ = int(num_features)
        self.n_labels_ = int(num_labels)
        self.classes_ = np.arange(num_labels)

    # ------------------------------------------------------------------------------- scoring --
    @property
    def _n_outputs(self) -> int:
        """Width of the block scores: K (a fitted estimator only)."""
        return self.n_labels_

    def _validate_score_data(self, X):
        """``X`` (N, D) checked once for scoring: fitted, D columns, finite; as the hooks want it."""
        check_is_fitted(self)
        name = type(self).__name__
        X = check_features(check_estimator_features(X, self.n_features_in_, name), num_features=self.n_features_in_)
        return canonical_csr(X) if self._block_format == "csr" else X

    def _score(self, hook: Callable, X, batch_size: int, top_k: int | None = None):
        """``hook`` over ``X`` in blocks of ``batch_size`` rows: dense (N, K), or TopK with ``top_k``."""
        X = self._validate_score_data(X)
        return score_in_batches(hook, X, batch_size, top_k=top_k, num_labels=self._n_outputs,
                                check_input=False, dense=self._block_format == "dense")

    def _decision_block(self, xb):
        """The (B, K) scores of a block ``xb`` (B, D): a dense array or a sparse matrix."""
        raise NotImplementedError(f"{type(self).__name__} must implement _decision_block")

    def _decide(self, scores: np.ndarray) -> np.ndarray:
        """``predict`` from the (N, K) scores: int64 0/1, ``scores >= threshold``."""
        return (scores >= check_thresholds(self.threshold, scores.shape[1])).astype(np.int64)

    def decision_function(self, X, batch_size: int = 1000) -> np.ndarray:
        """Scores of every label for every point: a float64 (N, K) array.

        Parameters
        ----------
        X : np.ndarray or scipy sparse matrix of shape (N, D)
            Features with the D columns seen in ``fit``.
        batch_size : int, default=1000
            Rows scored at a time.
        """
        return self._score(self._decision_block, X, batch_size)

    def predict_topk(self, X, k: int, batch_size: int = 1000) -> TopK:
        """Each point's ``k`` best labels (``1 <= k <= K``) by :meth:`decision_function`, ties to the
        lower label index: a :class:`~mlgp.scores.TopK` with ``indices`` and ``scores`` (N, k).

        ``X`` and ``batch_size`` are as in :meth:`decision_function`.
        """
        return self._score(self._decision_block, X, batch_size, top_k=k)

    @available_if(_has_proba_block)
    def predict_proba(self, X, batch_size: int = 1000) -> np.ndarray:
        """Probability of each label's presence: float64 (N, K) in [0, 1] (one column per label).

        ``X`` and ``batch_size`` are as in :meth:`decision_function`.
        """
        return self._score(self._mapped_proba_block, X, batch_size)

    def _mapped_proba_block(self, xb):
        """``_proba_block(xb)`` through the fitted :attr:`proba_map_` (:mod:`mlgp.estimator.prior_map`)
        where the estimator has one: what every public probability method returns."""
        P = self._proba_block(xb)
        proba_map = getattr(self, "proba_map_", None)
        return P if proba_map is None else proba_map.transform(P)

    def _fit_proba_map(self, X, Y, budget=None, **fit_kwargs) -> None:
        """Set :attr:`proba_map_` for ``calibration="prior"`` (else None): copies of this estimator
        with ``calibration=None`` are fitted on the rows each fold of
        :func:`~mlgp.estimator.prior_map.held_out_folds` keeps and score the rows it holds out, on
        which the map is fitted (:func:`~mlgp.estimator.prior_map.cross_fitted_map`: within a quarter
        of ``budget``, a :class:`~mlgp.estimator.budget.Budget`, where the family has one). ``X``,
        ``Y``: the validated training data; ``fit_kwargs``: the copies' other ``fit`` arguments."""
        from .prior_map import cross_fitted_map

        self.proba_map_ = None
        if getattr(self, "calibration", None) == "prior":
            self.proba_map_ = cross_fitted_map(self, X, Y, budget, **fit_kwargs)

    @available_if(_has_proba_block)
    def predict_proba_blocks(self, X, batch_size: int = 1000):
        """:meth:`predict_proba` a block of rows at a time, for data too large for one (N, K) array:
        an iterator of ``(rows, P)`` with ``rows`` a slice of consecutive rows and ``P`` their
        float64 (B, K) probabilities, as :func:`mlgp.metrics.evaluate_proba` takes them. ``X`` is
        checked once, before the first block."""
        X = self._validate_score_data(X)  # here, not at the first next(): bad input fails at the call
        blocks = scored_blocks(self._mapped_proba_block, X, batch_size, num_labels=self._n_outputs,
                               dense=self._block_format == "dense")
        return ((rows, P.toarray() if hasattr(P, "toarray") else P) for rows, P in blocks)

    def predict(self, X, batch_size: int = 1000) -> np.ndarray:
        """0/1 predictions, int64 (N, K): label present where its score (the probability, for a
        class with ``_predict_from = "proba"``) is ``>= threshold``.

        ``X`` and ``batch_size`` are as in :meth:`decision_function`.
        """
        hook = self._mapped_proba_block if self._predict_from == "proba" else self._decision_block
        return self._decide(self._score(hook, X, batch_size))

    # --------------------------------------------------------------------------- persistence --
    def save(self, path: str | Path) -> Path:
        """Write the fitted estimator to ``path`` (``.npz`` appended when missing; JSON header and
        plain arrays, no pickle, atomic); returns the path written."""
        check_is_fitted(self)
        return save_estimator(self, path)

    @classmethod
    def load(cls, path: str | Path):
        """Read an estimator written by :meth:`save`. The file's class must be ``cls`` or a subclass
        of it, and is returned as that class; a file that is not such a save raises
        :class:`~mlgp.errors.DataFormatError` naming it."""
        return load_estimator(path, cls)

    def _fitted_scalars(self) -> dict:
        """The fitted values saved in the JSON header (numbers, strings, lists, dicts)."""
        return {"n_samples_": self.n_samples_, "n_features_in_": self.n_features_in_, "n_labels_": self.n_labels_,
                **self._proba_map_scalars()}

    def _proba_map_scalars(self) -> dict:
        """:attr:`proba_map_`'s entry of the header (none without a map); its prior is an array."""
        proba_map = getattr(self, "proba_map_", None)
        if proba_map is None:
            return {}
        return {"proba_map_": {"theta": [float(t) for t in proba_map.theta], "gain": proba_map.held_out_gain}}

    def _fitted_arrays(self) -> dict:
        """The fitted arrays to save by name: NumPy arrays (no objects) or scipy sparse matrices."""
        proba_map = getattr(self, "proba_map_", None)
        return {} if proba_map is None else {"proba_map_.prior": proba_map.prior}

    def _restore_fitted(self, state: SavedState) -> None:
        """Set the fitted attributes from a file's ``state`` (the inverse of the two hooks above);
        read through ``state``'s accessors, which check what they return."""
        self._set_fitted_shape(state.count("n_samples_"), state.count("n_features_in_"), state.count("n_labels_"))

    def _restore_proba_map(self, state: SavedState, num_labels: int) -> None:
        """:attr:`proba_map_` from a file's ``state`` (None where the file has none), checked; called
        by the loader after :meth:`_restore_fitted`, so that the family's own state is checked first."""
        self.proba_map_ = None
        if state.has_scalar("proba_map_"):  # files of families without the map (or of earlier releases) lack it
            from .prior_map import PriorMap

            saved = state.nested("proba_map_")
            theta = saved.scalar("theta", list)
            if len(theta) != 3 or not all(isinstance(t, (int, float)) and not isinstance(t, bool) and np.isfinite(t)
                                          for t in theta):
                raise state.error(f"the fitted value 'proba_map_.theta' must be 3 finite numbers, got {theta!r}")
            prior = state.array("proba_map_.prior", (num_labels,), low=0.0, high=1.0)
            if prior.size and (prior.min() <= 0.0 or prior.max() >= 1.0):
                raise state.error("the array 'proba_map_.prior' must lie strictly between 0 and 1")
            self.proba_map_ = PriorMap(theta, prior, saved.scalar("gain", float))
