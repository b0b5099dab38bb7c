"""Probabilities never worse than the label prior: a three-number map fitted on held-out rows.

Contract: :func:`label_prior` is the label prior every family is judged against, ``π_k = (c_k +
0.5) / (N + 1)`` from the counts ``c_k`` of N training rows (Jeffreys' Beta(½, ½) smoothing, the
default of :class:`mlgp.baselines.LabelFrequency`; a label never seen has a small, finite prior).
:class:`PriorMap` maps a model's probability ``p`` of label k to

    logit p' = a · logit(clip(p, EPS, 1 − EPS)) + c · logit(π_k) + b,

with ``θ = (a, c, b)`` chosen by :meth:`PriorMap.fit` on held-out rows — rows the model was not
fitted on — to minimise their negative log-likelihood summed over entries plus ``ridge / 2 · ‖θ −
θ_π‖²``, where ``θ_π = (0, 1, 0)`` is the label prior itself; with fewer than
:data:`FULL_MAP_MIN_ROWS` held-out rows only ``a`` is free (``c = 1 − a``, ``b = 0``: a blend of
model and prior in logit space). Newton's method starts at ``θ_π``
and never accepts a step that raises the penalised objective, so the held-out NLL of the fitted map
is at most the prior's; the map replaces the prior only when it lowers the held-out NLL by more than
:data:`MIN_GAIN` nats (Akaike's price of the full map's two numbers beyond the prior's one, kept for
the one-number blend too, where it is conservative) and the held-out rows' gains are significant
(their paired z above :data:`MIN_Z`: rows, not entries, are the independent units), else ``θ = θ_π`` and
``p'`` is the label prior. ``θ = (1, 0, 0)`` is the model unchanged, so a model already calibrated
keeps its probabilities. The map is monotone in ``p`` for ``a ≥ 0`` (it ranks a row's labels like
``p`` only when ``c = 0``): it is for probabilities, not for rankings, which stay the model's own.
:func:`cross_fitted_map` fits the map of an estimator from copies of it fitted without the rows
they score; :func:`held_out_folds` chooses those rows: every row once, by ``CROSS_FIT_FOLDS``-fold
cross-fitting, up to ``CROSS_FIT_MAX_ROWS`` training rows (on a small set a single held-out fifth
is too few rows to fit even three numbers: its label frequencies drift from the training rows'),
else one random ``HELD_OUT_FRACTION``. No TensorFlow.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import scipy.sparse as sp
from scipy.special import expit, log_expit
from sklearn.utils._param_validation import StrOptions

from ..errors import BudgetWarning, ShapeError, warn
from .held_out_split import held_out_split

__all__ = ["CALIBRATION", "CROSS_FIT_FOLDS", "CROSS_FIT_MAX_ROWS", "EPS", "FULL_MAP_MIN_ROWS", "MIN_Z", "PRIOR_THETA", "HELD_OUT_FRACTION", "MIN_GAIN", "MIN_ROWS",
           "PriorMap", "cross_fitted_map", "held_out_folds", "label_prior"]

#: The parameter constraint of every family's ``calibration``: ``"prior"`` or None.
CALIBRATION = [StrOptions({"prior"}), None]
#: Probabilities are clipped to [EPS, 1 − EPS] before the logit.
EPS = 1e-9
#: The held-out NLL must fall by more than this (nats, summed over entries) for the map to replace
#: the prior: Akaike's penalty of the full map's two extra numbers (conservative for the blend).
MIN_GAIN = 2.0
#: ... and the rows' gains must be significant: their paired z statistic (mean gain over its
#: standard error, rows being the independent units: a row's labels are not) above this, a
#: one-sided test at 5 %. (cal500, ML-kNN: gain 8.1 nats over 335 rows at z = 1.38, and a test NLL
#: worse than the prior's beyond the test split's noise.)
MIN_Z = 1.645
#: Share of the training rows held out to fit the map.
HELD_OUT_FRACTION = 0.2
#: Up to this many training rows, the map is fitted on every row, held out in turn from one of
#: ``CROSS_FIT_FOLDS`` copies.
CROSS_FIT_MAX_ROWS = 2000
CROSS_FIT_FOLDS = 5
#: Fewer training rows than this: no held-out rows, the model's probabilities are kept as they are.
MIN_ROWS = 20
#: At most this many held-out entries (rows × labels) enter the fit; more rows are subsampled.
MAX_ENTRIES = 2_000_000
#: Fewer held-out rows than this fit one number, the blend ``a`` of model and prior in logit space
#: (``c = 1 − a``, ``b = 0``): on a few dozen rows the label frequencies drift from the training
#: rows', and a free intercept would learn the drift.
FULL_MAP_MIN_ROWS = 200
#: θ_π: the map that is the label prior itself.
PRIOR_THETA = np.array([0.0, 1.0, 0.0])
_FULL = np.eye(3)
_BLEND = np.array([[1.0], [-1.0], [0.0]])


def label_prior(Y) -> np.ndarray:
    """``(c_k + 0.5) / (N + 1)``: float64 (K,) from a 0/1 label matrix ``Y`` (N, K), CSR or dense."""
    counts = np.asarray((Y != 0).sum(axis=0), dtype=np.float64).ravel()
    return (counts + 0.5) / (Y.shape[0] + 1.0)


def held_out_folds(num_rows: int, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """The ``(kept, held)`` sorted row indices of each copy: ``CROSS_FIT_FOLDS`` random folds that
    hold out every row once when ``num_rows <= CROSS_FIT_MAX_ROWS``, else one random
    ``HELD_OUT_FRACTION`` of the rows; none (``[]``) when ``num_rows < MIN_ROWS``."""
    if num_rows < MIN_ROWS:
        return []
    order = np.random.default_rng(seed).permutation(num_rows)
    if num_rows <= CROSS_FIT_MAX_ROWS:
        parts = np.array_split(order, CROSS_FIT_FOLDS)
        return [(np.sort(np.concatenate(parts[:i] + parts[i + 1:])), np.sort(part)) for i, part in enumerate(parts)]
    return [held_out_split(num_rows, HELD_OUT_FRACTION, seed, clip=True)]  # the one split (its permutation too)


def _features(P: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """(B·K, 3) columns logit p̃, logit π, 1 for a (B, K) block ``P``."""
    p = np.clip(P, EPS, 1.0 - EPS)
    z = np.log(p) - np.log1p(-p)
    lp = np.broadcast_to(np.log(prior) - np.log1p(-prior), P.shape)  # prior (K,) or (B, K)
    return np.stack([z.ravel(), lp.ravel(), np.ones(z.size)], axis=1)


def _objective(F: np.ndarray, y: np.ndarray, theta: np.ndarray, ridge: float) -> float:
    """Summed NLL of ``y`` under ``σ(F θ)`` plus ``ridge / 2 · ‖θ − θ_π‖²``."""
    s = F @ theta
    nll = -(y * log_expit(s) + (1.0 - y) * log_expit(-s)).sum()
    return float(nll + 0.5 * ridge * np.sum((theta - PRIOR_THETA) ** 2))


def _row_nll(F: np.ndarray, y: np.ndarray, theta: np.ndarray, shape: tuple) -> np.ndarray:
    """Each row's NLL (summed over its labels) under ``σ(F θ)``: (B,) for a (B, K) block."""
    s = F @ theta
    return -(y * log_expit(s) + (1.0 - y) * log_expit(-s)).reshape(shape).sum(axis=1)


