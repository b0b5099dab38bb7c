"""Batch EM for GenEML: the MAP of (W, U, V, μ) under Pólya-Gamma augmentation.

Each iteration takes the E-step at the current parameters — E[ω] = tanh(ψ/2)/(2ψ) and γ = E[ξ] for
the zero entries (:mod:`mlgp.geneml.updates`) — and then maximises the expected complete log joint
Q one block of parameters at a time with those expectations held: every u_n exactly, every v_l
exactly (from statistics summed over row blocks), W by a few conjugate-gradient steps on its ridge
regression (warm-started, so they never increase its quadratic), and μ_l at its Beta-posterior
mode. With ``m_step="cg"`` the u_n and v_l take the same few warm-started conjugate-gradient steps
on their systems (:mod:`mlgp.geneml.cg`) instead of exact solves: each step costs two (N, K, k)
matrix products in place of N K k² / 2 multiplications, and keeps the E-step's weights (N, K) for
V's steps (in float32). :func:`choose_m_step` says which to use. Q minorises the log posterior
and is tight at the current parameters, so the log posterior
(:func:`log_posterior`, the trace's ``objective``) never decreases. The E-step and the statistics
run over the row blocks of :func:`mlgp.blocks.row_blocks` (CSR features, CSR labels) through
joblib, in block order, so the fit is the same for any ``n_jobs`` or joblib backend (a Dask cluster
through ``joblib.parallel_backend("dask")``).

:func:`log_posterior` is exactly log p(W, U, V, μ or β, Y) — the log joint of
:func:`mlgp.geneml.model.geneml_joint` with ξ summed out, every normalising constant included — so
the NumPy inference and the TFP model are one definition.
"""

from __future__ import annotations

from dataclasses import dataclass

from typing import NamedTuple

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from scipy.special import betaln

from ..errors import ArgumentError
from ..estimator.recorder import StepRecorder, checked_validation, converged
from ..estimator.budget import Budget
from ..blocks import row_blocks
from ..parallel import scatter_once
from .exposure import CovariateExposure
from .cg import label_residual, label_step, row_step
from .relevance import log_relevance_prior, relevance_mode, scaled
from .ridge import WRidge
from .updates import (centred_weights, exposure_posterior, label_statistics, log_likelihood, mean_omega,
                      normal_log_density, row_updates, solve_spd)

__all__ = ["CG_MAX_ENTRIES", "CG_MIN_COMPONENTS", "EM_COLUMNS", "EMState", "M_STEPS", "Priors", "batch_em",
           "choose_m_step", "converged", "global_log_prior", "log_posterior", "rows_log_density"]

#: The M-steps of U and V: exact solves, or a few conjugate-gradient steps.
M_STEPS = ("exact", "cg")
#: ``m_step="auto"`` takes CG steps from this many latent dimensions on (below it the exact
#: solves cost fewer multiplications: K k² / 2 per row against about 4 K k per CG step) ...
CG_MIN_COMPONENTS = 32
#: ... and when the E-step's weights, N × K floats, fit in 1 GiB.
CG_MAX_ENTRIES = 2 ** 27


def choose_m_step(m_step: str, n_components: int, N: int, K: int) -> str:
    """``"exact"`` or ``"cg"``: ``m_step`` itself, or for ``"auto"`` CG when ``n_components`` ≥
    :data:`CG_MIN_COMPONENTS` and N K ≤ :data:`CG_MAX_ENTRIES`."""
    if m_step != "auto":
        return m_step
    return "cg" if n_components >= CG_MIN_COMPONENTS and N * K <= CG_MAX_ENTRIES else "exact"


