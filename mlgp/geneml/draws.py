"""The Gibbs sampler's draws that are not a row block's or W's (:mod:`mlgp.geneml.ridge`): Gaussian
stacks, the label-scale move, the precisions under their Gamma hyperprior, and a univariate slice
sampler.

- :func:`draw_gaussians`: N(Λ⁻¹ h, Λ⁻¹) for stacks of (k, k) precisions (every u_n, every v_l).
- :func:`scale_labels`: the move V → t V, t > 0, drawn from its conditional given (U, μ, Y) with ξ
  and ω summed out. On the group of scalings with its Haar measure dt/t, Liu & Sabatti's
  generalised Gibbs step draws τ = log t from

      log f(τ) = log p(Y | e^τ U Vᵀ, μ) − ½ e^{2τ} Σ_j λ_vj ‖V_j‖² + K k τ,

  which leaves p(V | U, μ, Y) invariant; ξ and ω are drawn afresh from their conditionals after it.
  Plain Gibbs moves the scale of ψ = U Vᵀ a few per cent per sweep (ω and V pin each other); this
  move sets it in one step.
- :func:`balance_columns`: the move (U_j, W_j, V_j) → (c_j U_j, c_j W_j, V_j / c_j) for each latent
  dimension j, which leaves ψ = U Vᵀ — and so the likelihood, ξ and ω — unchanged and moves only
  the balance of scale between the factors and the loadings that the priors alone weigh. On the
  group of scalings with its Haar measure dc/c (Liu & Sabatti's generalised Gibbs step; the
  parameter-expansion and interweaving steps of factor models are its relatives), s = c² has the
  density ∝ s^{(N + D − K)/2 − 1} exp(−(A s + B / s) / 2) with A = λ_u ‖U_j − X W_j‖² + λ_w ‖W_j‖²
  and B = λ_vj ‖V_j‖²: a generalised inverse Gaussian, drawn exactly. Plain Gibbs moves this
  balance slowly, because U given V and V given U pin each other's scale.
- :func:`draw_exposure`: each label's exposure μ_l from p(μ_l | ψ, Y) with ξ summed out —
  ∝ Beta(μ_l; α, β) μ_l^{n_l} Π_{n: y_nl = 0} (1 − μ_l σ(ψ_nl)), n_l the label's positives — by
  slice sampling on logit μ_l, all labels at once (:func:`slice_sample_each`). Drawn from the Beta
  given ξ instead, μ and ξ pin each other (a label seldom seen is either rarely exposed or rarely
  relevant) and μ moves a little per sweep; the next sweep draws ξ afresh given the new μ, so the
  collapsed step leaves the posterior invariant (a partially collapsed Gibbs sampler).
- :func:`draw_precisions`: λ_u, λ_w and one λ_vj per latent dimension (automatic relevance
  determination of V's columns) from their Gamma conditionals under the hyperprior Gamma(a, b).
"""

from __future__ import annotations

from typing import Callable, Iterable

import numpy as np
from scipy.special import expit, log_expit, logit

from .updates import solve_spd

__all__ = ["balance_columns", "draw_exposure", "draw_gaussians", "draw_precisions", "scale_labels", "slice_sample",
           "slice_sample_each"]


def draw_gaussians(precision: np.ndarray, shift: np.ndarray, rng: np.random.Generator, *, with_mean: bool = False):
    """Draws from N(Λ⁻¹ h, Λ⁻¹) for stacks Λ (…, k, k), h (…, k): Λ⁻¹ (h + L ε) with Λ = L Lᵀ and
    ε ~ N(0, I), whose covariance is Λ⁻¹ L Lᵀ Λ⁻¹ = Λ⁻¹ (a Cholesky factor and one batched LU solve;
    NumPy has no batched triangular solve). ``with_mean``: return (Λ⁻¹ h, the draw), both from one
    solve with two right-hand sides."""
    L = np.linalg.cholesky(precision)
    noisy = shift + np.matmul(L, rng.standard_normal(shift.shape)[..., None])[..., 0]
    if not with_mean:
        return solve_spd(precision, noisy)
    both = np.linalg.solve(precision, np.stack([shift, noisy], axis=-1))
    return both[..., 0], both[..., 1]


def slice_sample(log_density: Callable[[float], float], x0: float, rng: np.random.Generator, *, width: float = 0.25,
                 max_steps: int = 50) -> tuple[float, int]:
    """One univariate slice-sampling step from ``x0`` (Neal 2003: stepping out by ``width``, then
    shrinkage); returns the new point and the number of density evaluations."""
    level = log_density(x0) + np.log(rng.random())
    lo = x0 - width * rng.random()
    hi = lo + width
    evaluations = 1
    for _ in range(max_steps):
        evaluations += 1
        if log_density(lo) <= level:
            break
        lo -= width
    for _ in range(max_steps):
        evaluations += 1
        if log_density(hi) <= level:
            break
        hi += width
    while True:
        x = rng.uniform(lo, hi)
        evaluations += 1
        if log_density(x) > level:
            return x, evaluations
        if x < x0:
            lo = x
        else:
            hi = x


