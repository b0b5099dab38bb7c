"""Online EM for GenEML (Cappé & Moulines): minibatches of rows, blended sufficient statistics.

At step t a minibatch B of rows gets its u_n from two E-step / mode updates, then the E-step at
them. With ``carry`` the updates start where the row's previous visit left its u_n (an (N, k)
array, as batch EM holds; the u_n then converge over the epochs to batch EM's fixed point); without
it they start at the prior mean x_n W at every visit (local variables: U is never held whole, so
memory is bounded by the minibatch).
The global statistics — Σ_n a_nl u_n u_nᵀ and Σ_n b_nl u_n of each label, Σ_n γ_nl, and Xᵀ U
(D, k) — are blended with the minibatch's, scaled by N/|B|, at step ρ_t = (t + τ)^−κ, κ ∈ (0.5, 1]:

    S ← (1 − ρ_t) S + ρ_t (N/|B|) S_B,

and V, μ and W are set from the blended statistics with the priors' precisions (and the Beta
prior's pseudo-counts) added at every step, never decayed with them: W is the exact ridge solution
(λ_u XᵀX + λ_w I)⁻¹ λ_u (Xᵀ U) — XᵀX is the data's own, not an expectation, so it is never blended
(:class:`mlgp.geneml.ridge.WRidge`: a Cholesky factor computed once for D ≤ 4,000, else
``cg_iterations`` warm-started conjugate-gradient steps per minibatch on the whole data).
One ``epoch`` is a shuffled pass over the rows in ⌈N / batch_size⌉ minibatches of equal size (± 1
row; a small remainder would weigh, scaled by N/|B|, as much as a full minibatch), each minibatch's
rows in increasing order, CSR blocks from :class:`mlgp.data.minibatches.RowMinibatches`. The objective
(:func:`streamed_objective`) is the exact log posterior of :func:`mlgp.geneml.em.log_posterior`,
streamed over the row blocks of :func:`mlgp.blocks.row_blocks`.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from .. import arguments
from ..estimator.budget import Budget
from ..blocks import row_blocks
from ..data.minibatches import RowMinibatches
from ..errors import ArgumentError
from ..estimator.recorder import StepRecorder, checked_validation
from .em import EMState, Priors, _mu_mode, global_log_prior, rows_log_density
from .relevance import relevance_mode
from .ridge import WRidge
from .updates import centred_weights, exposure_posterior, label_statistics, mean_omega, row_updates, solve_spd

__all__ = ["ONLINE_COLUMNS", "check_step_schedule", "online_em", "step_size", "streamed_objective"]


def check_step_schedule(kappa: float, tau: float) -> tuple[float, float]:
    """(κ, τ) checked: 0.5 < κ ≤ 1 (Robbins–Monro) and τ ≥ 0."""
    kappa, tau = arguments.finite_real(kappa, "kappa"), arguments.finite_real(tau, "tau")
    if not 0.5 < kappa <= 1.0:
        raise ArgumentError(f"kappa must lie in (0.5, 1] for the steps to converge; got {kappa}")
    if tau < 0:
        raise ArgumentError(f"tau must be ≥ 0; got {tau}")
    return kappa, tau


def step_size(t: int, kappa: float, tau: float) -> float:
    """ρ_t = (t + τ)^−κ for step t ≥ 1 (at most 1)."""
    return min(1.0, (t + tau) ** -kappa)


def online_em(X, Y, state: EMState, priors: Priors, epochs: int, batch_size: int, *, kappa: float = 0.7,
              tau: float = 1.0, cg_iterations: int = 3, seed: int = 0, block_rows: int | None = None, progress=None,
              callback=None, validation=None, max_seconds: "float | Budget | None" = None, local_iterations: int = 2,
              final_passes: int = 0, carry: bool = False, tol: float | None = None) -> tuple[EMState, pd.DataFrame]:
    """Run ``epochs`` passes of online EM from ``state``'s W, V and μ (its U is not used; the
    returned state's U is ``None``: the u_n are local to each minibatch), or fewer:
    ``max_seconds`` (wall seconds from the call, or a caller's
    :class:`~mlgp.estimator.budget.Budget`) is looked at after every minibatch step and every
    final pass, and the one that reaches it is the last (its epoch is traced, cut short).

    Returns the state and a trace with one row per epoch (:data:`ONLINE_COLUMNS`): ``epoch``,
    ``steps``, ``final``, ``elapsed`` (the budget's seconds at the epoch's last look), ``objective``
    (the log posterior at the epoch's end, at the carried u_n with ``carry``; computed outside the
    timed steps in blocks of ``block_rows``, default ``batch_size``) and ``seconds``, then ``P@k``
    with ``validation`` (``(X_val, Y_val)``, as :func:`mlgp.geneml.em.batch_em`'s), recorded by
    :class:`mlgp.estimator.recorder.StepRecorder`. ``callback(epoch, state, row)`` after each epoch
    and final pass (the signature of every training loop's callback; ``state`` holds W, V, μ, U
    None): it may add columns to ``row``, and a true return stops (the final passes too). The first
    step takes ρ = 1 (its statistics replace the empty ones); later steps follow the schedule.
    ``local_iterations``: E-step / mode updates of each minibatch's u_n. ``final_passes``: after
    the epochs, passes that sum the statistics of every minibatch (ρ = 1 over the whole data;
    without ``carry`` U is still never held whole) and then set V, μ, β and W from them — batch EM
    iterations streamed over minibatches; each adds a trace row (``epoch`` continues, ``final``
    True). ``carry``: start each row's local steps, in the epochs and in the final passes, from its
    u_n of the previous visit (x_n W at the first). ``tol``: end the epochs after the first whose
    objective changed by at most ``tol`` times its size (:func:`mlgp.estimator.recorder.converged`);
    the final passes then run.
    """
    recorder = StepRecorder(Budget.of(max_seconds), ONLINE_COLUMNS, callback=callback, tol=tol, rank=EMState.top_labels,
                            validation=checked_validation(validation, num_features=X.shape[1], num_labels=Y.shape[1]))
    block_rows = batch_size if block_rows is None else block_rows
    kappa, tau = check_step_schedule(kappa, tau)
    carried = np.full((X.shape[0], state.V.shape[1]), np.nan) if carry else None
    ridge = WRidge(X)  # XᵀX is the data's own: only Xᵀ U is blended
    state, t = _epochs(X, Y, state, priors, epochs, batch_size, kappa, tau, ridge, cg_iterations, seed, progress,
                       recorder, local_iterations, carried, block_rows)
    recorder = replace(recorder, tol=None)  # the final passes run to their count (the same rows)
    for _ in range(final_passes if recorder.stopped_by in (None, "tolerance") else 0):
        recorder.begin_step()
        W, V, mu, cov, relevance = _full_pass(X, Y, state, priors, batch_size, ridge, cg_iterations, local_iterations,
                                              carried)
        state = EMState(W, None, V, mu, cov, relevance)
        recorder.end_step()
        epoch = (recorder.rows[-1]["epoch"] if recorder.rows else 0) + 1
        row = recorder.record(state, dict(epoch=epoch, steps=t, final=True,
                                          objective=streamed_objective(X, Y, state, priors, block_rows, carried)))
        if recorder.stop(state, row):
            break
    return state, recorder.trace()


#: The columns of online EM's trace.
ONLINE_COLUMNS = ("epoch", "steps", "final", "elapsed", "objective", "seconds")


def _epochs(X, Y, state: EMState, priors: Priors, epochs: int, batch_size: int, kappa: float, tau: float,
            ridge: WRidge, cg_iterations: int, seed: int, progress, recorder: StepRecorder, local_iterations: int,
            carried: np.ndarray | None, block_rows: int) -> tuple[EMState, int]:
    """The epochs of :func:`online_em`, each traced by ``recorder``: the state after them (U None)
    and the minibatch steps taken."""
    N, k = X.shape[0], state.V.shape[1]
    # equal sizes: a small remainder would weigh, scaled by N/|B|, as much as a full minibatch
    batches = RowMinibatches(X, Y, batch_size, seed, dense=False, equal_sizes=True, sorted_rows=True)
    K = state.V.shape[0]
    stat_a, stat_b, exposed = np.zeros((K, k, k)), np.zeros((K, k)), np.zeros(K)  # the first steps replace them
    W, V, mu, cov = state.W, state.V, state.mu, state.covariates
    relevance = None if priors.relevance is None else (np.ones(k) if state.relevance is None else state.relevance)
    stat_xu = np.zeros_like(W)  # only Xᵀ U is blended
    t = 0
    loop = range(1, epochs + 1)
    for epoch in (progress(loop) if progress else loop):
        recorder.begin_step()
        for batch, X_b, Y_b in batches.epoch():
            t += 1
            rho = 1.0 if t == 1 else step_size(t, kappa, tau)
            scale = N / len(batch)
            current = EMState(W, np.zeros((len(batch), k)), V, mu, cov, relevance)
            start_b = None if carried is None else carried[batch]
            U_b, a_b, b_b, e_b, gamma_b = _local_step(X_b, Y_b, current, priors, batch, local_iterations, start_b)
            if carried is not None:
                carried[batch] = U_b
            stat_a = (1 - rho) * stat_a + rho * scale * a_b
            stat_b = (1 - rho) * stat_b + rho * scale * b_b
            V = solve_spd(stat_a + np.diag(current.label_precisions(priors)), stat_b)
            if mu is not None:
                exposed = (1 - rho) * exposed + rho * scale * e_b
                mu = _mu_mode(exposed, N, priors)
            if cov is not None:  # one Newton step on the minibatch's (scaled) objective, blended
                grad, hess, _ = cov.statistics(batch, gamma_b)
                grad = scale * grad - cov.lambda_coef * cov.coef
                hess = scale * hess + cov.lambda_coef * np.eye(len(cov.coef))
                cov = replace(cov, coef=cov.coef + rho * np.linalg.solve(hess, grad))
            stat_xu = (1 - rho) * stat_xu + rho * scale * np.asarray(X_b.T @ U_b)
            W = ridge.mean(stat_xu, W, priors.lambda_u, priors.lambda_w, cg_iterations)
            if relevance is not None:
                relevance = relevance_mode(V, priors.lambda_v, priors.relevance)
            if recorder.look():
                break
        recorder.end_step()
        current = EMState(W, None, V, mu, cov, relevance)
        row = recorder.record(current, dict(epoch=epoch, steps=t, final=False,
                                            objective=streamed_objective(X, Y, current, priors, block_rows, carried)))
        if recorder.stop(current, row):
            break
    return EMState(W, None, V, mu, cov, relevance), t


def _full_pass(X, Y, state: EMState, priors: Priors, batch_size: int, ridge: WRidge, cg_iterations: int,
               local_iterations: int, carried: np.ndarray | None = None):
    """One batch-EM iteration streamed over minibatches of rows: every minibatch's local step at
    ``state``, the statistics summed (not blended), then V, μ, β, W and the relevances from the sums
    (as batch EM's)."""
    N = X.shape[0]
    stat_a = stat_b = exposed = stat_xu = 0.0
    blocks, gammas = [], []
    for rows, X_b in row_blocks(X, batch_size, dense=False):
        start = None if carried is None else carried[rows]
        U_b, a_b, b_b, e_b, gamma_b = _local_step(X_b, Y[rows], state, priors, rows, local_iterations, start)
        if carried is not None:
            carried[rows] = U_b
        stat_a, stat_b, exposed = stat_a + a_b, stat_b + b_b, exposed + e_b
        stat_xu = stat_xu + np.asarray(X_b.T @ U_b)
        if state.covariates is not None:  # the covariates' Newton steps need every block's γ
            blocks.append(rows)
            gammas.append(gamma_b)
    V = solve_spd(stat_a + np.diag(state.label_precisions(priors)), stat_b)
    mu = None if state.mu is None else _mu_mode(exposed, N, priors)
    cov = None if state.covariates is None else state.covariates.newton(blocks, gammas)
    W = ridge.mean(stat_xu, state.W, priors.lambda_u, priors.lambda_w, cg_iterations)
    relevance = None if state.relevance is None else relevance_mode(V, priors.lambda_v, priors.relevance)
    return W, V, mu, cov, relevance


def _local_step(X_b, Y_b, state: EMState, priors: Priors, rows, iterations: int = 2, start=None):
    """A minibatch's (rows ``rows``; CSR X_b (B, D) and 0/1 Y_b (B, K)) u_n after ``iterations``
    E-step / mode updates given (W, V, μ) from ``start`` (B, k) (None, or a row of NaN: the prior
    mean x_n W), and its statistics at the last E-step: (U_b (B, k), Σ a u uᵀ (K, k, k), Σ b u
    (K, k), Σ γ (K,), γ (B, K))."""
    prior_mean = np.asarray(X_b @ state.W)
    mu_b = state.exposure(rows)
    U_b = prior_mean if start is None else np.where(np.isnan(start), prior_mean, start)  # NaN: not yet visited
    for _ in range(iterations):  # E-step at the prior mean, then at each mode
        psi = U_b @ state.V.T
        gamma = exposure_posterior(psi, Y_b, mu_b)
        a, b = gamma * mean_omega(psi), centred_weights(gamma, Y_b)
        U_b = solve_spd(*row_updates(state.V, a, b, prior_mean, priors.lambda_u))
    stat_a, stat_b = label_statistics(U_b, a, b)
    return U_b, stat_a, stat_b, gamma.sum(axis=0), gamma


def streamed_objective(X, Y, state: EMState, priors: Priors, block_rows: int = 1000,
                       carried: np.ndarray | None = None) -> float:
    """The log posterior (:func:`mlgp.geneml.em.log_posterior`, exact) at (W, V, μ) and, one block
    of rows at a time, each u_n: its ``carried`` value (N, k) where the row has one (as batch EM
    evaluates at the U it holds), else from the local step (:func:`_local_step`) at the prior mean
    (U then never held whole)."""
    total = 0.0
    for rows, X_b in row_blocks(X, block_rows, dense=False):
        Y_b = Y[rows]
        U_b = None if carried is None else carried[rows]
        if U_b is None or np.isnan(U_b).any():  # rows without a carried u_n (NaN: not yet visited)
            local = _local_step(X_b, Y_b, state, priors, rows)[0]
            U_b = local if U_b is None else np.where(np.isnan(U_b), local, U_b)
        total += rows_log_density(X_b, Y_b, U_b, state.W, state.V, state.exposure(rows), priors.lambda_u)
    return total + global_log_prior(state, priors)  # the shared parameters' prior terms, once
