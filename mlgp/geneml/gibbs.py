"""A Gibbs sampler for GenEML with Pólya-Gamma augmentation.

One sweep draws, in turn (:mod:`mlgp.geneml.updates` gives the Gaussian conditionals):

1. ξ_nl for the zero labels from Bernoulli(γ_nl) (exposure models only; ξ = 1 where y = 1);
2. ω_nl ~ PG(1, ψ_nl) (:class:`mlgp.distributions.PolyaGamma`) for the exposed entries;
3. every u_n ~ N(Λ_n⁻¹ h_n, Λ_n⁻¹) with weights a = ξ ω and b = ξ κ;
4. every v_l ~ N(Λ_l⁻¹ h_l, Λ_l⁻¹) at the new U;
5. each column of W from its Gaussian conditional, precision λ_u XᵀX + λ_w I (a Cholesky factor
   computed once when D ≤ :data:`DENSE_W_LIMIT`, else perturb-then-solve by conjugate gradients to
   a tight tolerance);
6. μ_l ~ Beta(α + Σ_n ξ_nl, β + N − Σ_n ξ_nl), or, with covariate exposure, ω'_nl ~ PG(1, η_nl) and
   β from its Gaussian conditional (:func:`mlgp.geneml.exposure.draw_coefficients`).

:func:`gibbs` returns the draws after burn-in as arrays with a chain dimension, as ``tfp.mcmc``
returns them — (num_results, num_chains, …) — and a trace of the log posterior per sweep.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import scipy.linalg
import scipy.sparse as sp
import tensorflow as tf
from scipy.sparse.linalg import LinearOperator, cg

from ..distributions import PolyaGamma
from .em import EMState, Priors, _blocks, log_posterior
from .exposure import draw_coefficients
from .updates import exposure_posterior, label_statistics, row_updates, solve_spd

__all__ = ["DENSE_W_LIMIT", "gibbs"]

#: Largest D for which W's conditional is drawn through a dense Cholesky factor of its precision.
DENSE_W_LIMIT = 4000


@tf.function(input_signature=[tf.TensorSpec([None], tf.float64), tf.TensorSpec([2], tf.int32)])
def _pg_draws(psi, seed):
    return PolyaGamma(tf.ones_like(psi), psi).sample(seed=seed)


def _draw_gaussians(precision: np.ndarray, shift: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Draws from N(Λ⁻¹ h, Λ⁻¹) for stacks Λ (…, k, k), h (…, k): Λ⁻¹ (h + L ε) with Λ = L Lᵀ and
    ε ~ N(0, I), whose covariance is Λ⁻¹ L Lᵀ Λ⁻¹ = Λ⁻¹ (a Cholesky factor and one batched LU solve;
    NumPy has no batched triangular solve)."""
    L = np.linalg.cholesky(precision)
    return solve_spd(precision, shift + np.matmul(L, rng.standard_normal(shift.shape)[..., None])[..., 0])