def _z(gains: np.ndarray) -> float:
    """The paired z statistic of per-row gains: mean / standard error (−inf for fewer than two rows
    or no spread with a mean ≤ 0, +inf with no spread and a mean > 0)."""
    if gains.size < 2:
        return -np.inf
    se = gains.std(ddof=1) / np.sqrt(gains.size)
    mean = gains.mean()
    return mean / se if se > 0 else (np.inf if mean > 0 else -np.inf)


def _newton(F: np.ndarray, y: np.ndarray, ridge: float, basis: np.ndarray, iterations: int = 50) -> np.ndarray:
    """θ = θ_π + basis φ minimising :func:`_objective` over φ (``basis`` (3, m): the free directions),
    from φ = 0; each accepted step lowers the objective."""
    G = F @ basis
    phi = np.zeros(basis.shape[1])
    value = _objective(F, y, PRIOR_THETA, ridge)
    gram = basis.T @ basis
    for _ in range(iterations):
        theta = PRIOR_THETA + basis @ phi
        p = expit(F @ theta)
        grad = G.T @ (p - y) + ridge * (gram @ phi)
        H = (G * (p * (1.0 - p))[:, None]).T @ G + ridge * gram
        try:
            step = np.linalg.solve(H, grad)
        except np.linalg.LinAlgError:
            break
        t, improved = 1.0, False
        while t > 1e-6:
            trial = phi - t * step
            trial_value = _objective(F, y, PRIOR_THETA + basis @ trial, ridge)
            if np.isfinite(trial_value) and trial_value < value:
                phi, improved = trial, value - trial_value > 1e-10 * max(1.0, abs(value))
                value = trial_value
                break
            t *= 0.5
        if not improved:
            break
    return PRIOR_THETA + basis @ phi