def slice_sample_each(log_density: Callable[[np.ndarray], np.ndarray], x0: np.ndarray, rng: np.random.Generator, *,
                      width: float = 1.0, max_steps: int = 50) -> np.ndarray:
    """One slice-sampling step (as :func:`slice_sample`) for each of n independent univariate
    targets at once: ``log_density(x)`` (n,) → (n,) evaluates all of them; returns x (n,)."""
    x0 = np.asarray(x0, dtype=np.float64)
    level = log_density(x0) + np.log(rng.random(x0.shape))
    lo = x0 - width * rng.random(x0.shape)
    hi = lo + width
    for edge, step in ((lo, -width), (hi, width)):
        out = log_density(edge) > level
        for _ in range(max_steps):
            if not out.any():
                break
            edge[out] += step
            out[out] = (log_density(edge) > level)[out]
    x = x0.copy()
    open_ = np.ones(x0.shape, dtype=bool)
    while open_.any():
        proposal = rng.uniform(lo, hi)
        inside = open_ & (log_density(np.where(open_, proposal, x0)) > level)
        x[inside] = proposal[inside]
        open_ &= ~inside
        below = open_ & (proposal < x0)
        lo[below] = proposal[below]
        above = open_ & ~(proposal < x0)
        hi[above] = proposal[above]
    return x


def draw_exposure(zero_probabilities: Callable[[], Iterable[np.ndarray]], positives: np.ndarray, mu: np.ndarray,
                  alpha: float, beta: float, rng: np.random.Generator) -> np.ndarray:
    """μ (K,) from p(μ | ψ, Y) with ξ summed out (module docstring). ``zero_probabilities()`` yields
    the blocks of σ(ψ) (B, K) with the positives set to 0, covering every row once; ``positives``
    (K,) counts each label's positives; ``mu`` (K,) is the current value, where the step starts."""
    def log_density(m: np.ndarray) -> np.ndarray:  # on m = logit μ, the Jacobian μ(1 − μ) included
        mu_m = expit(m)
        total = (alpha + positives) * log_expit(m) + beta * log_expit(-m)
        for block in zero_probabilities():
            total = total + np.sum(np.log1p(-mu_m * block), axis=0)
        return total

    mu = np.clip(np.asarray(mu, dtype=np.float64), 1e-12, 1 - 1e-12)
    return np.clip(expit(slice_sample_each(log_density, logit(mu), rng)), 1e-12, 1 - 1e-12)


def scale_labels(V: np.ndarray, log_likelihood_at: Callable[[float], float], lambda_v: np.ndarray,
                 rng: np.random.Generator, precision_prior: tuple[float, float] | None = None) -> tuple[np.ndarray, float]:
    """The scale move (module docstring): V (K, k) → e^τ V with τ drawn by slice sampling.

    ``log_likelihood_at(t)`` is log p(Y | t U Vᵀ, μ) with ξ summed out; ``lambda_v`` (k,) the prior
    precision of each column of V. With a Gamma(a, b) ``precision_prior`` the λ_vj are summed out
    instead (each column's prior is then a multivariate t, −(a + K/2) log(b + ‖V_j‖²/2)), so the
    likelihood, not the current λ_vj, sets the scale. Returns (the new V, τ)."""
    K, k = V.shape
    column_norms = np.sum(V ** 2, axis=0)

    def log_prior(tau: float) -> float:
        if precision_prior is None:
            return -0.5 * np.exp(2 * tau) * float(lambda_v @ column_norms)
        a, b = precision_prior
        return -(a + K / 2) * float(np.sum(np.log(b + 0.5 * np.exp(2 * tau) * column_norms)))

    def log_density(tau: float) -> float:
        return log_likelihood_at(np.exp(tau)) + log_prior(tau) + K * k * tau

    tau, _ = slice_sample(log_density, 0.0, rng)
    return np.exp(tau) * V, float(tau)


def balance_columns(U: np.ndarray, W: np.ndarray, V: np.ndarray, residual: np.ndarray, lambda_u: float,
                    lambda_w: float, lambda_v: np.ndarray, rng: np.random.Generator) -> tuple:
    """The balance move (module docstring) for every latent dimension at once: U (N, k), W (D, k),
    V (K, k), ``residual`` U − X W (N, k), λ_vj (k,) each column's prior precision (relevance
    included). Returns (c U, c W, V / c, c residual, c) with c (k,) drawn from its conditional."""
    from scipy.stats import geninvgauss

    N, k = U.shape
    D, K = W.shape[0], V.shape[0]
    A = lambda_u * np.sum(residual ** 2, axis=0) + lambda_w * np.sum(W ** 2, axis=0)
    B = np.asarray(lambda_v, dtype=np.float64) * np.sum(V ** 2, axis=0)
    c = np.ones(k)
    movable = (A > 0) & (B > 0)  # a column all zero has no scale to move
    if movable.any():
        a, b = A[movable], B[movable]
        x = geninvgauss.rvs((N + D - K) / 2, np.sqrt(a * b), random_state=rng)
        c[movable] = np.sqrt(np.sqrt(b / a) * np.atleast_1d(x))
    return U * c, W * c, V / c, residual * c, c


def draw_precisions(W: np.ndarray, residual: np.ndarray, V: np.ndarray, prior: tuple[float, float],
                    rng: np.random.Generator) -> tuple[float, float, np.ndarray]:
    """(λ_u, λ_w, λ_v (k,)) from their Gamma conditionals given W (D, k), U − X W (N, k) and V
    (K, k), under the hyperprior Gamma(shape a, rate b) = ``prior`` on each:
    λ_u ~ Gamma(a + N k / 2, b + ‖U − XW‖² / 2), λ_w ~ Gamma(a + D k / 2, b + ‖W‖² / 2),
    λ_vj ~ Gamma(a + K / 2, b + ‖V_j‖² / 2)."""
    a, b = prior
    lambda_u = rng.gamma(a + residual.size / 2, 1.0 / (b + 0.5 * float(np.sum(residual ** 2))))
    lambda_w = rng.gamma(a + W.size / 2, 1.0 / (b + 0.5 * float(np.sum(W ** 2))))
    lambda_v = rng.gamma(a + V.shape[0] / 2, 1.0 / (b + 0.5 * np.sum(V ** 2, axis=0)))
    return float(lambda_u), float(lambda_w), lambda_v
