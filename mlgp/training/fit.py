"""Doubly stochastic training of MLGPF (or any model with ``elbo((X, labels))``).

:func:`fit` runs a compiled step over shuffled minibatches with tf-keras Adam, or with natural
gradients on q(u) and Adam on the rest (:class:`mlgp.training.NatGradAdam`), shows a tqdm progress
bar, returns the per-epoch ELBO trace as a ``pandas.DataFrame`` (and writes it as TensorBoard
scalars with ``log_dir``), writes and resumes checkpoints (:mod:`mlgp.training.checkpoints`), trains
in the model's float type (``model.float_type``, float32 or float64), and stops with
:class:`~mlgp.errors.TrainingDivergedError` (after restoring the last good state) when the parameters
are non-finite before training, or the bound becomes non-finite or a Cholesky factorisation fails,
naming the likely cause. With a ``tf.distribute.Strategy`` each minibatch is split across the
replicas and the gradients are summed by TensorFlow's own all-reduce.
"""

from __future__ import annotations

import numbers
import time
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import tensorflow as tf

from .. import arguments
from ..errors import ArgumentError, MLGPError, ShapeError, TrainingDivergedError
from ..fingerprint import data_fingerprint
from ..floats import float_policy
from ..validation import check_features, check_labels, check_training_data
from .checkpoints import CheckpointFolder, checked_folder, run_record, training_settings, variable_names
from .diagnosis import diagnosis
from .contracts import TrainableModel, missing_members
from .sampler import MinibatchSampler
from .optimizers import make_optimizer
from .steps import make_step
from .workers import LOST_PEER_ERRORS, agree_on_run, is_chief, is_multi_worker, lost_worker_error

__all__ = ["fit"]


def _snapshot(variables) -> list[np.ndarray]:
    return [v.numpy() for v in variables]


