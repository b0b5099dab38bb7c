"""MLLSPC: the multi-label least-squares probabilistic classifier (Nam, Hachiya & Sugiyama).

Contract: ``fit(X, Y)`` takes features ``X`` (N, D), CSR or dense, and 0/1 labels ``Y`` (N, K),
checks them (and every parameter) through :mod:`mlgp.validation` before any work, and fits, for
each class y ∈ {present, absent}, the kernel model ``q_t(y|x) = θ_{y,t}ᵀ φ(x)`` with B Gaussian
basis functions, all K labels at once: ``Θ_y`` (B, K) minimises
``½ tr(Θᵀ ΦᵀΦ Θ) − tr(Θᵀ Φᵀ Π_y) + ½ tr(Θ C Θᵀ)``, i.e. solves the Sylvester equation
``ΦᵀΦ Θ_y + Θ_y C = Φᵀ Π_y`` with ``C = diag(α + Σ_t' γ_tt') − Γ`` and ``Γ = coupling · W``.
``decision_function`` returns ``q_t(present|x) − q_t(absent|x)`` (N, K); ``predict_proba`` the
clipped and normalised probability of presence (N, K); ``predict`` the int64 0/1 matrix
``proba >= threshold``; ``predict_topk`` ranks ``decision_function``. With ``coupling = 0`` the
labels decouple into :class:`~mlgp.baselines.LSPC` per label. The scoring methods and ``save`` /
``load`` are :class:`~mlgp.estimator.MultiLabelEstimator`'s over the hooks defined here.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from ..errors import ShapeError
from ..estimator import MultiLabelEstimator, SavedState
from ..estimator.prior_map import CALIBRATION
from ..estimator.budget import MAX_SECONDS, Budget
from ..validation import check_thresholds
from ._least_squares import (BASIS_CONSTRAINTS, binary_posterior, fit_basis, fit_proba_map_within, restore_basis,
                             restore_coef)
from ._sylvester import SOLVERS, SolveInfo, coupling_matrix, pearson_similarity, solve_coupled

__all__ = ["MLLSPC", "AUTO_EIG_MAX_BASIS"]

#: ``solver="auto"`` takes ``"eig"`` up to this many basis functions B and ``"cg"`` above.
AUTO_EIG_MAX_BASIS = 3000


def check_similarity(similarity, num_labels: int) -> np.ndarray:
    """A user-given label similarity as a float64 (K, K) array: finite, symmetric, non-negative."""
    W = similarity.toarray() if sp.issparse(similarity) else np.asarray(similarity, dtype=np.float64)
    W = np.asarray(W, dtype=np.float64)
    if W.shape != (num_labels, num_labels):
        raise ShapeError(f"similarity must be a (K, K) = ({num_labels}, {num_labels}) matrix, got shape {W.shape}")
    if not np.all(np.isfinite(W)):
        raise ShapeError("similarity contains NaN or inf")
    if np.any(W < 0):
        raise ShapeError("similarity must be non-negative (the paper uses max(0, Pearson correlation))")
    if not np.allclose(W, W.T, rtol=1e-12, atol=1e-12):
        i, j = np.unravel_index(np.argmax(np.abs(W - W.T)), W.shape)
        raise ShapeError(f"similarity must be symmetric: entry ({i}, {j}) is {W[i, j]} but ({j}, {i}) is {W[j, i]}")
    return W


class MLLSPC(MultiLabelEstimator):
    """Multi-label LSPC: one least-squares probabilistic classifier per label, coupled so that
    similar labels get similar parameters.

    Parameters
    ----------
    kernel_width, n_basis : float or None (default None), int or None (default 1000)
        The Gaussian basis, as :class:`LSPC`'s: its width σ (None: the median distance between
        training points) and its B centres, training points drawn with ``random_state`` (all N when
        ``n_basis >= N`` or None, the paper's B = N).
    alpha : float, default=0.1
        Ridge regularisation λ > 0 of every label's parameters.
    coupling : float, default=0.1
        Scale c >= 0 of the label coupling Γ = c · W; 0 gives independent LSPCs. Its useful range
        depends on ``alpha`` and on how many labels are similar: choose it by cross-validation
        (:class:`MLLSPCCV` does so cheaply).
    similarity : "pearson" or array-like of shape (K, K), default="pearson"
        W: ``max(0, Pearson correlation)`` of the training labels, or a symmetric non-negative
        matrix of your own (its diagonal is irrelevant).
    solver : {"auto", "eig", "sylvester", "cg", "dense"}, default="auto"
        How the Sylvester equation is solved (see :mod:`mlgp.baselines._sylvester`): "auto" takes
        "eig" for B <= ``AUTO_EIG_MAX_BASIS`` and "cg" above; "dense" is the naive BT × BT solve,
        a reference for small problems only.
    tol : float, default=1e-8
        Relative residual at which "cg" stops.
    max_iter : int or None, default=None
        Iteration cap of "cg" (None: 10 · B · K).
    prior_weight : float, default=0.1
        Weight w >= 0 of the label prior in the probabilities, as in :class:`~mlgp.baselines.LSPC`
        (0: the paper's clipped outputs, probability 0 wherever q1 <= 0).
    threshold : float or array-like of shape (K,), default=0.5
        ``predict`` marks label t present where its probability is ``>= threshold[t]``; 0.5 is the
        paper's rule (the more probable of presence and absence).
    random_state : int, RandomState or None, default=None
        Seeds the choice of centres (and of the points the median heuristic looks at when N > 1000).
    calibration : {"prior"} or None, default="prior"
        ``"prior"``: ``predict_proba`` through the map toward the label prior fitted on held-out rows
        (:mod:`mlgp.estimator.prior_map`, ``proba_map_``; docs/probabilities.md); None: its own.
    max_seconds : float or None, default=None
        Wall seconds of ``fit`` from its start (:class:`mlgp.estimator.budget.Budget`). The model
        is one solve of the Sylvester equation for all labels at once (the design matrix, ΦᵀΦ, and
        for "eig" two eigendecompositions shared by every label), which has no point to stop at and
        always runs whole; what the bound governs is the prior map (``calibration="prior"``): its
        copies share a quarter of ``max_seconds`` or what the solve left, the smaller (a copy begun
        in time runs whole), and once the solve has spent the budget the map is left out
        (``proba_map_`` None) with a :class:`~mlgp.errors.BudgetWarning`. :class:`MLLSPCCV`'s search,
        the costly part of choosing its settings, stops within its budget.

    Attributes
    ----------
    coef_ : np.ndarray of shape (2, B, K)
        Θ for presence (``coef_[0]``) and absence (``coef_[1]``).
    basis_ : GaussianBasis
        The centres (B, D), ``width`` and centre norms.
    kernel_width_ : float
        The width used.
    similarity_ : np.ndarray of shape (K, K)
        W (before scaling by ``coupling``).
    prior_ : np.ndarray of shape (K,)
        Training frequency of each label (the probability where both outputs are <= 0).
    solver_ : str
        The solver used.
    solve_info_ : SolveInfo
        For "cg", the iterations and relative residuals of the two solves (presence, absence).
    n_iter_ : int
        CG iterations (the larger of the two solves); 1 for the direct solvers.
    n_features_in_, n_labels_, n_samples_, classes_
        D, K, N and ``arange(K)``.

    Examples
    --------
    >>> import numpy as np
    >>> from mlgp.baselines import MLLSPC
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2))
    >>> Y = np.column_stack([X[:, 0] > 0, X[:, 0] + 0.1 * X[:, 1] > 0, X[:, 1] > 0]).astype(int)
    >>> est = MLLSPC(random_state=0).fit(X, Y)
    >>> est.coef_.shape, est.solver_
    ((2, 200, 3), 'eig')
    >>> est.predict([[2.0, 2.0], [-2.0, -2.0]])
    array([[1, 1, 1],
           [0, 0, 0]])
    """

    _parameter_constraints: dict = {
        **BASIS_CONSTRAINTS,
        "coupling": [Interval(Real, 0, None, closed="left")],
        "similarity": [StrOptions({"pearson"}), "array-like", "sparse matrix"],
        "solver": [StrOptions({"auto", *SOLVERS})],
        "tol": [Interval(Real, 0, 1, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left"), None],
        "threshold": [Interval(Real, 0, 1, closed="both"), "array-like"],
        "calibration": CALIBRATION,
        "max_seconds": MAX_SECONDS,
    }

    _predict_from = "proba"

    def __init__(self, *, kernel_width: float | None = None, n_basis: int | None = 1000, alpha: float = 0.1,
                 prior_weight: float = 0.1, coupling: float = 0.1, similarity="pearson", solver: str = "auto", tol: float = 1e-8,
                 max_iter: int | None = None, threshold=0.5, random_state=None, calibration: str | None = "prior",
                 max_seconds: float | None = None) -> None:
        self.kernel_width = kernel_width
        self.n_basis = n_basis
        self.alpha = alpha
        self.prior_weight = prior_weight
        self.coupling = coupling
        self.similarity = similarity
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.threshold = threshold
        self.random_state = random_state
        self.calibration = calibration
        self.max_seconds = max_seconds

    def _check_options(self, num_labels: int) -> tuple[np.ndarray | None, np.ndarray]:
        """User similarity (or None for Pearson) and thresholds, checked before any work."""
        W = None
        if not (isinstance(self.similarity, str) and self.similarity == "pearson"):
            W = check_similarity(self.similarity, num_labels)
        return W, check_thresholds(self.threshold, num_labels)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, Y) -> "MLLSPC":
        """Fit the coupled least-squares classifiers on features ``X`` (N, D) and 0/1 labels ``Y``
        (N, K), arrays or scipy sparse matrices; returns ``self``."""
        budget = Budget.trusted(self.max_seconds)
        X, Y = self._validate_fit_data(X, Y)
        self._fit(X, Y)
        fit_proba_map_within(self, X, Y, budget)
        return self

    def _fit(self, X, Y: sp.csr_matrix) -> "MLLSPC":
        """:meth:`fit` on checked data (float64 CSR or array X, CSR 0/1 Y); :class:`MLLSPCCV`'s
        refit calls it directly."""
        N, K = Y.shape
        W, _ = self._check_options(K)
        self.basis_, Phi = fit_basis(X, self.n_basis, self.kernel_width, self.random_state)
        B = Phi.shape[1]
        self.similarity_ = pearson_similarity(Y) if W is None else W
        C = coupling_matrix(float(self.alpha), float(self.coupling) * self.similarity_)
        G = Phi.T @ Phi
        R_present = np.asarray((Y.T @ Phi).T)                      # Φᵀ Π_present (B, K)
        R_absent = Phi.sum(axis=0)[:, None] - R_present               # Φᵀ (1 − Y)
        solver = self.solver if self.solver != "auto" else ("eig" if B <= AUTO_EIG_MAX_BASIS else "cg")
        max_iter = self.max_iter if self.max_iter is not None else 10 * B * K
        thetas, info = solve_coupled(G, C, [R_present, R_absent], solver, tol=float(self.tol), max_iter=max_iter)
        self.coef_ = np.stack(thetas)
        self.solver_ = solver
        self.solve_info_ = info
        self.n_iter_ = max(info.iterations, default=1)
        self.kernel_width_ = self.basis_.width
        self.prior_ = np.asarray(Y.mean(axis=0)).ravel()
        self._set_fitted_shape(N, X.shape[1], K)
        return self

    # ---------------------------------------------------------------- scoring
    def _outputs(self, xb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        Phi = self.basis_.design(xb)
        return Phi @ self.coef_[0], Phi @ self.coef_[1]

    def _decision_block(self, xb: np.ndarray) -> np.ndarray:
        """``q_t(present|x) − q_t(absent|x)`` (B, K): positive where presence is the more probable."""
        q1, q0 = self._outputs(xb)
        return q1 - q0

    def _proba_block(self, xb: np.ndarray) -> np.ndarray:
        """The clipped, normalised probability of presence (B, K) in [0, 1]."""
        return binary_posterior(*self._outputs(xb), self.prior_, float(self.prior_weight), self.n_samples_)

    # ------------------------------------------------------------ persistence
    def _fitted_scalars(self) -> dict:
        info = self.solve_info_
        return {**super()._fitted_scalars(), "kernel_width_": self.kernel_width_, "solver_": self.solver_,
                "n_iter_": int(self.n_iter_), "solve_info_": {"solver": info.solver, "iterations": list(info.iterations),
                                                              "residuals": list(info.residuals)}}

    def _fitted_arrays(self) -> dict:
        return {**super()._fitted_arrays(), "coef_": self.coef_, "basis_.centres": self.basis_.centres, "similarity_": self.similarity_,
                "prior_": self.prior_}

    def _restore_fitted(self, state: SavedState) -> None:
        super()._restore_fitted(state)
        K = self.n_labels_
        self.coef_ = restore_coef(state, (2, None, K))
        self.basis_ = restore_basis(state, self.coef_.shape[1], self.n_features_in_)
        self.kernel_width_ = self.basis_.width
        self.similarity_ = state.array("similarity_", (K, K), low=0)
        self.prior_ = state.array("prior_", (K,), low=0, high=1)
        self.solver_ = state.scalar("solver_", str, choices=SOLVERS)
        self.n_iter_ = state.scalar("n_iter_", int, low=0)
        info = state.scalar("solve_info_", dict)
        try:
            self.solve_info_ = SolveInfo(str(info["solver"]), [int(i) for i in info["iterations"]],
                                         [float(r) for r in info["residuals"]])
        except (KeyError, TypeError, ValueError) as err:
            raise state.error(f"the fitted value 'solve_info_' is malformed ({err!r})") from None
        check_thresholds(self.threshold, K)
