"""MLkNN: multi-label k-nearest neighbours with a Bayesian posterior per label (Zhang & Zhou, 2007).

Contract: ``fit(X, Y)`` takes features ``X`` (N, D), CSR or dense, and 0/1 labels ``Y`` (N, K),
CSR or dense, checks them through :mod:`mlgp.validation` (bad input raises
:class:`~mlgp.errors.ShapeError`, a ``ValueError``, before any work; so does ``N < n_neighbors + 1``)
and learns, per label, a smoothed prior and the smoothed likelihoods of "``j`` of the ``k``
nearest neighbours carry the label" given that the point does or does not carry it, from each
training point's ``k`` nearest *other* training points. ``decision_function`` returns, for each
point, the posterior probability of every label given how many of its ``k`` nearest training points
carry it: a dense float64 (N, K) array in [0, 1] (the normalised posterior of the paper, not the
unnormalised product). ``predict_proba`` returns the same array (multi-label convention: per-label
presence probabilities), ``predict_topk`` ranks it (equal scores: lower label index first, the rule
of :func:`mlgp.scores.topk`), ``predict`` returns the int64 0/1 (N, K) matrix
``posterior >= threshold`` (the scoring methods are :class:`~mlgp.estimator.MultiLabelEstimator`'s).
``save(path)`` / ``MLkNN.load(path)`` keep the training points and labels and rebuild the
neighbour index from them. With ``max_seconds`` the training points' neighbours are found
:data:`QUERY_BLOCK` rows at a time, and the likelihoods are counted on the rows whose neighbours were
found before the budget was spent (``n_counted_``).
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import _fit_context
from sklearn.neighbors import NearestNeighbors
from sklearn.utils._param_validation import Interval, StrOptions

from ..errors import ShapeError
from ..estimator import N_JOBS, MultiLabelEstimator, SavedState
from ..estimator.prior_map import CALIBRATION
from ..estimator.budget import MAX_SECONDS, Budget

__all__ = ["MLkNN", "QUERY_BLOCK"]

#: Training rows whose neighbours are found at a time under a budget (looked at after each block).
QUERY_BLOCK = 1000


class MLkNN(MultiLabelEstimator):
    """ML-kNN: per-label Bayes rule on the number of a point's ``k`` nearest neighbours with the label.

    For label ``l`` with prior ``P(H1_l)`` and likelihoods ``P(E_j | H1_l)``, ``P(E_j | H0_l)`` of
    "exactly ``j`` of the ``k`` neighbours carry ``l``", a point whose neighbours carry ``l``
    ``C_l`` times scores ``P(H1_l) P(E_C | H1_l) / (P(H1_l) P(E_C | H1_l) + P(H0_l) P(E_C | H0_l))``.
    The likelihoods are counted on the training set, where each point's neighbours are the ``k``
    nearest training points *other than itself*; an exact duplicate of a point is another point and
    counts as its neighbour. Among points at the same distance as the ``k``-th neighbour, which are
    taken is left to :class:`sklearn.neighbors.NearestNeighbors`.

    Parameters
    ----------
    n_neighbors : int, default=10
        Number of neighbours ``k >= 1``; ``fit`` needs at least ``k + 1`` training points.
    smoothing : float, default=1.0
        Laplace pseudo-count ``s > 0``: ``P(H1_l) = (s + n_l) / (2 s + N)`` with ``n_l`` the
        training points carrying ``l``, and ``P(E_j | H1_l) = (s + c1[j, l]) / (s (k + 1) + n_l)``
        where ``c1[j, l]`` counts those of them with ``j`` neighbours carrying ``l`` (likewise
        ``P(E_j | H0_l)`` from the ``N - n_l`` points without ``l``).
    metric : {"euclidean", "cosine", "manhattan"}, default="euclidean"
        Distance of :class:`~sklearn.neighbors.NearestNeighbors`; all three take CSR or dense ``X``.
    threshold : float, default=0.5
        ``predict`` marks label ``l`` present when its posterior is ``>= threshold`` (in [0, 1]).
    n_jobs : int or None, default=None
        Parallel jobs of the neighbour search, passed to NearestNeighbors.
    calibration : {"prior"} or None, default="prior"
        ``"prior"``: ``predict_proba`` through the map toward the label prior fitted on held-out rows
        (:mod:`mlgp.estimator.prior_map`, ``proba_map_``; docs/probabilities.md); None: its own.
    max_seconds : float or None, default=None
        Wall seconds of ``fit`` from its start (:class:`mlgp.estimator.budget.Budget`). The prior
        map (``calibration="prior"``, fitted first) takes at most a quarter of them; then the training
        points' neighbours, the costly part, are found :data:`QUERY_BLOCK` rows at a time (in row
        order), the budget looked at after each block: once it is spent the likelihoods are counted
        on the rows done so far (``n_counted_``; at least one block), the prior and the neighbour
        index on all N. A :class:`~mlgp.errors.BudgetWarning` says so when only the first block was
        counted. A fit overruns the bound by at most one block's neighbour search.

    Attributes
    ----------
    prior_ : np.ndarray of shape (K,), float64
        ``P(H1_l)``, the smoothed fraction of training points carrying each label.
    cond_prob_true_ : np.ndarray of shape (k + 1, K), float64
        ``P(E_j | H1_l)`` in row ``j``; each column sums to 1.
    cond_prob_false_ : np.ndarray of shape (k + 1, K), float64
        ``P(E_j | H0_l)`` in row ``j``; each column sums to 1.
    posterior_ : np.ndarray of shape (k + 1, K), float64
        ``P(H1_l | E_j)`` in row ``j``: the score of label ``l`` at a point with ``j`` neighbours
        carrying it.
    nn_ : sklearn.neighbors.NearestNeighbors
        The neighbour index over the training features.
    features_ : np.ndarray or scipy.sparse.csr_matrix of shape (N, D), float64
        The training features (the points of ``nn_``).
    labels_ : scipy.sparse.csr_matrix of shape (N, K), float64
        The training labels.
    n_counted_ : int
        The training rows (the first ones) whose neighbours the likelihoods were counted on: N unless
        ``max_seconds`` cut the count short.
    n_features_in_, n_labels_, classes_, n_samples_
        D, K, ``arange(K)`` and N, as every :class:`~mlgp.estimator.MultiLabelEstimator`.

    Examples
    --------
    >>> import numpy as np
    >>> from mlgp.baselines.mlknn import MLkNN
    >>> X = np.array([[0.0], [1.0], [3.0], [7.0], [8.0], [10.0]])
    >>> Y = np.array([[1, 0], [1, 0], [0, 1], [0, 1], [1, 1], [0, 1]])
    >>> est = MLkNN(n_neighbors=2).fit(X, Y)
    >>> est.prior_
    array([0.5  , 0.625])
    >>> est.predict_proba([[0.4], [9.0]]).round(4)
    array([[0.3333, 0.7042],
           [0.5   , 0.8264]])
    >>> est.predict([[0.4], [9.0]])
    array([[0, 1],
           [1, 1]])
    >>> est.predict_topk([[0.4]], k=2).indices
    array([[1, 0]])
    """

    _parameter_constraints: dict = {
        "n_neighbors": [Interval(Integral, 1, None, closed="left")],
        "smoothing": [Interval(Real, 0, None, closed="neither")],
        "metric": [StrOptions({"euclidean", "cosine", "manhattan"})],
        "threshold": [Interval(Real, 0, 1, closed="both")],
        "n_jobs": N_JOBS,
        "calibration": CALIBRATION,
        "max_seconds": MAX_SECONDS,
    }

    def __init__(self, *, n_neighbors: int = 10, smoothing: float = 1.0, metric: str = "euclidean",
                 threshold: float = 0.5, n_jobs: int | None = None, calibration: str | None = "prior",
                 max_seconds: float | None = None) -> None:
        self.n_neighbors = n_neighbors
        self.smoothing = smoothing
        self.metric = metric
        self.threshold = threshold
        self.n_jobs = n_jobs
        self.calibration = calibration
        self.max_seconds = max_seconds

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, Y) -> "MLkNN":
        """Index the training points and count the priors and likelihoods; returns ``self``.

        Parameters
        ----------
        X : np.ndarray or scipy sparse matrix of shape (N, D)
            Finite features, N >= ``n_neighbors + 1``.
        Y : np.ndarray or scipy sparse matrix of shape (N, K)
            0/1 labels.
        """
        budget = Budget.trusted(self.max_seconds)
        X, Y = self._validate_fit_data(X, Y)
        N, K = Y.shape
        k, s = int(self.n_neighbors), float(self.smoothing)
        if N < k + 1:
            raise ShapeError(f"MLkNN with n_neighbors={k} needs at least {k + 1} training points (each "
                             f"point's {k} neighbours exclude itself); got {N} sample(s). Give more "
                             f"points or a smaller n_neighbors.")
        self._fit_proba_map(X, Y, budget)  # after every check: at most a quarter of the budget
        nn = self._neighbour_index(X)
        counts = self._training_counts(nn, X, Y, budget)  # CSR (n, K): C[i, l] in 0..k, the first n rows
        n = counts.shape[0]
        Y_counted = Y[:n]

        n_pos = np.asarray(Y.sum(axis=0), dtype=np.float64).ravel()
        n_pos_counted = np.asarray(Y_counted.sum(axis=0), dtype=np.float64).ravel()
        # c1[j, l] for j >= 1 from the entries where both the point and >= 1 neighbour carry l;
        # c_all[j, l] (points of either kind with C = j) from all stored counts; j = 0 is the rest.
        c1 = self._histogram(counts.multiply(Y_counted).tocoo(), k, K)
        c_all = self._histogram(counts.tocoo(), k, K)
        c1[0] = n_pos_counted - c1[1:].sum(axis=0)
        c_all[0] = n - c_all[1:].sum(axis=0)
        c0 = c_all - c1

        self.prior_ = (s + n_pos) / (2.0 * s + N)
        prior_false = (s + (N - n_pos)) / (2.0 * s + N)
        self.cond_prob_true_ = (s + c1) / (s * (k + 1) + n_pos_counted)
        self.cond_prob_false_ = (s + c0) / (s * (k + 1) + (n - n_pos_counted))
        joint_true = self.prior_ * self.cond_prob_true_
        self.posterior_ = joint_true / (joint_true + prior_false * self.cond_prob_false_)
        self.nn_ = nn
        self.features_ = X
        self.labels_ = Y
        self.n_counted_ = int(n)
        self._set_fitted_shape(N, X.shape[1], K)
        return self

    def _training_counts(self, nn: NearestNeighbors, X, Y: sp.csr_matrix, budget: Budget) -> sp.csr_matrix:
        """``C`` (n, K) of the first n training rows, each row's k nearest *other* training points:
        all N at once without a budget (scikit-learn's query of the training points, ``X=None``),
        else :data:`QUERY_BLOCK` rows at a time until ``budget`` is spent (n: the rows done)."""
        if self.max_seconds is None:
            return self._neighbour_counts(nn.kneighbors(return_distance=False), Y)
        N, k = X.shape[0], int(self.n_neighbors)
        blocks = []
        for start in range(0, N, QUERY_BLOCK):
            rows = np.arange(start, min(start + QUERY_BLOCK, N))
            found = nn.kneighbors(X[rows], n_neighbors=k + 1, return_distance=False)
            # leave each row out of its own neighbours, as scikit-learn's X=None does: where it is
            # not among the k + 1 found (more duplicates of it than k), the first one found goes instead
            others = found != rows[:, None]
            others[others.all(axis=1), 0] = False
            blocks.append(self._neighbour_counts(found[others].reshape(rows.size, k), Y))
            if budget.spent():
                break
        if len(blocks) * QUERY_BLOCK < N:  # cut short
            budget.warn_if_first_step_spent(len(blocks), type(self).__name__, f"the likelihoods are counted on the "
                                            f"neighbours of the first {QUERY_BLOCK} of the {N} training points")
        return sp.csr_matrix(sp.vstack(blocks))

    @staticmethod
    def _neighbour_counts(neighbours: np.ndarray, Y: sp.csr_matrix) -> sp.csr_matrix:
        """``C[i, l]``, how many of row ``i``'s neighbours carry label ``l``: (B, N) 0/1 @ (N, K)."""
        B, k = neighbours.shape
        rows = sp.csr_matrix((np.ones(B * k), neighbours.ravel(), np.arange(0, B * k + 1, k)),
                             shape=(B, Y.shape[0]))
        return sp.csr_matrix(rows @ Y)

    @staticmethod
    def _histogram(entries: sp.coo_matrix, k: int, K: int) -> np.ndarray:
        """(k + 1, K) float64: how many stored entries have value ``j`` in column ``l`` (j = 0 unset)."""
        table = np.zeros((k + 1, K), dtype=np.float64)
        np.add.at(table, (np.rint(entries.data).astype(np.intp), entries.col), 1.0)
        table[0] = 0.0
        return table

    def _decision_block(self, xb: np.ndarray) -> np.ndarray:
        """The (B, K) posteriors of a dense block (B, D) of features."""
        neighbours = self.nn_.kneighbors(xb, n_neighbors=int(self.n_neighbors), return_distance=False)
        counts = np.rint(self._neighbour_counts(neighbours, self.labels_).toarray()).astype(np.intp)
        return self.posterior_[counts, np.arange(self.n_labels_)]

    def _proba_block(self, xb: np.ndarray) -> np.ndarray:
        """The posteriors of :meth:`_decision_block`: per-label presence probabilities (B, K)."""
        return self._decision_block(xb)

    def _neighbour_index(self, X) -> NearestNeighbors:
        return NearestNeighbors(n_neighbors=int(self.n_neighbors), metric=self.metric, n_jobs=self.n_jobs).fit(X)

    # ------------------------------------------------------------ persistence
    def _fitted_scalars(self) -> dict:
        return {**super()._fitted_scalars(), "n_counted_": self.n_counted_}

    def _fitted_arrays(self) -> dict:
        return {**super()._fitted_arrays(), "prior_": self.prior_, "cond_prob_true_": self.cond_prob_true_,
                "cond_prob_false_": self.cond_prob_false_, "posterior_": self.posterior_,
                "features_": self.features_, "labels_": self.labels_}

    def _restore_fitted(self, state: SavedState) -> None:
        super()._restore_fitted(state)
        N, D, K, k = self.n_samples_, self.n_features_in_, self.n_labels_, int(self.n_neighbors)
        if N < k + 1:
            raise state.error(f"n_samples_ = {N} is below n_neighbors + 1 = {k + 1}")
        self.prior_ = state.array("prior_", (K,), low=0, high=1)
        for name in ("cond_prob_true_", "cond_prob_false_", "posterior_"):
            setattr(self, name, state.array(name, (k + 1, K), low=0, high=1))
        self.features_ = state.matrix("features_", (N, D))
        self.labels_ = state.csr("labels_", (N, K), low=1, high=1)
        # files of an earlier release (no budget) counted every row
        self.n_counted_ = state.scalar("n_counted_", int, low=1) if state.has_scalar("n_counted_") else N
        if self.n_counted_ > N:
            raise state.error(f"n_counted_ = {self.n_counted_} is above n_samples_ = {N}")
        self.nn_ = self._neighbour_index(self.features_)
