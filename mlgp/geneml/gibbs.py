"""A Gibbs sampler for GenEML with Pólya-Gamma augmentation, over the shared row blocks.

One sweep of a chain draws, in turn:

1. for each block of rows (:func:`mlgp.blocks.row_blocks`, CSR features; Y stays sparse): ξ_nl for
   the zero labels from Bernoulli(γ_nl) (exposure models only; ξ = 1 where y = 1), ω_nl ~ PG(1, ψ_nl)
   (:class:`mlgp.distributions.PolyaGamma`), every u_n ~ N(Λ_n⁻¹ h_n, Λ_n⁻¹) with weights a = ξ ω and
   b = ξ κ (:mod:`mlgp.geneml.updates`), and the block's part of V's statistics;
2. every v_l ~ N(Λ_l⁻¹ h_l, Λ_l⁻¹) at the new U (prior precision λ_vj per latent dimension);
3. W | U and its mean E[W | U] (:class:`mlgp.geneml.ridge.WRidge`);
4. μ_l ~ Beta(α + Σ_n ξ_nl, β + N − Σ_n ξ_nl), or, with covariate exposure, ω'_nl ~ PG(1, η_nl) and
   β from its Gaussian conditional (:func:`mlgp.geneml.exposure.draw_coefficients`);
5. with ``scale_move``, V → t V from t's conditional with ξ and ω summed out
   (:func:`mlgp.geneml.draws.scale_labels`);
6. with ``precision_prior = (a, b)``, λ_u, λ_w and each λ_vj from their Gamma conditionals; with
   ARD (``priors.relevance``), the latent dimensions' relevances r (:mod:`mlgp.geneml.relevance`),
   which scale the precisions of V's columns (the two are exclusive).

The posterior-mean predictor's matrix is the Rao-Blackwellised Monte Carlo average of
E[W Vᵀ | U, ω, ξ] = E[W | U] E[V | U, ω, ξ]ᵀ over the kept draws (``coef``, rotation-invariant): given
(U, ω, ξ), W depends on U alone and V on (U, ω, ξ), so the two are independent and the product of
the conditional means the sweep computes anyway is the conditional mean of the product. :func:`gibbs` runs ``num_chains``
chains (through joblib when ``n_jobs`` asks; each chain has its own seed, so the draws are the same
for any ``n_jobs``) and returns draws with a chain dimension, as ``tfp.mcmc`` returns them —
(num_results, num_chains, …) — with a trace of the log posterior per sweep. A non-finite draw stops
the chain with :class:`GibbsDivergedError`, which names the sweep and the block and keeps the draws
made so far.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from scipy.special import expit

from ..estimator.recorder import StepRecorder
from ..estimator.budget import Budget
from ..blocks import row_blocks
from ..errors import ArgumentError, TrainingDivergedError
from .draws import balance_columns, draw_exposure, draw_gaussians, draw_precisions, scale_labels
from .em import EMState, Priors, log_posterior
from .exposure import draw_coefficients
from .relevance import draw_relevance, scaled
from .ridge import WRidge
from .updates import centred_weights, exposure_posterior, label_statistics, log_likelihood, positives, row_updates

__all__ = ["GIBBS_COLUMNS", "PSI_CACHE_BYTES", "GibbsDivergedError", "GibbsOptions", "gibbs"]

#: Most bytes of ψ = U Vᵀ (N, K) the scale move holds whole while it evaluates the likelihood at
#: several scales; above it each evaluation forms ψ again, one block of rows at a time.
PSI_CACHE_BYTES = 2 ** 27


class GibbsDivergedError(TrainingDivergedError):
    """A chain drew a non-finite value; ``samples`` and ``trace`` hold what was drawn before it."""

    def __init__(self, message: str, samples: dict | None = None, trace: pd.DataFrame | None = None) -> None:
        super().__init__(message)
        self.samples, self.trace = samples, trace

    def __reduce__(self):  # keep the partial draws across joblib's process boundary
        return type(self), (str(self), self.samples, self.trace)


@dataclass(frozen=True)
class GibbsOptions:
    """How the chains run: kept draws and burn-in per chain, rows per block, the scale move, the
    Gamma(a, b) hyperprior of the precisions (None: fixed at ``Priors``), the jitter of the starts
    of chains after the first, the balance move (:func:`mlgp.geneml.draws.balance_columns`) and
    the exposure drawn with ξ summed out (:func:`mlgp.geneml.draws.draw_exposure`; global
    exposure only)."""

    num_results: int
    num_burnin_steps: int = 0
    block_rows: int = 1000
    scale_move: bool = True
    precision_prior: tuple[float, float] | None = None
    jitter: float = 0.01
    balance_move: bool = False
    collapse_exposure: bool = False


@dataclass
class _Chain:
    """One chain's draws so far."""

    V: list = field(default_factory=list)
    mu: list = field(default_factory=list)
    beta: list = field(default_factory=list)
    precisions: list = field(default_factory=list)
    relevance: list = field(default_factory=list)
    watched: list = field(default_factory=list)
    rows: list = field(default_factory=list)
    coef: np.ndarray | None = None
    kept: int = 0