def _restore(variables, values) -> None:
    for v, x in zip(variables, values):
        v.assign(x)


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
    validation_ks: tuple[int, ...] = (1, 3, 5),
    checkpoint_dir: str | Path | None = None,
    checkpoint_every: int = 1,
    batch_growth: tuple[int, int] | None = None,
    strategy: tf.distribute.Strategy | None = None,
    jit_compile: bool | str = False,
    progress: bool = True,
    callback: Callable[[int, object, dict], None] | None = None,
    check_input: bool = True,
    max_seconds: float | None = None,
    log_dir: str | Path | None = None,
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
        Optional ``(X_val, Y_val)``; P@k for ``validation_ks`` is added to the trace each epoch
        (the model needs ``predict_topk``, as :class:`~mlgp.models.MLGPF` has).
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
        Show a tqdm progress bar over the epochs, and one over the steps of epochs of 200 steps or more.
    callback
        Called as ``callback(epoch, model, row)`` after each epoch; a true return stops training.
    check_input
        Check ``data`` (finite features, 0/1 labels, matching rows) and the numeric options
        (``epochs``, ``batch_size``, ``negatives``, ``learning_rate``, ``batch_growth``,
        ``checkpoint_every``, ``max_seconds``); ``False`` trusts a caller that has checked them
        (:func:`mlgp.recipes.train_mlgpf` does: its settings are checked when built, its data by
        ``from_data``). The model's fit to the data and ``validation`` are checked either way, once.
    max_seconds
        Stop after the first epoch at which this call's training time (steps only, validation
        excluded) reaches ``max_seconds``.
    log_dir
        Write each epoch's row as TensorBoard scalars (``tf.summary``) in this folder: the ELBO, its
        parts (``expected_log_lik``, ``kl``), ``batch_size``, ``seconds`` and the validation P@k.

    Returns
    -------
    pandas.DataFrame
        One row per epoch: ``epoch``, ``elbo`` (mean of the step estimates), ``elbo_std``,
        ``kl`` (mean over the steps of Σ_p KL), ``expected_log_lik`` (``elbo + kl``), ``seconds``
        (the epoch's training wall time), ``batch_size`` and ``P@k`` columns with ``validation``.

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
        return _fit(model, data, epochs, batch_size, negatives, learning_rate, optimizer, natgrad_gamma, seed,
                    validation, validation_ks, checkpoint_dir, checkpoint_every, batch_growth, strategy,
                    jit_compile, progress, callback, check_input, max_seconds, log_dir)


def _checked_data(model, data, check_input: bool):
    """``data`` as (CSR or dense float64 X, CSR float64 Y), checked once here unless the caller has."""
    X, Y = data
    if check_input:
        X, Y = check_training_data(X, Y, max_magnitude=float_policy(model.float_type).max_feature_magnitude)
    _check_model_fits_data(model, X, Y)
    return X, Y


def _checked_options(epochs, batch_size, checkpoint_every, negatives, batch_growth, learning_rate, max_seconds,
                     natgrad_gamma, seed):
    """The numeric options checked (and made ints) once, here at the boundary, by the checks
    :class:`mlgp.recipes.MLGPFSettings` and the command line use (:mod:`mlgp.arguments`)."""
    epochs = arguments.positive_int(epochs, "epochs")
    batch_size = arguments.positive_int(batch_size, "batch_size")
    checkpoint_every = arguments.positive_int(checkpoint_every, "checkpoint_every")
    negatives = arguments.positive_int(negatives, "negatives", optional=True)
    if batch_growth is not None:
        batch_growth = arguments.batch_growth_pair(batch_growth)
    arguments.positive_real(learning_rate, "learning_rate")
    if max_seconds is not None and not (isinstance(max_seconds, numbers.Real) and not isinstance(max_seconds, bool)
                                        and max_seconds > 0):  # inf: no limit
        raise ArgumentError(f"max_seconds must be a positive number, got {max_seconds!r}")
    arguments.natgrad_gamma(natgrad_gamma)
    arguments.seed(seed)
    return epochs, batch_size, checkpoint_every, negatives, batch_growth


def _fit(model, data, epochs, batch_size, negatives, learning_rate, optimizer, natgrad_gamma, seed, validation,
         validation_ks, checkpoint_dir, checkpoint_every, batch_growth, strategy, jit_compile, progress, callback,
         check_input, max_seconds, log_dir) -> pd.DataFrame:
    from tqdm.auto import tqdm

    if check_input:
        epochs, batch_size, checkpoint_every, negatives, batch_growth = _checked_options(
            epochs, batch_size, checkpoint_every, negatives, batch_growth, learning_rate, max_seconds, natgrad_gamma,
            seed)
        arguments.flag(progress, "progress")
    if log_dir is not None:
        import importlib.util

        if importlib.util.find_spec("tensorboard") is None:
            raise ArgumentError("log_dir needs the tensorboard package, which is not installed (pip install tensorboard)")
    X, Y = _checked_data(model, data, check_input)
    tf.random.set_seed(seed)
    sampler = MinibatchSampler(X, Y, batch_size, negatives, seed=seed, float_type=model.float_type,
                               input_map=model.input_map, batch_growth=batch_growth)
    if validation is not None:
        Xv, Yv = validation
        Xv = check_features(Xv, name="validation X", num_features=X.shape[1])
        Yv = check_labels(Yv, name="validation Y", num_points=Xv.shape[0], num_labels=Y.shape[1])
        validation = (Xv, Yv)
    variables = model.trainable_variables
    if not variables:
        raise MLGPError("the model has no trainable variables")
    if jit_compile not in (False, True, "except-cholesky"):
        raise ArgumentError(f"jit_compile must be False, True or 'except-cholesky', got {jit_compile!r}")
    if jit_compile and strategy is not None:
        raise ArgumentError(f"jit_compile={jit_compile!r} cannot be combined with a tf.distribute strategy")
    if check_input and strategy is not None and not isinstance(strategy, tf.distribute.Strategy):  # recipes check it
        raise ArgumentError(f"strategy must be a tf.distribute.Strategy, got {type(strategy).__name__}")
    if strategy is not None:
        outside = [v.name for v in variables if not strategy.extended.variable_created_in_scope(v)]
        if outside:
            raise ArgumentError(f"with a strategy, build the model inside `with strategy.scope():` ({len(outside)} variables were not, e.g. {outside[0]})")
        if optimizer == "natgrad":
            raise ArgumentError("optimizer='natgrad' cannot be combined with a tf.distribute strategy")
        with strategy.scope():
            opt = make_optimizer(model, optimizer, learning_rate, natgrad_gamma)
    else:
        opt = make_optimizer(model, optimizer, learning_rate, natgrad_gamma)

    folder = checked_folder(checkpoint_dir) if checkpoint_dir is not None else None  # made before any step
    multi, chief = is_multi_worker(strategy), is_chief(strategy)
    settings = training_settings(batch_size, negatives, learning_rate, optimizer, natgrad_gamma, seed, batch_growth)
    if multi:  # every worker on the same data and settings, or none starts
        agree_on_run(strategy, {"data": data_fingerprint(X, Y), "settings": settings})
    step = make_step(model, opt, strategy, sampler.num_data, jit_compile)

    epoch_var = tf.Variable(0, dtype=tf.int64, trainable=False, name="epoch")
    _build_optimizer(opt, variables, strategy)  # its slots exist now, so that a restore fills them
    state = lambda: list(variables) + list(opt.variables())  # noqa: E731
    names = variable_names(model)
    ckpts, rows = None, []
    if folder is not None:  # only the chief writes; every worker restores from the chief's folder
        ckpts = CheckpointFolder(folder, tf.train.Checkpoint(model=model, optimizer=opt, epoch=epoch_var),
                                 run_record(model, X, Y, settings), writable=chief)
        rows = ckpts.resume(state() + [epoch_var])
    good = _snapshot(state())
    bad = next((name for name, x in zip(names, good) if not np.all(np.isfinite(x))), None)
    if bad is not None:
        raise TrainingDivergedError(
            f"the parameters were non-finite before training ({bad} holds NaN or inf), so no step can start from "
            "them: the initialisation (or a value assigned to the model) is the cause, not the learning rate; "
            "rebuild the model or assign finite values")
    start = int(epoch_var.numpy())
    if start > epochs:
        raise MLGPError(f"the latest checkpoint in {folder} is at epoch {start}, past epochs={epochs}; "
                        "ask for at least that many epochs or use another checkpoint folder")
    restored = lambda e: f"the model was restored to the end of epoch {e}" + (  # noqa: E731
        f"; last checkpoint: {ckpts.latest}" if ckpts is not None and ckpts.latest else "")
    why = lambda batch, e: diagnosis(model, batch, X, e, start, opt, learning_rate)  # noqa: E731
    writer = tf.summary.create_file_writer(str(log_dir)) if log_dir is not None and chief else None
    trained = 0.0
    bar = tqdm(range(start, epochs), disable=not progress, desc="MLGPF", unit="epoch")
    for epoch in bar:
        sampler.start_epoch(epoch, seed)
        t0 = time.perf_counter()
        values, kls = [], []
        steps = tqdm(sampler.epoch(), total=sampler.steps_per_epoch, desc=f"epoch {epoch + 1}", unit="step", leave=False,
                     disable=not progress or sampler.steps_per_epoch < 200)
        for s, (xb, yb) in enumerate(steps):
            try:
                elbo, kl = (float(t) for t in step(xb, yb))
            except LOST_PEER_ERRORS as err:
                if multi:
                    raise lost_worker_error(err, epoch, ckpts.latest if ckpts is not None else None) from None
                raise
            except tf.errors.InvalidArgumentError as err:
                _restore(state(), good)
                raise TrainingDivergedError(
                    f"training failed at epoch {epoch + 1}, step {s + 1}: {str(err).splitlines()[0]} "
                    f"(a Cholesky factorisation failed?); {restored(epoch)}.{why((xb, yb), epoch)}"
                ) from None
            if not np.isfinite(elbo):
                _restore(state(), good)
                raise TrainingDivergedError(f"the ELBO became {elbo} at epoch {epoch + 1}, step {s + 1}; "
                                            f"{restored(epoch)}.{why((xb, yb), epoch)}")
            values.append(elbo)
            kls.append(kl)
        row = dict(
            epoch=epoch + 1,
            elbo=float(np.mean(values)),
            elbo_std=float(np.std(values)),
            kl=float(np.mean(kls)),
            expected_log_lik=float(np.mean(values) + np.mean(kls)),
            seconds=time.perf_counter() - t0,
            batch_size=sampler.batch_size,
        )
        trained += row["seconds"]
        if validation is not None:
            row.update(_validate(model, validation, validation_ks))
        snapshot = _snapshot(variables)
        if not all(np.all(np.isfinite(v)) for v in snapshot):
            bad = next(name for name, x in zip(names, snapshot) if not np.all(np.isfinite(x)))
            _restore(state(), good)
            raise TrainingDivergedError(f"the last step of epoch {epoch + 1} made {bad} non-finite; "
                                        f"{restored(epoch)}.{why((xb, yb), epoch)}")
        rows.append(row)
        good = _snapshot(state())
        epoch_var.assign(epoch + 1)
        if ckpts is not None and ((epoch + 1) % checkpoint_every == 0 or epoch + 1 == epochs):
            ckpts.save(epoch + 1, rows)
        if writer is not None:
            with writer.as_default(step=epoch + 1):
                for key, value in row.items():
                    if key != "epoch":
                        tf.summary.scalar(key, value)
            writer.flush()
        bar.set_postfix(elbo=f"{row['elbo']:.4g}")
        if callback is not None and callback(epoch + 1, model, row):
            break
        if max_seconds is not None and trained >= max_seconds:
            break
    if writer is not None:
        writer.close()
    return pd.DataFrame(rows, columns=None if rows else ["epoch", "elbo", "elbo_std", "kl", "expected_log_lik", "seconds", "batch_size"])


def _check_model_fits_data(model, X, Y) -> None:
    """Raise :class:`ShapeError` (before any tracing) when the data do not fit the model's sizes."""
    N, D = X.shape
    K = Y.shape[1]
    if model.num_data is not None and int(model.num_data) != N:
        raise ShapeError(f"model.num_data = {model.num_data} but the training data has N = {N} points")
    if int(model.num_labels) != K:
        raise ShapeError(f"the labels have K = {K} columns but the model has {model.num_labels} labels")
    if int(model.num_features) != D:
        raise ShapeError(f"the features have D = {D} columns but the model expects {model.num_features}")


def _build_optimizer(opt, variables, strategy) -> None:
    """Create the optimizer's slot variables now (so that they can be snapshotted or restored).

    tf-keras optimizers build once; a second ``build`` returns at once.
    """
    if strategy is not None:
        with strategy.scope():
            opt.build(variables)
    else:
        opt.build(variables)


def _validate(model, validation, ks) -> dict:
    from ..metrics import precision_at_k, topk

    Xv, Yv = validation  # checked once, before the first epoch
    scores = model.predict_topk(Xv, max(ks), check_input=False)
    return {f"P@{k}": 100.0 * precision_at_k(Yv, topk(scores, k), k) for k in ks}