@dataclass
class EMState:
    """GenEML's parameters: W (D, k), U (N, k), V (K, k), and the exposure: μ (K,) for global
    exposure, or ``covariates`` (:class:`~mlgp.geneml.exposure.CovariateExposure`), or neither
    (every label exposed)."""

    W: np.ndarray
    U: np.ndarray
    V: np.ndarray
    mu: np.ndarray | None
    covariates: CovariateExposure | None = None
    relevance: np.ndarray | None = None

    def label_precisions(self, priors: "Priors") -> np.ndarray:
        """The prior precision of each column of V (k,): λ_v, times the relevances r with ARD
        (:mod:`mlgp.geneml.relevance`)."""
        return np.broadcast_to(scaled(priors.lambda_v, self.relevance), self.V.shape[1:]).astype(np.float64)

    def exposure(self, rows) -> np.ndarray | None:
        """μ of the rows ``rows``: (K,) (global), (B, K) (covariates) or None."""
        return self.covariates.probs(rows) if self.covariates is not None else self.mu

    def top_labels(self, X, k: int):
        """The :class:`~mlgp.scores.TopK` of the ``k`` best labels of each row of CSR ``X`` (B, D) by
        ψ = (x W) Vᵀ: how a validation pair's rows are ranked after each step."""
        from ..scores import topk

        return topk(np.asarray(X @ self.W) @ self.V.T, k)


@dataclass(frozen=True)
class Priors:
    """Prior precisions, the Beta prior of μ, and the Gamma(shape, rate) hyperprior of the latent
    dimensions' relevances (None: no ARD; :mod:`mlgp.geneml.relevance`)."""

    lambda_u: float = 1.0
    lambda_v: float = 1.0
    lambda_w: float = 1.0
    alpha: float = 1.0
    beta: float = 1.0
    relevance: tuple[float, float] | None = None


class _Block(NamedTuple):
    """One row block's E-step and M-step parts: its rows, new u_n (B, k), Σ a u uᵀ (K, k, k)
    (None with CG steps), Σ b u (K, k) (with CG steps Σ (b − a uᵀv) u, its part of V's residual),
    Σ γ (K,), γ (B, K) when the covariates' step needs it, and the weights a (B, K, float32) with
    CG steps."""

    rows: slice
    U: np.ndarray
    stat_a: np.ndarray | None
    stat_b: np.ndarray
    exposed: np.ndarray
    gamma: np.ndarray | None
    weights: np.ndarray | None = None


def batch_em(X, Y, state: EMState, priors: Priors, iterations: int, *, cg_iterations: int = 5,
             block_rows: int = 1000, n_jobs: int | None = 1, progress=None, callback=None, validation=None,
             max_seconds: "float | Budget | None" = None, tol: float | None = None,
             m_step: str = "exact") -> tuple[EMState, pd.DataFrame]:
    """Run ``iterations`` EM iterations from ``state`` on CSR X (N, D) and CSR 0/1 Y (N, K), or
    fewer: ``max_seconds`` (wall seconds from the call, or a caller's
    :class:`~mlgp.estimator.budget.Budget`) is looked at after every iteration's E- and M-steps,
    and the iteration that reaches it is the last.

    Returns the final state and a trace (:data:`EM_COLUMNS`: ``iteration``, ``elapsed`` — the
    budget's seconds at the iteration's look — ``objective`` — the log posterior at the end of the
    iteration — and ``seconds``, the iteration's E- and M-steps without the objective's evaluation;
    then ``P@k`` with ``validation``), recorded by :class:`mlgp.estimator.recorder.StepRecorder`.
    ``progress(iterable)`` wraps the iteration loop. ``validation``: ``(X_val, Y_val)`` (checked by
    :func:`mlgp.estimator.recorder.checked_validation`) whose P@1/3/5 at ψ = (x W) Vᵀ the trace
    records after every iteration. ``callback(iteration, state, row)`` runs after each iteration
    (the signature of every training loop's callback); it may add columns to ``row``, and a true
    return stops. ``tol``: stop after the first iteration whose objective changed by at most ``tol``
    times its size (:func:`converged`). ``m_step``: ``"exact"`` solves or ``"cg"``,
    ``cg_iterations`` CG steps for U and V (module docstring; W always takes ``cg_iterations`` CG
    steps).
    """
    if m_step not in M_STEPS:
        raise ArgumentError(f"m_step must be one of {M_STEPS}, not {m_step!r}")
    recorder = StepRecorder(Budget.of(max_seconds), EM_COLUMNS, callback=callback, tol=tol, rank=EMState.top_labels,
                            validation=checked_validation(validation, num_features=X.shape[1], num_labels=Y.shape[1]))
    blocks = _blocks(X, Y, block_rows)  # the same objects every iteration: on Dask they are sent once
    with scatter_once([part for _, X_b, Y_b in blocks for part in (X_b, Y_b)]) as sent:  # the parts or futures
        blocks = [(s, sent[2 * b], sent[2 * b + 1]) for b, (s, _, _) in enumerate(blocks)]
        state = _batch_em(X, blocks, state, priors, iterations, cg_iterations, n_jobs, progress, recorder, m_step)
    return state, recorder.trace()