class _WSampler:
    """Draws W | U: each column from N(A⁻¹ λ_u Xᵀ u, A⁻¹), A = λ_u XᵀX + λ_w I."""

    def __init__(self, X, priors: Priors):
        self.X, self.p = X, priors
        D = X.shape[1]
        self.factor = None
        if D <= DENSE_W_LIMIT:
            gram = np.asarray((X.T @ X).todense() if sp.issparse(X) else X.T @ X)
            self.factor = scipy.linalg.cholesky(priors.lambda_u * gram + priors.lambda_w * np.eye(D), lower=True)
        else:
            self.op = LinearOperator((D, D), matvec=lambda w: priors.lambda_u * (X.T @ (X @ w)) + priors.lambda_w * w,
                                     dtype=np.float64)

    def draw(self, U: np.ndarray, W0: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        D, k = W0.shape
        rhs = self.p.lambda_u * np.asarray(self.X.T @ U)
        if self.factor is not None:
            mean = scipy.linalg.cho_solve((self.factor, True), rhs)
            noise = scipy.linalg.solve_triangular(self.factor.T, rng.standard_normal((D, k)), lower=False)
            return mean + noise
        # perturb-then-solve: A w = λ_u Xᵀ(u + ε₁/√λ_u) + √λ_w ε₂ has w ~ N(A⁻¹ λ_u Xᵀ u, A⁻¹)
        eps1 = rng.standard_normal(U.shape) / np.sqrt(self.p.lambda_u)
        b = self.p.lambda_u * np.asarray(self.X.T @ (U + eps1)) + np.sqrt(self.p.lambda_w) * rng.standard_normal((D, k))
        return np.column_stack([cg(self.op, b[:, j], x0=W0[:, j], rtol=1e-10, maxiter=10 * D)[0] for j in range(k)])


def gibbs(X, Y, state: EMState, priors: Priors, num_results: int, num_burnin_steps: int = 0, *, num_chains: int = 1,
          seed: int = 0, block_rows: int = 1000, progress=None) -> tuple[dict[str, np.ndarray], pd.DataFrame, EMState]:
    """Run ``num_chains`` chains from ``state`` (the first exactly there, the others with U and V
    jittered by their own seeds). The u_n are drawn ``block_rows`` rows at a time (their precisions
    take block_rows · k² floats).

    Returns ``samples`` — ``W`` (R, C, D, k), ``V`` (R, C, K, k), ``mu`` (R, C, K) with exposure,
    ``coef`` (C, D, K): each chain's mean of W Vᵀ over its draws (rotation-invariant, the
    posterior-mean predictor's matrix) — and a trace (``chain``, ``sweep``, ``kept``,
    ``objective`` — the log posterior at the draw — and ``seconds``), and the last chain's final
    state (to continue it).
    """
    Yd = np.asarray(Y.todense(), dtype=np.float64)
    kappa = Yd - 0.5
    w_sampler = _WSampler(X, priors)
    blocks = _blocks(X.shape[0], block_rows)
    draws = {"W": [], "V": [], "mu": [], "coef": []}
    coef, rows = [], []
    total = num_burnin_steps + num_results
    for chain in range(num_chains):
        rng = np.random.default_rng([seed, chain])
        jitter = 0.0 if chain == 0 else 0.01  # the first chain starts exactly at ``state``
        W, V, mu, cov = state.W.copy(), state.V + jitter * rng.standard_normal(state.V.shape), state.mu, state.covariates
        U = state.U + jitter * rng.standard_normal(state.U.shape)
        chain_draws = {"W": [], "V": [], "mu": [], "coef": []}
        running = np.zeros((X.shape[1], Y.shape[1]))
        sweeps = range(total)
        for sweep in (progress(sweeps) if progress else sweeps):
            t0 = time.perf_counter()
            psi = U @ V.T
            mu_all = cov.probs(slice(None)) if cov is not None else mu
            xi = np.ones_like(psi) if mu_all is None else np.where(Yd > 0, 1.0, rng.random(psi.shape) < exposure_posterior(psi, Yd, mu_all))
            omega = _pg_draws(tf.constant(psi.ravel()), tf.constant(rng.integers(0, 2**31 - 1, 2), tf.int32))
            omega = omega.numpy().reshape(psi.shape)
            a, b = xi * omega, xi * kappa
            prior_mean = np.asarray(X @ W)
            U = np.empty_like(U)
            stat_a, stat_b = 0.0, 0.0
            for r in blocks:  # each block's new u_n, and its statistics added to a running sum
                U[r] = _draw_gaussians(*row_updates(V, a[r], b[r], prior_mean[r], priors.lambda_u), rng)
                part_a, part_b = label_statistics(U[r], a[r], b[r])
                stat_a, stat_b = stat_a + part_a, stat_b + part_b
            V = _draw_gaussians(stat_a + priors.lambda_v * np.eye(V.shape[1]), stat_b, rng)
            W = w_sampler.draw(U, W, rng)
            if mu is not None:
                exposed = xi.sum(axis=0)
                mu = np.clip(rng.beta(priors.alpha + exposed, priors.beta + X.shape[0] - exposed), 1e-12, 1 - 1e-12)
            if cov is not None:  # β | ξ by its own Pólya-Gamma augmentation, ω' ~ PG(1, η)
                eta = cov.logits(slice(None))
                omega_c = _pg_draws(tf.constant(eta.ravel()), tf.constant(rng.integers(0, 2**31 - 1, 2), tf.int32))
                cov = draw_coefficients(cov, xi, omega_c.numpy().reshape(eta.shape), rng)
            kept = sweep >= num_burnin_steps
            if kept:
                if cov is not None:
                    chain_draws["coef"].append(cov.coef)
                chain_draws["W"].append(W)
                chain_draws["V"].append(V)
                chain_draws["mu"].append(mu)
                running += W @ V.T
            seconds = time.perf_counter() - t0
            rows.append(dict(chain=chain, sweep=sweep + 1, kept=kept,
                             objective=log_posterior(X, Y, EMState(W, U, V, mu, cov), priors), seconds=seconds))
        for name in draws:
            draws[name].append(chain_draws[name])
        coef.append(running / max(num_results, 1))
    samples = {"W": np.stack([np.stack(c) for c in draws["W"]], axis=1),
               "V": np.stack([np.stack(c) for c in draws["V"]], axis=1), "coef": np.stack(coef)}
    if state.mu is not None:
        samples["mu"] = np.stack([np.stack(c) for c in draws["mu"]], axis=1)
    if state.covariates is not None:
        samples["beta"] = np.stack([np.stack(c) for c in draws["coef"]], axis=1)
    return samples, pd.DataFrame(rows), EMState(W, U, V, mu, cov)