def _pg_draws(psi: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """ω ~ PG(1, ψ) elementwise, seeded from ``rng``."""
    from ._polya_gamma import polya_gamma_draws  # TensorFlow only when a chain runs

    return polya_gamma_draws(psi, rng)


def gibbs(X, Y, state: EMState, priors: Priors, options: GibbsOptions, *, num_chains: int = 1, seed: int = 0,
          n_jobs: int | None = None, watch=None, progress=None, budget: Budget | None = None,
          callback=None) -> tuple[dict[str, np.ndarray], pd.DataFrame, EMState]:
    """Run ``num_chains`` chains from ``state`` (the first exactly there, the others with U and V
    jittered by their own seeds) on CSR X (N, D) and CSR 0/1 Y (N, K). The precisions start at
    ``priors``' (``lambda_v`` a number or one per latent dimension, (k,)).

    ``watch``: CSR features (P, D) whose Rao-Blackwellised predictions x E[W | U] E[V | U, ω, ξ]ᵀ are kept per
    draw (``samples["watched"]`` (R, C, P, K), for effective sample sizes and R-hat).
    ``progress(iterable)`` wraps each chain's sweeps (sequential chains only). ``budget``: a
    :class:`~mlgp.estimator.budget.Budget` looked at after every sweep; the chains then run one
    after another, the sweep that spends it is the chain's last (kept as a draw when the chain has
    none yet), no further chain starts, and a chain cut short is dropped unless it is the first
    (the chains' draws must line up). ``callback(sweep, state, row)`` after every sweep (the
    signature of every training loop's callback: ``state`` the sweep's draw, ``row`` its trace row,
    to which it may add columns); the chains then run one after another too, and a true return ends
    the sampler as a spent budget does.

    Returns ``samples`` — ``V`` (R, C, K, k), ``mu`` (R, C, K) with global exposure, ``beta``
    (R, C, C_β) with covariates, ``precisions`` (R, C, 2 + k) (λ_u, λ_w, λ_v) with a hyperprior,
    ``watched``, and ``coef`` (C, D, K): each chain's mean of E[W | U] E[V | U, ω, ξ]ᵀ — a trace
    (:data:`GIBBS_COLUMNS`: ``chain``, ``sweep``, ``kept``, ``objective`` — the log posterior at the
    draw given the precisions — ``tau`` (the scale move's log t), ``seconds`` and ``elapsed``, NaN
    without a budget), and the last chain's final state.
    """
    if options.precision_prior is not None and priors.relevance is not None:
        raise ArgumentError("precision_prior and the relevance prior (ARD) both set the precisions of V's columns: "
                            "choose one")
    chains = range(num_chains)
    if budget is not None or callback is not None:
        results = []
        for c in chains:
            draws, last, stopped = _run_chain(X, Y, state, priors, options, seed, c, watch, progress, budget, callback)
            if stopped and c > 0 and draws.kept < options.num_results:
                break
            results.append((draws, last))
            if stopped:
                break
    elif n_jobs is None or n_jobs == 1 or num_chains == 1:
        results = [_run_chain(X, Y, state, priors, options, seed, c, watch, progress)[:2] for c in chains]
    else:
        results = [r[:2] for r in Parallel(n_jobs=n_jobs)(
            delayed(_run_chain)(X, Y, state, priors, options, seed, c, watch, None) for c in chains)]
    samples = _stack([r[0] for r in results])
    trace = pd.DataFrame([row for r in results for row in r[0].rows])
    return samples, trace, results[-1][1]


#: The columns of the Gibbs sampler's trace.
GIBBS_COLUMNS = ("chain", "sweep", "kept", "objective", "tau", "seconds", "elapsed")


def _stack(chains: list[_Chain]) -> dict[str, np.ndarray]:
    """The chains' draws as (R, C, …) arrays (names with no draws left out)."""
    samples = {"coef": np.stack([c.coef for c in chains])}
    for name in ("V", "mu", "beta", "precisions", "relevance", "watched"):
        draws = [getattr(c, name) for c in chains]
        if all(len(d) for d in draws):
            samples[name] = np.stack([np.stack(d) for d in draws], axis=1)
    return samples


def _run_chain(X, Y, state: EMState, priors: Priors, options: GibbsOptions, seed: int, chain: int, watch,
               progress, budget: Budget | None = None, callback=None) -> tuple[_Chain, EMState, bool]:
    """One chain's sweeps, each recorded (:class:`mlgp.estimator.recorder.StepRecorder`): its draws,
    its last state, and whether it stopped early (the budget spent, the callback asking)."""
    rng = np.random.default_rng([seed, chain])
    jitter = 0.0 if chain == 0 else options.jitter  # the first chain starts exactly at ``state``
    N, D = X.shape
    K, k = state.V.shape
    W, mu, cov = state.W.copy(), state.mu, state.covariates
    U = state.U + jitter * rng.standard_normal(state.U.shape)
    V = state.V + jitter * rng.standard_normal(state.V.shape)
    lambda_u, lambda_w = priors.lambda_u, priors.lambda_w
    lambda_v = np.array(np.broadcast_to(priors.lambda_v, (k,)), dtype=np.float64)  # one per latent dimension
    relevance = None if priors.relevance is None else \
        (np.ones(k) if state.relevance is None else np.array(state.relevance, dtype=np.float64))
    w_sampler = WRidge(X)
    draws = _Chain(coef=np.zeros((D, K)))
    recorder = StepRecorder(budget, GIBBS_COLUMNS, step_column="sweep", callback=callback, rows=draws.rows)
    sweeps = range(options.num_burnin_steps + options.num_results)
    for sweep in (progress(sweeps) if progress else sweeps):
        recorder.begin_step()
        stat_a, stat_b, exposed, xi_blocks = 0.0, 0.0, 0.0, []
        for rows, X_b in row_blocks(X, options.block_rows, dense=False):
            Y_b = Y[rows]
            psi = U[rows] @ V.T
            mu_b = cov.probs(rows) if cov is not None else mu
            xi = np.ones_like(psi) if mu_b is None else \
                (rng.random(psi.shape) < exposure_posterior(psi, Y_b, mu_b)).astype(np.float64)
            a, b = xi * _pg_draws(psi, rng), centred_weights(xi, Y_b)
            U[rows] = draw_gaussians(*row_updates(V, a, b, np.asarray(X_b @ W), lambda_u), rng)
            _check(U[rows], "u_n", sweep, chain, rows, draws, W, U, V, mu, cov)
            part_a, part_b = label_statistics(U[rows], a, b)
            stat_a, stat_b, exposed = stat_a + part_a, stat_b + part_b, exposed + xi.sum(axis=0)
            if cov is not None:
                xi_blocks.append(xi)
        V_mean, V = draw_gaussians(stat_a + np.diag(scaled(lambda_v, relevance)), stat_b, rng, with_mean=True)
        _check(V, "V", sweep, chain, None, draws, W, U, V, mu, cov)
        W, W_mean = w_sampler.draw(U, W, lambda_u, lambda_w, rng)
        _check(W, "W", sweep, chain, None, draws, W, U, V, mu, cov)
        if mu is not None and options.collapse_exposure:
            mu = draw_exposure(_zero_probabilities(U, V, Y, options.block_rows), _positives(Y), mu, priors.alpha,
                               priors.beta, rng)
        elif mu is not None:
            mu = np.clip(rng.beta(priors.alpha + exposed, priors.beta + N - exposed), 1e-12, 1 - 1e-12)
        if cov is not None:  # β | ξ by its own Pólya-Gamma augmentation, ω' ~ PG(1, η)
            cov = draw_coefficients(cov, np.vstack(xi_blocks), _pg_draws(cov.logits(slice(None)), rng), rng)
        tau = 0.0
        if options.balance_move:  # ψ unchanged: nothing below needs recomputing
            U[:], W, V, _, _ = balance_columns(U, W, V, U - np.asarray(X @ W), lambda_u, lambda_w,
                                               scaled(lambda_v, relevance), rng)
        if options.scale_move:
            V, tau = scale_labels(V, _likelihood_of_scale(Y, EMState(W, U, V, mu, cov), options.block_rows),
                                  scaled(lambda_v, relevance), rng, options.precision_prior)
        if options.precision_prior is not None:
            lambda_u, lambda_w, lambda_v = draw_precisions(W, U - np.asarray(X @ W), V, options.precision_prior, rng)
            _check(np.concatenate([[lambda_u, lambda_w], lambda_v]), "the precisions", sweep, chain, None, draws,
                   W, U, V, mu, cov, positive=True)
        if relevance is not None:
            relevance = draw_relevance(V, lambda_v, priors.relevance, rng)
            _check(relevance, "the relevances", sweep, chain, None, draws, W, U, V, mu, cov, positive=True)
        last = recorder.end_step()  # the budget's look (none without a budget)
        kept = sweep >= options.num_burnin_steps or (last and draws.kept == 0)
        current = EMState(W, U, V, mu, cov, relevance)
        precisions = None if options.precision_prior is None else np.concatenate([[lambda_u, lambda_w], lambda_v])
        if kept:
            _keep(draws, current, W_mean, V_mean, precisions, watch)
        objective = log_posterior(X, Y, current, Priors(lambda_u, lambda_v, lambda_w, priors.alpha, priors.beta,
                                                        priors.relevance), options.block_rows)
        row = recorder.record(current, dict(chain=chain, sweep=sweep + 1, kept=kept, objective=objective, tau=tau))
        if recorder.stop(current, row):
            break
    draws.coef /= max(draws.kept, 1)
    return draws, EMState(W, U, V, mu, cov, relevance), recorder.stopped_by is not None


def _keep(draws: _Chain, state: EMState, W_mean: np.ndarray, V_mean: np.ndarray, precisions: np.ndarray | None,
          watch) -> None:
    """Keep a sweep's draw ``state`` (and its precisions when they are drawn) in ``draws``, with the
    Rao-Blackwellised E[W | U] E[V | U, ω, ξ]ᵀ (and the watched points' predictions by it)."""
    draws.coef += W_mean @ V_mean.T
    draws.kept += 1
    draws.V.append(state.V)
    if state.mu is not None:
        draws.mu.append(state.mu)
    if state.covariates is not None:
        draws.beta.append(state.covariates.coef)
    if precisions is not None:
        draws.precisions.append(precisions)
    if state.relevance is not None:
        draws.relevance.append(state.relevance)
    if watch is not None:
        draws.watched.append(np.asarray(watch @ W_mean) @ V_mean.T)


def _positives(Y) -> np.ndarray:
    """(K,) each label's positives in CSR 0/1 ``Y``."""
    return np.bincount(Y.indices, minlength=Y.shape[1]).astype(np.float64)


def _zero_probabilities(U: np.ndarray, V: np.ndarray, Y, block_rows: int) -> Callable:
    """A function yielding σ(U Vᵀ) by blocks of rows with the positives of ``Y`` set to 0 (what
    :func:`mlgp.geneml.draws.draw_exposure` sums over, once per density evaluation): formed once
    and held when N·K float64 fit in :data:`PSI_CACHE_BYTES`, else afresh at every call."""
    def blocks():
        for s in range(0, Y.shape[0], block_rows):
            probabilities = expit(U[s:s + block_rows] @ V.T)
            rows, cols = positives(Y[s:s + block_rows])
            probabilities[rows, cols] = 0.0
            yield probabilities

    if 8 * Y.shape[0] * Y.shape[1] > PSI_CACHE_BYTES:
        return blocks
    held = list(blocks())
    return lambda: iter(held)


def _likelihood_of_scale(Y, state: EMState, block_rows: int) -> Callable[[float], float]:
    """t ↦ log p(Y | t U Vᵀ, μ) with ξ summed out, over blocks of rows. The blocks of Y and μ are
    taken once, and so are those of ψ = U Vᵀ when N·K float64 fit in :data:`PSI_CACHE_BYTES`
    (otherwise each evaluation forms them again)."""
    N, K = Y.shape
    blocks = [(slice(s, s + block_rows), Y[s:s + block_rows], state.exposure(slice(s, s + block_rows)))
              for s in range(0, N, block_rows)]
    cached = [state.U[rows] @ state.V.T for rows, _, _ in blocks] if 8 * N * K <= PSI_CACHE_BYTES else None

    def at(t: float) -> float:
        total = 0.0
        for j, (rows, Y_b, mu_b) in enumerate(blocks):
            psi = cached[j] if cached is not None else state.U[rows] @ state.V.T
            total += log_likelihood(t * psi, Y_b, mu_b)
        return total

    return at


def _check(values: np.ndarray, name: str, sweep: int, chain: int, rows, draws: _Chain, *state,
           positive: bool = False) -> None:
    """Raise :class:`GibbsDivergedError` (with the draws so far) if ``values`` are not all finite
    (and, with ``positive``, > 0: precisions whose Gamma draws overflowed or underflowed)."""
    if np.all(np.isfinite(values)) and (not positive or np.all(np.asarray(values) > 0)):
        return
    where = f"rows {rows.start}–{rows.stop - 1}" if rows is not None else "the global draws"
    draws.coef = draws.coef / max(draws.kept, 1)
    what = "not finite and positive" if positive else "not finite"
    raise GibbsDivergedError(
        f"chain {chain}, sweep {sweep + 1}, {where}: a draw of {name} is {what} (likely cause: extreme feature "
        "values or precisions too small for them; try preprocessing='columns' or larger lambda_u / lambda_v)",
        _stack([draws]) if draws.kept else {}, pd.DataFrame(draws.rows))
