"""Automatic relevance determination (ARD) of GenEML's latent dimensions.

With a relevance hyperprior Gamma(a, b) (shape, rate), latent dimension j has a relevance
r_j ~ Gamma(a, b) that scales the prior precision of V's column j: V_j ~ N(0, I / (λ_v r_j)). A
dimension the labels do not use has V_j pulled to zero and r_j grows (up to the hyperprior's
rate), so ``n_components`` is an upper bound and the data set the number of dimensions in use
(:func:`effective_rank`). Given V, r_j has the Gamma conditional

    r_j | V ~ Gamma(a + K/2, b + ½ λ_v ‖V_j‖²),

whose mode (:func:`relevance_mode`, batch and online EM) and draws (:func:`draw_relevance`, Gibbs)
this module gives, with its log density (:func:`log_relevance_prior`, part of every objective).

Only V's columns carry the relevance. Letting r_j scale the precisions of U − X W (N entries per
column) and W (D entries) too makes the joint mode collapse: with U a parameter (MAP), shrinking a
column of U pays N/2 · log r_j, which outweighs the labels' likelihood (what it did on Enron:
docs/results.md, "GenEML").
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln

from ..errors import ArgumentError

__all__ = ["IN_USE_RTOL", "check_relevance_prior", "column_squares", "components_in_use", "draw_relevance",
           "effective_rank", "log_relevance_prior", "relevance_mode", "scaled"]

#: A latent dimension is in use when its part of the logits' map is more than this share of the
#: largest dimension's (:func:`components_in_use`).
IN_USE_RTOL = 1e-3


def check_relevance_prior(prior) -> tuple[float, float] | None:
    """``prior`` checked: None, or a pair (shape a, rate b) of finite numbers > 0."""
    if prior is None:
        return None
    try:
        a, b = (float(v) for v in prior)
    except (TypeError, ValueError):
        raise ArgumentError(f"relevance_prior must be None or a pair (shape a, rate b); got {prior!r}") from None
    if not (np.isfinite(a) and np.isfinite(b) and a > 0 and b > 0):
        raise ArgumentError(f"relevance_prior's shape and rate must be finite and > 0; got ({a}, {b})")
    return a, b


def scaled(precision, relevance: np.ndarray | None):
    """A prior precision (a number, or (k,)) times the relevances r (k,), or itself without ARD."""
    return precision if relevance is None else precision * relevance


def column_squares(M: np.ndarray) -> np.ndarray:
    """‖M_j‖² of every column of M (…, k): (k,)."""
    M = np.asarray(M)
    return np.sum(M * M, axis=tuple(range(M.ndim - 1)))


def _conditional(V: np.ndarray, lambda_v, prior: tuple[float, float]) -> tuple[float, np.ndarray]:
    """The shape (a number) and the rates (k,) of r's Gamma conditional given V (K, k)."""
    a, b = prior
    return a + 0.5 * V.shape[0], b + 0.5 * lambda_v * column_squares(V)


def relevance_mode(V: np.ndarray, lambda_v, prior: tuple[float, float]) -> np.ndarray:
    """The mode (k,) of r's conditional given V (K, k) and λ_v (a number or (k,)):
    (a − 1 + K/2) / (b + ½ λ_v ‖V_j‖²); refused where a − 1 + K/2 ≤ 0 (K = 1 and a ≤ ½: the
    conditional's density is then unbounded at 0)."""
    shape, rate = _conditional(V, lambda_v, prior)
    if shape <= 1.0:
        raise ArgumentError(f"the relevances' conditional has no positive mode with one label and shape a = {prior[0]} "
                            "≤ 0.5: choose a relevance_prior shape > 0.5")
    return (shape - 1.0) / rate


def draw_relevance(V: np.ndarray, lambda_v, prior: tuple[float, float], rng: np.random.Generator) -> np.ndarray:
    """A draw (k,) from r's conditional given V (K, k) and λ_v (a number or (k,))."""
    shape, rate = _conditional(V, lambda_v, prior)
    return rng.gamma(shape, 1.0 / rate)


def log_relevance_prior(relevance: np.ndarray | None, prior: tuple[float, float] | None) -> float:
    """Σ_j log Gamma(r_j; a, b), exactly (0 without ARD)."""
    if relevance is None or prior is None:
        return 0.0
    a, b = prior
    r = np.asarray(relevance, dtype=np.float64)
    return float(np.sum(a * np.log(b) - gammaln(a) + (a - 1.0) * np.log(r) - b * r))


def effective_rank(U: np.ndarray, V: np.ndarray, energy: float = 0.99) -> int:
    """The number of singular values of ψ = U Vᵀ (U (N, k) or X W, V (K, k)) that carry ``energy``
    of its squared Frobenius norm: rotation-invariant, unlike counting columns (0 when ψ = 0).
    From the k × k product of the two factors' triangular QR factors, never the N × K matrix."""
    singular = np.linalg.svd(np.linalg.qr(U, mode="r") @ np.linalg.qr(V, mode="r").T, compute_uv=False)
    squares = np.cumsum(singular ** 2)
    if squares[-1] <= 0:
        return 0
    return int(np.searchsorted(squares, energy * squares[-1] * (1 - 1e-12)) + 1)


def components_in_use(W: np.ndarray, V: np.ndarray, rtol: float = IN_USE_RTOL) -> int:
    """How many latent dimensions j carry a part of the map x ↦ x W Vᵀ, ‖W_j‖ ‖V_j‖ (W (D, k),
    V (K, k)), larger than ``rtol`` times the largest one's: the dimensions ARD left on (a
    dimension it switched off has V_j near zero, so its part vanishes). Without ARD the prior is
    rotation-invariant and every dimension is normally in use; :func:`effective_rank` counts the
    rank of ψ itself."""
    parts = np.sqrt(column_squares(W) * column_squares(V))
    top = parts.max(initial=0.0)
    return 0 if top <= 0 else int(np.count_nonzero(parts > rtol * top))