class PriorMap:
    """The fitted map of the module docstring: ``theta`` (3,) and the label prior (K,) it uses.

    Parameters
    ----------
    theta : array-like of shape (3,)
        ``(a, c, b)``.
    prior : array-like of shape (K,)
        The label prior of the estimator's training rows, in (0, 1).
    held_out_gain : float
        How much lower the held-out NLL (nats, summed) of the map is than the prior's (0 when the
        prior was kept); for reports.
    """

    def __init__(self, theta, prior, held_out_gain: float = 0.0) -> None:
        self.theta = np.array(theta, dtype=np.float64).reshape(3)  # its own copy
        self.prior = np.asarray(prior, dtype=np.float64).ravel()
        self.held_out_gain = float(held_out_gain)

    @classmethod
    def fit(cls, P_held, Y_held, held_prior, prior, *, ridge: float = 1.0, seed: int = 0) -> "PriorMap":
        """Fit θ on held-out probabilities.

        Parameters
        ----------
        P_held : np.ndarray of shape (N_held, K)
            The model's probabilities of the held-out rows (a model not fitted on them).
        Y_held : scipy sparse matrix or np.ndarray of shape (N_held, K)
            Their 0/1 labels.
        held_prior : np.ndarray of shape (K,) or (N_held, K)
            The label prior of the rows that model was fitted on (:func:`label_prior`); per row
            when the held-out rows come from several copies.
        prior : np.ndarray of shape (K,)
            The label prior the fitted map applies at prediction (of all training rows).
        ridge : float
            Weight of the pull toward ``θ_π``.
        seed : int
            Seeds the row subsample when ``N_held · K`` exceeds ``MAX_ENTRIES``.
        """
        P = np.asarray(P_held, dtype=np.float64)
        Y = Y_held.toarray() if sp.issparse(Y_held) else np.asarray(Y_held)
        basis = _FULL if P.shape[0] >= FULL_MAP_MIN_ROWS else _BLEND  # by the rows held out, not those subsampled
        if P.shape[0] * P.shape[1] > MAX_ENTRIES:
            rows = np.sort(np.random.default_rng(seed).choice(P.shape[0], max(1, MAX_ENTRIES // P.shape[1]), replace=False))
            P, Y = P[rows], Y[rows]
            held_prior = held_prior[rows] if np.ndim(held_prior) == 2 else held_prior
        F = _features(P, np.asarray(held_prior, dtype=np.float64))
        y = (Y != 0).astype(np.float64).ravel()
        theta = _newton(F, y, float(ridge), basis)
        rows = _row_nll(F, y, PRIOR_THETA, P.shape) - _row_nll(F, y, theta, P.shape)  # each row's gain
        gain = float(rows.sum())
        if not (gain > MIN_GAIN and _z(rows) > MIN_Z):
            theta, gain = PRIOR_THETA.copy(), 0.0
        return cls(theta, prior, gain)

    @property
    def keeps_prior(self) -> bool:
        """Whether the map is the label prior itself (θ = θ_π)."""
        return bool(np.array_equal(self.theta, PRIOR_THETA))

    def transform(self, P) -> np.ndarray:
        """The mapped probabilities: float64 (B, K) in [0, 1] from a (B, K) block ``P`` (strictly
        inside unless the logit overflows double precision)."""
        P = P.toarray() if sp.issparse(P) else np.asarray(P, dtype=np.float64)
        a, c, b = self.theta
        p = np.clip(P, EPS, 1.0 - EPS)
        z = np.log(p) - np.log1p(-p)
        lp = np.log(self.prior) - np.log1p(-self.prior)
        return expit(a * z + (c * lp + b)[None, :])

    def __repr__(self) -> str:
        a, c, b = self.theta
        return f"PriorMap(a={a:.4g}, c={c:.4g}, b={b:.4g}, held_out_gain={self.held_out_gain:.4g})"


def cross_fitted_map(estimator, X, Y, budget=None, **fit_kwargs) -> "PriorMap | None":
    """The :class:`PriorMap` of ``estimator`` (a ``MultiLabelEstimator`` with ``calibration``):
    copies with ``calibration=None`` (and no progress bar) are fitted on each fold's kept rows of
    :func:`held_out_folds` and score its held-out rows; the map is fitted on them, with each fold's
    own label prior, and applies the prior of every row of ``Y``.

    ``X`` (N, D), ``Y`` (N, K): validated training data; ``fit_kwargs``: the copies' other ``fit``
    arguments (not per row). ``budget`` (a :class:`~mlgp.estimator.budget.Budget`, the family's
    own): the copies share one deadline, a quarter of its seconds from now, each given an equal part
    of what is left (a copy still takes its set-up and one step); once it has passed, the folds not
    fitted are left out. None — the probabilities stay the model's own — below ``MIN_ROWS`` rows,
    when no fold could be fitted in time (a :class:`~mlgp.errors.BudgetWarning`), or when a copy
    is refused for its size (a ``ShapeError``, e.g. more neighbours than a fold's rows: a warning).
    """
    from sklearn.base import clone

    from .budget import Budget

    seed = getattr(estimator, "random_state", None)
    seed = seed if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) else 0
    folds = held_out_folds(X.shape[0], seed)
    if not folds:
        return None
    name = type(estimator).__name__
    copy = clone(estimator).set_params(calibration=None)
    if "progress" in copy.get_params(deep=False):
        copy.set_params(progress=False)
    deadline = None
    if budget is not None and math.isfinite(budget.seconds):
        deadline = Budget.now() + budget.seconds / 4
    held_rows, P, priors = [], [], []
    for i, (kept, held) in enumerate(folds):
        if deadline is not None:
            left = deadline - Budget.now()
            if left <= 0:
                break
            copy.set_params(max_seconds=left / (len(folds) - i))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a copy's warnings repeat those of the estimator's own fit
                copy.fit(X[kept], Y[kept], **fit_kwargs)
        except ShapeError as err:  # too few rows left for the copy's own settings
            warn(f"{name}: calibration='prior' left out, its probabilities are its own: a copy fitted on "
                 f"{kept.size} of the {X.shape[0]} rows was refused ({err})", UserWarning)
            return None
        held_rows.append(held)
        P.append(copy.predict_proba(X[held]))
        priors.append(np.broadcast_to(label_prior(Y[kept]), (held.size, Y.shape[1])))
    if not held_rows:
        warn(f"{name}: calibration='prior' left out, its probabilities are its own: a quarter of "
             f"max_seconds={budget.seconds:g} was spent before a copy was fitted", BudgetWarning)
        return None
    held = np.concatenate(held_rows)
    return PriorMap.fit(np.concatenate(P), Y[held], np.concatenate(priors), label_prior(Y), seed=seed)
