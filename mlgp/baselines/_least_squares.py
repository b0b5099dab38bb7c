"""What LSPC and ML-LSPC share: the fitted Gaussian basis and the clipped, normalised posteriors.

Contract: :func:`fit_basis` picks the centres and width and returns the (N, B) training design
matrix with a :class:`GaussianBasis` that maps any (N', D) block to its (N', B) design (saved as its
centres and width: :func:`restore_basis` reads it back from a file's state);
:func:`binary_posterior` and :func:`multiclass_posterior` turn fitted least-squares outputs ``q``
into probabilities ``max(0, q_y) / Σ_y' max(0, q_y')`` (the paper's rounding-up and
normalisation), falling back to the training class prior where every ``q_y <= 0``, or, with a
``prior_weight`` w > 0 (the estimators' default 0.1), ``(max(0, q_y) + w π_y) / (Σ_y' max(0, q_y') + w)``.
:func:`fit_proba_map_within` fits an estimator's prior map within what its budget has left.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import Interval

from ..errors import BudgetWarning, warn
from ..estimator import SavedState
from ..estimator.budget import Budget
from ._kernel_basis import choose_centres, gaussian_design, median_heuristic, row_norms_squared

__all__ = ["BASIS_CONSTRAINTS", "GaussianBasis", "binary_posterior", "fit_basis", "fit_proba_map_within",
           "multiclass_posterior", "restore_basis", "restore_coef"]

#: scikit-learn parameter constraints of the basis, shared by both estimators.
BASIS_CONSTRAINTS: dict = {
    "kernel_width": [Interval(Real, 0, None, closed="neither"), None],
    "n_basis": [Interval(Integral, 1, None, closed="left"), None],
    "alpha": [Interval(Real, 0, None, closed="neither")],
    "prior_weight": [Interval(Real, 0, None, closed="left")],
    "random_state": ["random_state"],
}


@dataclass
class GaussianBasis:
    """Gaussian basis functions ``exp(-||x - c_b||² / (2 width²))`` with B fixed centres.

    Attributes
    ----------
    centres : np.ndarray or scipy.sparse.csr_matrix of shape (B, D)
    width : float
    centre_norms : np.ndarray of shape (B,)
        Squared norms of the centres.
    """

    centres: np.ndarray | sp.csr_matrix
    width: float
    centre_norms: np.ndarray

    def design(self, X) -> np.ndarray:
        """The (N, B) design matrix of ``X`` (N, D), CSR or dense."""
        return gaussian_design(X, self.centres, self.width, self.centre_norms)


def restore_basis(state: SavedState, num_basis: int, num_features: int) -> GaussianBasis:
    """The basis saved as ``basis_.centres`` (B, D), dense or CSR, and the fitted scalar
    ``kernel_width_`` (> 0) of a file's ``state``. The width's square and the centres' squared
    norms must be finite and the square non-zero, so that the design matrix of finite inputs is."""
    width = state.scalar("kernel_width_", float)
    if width <= 0:
        raise state.error(f"the fitted value 'kernel_width_' must be > 0, got {width}")
    if not (0 < width * width < np.inf):
        raise state.error(f"the fitted value 'kernel_width_' = {width} has no finite non-zero square")
    centres = state.matrix("basis_.centres", (num_basis, num_features))
    norms = row_norms_squared(centres)
    if not np.all(np.isfinite(norms)):
        raise state.error("the basis centres are too large: their squared norms overflow")
    return GaussianBasis(centres, width, norms)


def restore_coef(state: SavedState, shape: tuple) -> np.ndarray:
    """The fitted ``coef_`` of ``shape``: finite, with a finite sum of absolute values, so that no
    output Φθ (basis values in [0, 1]), nor any sum or difference of outputs, overflows."""
    coef = state.array("coef_", shape)
    with np.errstate(over="ignore"):
        total = np.abs(coef).sum(dtype=np.float64)
    if not np.isfinite(total):
        raise state.error("the array 'coef_' is too large: the sum of its absolute values overflows")
    return coef


def fit_basis(X, n_basis: int | None, kernel_width: float | None, random_state) -> tuple[GaussianBasis, np.ndarray]:
    """Centres (``n_basis`` training rows, all when None or >= N) and width (``kernel_width``,
    or the median heuristic over the training points when None) for ``X`` (N, D); returns the
    basis and the training design matrix Φ (N, B)."""
    rows = choose_centres(X.shape[0], n_basis, random_state)
    centres = X[rows]
    if sp.issparse(centres):
        centres = sp.csr_matrix(centres)
    width = float(kernel_width) if kernel_width is not None else median_heuristic(X, random_state=random_state)
    basis = GaussianBasis(centres, width, row_norms_squared(centres))
    return basis, basis.design(X)


def _normalise(pos: np.ndarray, total: np.ndarray, prior: np.ndarray) -> np.ndarray:
    out = np.empty_like(pos)
    ok = total > 0
    np.divide(pos, total, out=out, where=ok)
    return np.where(ok, out, prior)


def binary_posterior(q_present: np.ndarray, q_absent: np.ndarray, prior: np.ndarray, weight: float = 0.0,
                     num_points: int | None = None) -> np.ndarray:
    """Per label, ``(max(0, q1) + w π) / (max(0, q1) + max(0, q0) + w)`` and w = ``weight`` >= 0,
    π the training frequency ``prior`` (K,) of ``num_points`` rows smoothed by Jeffreys' prior,
    ``(N prior + 0.5) / (N + 1)`` (so that a label absent from training is improbable, not
    impossible; ``prior`` itself without ``num_points``); with w = 0 the paper's
    ``max(0, q1) / (max(0, q1) + max(0, q0))``, and ``prior`` where both outputs are <= 0. Arrays
    (N, K) → probabilities of presence (N, K).

    The least-squares outputs estimate p(y | x) and sum to about 1, so w is the weight of the prior
    against the fit; w > 0 keeps a label whose q1 is clipped to 0 improbable rather than impossible
    (with w = 0, 5 % of Enron's test positives get probability 0)."""
    pos = np.maximum(q_present, 0.0)
    total = pos + np.maximum(q_absent, 0.0)
    if weight > 0:
        smoothed = prior if num_points is None else (num_points * prior + 0.5) / (num_points + 1.0)
        return (pos + weight * smoothed) / (total + weight)
    return _normalise(pos, total, np.broadcast_to(prior, pos.shape))


def multiclass_posterior(Q: np.ndarray, prior: np.ndarray, weight: float = 0.0,
                         num_points: int | None = None) -> np.ndarray:
    """Rows of ``(max(0, Q) + w π) / (Σ_y max(0, Q_y) + w)`` (N, Y), w = ``weight`` >= 0 and π the
    class frequencies ``prior`` (Y,) of ``num_points`` rows smoothed by Jeffreys' prior,
    ``(N prior + 0.5) / (N + Y / 2)`` (still summing to one; ``prior`` itself without
    ``num_points``); with w = 0 a row with no positive entry gets ``prior``."""
    pos = np.maximum(Q, 0.0)
    total = pos.sum(axis=1, keepdims=True)
    if weight > 0:
        smoothed = prior if num_points is None else (num_points * prior + 0.5) / (num_points + 0.5 * prior.size)
        return (pos + weight * smoothed) / (total + weight)
    return _normalise(pos, np.broadcast_to(total, pos.shape), np.broadcast_to(prior, pos.shape))

def fit_proba_map_within(estimator, X, Y, budget: Budget) -> None:
    """``estimator._fit_proba_map(X, Y)`` after its closed-form fit, within what ``budget`` (the
    fit's, started when ``fit`` began) has left: the copies share a quarter of ``max_seconds`` or
    what is left, the smaller, and a copy begun in time runs whole. Once the budget is spent the map
    is left out (``proba_map_`` None, the probabilities the model's own), with a
    :class:`~mlgp.errors.BudgetWarning`; without a budget, the map as without one."""
    if getattr(estimator, "calibration", None) != "prior" or not math.isfinite(budget.seconds):
        estimator._fit_proba_map(X, Y)
        return
    if budget.spent():
        estimator.proba_map_ = None
        warn(f"{type(estimator).__name__}: calibration='prior' left out, its probabilities are its own: "
             f"max_seconds={budget.seconds:g} was spent by the model's own fit ({budget.elapsed:.3g} s)",
             BudgetWarning)
        return
    # cross_fitted_map gives its copies a quarter of the budget it is handed, from now
    estimator._fit_proba_map(X, Y, Budget.trusted(min(budget.seconds, 4.0 * (budget.seconds - budget.elapsed))))
