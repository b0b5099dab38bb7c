"""MLGPFClassifier's training runs: ``kernel="auto"``'s few kernels tried on the kept rows, judged on
the held-out rows, and the refit on every row.

Contract: :func:`candidate_kernels` says which kernels a fit tries. ``kernel="auto"`` with held-out
rows tries :data:`CANDIDATES` in that order (the default first: a tie keeps it), each trained on the
kept rows within an equal share of what the budget leaves for the choice (all of ``max_seconds``,
or :data:`CHOICE_SHARE` of it when a refit on every row may follow), with its own early stopping
and bias guard (a candidate not begun before the choice's seconds are spent is left out); the winner is the candidate whose kept model has the highest held-out log
predictive density (nats per row, E_q[σ(f)] — the density early stopping and the guard use).
Without held-out rows, or when a share would be under :data:`MIN_CANDIDATE_SECONDS`, only
:data:`DEFAULT_KERNEL` is trained, and the reason is returned (the estimator warns with it when the
budget was the cause). Any other ``kernel`` is the one candidate. :class:`Trial` is one candidate's
outcome, :func:`train_candidates` trains them in turn (keeping only the best model so far; each
run's progress named for its candidate, ``"MLGPF kernel se (3 of 3)"``, or ``"MLGPF fit"`` alone) and
:func:`choice_frame` is the table of them (``kernel_choice_``). :func:`refit_on_every_row` trains the
winner's settings again on every row (``refit``). Each run takes the estimator's ``checkpoint_dir``
(a fit of one run only: the estimator refuses the others), ``log_dir`` and the caller's callback
after its own (:func:`chained`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from ..errors import BudgetWarning, warn
from ..estimator.budget import Budget
from .build import build_and_train
from .held_out import MIN_PATIENCE_STEPS, HeldOutStopping, IterateAverage, held_out_lpd, keep_best_or_bias

__all__ = ["AUTO", "CANDIDATES", "CHOICE_SHARE", "DEFAULT_KERNEL", "MIN_CANDIDATE_SECONDS", "Trial",
           "candidate_kernels", "chained", "choice_frame", "is_auto", "refit_on_every_row", "train_candidates",
           "train_kernels"]

AUTO = "auto"
#: The kernel trained when ``"auto"`` cannot choose (and the first candidate).
DEFAULT_KERNEL = "se+linear-shared"
#: What ``"auto"`` tries: the default SE + linear with a shared ARD vector, the linear kernel (best
#: on few, one-hot features) and the SE kernel (dense, non-linear features).
CANDIDATES = (DEFAULT_KERNEL, "linear", "se")
#: Share of ``max_seconds`` the candidates take together when a refit on every row may follow.
CHOICE_SHARE = 0.7
#: A candidate's share of the budget below this (seconds): only the default kernel is trained.
MIN_CANDIDATE_SECONDS = 5.0


def is_auto(kernel) -> bool:
    """Whether ``kernel`` (an estimator's parameter) is ``"auto"``."""
    return isinstance(kernel, str) and kernel == AUTO


def candidate_kernels(kernel, has_held_out: bool, seconds: float, refit_possible: bool) -> tuple[list, float, str]:
    """``(kernels, choice_seconds, reason)``: the kernels to train, the seconds they share
    (``inf``: no budget) and, when ``"auto"`` falls back to the default kernel, why (else "").

    ``kernel``: the estimator's ``kernel``; ``has_held_out``: whether rows are held out;
    ``seconds``: ``max_seconds`` (``inf`` for None); ``refit_possible``: whether a refit on every
    row may follow (the candidates then leave it ``1 − CHOICE_SHARE`` of the budget)."""
    if not is_auto(kernel):
        return [kernel], seconds, ""
    if not has_held_out:
        return [DEFAULT_KERNEL], seconds, "no rows are held out to judge the kernels on"
    share = CHOICE_SHARE if refit_possible else 1.0
    choice_seconds = seconds * share
    if math.isfinite(seconds) and choice_seconds / len(CANDIDATES) < MIN_CANDIDATE_SECONDS:
        return [DEFAULT_KERNEL], seconds, (f"max_seconds={seconds:g} leaves under {MIN_CANDIDATE_SECONDS:g} s for each of "
                                           f"the {len(CANDIDATES)} candidate kernels")
    return list(CANDIDATES), choice_seconds, ""


@dataclass
class Trial:
    """One candidate kernel trained on the kept rows: its model (the best epoch, or the bias alone),
    trace, early stopping, guard verdict, held-out density (nats per row), seconds, the settings
    it was trained with, and the fit's seconds when it began (``begun``)."""

    kernel: str
    model: object
    trace: pd.DataFrame
    stopping: object
    bias_only: bool
    held_out_lpd: float
    seconds: float
    settings: object = None
    begun: float = 0.0

    @property
    def epochs(self) -> int:
        return len(self.trace)


def choice_frame(trials: list[Trial], winner: Trial | None) -> pd.DataFrame:
    """``kernel_choice_``: one row per candidate, ``kernel``, ``held_out_lpd``, ``epochs``,
    ``best_epoch``, ``seconds``, ``bias_only`` and ``chosen``."""
    return pd.DataFrame({
        "kernel": [_kernel_name(t.kernel) for t in trials],
        "held_out_lpd": [float(t.held_out_lpd) for t in trials],
        "epochs": [int(t.epochs) for t in trials],
        "best_epoch": [int(t.stopping.best_epoch) if t.stopping is not None else int(t.epochs) for t in trials],
        "seconds": [float(t.seconds) for t in trials],
        "bias_only": [bool(t.bias_only) for t in trials],
        "chosen": [t is winner for t in trials],
    })


def train_candidates(est, kernels: list, choice_seconds: float, budget: Budget, s, Xtr, Ytr, held_rows,
                     steps_per_epoch: int, jit, validation, strategy, early,
                     callback=None) -> tuple[list[Trial], Trial]:
    """Train each of ``kernels`` for the estimator ``est`` (its ``average_from``, ``n_iter_no_change``,
    ``num_inducing`` and ``progress``) on the kept rows ``Xtr``, ``Ytr`` with the sized settings ``s``:
    one kernel within ``budget`` itself, several each within an equal share of what
    ``choice_seconds`` leaves (counted, like ``budget``, from the start of ``fit``, so that every
    trace's ``elapsed`` is); once the choice's seconds are spent, the candidates not yet tried are
    left out. Returns the :class:`Trial` of each candidate trained (losers without their model) and
    the winner: the highest held-out density, the first of equals. ``callback`` follows each
    run's own (:func:`chained`)."""
    trials, best = [], None
    for i, kernel in enumerate(kernels):
        if len(kernels) == 1:
            trial_budget, begun = budget, budget.elapsed
        else:
            budget.spent()
            left = choice_seconds - budget.elapsed
            if left <= 0 and best is not None:
                break
            begun = budget.elapsed
            trial_budget = Budget.trusted(begun + max(left, 1e-9) / (len(kernels) - i), budget.started)
        name = "MLGPF fit" if len(kernels) == 1 else f"MLGPF kernel {_kernel_name(kernel)} ({i + 1} of {len(kernels)})"
        trial = _trial(est, kernel, s, Xtr, Ytr, held_rows, steps_per_epoch, jit, validation, trial_budget,
                       strategy, early, begun, name, callback)
        trials.append(trial)
        if best is None or trial.held_out_lpd > best.held_out_lpd:
            if best is not None:
                best.model = None  # a losing candidate's model is not kept
            best = trial
        else:
            trial.model = None
    return trials, best


def train_kernels(est, budget: Budget, s, data, held_rows, steps_per_epoch: int, jit, validation, strategy, early,
                  refit_possible: bool, callback=None) -> tuple[Trial, pd.DataFrame | None]:
    """The estimator ``est``'s first fit on the kept rows ``data`` = (X, Y): the winning
    :class:`Trial` of the kernels :func:`candidate_kernels` proposes (:func:`train_candidates`) and
    ``kernel_choice_`` (:func:`choice_frame`; ``None`` for a given kernel), with a
    :class:`~mlgp.errors.BudgetWarning` when the budget left ``"auto"`` no choice."""
    has_held = held_rows is not None
    kernels, choice_seconds, reason = candidate_kernels(est.kernel, has_held, budget.seconds,
                                                        refit_possible and has_held)
    if reason and has_held:  # the budget was too small for the choice
        warn(f"{type(est).__name__}: kernel='auto' trains {DEFAULT_KERNEL} only: {reason}", BudgetWarning)
    trials, winner = train_candidates(est, kernels, choice_seconds, budget, s, *data, held_rows, steps_per_epoch, jit,
                                      validation, strategy, early, callback)
    return winner, choice_frame(trials, winner) if len(trials) > 1 or reason else None


def _kernel_name(kernel) -> str:
    return kernel if isinstance(kernel, str) else type(kernel).__name__


def _trial(est, kernel, s, Xtr, Ytr, held_rows, steps_per_epoch: int, jit, validation, budget, strategy,
           early, begun: float, name: str = "MLGPF fit", callback=None) -> Trial:
    """Train one candidate ``kernel`` on the kept rows within ``budget``: early stopping on the
    ``held_rows`` (X, Y) where there are any, the best epoch restored, the bias guard applied.
    ``begun``: the budget's seconds when the candidate began (its seconds are the budget's looks
    since; no extra reading of the clock); ``name``: its progress bar's."""
    average = None if est.average_from is None else IterateAverage(est.average_from)
    stopping = None if held_rows is None or early is False else HeldOutStopping(
        *held_rows, est.n_iter_no_change, steps_per_epoch, MIN_PATIENCE_STEPS, average)
    s = s.replace(kernel=kernel)
    if isinstance(kernel, str) and kernel == "linear" and est.num_inducing is None:  # a linear K_ZZ has rank ≤ D
        s = s.replace(num_inducing=min(s.num_inducing, Xtr.shape[1]))
    model, trace = build_and_train(Xtr, Ytr, s, jit_compile=jit, validation=validation, max_seconds=budget,
                                   progress=bool(est.progress), strategy=strategy,
                                   callback=chained(stopping or average, callback), progress_name=name,
                                   checkpoint_dir=est.checkpoint_dir, log_dir=est.log_dir)
    if stopping is None and average is not None:
        average.assign(model)
    bias_only = keep_best_or_bias(model, stopping, held_rows)
    lpd = -math.inf if held_rows is None else held_out_lpd(model, *held_rows)
    return Trial(kernel, model, trace, stopping, bias_only, lpd, budget.elapsed - begun, s, begun)


def refit_on_every_row(est, winner: Trial, data, epochs: int, jit, budget: Budget, strategy, callback=None):
    """``(model, refitted)`` after the estimator ``est``'s refit: with ``epochs`` (those
    :func:`mlgp.recipes.held_out.refit_epochs` chose; 0: no refit), the ``winner``'s settings trained
    again from the start on every row of ``data`` = (X, Y) for that many, averaged from
    ``est.average_from``; the refitted model, or the winner's when the budget cut the refit short."""
    if not epochs:
        return winner.model, False
    average = None if est.average_from is None else IterateAverage(est.average_from)
    again, trace = build_and_train(*data, winner.settings.replace(epochs=epochs), jit_compile=jit, max_seconds=budget,
                                   log_dir=est.log_dir, progress=bool(est.progress), strategy=strategy,
                                   callback=chained(average, callback), progress_name="MLGPF refit on all rows")
    if average is not None:
        average.assign(again)
    if len(trace) == epochs and budget.elapsed < budget.seconds:  # not cut short by the budget
        return again, True
    return winner.model, False


def chained(*callbacks):
    """One callback of :func:`mlgp.training.fit` calling each of ``callbacks`` (``None`` left out) in
    turn after every epoch, on the same row; a true return of any stops training. ``None`` when
    there are none."""
    callbacks = [c for c in callbacks if c is not None]
    if len(callbacks) < 2:
        return callbacks[0] if callbacks else None

    def callback(epoch: int, model, row: dict) -> bool:
        return any([bool(c(epoch, model, row)) for c in callbacks])  # every one called, even after a stop

    return callback
