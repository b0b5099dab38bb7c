"""GenEML's exposure from covariates: μ_nl = σ(c_nlᵀ β) with c_nl = (f_l, g_n).

The covariates of entry (n, l) are a label part f_l (C_F numbers, the same for every point) and a
point part g_n (C_G numbers, the same for every label), so η = F β_F ⊕ G β_G never needs the
(N, K, C) array: :class:`CovariateExposure` holds F (K, C_F), G (N, C_G) and β — the same (F, G)
that :func:`mlgp.geneml.model.geneml_joint` takes as ``covariates``. The default
covariates (:func:`default_covariates`) are an intercept and the standardised log frequency of
each label, and the standardised log(1 + number of labels) of each training point; a user may add
per-label features. β has the prior N(0, I/λ_β). Its EM step maximises
Σ_nl [γ_nl η_nl − log(1 + e^{η_nl})] − λ_β ‖β‖² / 2 by Newton steps with step halving, so the step
never lowers it; the Gibbs sampler draws it from its Pólya-Gamma conditional
(:func:`draw_coefficients`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy.special import expit

from .updates import normal_log_density

__all__ = ["CovariateExposure", "default_covariates", "draw_coefficients"]


def _standardised(v: np.ndarray) -> np.ndarray:
    sd = v.std()
    return (v - v.mean()) / (sd if sd > 0 else 1.0)


def default_covariates(Y, label_features: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """F (K, 2 + C) = [1, standardised log(count_l + ½), label_features] and G (N, 1) =
    [standardised log(1 + labels of n)] from the training labels Y (N, K) CSR."""
    counts = np.asarray(Y.sum(axis=0), dtype=np.float64).ravel()
    per_point = np.diff(Y.indptr).astype(np.float64)
    F = np.column_stack([np.ones_like(counts), _standardised(np.log(counts + 0.5))])
    if label_features is not None:
        F = np.column_stack([F, label_features])
    return F, _standardised(np.log1p(per_point))[:, None]


@dataclass(frozen=True)
class CovariateExposure:
    """μ_nl = σ(F_l β_F + G_n β_G) (module docstring); ``coef`` = (β_F, β_G)."""

    F: np.ndarray
    G: np.ndarray
    coef: np.ndarray
    lambda_coef: float = 1.0

    @property
    def split(self) -> int:
        return self.F.shape[1]

    def logits(self, rows: slice) -> np.ndarray:
        """η of the rows ``rows`` (B, K)."""
        return (self.F @ self.coef[: self.split])[None, :] + (self.G[rows] @ self.coef[self.split:])[:, None]

    def probs(self, rows: slice) -> np.ndarray:
        """μ of the rows ``rows`` (B, K), kept inside [1e-12, 1 − 1e-12] like the global μ."""
        return np.clip(expit(self.logits(rows)), 1e-12, 1 - 1e-12)

    def log_prior(self) -> float:
        """log p(β) = Σ log N(β_c; 0, 1/λ_β), exactly."""
        return normal_log_density(self.coef, self.lambda_coef)

    def _penalty(self) -> float:
        """−λ_β ‖β‖² / 2: log p(β) without its constant (what the Newton steps compare)."""
        return -0.5 * self.lambda_coef * float(self.coef @ self.coef)

    def statistics(self, rows: slice, target: np.ndarray, weight: np.ndarray | None = None):
        """Over a block: Σ (target − σ(η)) c, Σ w c cᵀ (w = σ(1 − σ), or ``weight``) and
        Σ [target η − log(1 + e^η)] — the gradient, the negative Hessian and the value of the
        soft-target log-likelihood at ``coef``."""
        eta = self.logits(rows)
        p = expit(eta)
        r = target - p
        w = p * (1 - p) if weight is None else weight
        G = self.G[rows]
        grad = np.concatenate([self.F.T @ r.sum(axis=0), G.T @ r.sum(axis=1)])
        hess_ff = (self.F * w.sum(axis=0)[:, None]).T @ self.F
        hess_gg = (G * w.sum(axis=1)[:, None]).T @ G
        hess_fg = self.F.T @ (w.T @ G)
        hess = np.block([[hess_ff, hess_fg], [hess_fg.T, hess_gg]])
        value = float(np.sum(target * eta - np.logaddexp(0.0, eta)))
        return grad, hess, value

    def newton(self, blocks: list[slice], gamma: list[np.ndarray], steps: int = 5) -> "CovariateExposure":
        """Up to ``steps`` Newton steps on the soft-target objective with the prior, each halved
        until the objective does not fall (never below the starting value)."""
        current = self
        for _ in range(steps):
            grad, hess, value = current._totals(blocks, gamma)
            grad = grad - self.lambda_coef * current.coef
            hess = hess + self.lambda_coef * np.eye(len(current.coef))
            value = value + current._penalty()
            step = np.linalg.solve(hess, grad)
            for _ in range(30):
                trial = replace(current, coef=current.coef + step)
                if trial._totals(blocks, gamma)[2] + trial._penalty() >= value:
                    current = trial
                    break
                step = step / 2
            else:
                break
            if np.max(np.abs(step)) < 1e-10:
                break
        return current

    def _totals(self, blocks, gamma):
        parts = [self.statistics(s, g) for s, g in zip(blocks, gamma)]
        return sum(p[0] for p in parts), sum(p[1] for p in parts), sum(p[2] for p in parts)


def draw_coefficients(exposure: CovariateExposure, xi: np.ndarray, omega: np.ndarray,
                      rng: np.random.Generator) -> CovariateExposure:
    """β | ξ, ω' from its Gaussian conditional: precision Σ ω' c cᵀ + λ_β I, shift Σ (ξ − ½) c."""
    rows = slice(None)
    G, F = exposure.G, exposure.F
    kappa = xi - 0.5
    shift = np.concatenate([F.T @ kappa.sum(axis=0), G.T @ kappa.sum(axis=1)])
    _, hess, _ = exposure.statistics(rows, xi, weight=omega)
    precision = hess + exposure.lambda_coef * np.eye(len(exposure.coef))
    L = np.linalg.cholesky(precision)
    mean = np.linalg.solve(L.T, np.linalg.solve(L, shift))
    return replace(exposure, coef=mean + np.linalg.solve(L.T, rng.standard_normal(len(shift))))

