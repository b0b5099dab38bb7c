"""Doubly stochastic training of MLGPF (or any model with ``elbo((X, labels))``).

:func:`fit` runs a compiled step over shuffled minibatches with tf-keras Adam, or with natural
gradients on q(u) and Adam on the rest (:class:`mlgp.training.NatGradAdam`), shows its progress
(:class:`mlgp.estimator.progress.Progress`: a bar on a terminal, a line every few seconds off it),
returns the per-epoch ELBO trace as a ``pandas.DataFrame`` — recorded by the step recorder of every
training loop (:class:`mlgp.estimator.recorder.StepRecorder`: the budget, the rows, the validation
P@k, the callback and when to stop) — and writes it as TensorBoard scalars with ``log_dir``, writes
and resumes checkpoints (:mod:`mlgp.training.checkpoints`), trains in the model's float type
(``model.float_type``, float32 or float64), and stops with
:class:`~mlgp.errors.TrainingDivergedError` (after restoring the last good state:
:func:`mlgp.training.diagnosis.diverged`) when the parameters are non-finite before training, or
the bound becomes non-finite or a Cholesky factorisation fails, naming the likely cause. With a
``tf.distribute.Strategy`` each minibatch is split across the replicas and the gradients are
summed by TensorFlow's own all-reduce.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import tensorflow as tf
from ..estimator.progress import Progress
from ..estimator.recorder import StepRecorder, checked_validation
from ..estimator.budget import Budget
from ..errors import ArgumentError, MLGPError, TrainingDivergedError
from ..fingerprint import data_fingerprint
from .fit_options import FitOptions, checked_data, checked_options, checked_run
from .checkpoints import CheckpointFolder, checked_folder, run_record, training_settings
from .diagnosis import diverged, first_non_finite, snapshot
from .contracts import TrainableModel, missing_members
from .sampler import MinibatchSampler
from .optimizers import build_optimizer, optimizer_for
from .steps import make_step
from .epoch_report import ranking, write_scalars
from .warmup import CovarianceWarmup
from .workers import LOST_PEER_ERRORS, agree_on_run, is_chief, is_multi_worker, lost_worker_error

__all__ = ["fit"]


def fit(
    model,
    data,
    epochs: int = 10,
    batch_size: int = 100,
    negatives: int | None = None,
    learning_rate: float = 0.005,
    optimizer="adam",
    natgrad_gamma: float | tuple[float, float, int] = (0.01, 0.1, 100),
    seed: int = 0,
    validation=None,
    validation_ks: tuple[int, ...] | None = None,
    checkpoint_dir: str | Path | None = None,
    checkpoint_every: int = 1,
    batch_growth: tuple[int, int] | None = None,
    strategy: tf.distribute.Strategy | None = None,
    jit_compile: bool | str = False,
    progress: bool = True,
    callback: Callable[[int, object, dict], object] | None = None,
    check_input: bool = True,
    max_seconds: float | Budget | None = None,
    log_dir: str | Path | None = None,
    covariance_warmup: int | str = 0,
    kl_weight: float = 1.0,
    progress_name: str = "MLGPF fit",
) -> pd.DataFrame:
    """Train ``model`` by doubly stochastic variational inference.

    Parameters
    ----------
    model
        :class:`~mlgp.models.MLGPF`, or any model satisfying
        :class:`mlgp.training.TrainableModel` (checked before any work).
    data
        ``(X, Y)``: (N, D) features (CSR or dense) and (N, K) 0/1 labels; minibatches go through
        the model's input map (``model.input_map``) before anything densifies them.
    epochs
        Number of passes over the data (in total, counting epochs restored from a checkpoint);
        at least 1.
    batch_size
        Points per minibatch.
    negatives
        Negative labels sampled per point; ``None`` uses all labels (the exact label sum).
    learning_rate
        Adam's step size (a positive finite number).
    optimizer
        ``"adam"``: Adam on every variable. ``"natgrad"``: GPflow's natural-gradient steps on the
        q(u) family's (q_mu, q_sqrt) and Adam on the rest (:class:`mlgp.training.NatGradAdam`; the
        Cholesky and whitened families). Or an optimizer object with tf-keras's
        ``apply_gradients`` / ``build`` / ``variables``.
    natgrad_gamma
        With ``"natgrad"``: γ, or ``(gamma_start, gamma, ramp_steps)`` for a log-linear ramp of γ
        over the first steps.
    seed
        Seeds TensorFlow and the minibatch/negative sampling.
    validation
        Optional ``(X_val, Y_val)``, checked once before training
        (:func:`mlgp.estimator.recorder.checked_validation`, as every entry that takes a validation
        pair); P@k (percent) for ``validation_ks`` is added to the trace each epoch
        (:func:`mlgp.estimator.recorder.validation_precision`, ranked by the model's
        ``mean_utilities`` of each block through its input map).
    validation_ks
        The cut-offs of the validation P@k, each at most K; ``None``: 1, 3 and 5, those at most K.
    checkpoint_dir
        Folder for checkpoints of the model, the optimizer and the epoch (``ckpt-<epoch>``, the
        newest 3 kept), ``trace.csv`` and ``manifest.json``; made (with its parents) before any
        training, an existing file is refused. The manifest records the run: the model's class,
        trainable variables (name, shape, dtype) and ``spec``; the training data's N, D, K and a
        fingerprint; the settings ``batch_size``, ``negatives``, ``learning_rate``, ``optimizer``,
        ``natgrad_gamma`` (with ``"natgrad"``), ``seed`` and ``batch_growth`` (``epochs`` may grow);
        and the checkpoints written. A folder holding checkpoints resumes only the run its manifest
        names: another model, other data or other settings, or checkpoints without a readable
        manifest, raise :class:`~mlgp.errors.CheckpointMismatchError` before anything is restored.
        Training resumes from the newest checkpoint file that restores whole; each damaged one
        skipped is named in a ``RuntimeWarning``, and when none restores the folder is left as it is.
    batch_growth
        ``(every, increment)``: grow the batch by ``increment`` points every ``every`` epochs (the
        paper's schedule is ``(10, 20)``).
    strategy
        A ``tf.distribute.Strategy`` whose scope the model was built in; each minibatch is split
        across its replicas. With a ``MultiWorkerMirroredStrategy`` over several processes
        (:func:`mlgp.training.workers.multi_worker_strategy`) every worker runs this same call on the
        same data: they check that their data and settings agree, each feeds its rows of the
        global minibatch, only the chief writes ``checkpoint_dir`` and ``log_dir`` (all restore
        from it), and a lost worker stops the others with an :class:`~mlgp.errors.MLGPError`
        naming it (:mod:`mlgp.training.workers`).
    jit_compile
        ``False``: a plain ``tf.function`` step. ``True``: the whole step compiled with XLA
        (``tf.function(jit_compile=True)``), which fuses the element-wise passes over the (P, M, M)
        Cholesky factors and Adam's update. ``"except-cholesky"``: chol(K_ZZ) and its gradient in
        plain TensorFlow, the rest of the bound, its gradient and the update under XLA, because XLA's
        CPU Cholesky and triangular solves are several times slower than TensorFlow's; needs a model
        with ``kuu_cholesky()`` and ``elbo(data, kuu_cholesky)`` (:class:`~mlgp.models.MLGPF`).
        ``experiments/bench_mlgpf.py`` times the three; :func:`mlgp.recipes.train_mlgpf` chooses by
        its ``q_family`` argument. With ``True``, a failed Cholesky factorisation does not raise; the
        bound becomes NaN instead, which stops training the same way. Not available with
        ``strategy``.
    progress
        Show the progress (:mod:`mlgp.estimator.progress`): on a terminal a bar over the epochs (and
        one over the steps of epochs of 200 steps or more); off it a line on standard error at the
        start, after the first and last epochs and every :data:`~mlgp.estimator.progress.LINE_SECONDS`
        (epoch, seconds, ELBO, a callback's ``"held-out lpd"``). ``False``: nothing is printed.
    callback
        Called as ``callback(step, state, row)`` after each epoch, the signature of every training
        loop's callback (:mod:`mlgp.estimator.recorder`): here ``step`` is the epoch (counted from
        1), ``state`` the model and ``row`` the epoch's trace row (validation P@k included), to which
        it may add columns; a true return stops training.
    check_input
        Check ``data`` (finite features, 0/1 labels, matching rows) and the numeric options
        (``epochs``, ``batch_size``, ``negatives``, ``learning_rate``, ``batch_growth``,
        ``checkpoint_every``, ``max_seconds``, ``covariance_warmup`` and whether the model and the
        optimizer can run it); ``False`` trusts a caller that has checked them
        (:func:`mlgp.recipes.train_mlgpf` does: its settings are checked when built, its data by
        ``mlgpf_from_data``). The model's fit to the data and ``validation`` are checked either way, once.
    max_seconds
        Wall seconds from the start of this call (or a :class:`mlgp.estimator.budget.Budget`
        started by the caller): the clock is looked at after every step, and training stops after
        the step that reaches it (the epoch cut short is traced and checkpointed). ``None`` or
        ``inf``: no bound.
    log_dir
        Write each epoch's row as TensorBoard scalars (``tf.summary``) in this folder: the ELBO, its
        parts (``expected_log_lik``, ``kl``), ``batch_size``, ``seconds`` and the validation P@k.
    covariance_warmup
        Optimiser steps at the start during which q(u)'s P Cholesky factors are tied: held at
        their shared start while everything else trains (:mod:`mlgp.training.warmup`; the
        ``"cholesky"`` and ``"whitened"`` families with ``optimizer="adam"``). Such a step costs a
        fraction of a full one; the step is traced again when the warm-up ends. 0: none.
    kl_weight
        w in (0, 1]: each step maximises the ELBO with its KL term weighted by w (the authors' code
        of MLGPF uses ½); the trace's ``elbo`` is the bound itself. Recorded in the manifest when ≠ 1.
    progress_name
        The name of the bar and of the lines (what the run does: ``"MLGPF refit on all rows"``).

    Returns
    -------
    pandas.DataFrame
        One row per epoch: ``epoch``, ``step`` (optimiser steps so far), ``elapsed`` (seconds since
        the budget started, at the epoch's last step), ``elbo`` (the epoch's estimate of the bound:
        its steps' minibatch estimates averaged with weights |B| / N, so that the data term counts
        every training row once and a short last minibatch, whose estimate is scaled by N / |B|,
        weighs by its rows rather than as much as a full one), ``elbo_std`` (the spread of the step
        estimates, unweighted), ``kl`` (Σ_p KL, averaged alike), ``expected_log_lik`` (``elbo +
        kl``), ``seconds`` (the epoch's training wall time; the first epoch's includes tracing and
        compiling the step on its first minibatch), ``batch_size`` and ``P@k`` columns with
        ``validation``. The first epoch's ``elapsed - seconds`` is the set-up before the first step
        (with a caller's budget, the caller's too: building the model, k-means), a row of its own in
        :class:`mlgp.recipes.MLGPFClassifier`'s ``trace_``.

    Raises
    ------
    ShapeError
        For a bad argument or data that do not fit the model, before any tracing.
    ArgumentError
        For a bad option (e.g. a NaN ``natgrad_gamma``) or a ``checkpoint_dir`` that is a file;
        before any tracing.
    FileAccessError
        When ``checkpoint_dir`` cannot be made or written (before the first epoch, when it can).
    CheckpointMismatchError
        When ``checkpoint_dir`` holds another run's checkpoints, or ones without a readable manifest.
    DataFormatError
        When no checkpoint in ``checkpoint_dir`` can be restored (the folder is left untouched).
    TrainingDivergedError
        When a parameter is non-finite before training (named), or a step gives a non-finite bound,
        non-finite parameters or a failed Cholesky; the model (and the optimizer) are restored to
        the end of the last good epoch first. If the bound is non-finite at those parameters on the
        failing minibatch too, the message names the inputs' scale and the initialisation as likely
        causes; else a smaller learning rate.
    """
    if not isinstance(model, TrainableModel):
        raise ArgumentError(f"fit needs a model with {missing_members(model, TrainableModel)} "
                            "(mlgp.training.TrainableModel, which MLGPF satisfies)")
    with model.float_context():
        return _fit(model, data, FitOptions(
            epochs=epochs, batch_size=batch_size, negatives=negatives, learning_rate=learning_rate,
            optimizer=optimizer, natgrad_gamma=natgrad_gamma, seed=seed, validation=validation,
            validation_ks=validation_ks, checkpoint_dir=checkpoint_dir, checkpoint_every=checkpoint_every,
            batch_growth=batch_growth, strategy=strategy, jit_compile=jit_compile, progress=progress,
            callback=callback, check_input=check_input, max_seconds=max_seconds, log_dir=log_dir,
            covariance_warmup=covariance_warmup, kl_weight=kl_weight, progress_name=progress_name))


@dataclass
class _Run:
    """The state of one training run that its epochs share."""

    model: object
    X: object
    sampler: MinibatchSampler
    opt: object
    step: Callable
    variables: list
    epoch_var: tf.Variable
    ckpts: CheckpointFolder | None
    recorder: StepRecorder
    start: int
    multi: bool
    steps: int = 0
    last_batch: object = None
    warmup: CovarianceWarmup | None = None
    progress: Progress | None = None

    def state(self) -> list:
        return list(self.variables) + list(self.opt.variables())

    def diverged(self, what: str, batch, epoch: int, good, learning_rate) -> TrainingDivergedError:
        """The run restored to ``good`` (the end of ``epoch``) and the error saying ``what`` happened and why."""
        return diverged(what, state=self.state(), good=good, model=self.model, batch=batch, X=self.X, epoch=epoch,
                        start=self.start, opt=self.opt, learning_rate=learning_rate,
                        latest=self.ckpts.latest if self.ckpts is not None else None)


def _fit(model, data, o: FitOptions) -> pd.DataFrame:
    budget = Budget.of(o.max_seconds)  # a caller's budget counts its own set-up too
    if o.check_input:
        checked_options(o)
    variables = model.trainable_variables
    checked_run(model, o, variables)
    X, Y = checked_data(model, data, o.check_input)
    tf.random.set_seed(o.seed)
    sampler = MinibatchSampler(X, Y, o.batch_size, o.negatives, seed=o.seed, float_type=model.float_type,
                               input_map=model.input_map, batch_growth=o.batch_growth)
    validation = checked_validation(o.validation, num_features=X.shape[1], num_labels=Y.shape[1], ks=o.validation_ks)
    opt = optimizer_for(model, o.optimizer, o.learning_rate, o.natgrad_gamma, o.strategy)
    recorder = StepRecorder(budget, _COLUMNS, objective="elbo", validation=validation, rank=ranking, callback=o.callback)
    run = _start_run(model, X, Y, o, sampler, opt, variables, recorder)
    writer = tf.summary.create_file_writer(str(o.log_dir)) if o.log_dir is not None and is_chief(o.strategy) else None
    good = snapshot(run.state())
    run.warmup = CovarianceWarmup(model, o.covariance_warmup, run.steps,
                                  lambda: make_step(model, opt, o.strategy, sampler.num_data, o.jit_compile, o.kl_weight))
    try:
        if run.warmup.active:
            run.step = run.warmup.make_step()  # for the variables left trainable by the tie
        _train_epochs(run, o, model, writer, good)
    finally:
        run.warmup.close()
    if writer is not None:
        writer.close()
    return recorder.trace()


def _train_epochs(run: _Run, o: FitOptions, model, writer, good) -> None:
    """The epochs of one run, each traced, checked, checkpointed, passed to the callback and shown."""
    budget = run.recorder.budget
    run.progress = Progress(o.progress_name, o.epochs, unit="epoch", enabled=o.progress, initial=run.start,
                            elapsed=lambda: budget.elapsed)  # the budget's last look: no clock reading
    try:
        _epochs(run, o, model, writer, good)
    finally:
        run.progress.close()


def _epochs(run: _Run, o: FitOptions, model, writer, good) -> None:
    recorder = run.recorder
    for epoch in range(run.start, o.epochs):
        values = _train_epoch(run, o, epoch, good)
        bad = first_non_finite(model, run.variables)
        if bad is not None:
            raise run.diverged(f"the last step of epoch {epoch + 1} made {bad} non-finite", run.last_batch, epoch, good,
                               o.learning_rate)
        row = recorder.record(model, values)  # with the validation P@k
        good = snapshot(run.state())
        run.epoch_var.assign(epoch + 1)
        if run.ckpts is not None and ((epoch + 1) % o.checkpoint_every == 0 or epoch + 1 == o.epochs or recorder.spent):
            run.ckpts.save(epoch + 1, recorder.rows)
        write_scalars(writer, epoch + 1, row)
        stop = recorder.stop(model, row)  # the callback may add "held-out lpd"
        first_step_at = max(row["elapsed"] - row["seconds"], 0.0) if epoch == run.start else None
        run.progress.unit_done(first_step_at, stop, {"elbo": row["elbo"], "held-out lpd": row.get("held-out lpd")})
        if stop:
            break


_COLUMNS = ("epoch", "step", "elapsed", "elbo", "elbo_std", "kl", "expected_log_lik", "seconds", "batch_size")


def _start_run(model, X, Y, o: FitOptions, sampler, opt, variables, recorder: StepRecorder) -> _Run:
    """Checkpoint folder, agreement between workers, the compiled step, the optimizer's slots and
    a restore from the latest checkpoint; refuses non-finite starting parameters."""
    folder = checked_folder(o.checkpoint_dir) if o.checkpoint_dir is not None else None  # made before any step
    multi, chief = is_multi_worker(o.strategy), is_chief(o.strategy)
    settings = training_settings(o.batch_size, o.negatives, o.learning_rate, o.optimizer, o.natgrad_gamma, o.seed,
                                 o.batch_growth, o.kl_weight)
    if multi:  # every worker on the same data and settings, or none starts
        agree_on_run(o.strategy, {"data": data_fingerprint(X, Y), "settings": settings})
    step = make_step(model, opt, o.strategy, sampler.num_data, o.jit_compile, o.kl_weight)
    epoch_var = tf.Variable(0, dtype=tf.int64, trainable=False, name="epoch")
    build_optimizer(opt, variables, o.strategy)  # its slots exist now, so that a restore fills them
    run = _Run(model, X, sampler, opt, step, variables, epoch_var, None, recorder, 0, multi)
    if folder is not None:  # only the chief writes; every worker restores from the chief's folder
        run.ckpts = CheckpointFolder(folder, tf.train.Checkpoint(model=model, optimizer=opt, epoch=epoch_var),
                                     run_record(model, X, Y, settings), writable=chief)
        recorder.rows = run.ckpts.resume(run.state() + [epoch_var])
    bad = first_non_finite(model, variables)
    if bad is not None:
        raise TrainingDivergedError(
            f"the parameters were non-finite before training ({bad} holds NaN or inf), so no step can start from "
            "them: the initialisation (or a value assigned to the model) is the cause, not the learning rate; "
            "rebuild the model or assign finite values")
    run.start = int(epoch_var.numpy())
    if run.start > o.epochs:
        raise MLGPError(f"the latest checkpoint in {folder} is at epoch {run.start}, past epochs={o.epochs}; "
                        "ask for at least that many epochs or use another checkpoint folder")
    run.steps = int(recorder.rows[-1].get("step", 0)) if recorder.rows else 0
    return run


def _train_epoch(run: _Run, o: FitOptions, epoch: int, good) -> dict:
    """One pass over the minibatches (cut short when the budget is spent, looked at after every
    step): the values of its trace row."""
    recorder = run.recorder
    run.sampler.start_epoch(epoch, o.seed)
    recorder.begin_step()
    values, kls, sizes = [], [], []
    per_epoch = run.sampler.steps_per_epoch
    for s, (xb, yb) in enumerate(run.progress.steps(run.sampler.epoch(), per_epoch, f"epoch {epoch + 1}")):
        try:
            elbo, kl = (float(t) for t in run.step(xb, yb))
        except LOST_PEER_ERRORS as err:
            if run.multi:
                raise lost_worker_error(err, epoch, run.ckpts.latest if run.ckpts is not None else None) from None
            raise
        except tf.errors.InvalidArgumentError as err:
            raise run.diverged(f"training failed at epoch {epoch + 1}, step {s + 1}: {str(err).splitlines()[0]} "
                               "(a Cholesky factorisation failed?)", (xb, yb), epoch, good, o.learning_rate) from None
        if not np.isfinite(elbo):
            raise run.diverged(f"the ELBO became {elbo} at epoch {epoch + 1}, step {s + 1}", (xb, yb), epoch, good,
                               o.learning_rate)
        values.append(elbo)
        kls.append(kl)
        sizes.append(int(xb.shape[0]))
        run.steps += 1
        if run.warmup is not None:
            run.step = run.warmup.step_after(run.steps, run.step)
        spent = recorder.look()
        if s + 1 < per_epoch and not spent:  # the epoch's line, with its ELBO, follows the last step
            run.progress.step_done(s + 1, per_epoch)
        if spent:
            break
    recorder.end_step()
    run.last_batch = (xb, yb)
    elbo, kl = (float(np.average(v, weights=sizes)) for v in (values, kls))  # each row counted once
    return dict(epoch=epoch + 1, step=run.steps, elbo=elbo, elbo_std=float(np.std(values)), kl=kl,
                expected_log_lik=elbo + kl, batch_size=run.sampler.batch_size)