#: The columns of batch EM's trace.
EM_COLUMNS = ("iteration", "elapsed", "objective", "seconds")


def _blocks(X, Y, block_rows: int) -> list:
    """``[(rows, X_b, Y_b), ...]``: the row blocks of CSR X and Y (:func:`mlgp.blocks.row_blocks`)."""
    return [(s, X_b, Y[s]) for s, X_b in row_blocks(X, block_rows, dense=False)]


def _batch_em(X, blocks: list, state: EMState, priors: Priors, iterations: int, cg_iterations: int, n_jobs,
              progress, recorder: StepRecorder, m_step="exact") -> EMState:
    """:func:`batch_em` over precomputed ``blocks`` ``(rows, X_b, Y_b)``, whose parts may be Dask
    futures (:func:`mlgp.parallel.scatter_once`): they go to the joblib tasks only."""
    N = X.shape[0]
    ridge = WRidge(X, factorise=False)  # a few warm-started CG steps per iteration, as the M-step needs
    loop = range(1, iterations + 1)
    for it in (progress(loop) if progress else loop):
        recorder.begin_step()
        cg_steps = cg_iterations if m_step == "cg" else None
        results: list[_Block] = Parallel(n_jobs=n_jobs)(
            delayed(_em_block)(s, X_b, Y_b, state.U[s], state.W, state.V, state.exposure(s),
                               state.covariates is not None, priors, cg_steps)
            for s, X_b, Y_b in blocks)
        U = np.vstack([r.U for r in results])
        stat_b = sum(r.stat_b for r in results)
        exposed = sum(r.exposed for r in results)
        if m_step == "cg":
            V = label_step(state.V, [(r.U, r.weights) for r in results], stat_b, state.label_precisions(priors),
                           cg_iterations)
        else:
            V = solve_spd(sum(r.stat_a for r in results) + np.diag(state.label_precisions(priors)), stat_b)
        W = ridge.mean(np.asarray(X.T @ U), state.W, priors.lambda_u, priors.lambda_w, cg_iterations)
        mu = None if state.mu is None else _mu_mode(exposed, N, priors)
        covariates = None if state.covariates is None else \
            state.covariates.newton([r.rows for r in results], [r.gamma for r in results])
        relevance = None if state.relevance is None else relevance_mode(V, priors.lambda_v, priors.relevance)
        state = EMState(W, U, V, mu, covariates, relevance)
        recorder.end_step()  # the iteration's steps, not the objective's evaluation; the budget's look
        row = recorder.record(state, dict(iteration=it, objective=_log_posterior(blocks, state, priors, n_jobs)))
        if recorder.stop(state, row):
            break
    return state


