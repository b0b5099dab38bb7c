"""GenEML's inferences by name: ``em``, ``online-em`` and ``gibbs``, each one ``run``.

:data:`INFERENCES` maps :class:`~mlgp.geneml.GenEML`'s ``inference`` to a function
``run(fit: FitRun) -> Result``: the start state (:func:`start_state`, the one place it is drawn;
the covariate exposure's start by :func:`exposure_covariates`), the loop of :mod:`mlgp.geneml.em`,
:mod:`mlgp.geneml.online_em` or :mod:`mlgp.geneml.gibbs` under the fit's
:class:`~mlgp.estimator.budget.Budget` (its steps recorded by
:class:`mlgp.estimator.recorder.StepRecorder`, with the validation pair's P@k for EM and online EM),
shown by :func:`progress_bar`, and the trace in the common form of :mod:`mlgp.estimator.budget`
(``step``, ``elapsed``, ``objective`` per training point, then the inference's own columns, the
total as ``log_posterior``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np
import pandas as pd

from ..errors import ArgumentError, ShapeError
from ..estimator.recorder import HeldOutPair
from ..estimator.budget import Budget
from ..estimator.recorder import common_trace
from .em import EMState, Priors, batch_em, choose_m_step
from .exposure import CovariateExposure, default_covariates
from .online_em import online_em

__all__ = ["FitRun", "INFERENCES", "PROGRESS_NAMES", "PROGRESS_UNITS", "Result", "exposure_covariates", "m_step",
           "progress_bar", "start_state"]


@dataclass
class FitRun:
    """What an inference needs from one ``GenEML.fit``: checked data, settings and the budget."""

    estimator: object
    X: object
    Y: object
    priors: Priors
    mu: np.ndarray | None
    covariates: object
    budget: Budget
    rng: np.random.Generator
    validation: HeldOutPair | None
    progress: Callable | None
    precision_prior: object = None
    n_components: int = 1
    tol: float | None = None


@dataclass
class Result:
    """An inference's outcome: the final state, the common trace and the attributes it sets."""

    state: EMState
    trace: pd.DataFrame
    attributes: dict = field(default_factory=dict)


def start_state(run: FitRun, with_u: bool = True) -> EMState:
    """W = 0, U and V ~ N(0, 0.01) from the fit's generator (U drawn first; online EM keeps none),
    every relevance 1 with ARD."""
    (N, D), K, k = run.X.shape, run.Y.shape[1], run.n_components
    U = 0.1 * run.rng.standard_normal((N, k)) if with_u else None
    relevance = None if run.priors.relevance is None else np.ones(k)
    return EMState(np.zeros((D, k)), U, 0.1 * run.rng.standard_normal((K, k)), run.mu, run.covariates, relevance)


def exposure_covariates(exposure: str | None, Y, label_features, init: float,
                        lambda_coef: float) -> CovariateExposure | None:
    """The exposure covariates of checked 0/1 labels ``Y`` (N, K) CSR (``exposure="covariates"``),
    β starting at logit(``init``) for the intercept; ``label_features`` (K, C) refused otherwise."""
    if exposure != "covariates":
        if label_features is not None:
            raise ArgumentError(f"label_features are exposure covariates: they need exposure='covariates', "
                                f"not {exposure!r}")
        return None
    if label_features is not None:
        label_features = np.asarray(label_features, dtype=np.float64)
        if label_features.ndim != 2 or label_features.shape[0] != Y.shape[1] or not np.all(np.isfinite(label_features)):
            raise ShapeError(f"label_features must be a finite (K, C) array with K = {Y.shape[1]}; got shape "
                             f"{label_features.shape}")
    F, G = default_covariates(Y, label_features)
    coef = np.zeros(F.shape[1] + G.shape[1])
    coef[0] = np.log(init / (1.0 - init))  # the intercept: μ = exposure_init
    return CovariateExposure(F, G, coef, lambda_coef)


def m_step(run: FitRun) -> str:
    """Batch EM's M-step for U and V in this fit (:func:`mlgp.geneml.em.choose_m_step`)."""
    return choose_m_step(run.estimator.m_step, run.n_components, run.X.shape[0], run.Y.shape[1])


def _em(run: FitRun) -> Result:
    est = run.estimator
    state, trace = batch_em(run.X, run.Y, start_state(run), run.priors, int(est.max_iter),
                            cg_iterations=int(est.cg_iterations), block_rows=int(est.block_rows), n_jobs=est.n_jobs,
                            progress=run.progress, validation=run.validation, max_seconds=run.budget, tol=run.tol,
                            m_step=m_step(run))
    return Result(state, common_trace(trace, run.X.shape[0], step="iteration", total="objective"))


def _online_em(run: FitRun) -> Result:
    est = run.estimator
    state, trace = online_em(run.X, run.Y, start_state(run, with_u=False), run.priors, int(est.max_iter),
                             int(est.batch_size), kappa=float(est.kappa), tau=float(est.tau),
                             cg_iterations=int(est.cg_iterations), seed=int(est.random_state),
                             block_rows=int(est.batch_size), progress=run.progress, validation=run.validation,
                             max_seconds=run.budget, final_passes=int(est.final_passes), carry=bool(est.carry_local),
                             tol=run.tol)
    return Result(state, common_trace(trace, run.X.shape[0], step="steps", total="objective"))


def _gibbs(run: FitRun) -> Result:
    from .diagnostics import chain_diagnostics, warn_unconverged
    from .gibbs import GibbsOptions, gibbs  # TensorFlow (the Pólya-Gamma draws) only for this inference

    est = run.estimator
    start = start_state(run)
    if est.gibbs_start == "em":  # the chains start at the MAP estimate (inside the same budget)
        start, _ = batch_em(run.X, run.Y, start, run.priors, int(est.max_iter), cg_iterations=int(est.cg_iterations),
                            block_rows=int(est.block_rows), n_jobs=est.n_jobs, max_seconds=run.budget,
                            m_step=m_step(run))
    options = GibbsOptions(int(est.num_results), int(est.num_burnin_steps), int(est.block_rows), bool(est.scale_move),
                           run.precision_prior, balance_move=bool(est.balance_move),
                           collapse_exposure=bool(est.collapse_exposure))
    N = run.X.shape[0]
    watch = run.validation.X if run.validation is not None else run.X[np.sort(run.rng.permutation(N)[:100])]
    samples, trace, state = gibbs(run.X, run.Y, start, run.priors, options, num_chains=int(est.num_chains),
                                  seed=int(est.random_state), n_jobs=est.n_jobs, watch=watch, progress=run.progress,
                                  budget=run.budget if est.max_seconds is not None else None)
    attributes = {"samples_": samples, "coef_": samples["coef"].mean(axis=0),
                  "diagnostics_": warn_unconverged(chain_diagnostics(samples, trace), int(est.num_chains))}
    state = replace(state, U=None)
    if state.mu is not None:
        state = replace(state, mu=np.clip(samples["mu"].mean(axis=(0, 1)), 1e-12, 1 - 1e-12))
    if state.covariates is not None:
        state = replace(state, covariates=replace(state.covariates, coef=samples["beta"].mean(axis=(0, 1))))
    if state.relevance is not None:  # the posterior mean of the relevances
        state = replace(state, relevance=samples["relevance"].mean(axis=(0, 1)))
    return Result(state, common_trace(trace, N, step=None, total="objective"), attributes)


#: Every inference of GenEML by its ``inference`` name.
INFERENCES: dict[str, Callable[[FitRun], Result]] = {"em": _em, "online-em": _online_em, "gibbs": _gibbs}

#: The progress's name of each inference (:func:`progress_bar`).
PROGRESS_NAMES = {"em": "GenEML EM", "online-em": "GenEML online EM", "gibbs": "GenEML Gibbs"}
#: What one unit of each inference's loop is.
PROGRESS_UNITS = {"em": "iteration", "online-em": "epoch", "gibbs": "sweep"}


def progress_bar(inference: str, budget, parts: int = 1):
    """A wrapper of the fit's loop (``progress(loop)``) that shows its progress
    (:class:`mlgp.estimator.progress.Progress`): a bar named for the ``inference``
    (:data:`PROGRESS_NAMES`) on a terminal, a line every few seconds off it, the seconds from the
    fit's ``budget`` (looked at after every unit). ``parts``: loops run one after another (Gibbs
    chains), each named ``"(chain c of parts)"``."""
    from ..estimator.progress import Progress

    calls = []

    def elapsed() -> float:
        budget.spent()  # a look: the Gibbs sampler without max_seconds does not look itself
        return budget.elapsed

    def wrap(iterable):
        calls.append(1)
        name = PROGRESS_NAMES[inference] + (f" (chain {len(calls)} of {parts})" if parts > 1 else "")
        total = len(iterable) if hasattr(iterable, "__len__") else None
        return Progress(name, total, unit=PROGRESS_UNITS[inference], elapsed=elapsed).wrap(iterable)

    return wrap