def _em_block(rows: slice, X_b, Y_b, U_b, W, V, mu_b, keep_gamma: bool, priors: Priors,
              cg_steps: int | None = None) -> _Block:
    """The E-step on the block ``rows`` (CSR X_b (B, D) and Y_b (B, K)) at (U_b, W, V, its exposure
    ``mu_b``), its new u_n, its v / μ statistics at them, and its E[ξ] when ``keep_gamma`` (for the
    covariates' step). With ``cg_steps`` the u_n take that many CG steps from U_b, and the block
    keeps its weights a (B, K, in float32) for V's CG steps and its part of V's residual
    (:func:`mlgp.geneml.cg.label_residual`) in place of Σ a u uᵀ and Σ b u."""
    psi = U_b @ V.T
    gamma = exposure_posterior(psi, Y_b, mu_b)
    a, b = mean_omega(psi), centred_weights(gamma, Y_b)
    a *= gamma  # in place: the same products as γ E[ω]
    exposed, gamma = gamma.sum(axis=0), gamma if keep_gamma else None
    if cg_steps is not None:
        a32 = a.astype(np.float32)
        U_new = row_step(U_b, V, a, b, np.asarray(X_b @ W), priors.lambda_u, cg_steps, psi, a32)
        return _Block(rows, U_new, None, label_residual(U_new, V, a, b), exposed, gamma, a32)
    precision, shift = row_updates(V, a, b, np.asarray(X_b @ W), priors.lambda_u)
    U_new = solve_spd(precision, shift)
    stat_a, stat_b = label_statistics(U_new, a, b)
    return _Block(rows, U_new, stat_a, stat_b, exposed, gamma)


def _mu_mode(exposed: np.ndarray, N: int, priors: Priors) -> np.ndarray:
    """The mode of μ_l's Beta posterior given the expected exposures (clipped into (0, 1))."""
    mode = (exposed + priors.alpha - 1.0) / (N + priors.alpha + priors.beta - 2.0)
    return np.clip(mode, 1e-9, 1.0 - 1e-9)


def log_posterior(X, Y, state: EMState, priors: Priors, block_rows: int = 1000, n_jobs: int | None = 1) -> float:
    """log p(Y | U, V, μ) + log p(U | W) + log p(V) + log p(W) + log p(μ) (or log p(β) with
    covariates), exactly: the log joint of :func:`mlgp.geneml.model.geneml_joint` at (W, U, V,
    μ or β, Y) with ξ summed out. CSR X (N, D) and 0/1 Y (N, K), in blocks of ``block_rows`` rows."""
    return _log_posterior(_blocks(X, Y, block_rows), state, priors, n_jobs)


def _log_posterior(blocks: list, state: EMState, priors: Priors, n_jobs) -> float:
    """:func:`log_posterior` over precomputed ``blocks``."""
    parts = Parallel(n_jobs=n_jobs)(delayed(rows_log_density)(X_b, Y_b, state.U[s], state.W, state.V,
                                                              state.exposure(s), priors.lambda_u)
                                    for s, X_b, Y_b in blocks)
    return float(sum(parts)) + global_log_prior(state, priors)


def rows_log_density(X_b, Y_b, U_b: np.ndarray, W: np.ndarray, V: np.ndarray, mu_b: np.ndarray | None,
                     lambda_u: float) -> float:
    """log p(Y_b | U_b, V, μ_b) + log p(U_b | W), exactly, of a block of rows: CSR X_b (B, D) and
    0/1 Y_b (B, K), U_b (B, k), W (D, k), V (K, k), μ_b (K,) or (B, K) or None."""
    value = log_likelihood(U_b @ V.T, Y_b, mu_b)
    return value + normal_log_density(U_b - np.asarray(X_b @ W), lambda_u)


def global_log_prior(state: EMState, priors: Priors) -> float:
    """log p(V) + log p(W) + log p(μ) (or log p(β)) + log p(r), exactly: the prior terms of the
    parameters shared by every row (V ~ N(0, I/λ_v), W ~ N(0, I/λ_w), μ_l ~ Beta(α, β),
    β ~ N(0, I/λ_β); with ARD V_j ~ N(0, I/(λ_v r_j)) and r_j ~ Gamma(a, b))."""
    value = normal_log_density(state.V, state.label_precisions(priors)) + normal_log_density(state.W, priors.lambda_w)
    value += log_relevance_prior(state.relevance, priors.relevance)
    if state.mu is not None:
        a, b = priors.alpha, priors.beta
        value += float(np.sum((a - 1.0) * np.log(state.mu) + (b - 1.0) * np.log1p(-state.mu))
                       - state.mu.size * betaln(a, b))
    if state.covariates is not None:
        value += state.covariates.log_prior()
    return value
