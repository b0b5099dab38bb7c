"""Doubly stochastic training of MLGPF (or any model with ``elbo((X, labels))``) with tf-keras Adam.

:func:`fit` runs a compiled step over shuffled minibatches, shows a tqdm progress bar, returns the
per-epoch ELBO trace as a ``pandas.DataFrame``, writes and resumes ``tf.train.CheckpointManager``
checkpoints, and stops with :class:`~mlgp.errors.TrainingDivergedError` (after restoring the last
good state) when the bound becomes non-finite or a Cholesky factorisation fails. With a
``tf.distribute.Strategy`` each minibatch is split across the replicas and the gradients are summed
by TensorFlow's own all-reduce.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import tensorflow as tf
from gpflow import default_float
from gpflow.keras import tf_keras

from ..errors import ArgumentError, MLGPError, ShapeError, TrainingDivergedError
from ..validation import check_batch_growth, check_features, check_labels, check_positive_int
from .sampler import MinibatchSampler

__all__ = ["fit", "make_step"]


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
    optimizer=None,
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
) -> pd.DataFrame:
    """Train ``model`` by doubly stochastic variational inference.

    Parameters
    ----------
    model
        :class:`~mlgp.models.MLGPF` (anything with ``elbo((X_b, labels))`` and
        ``trainable_variables``).
    data
        ``(X, Y)``: (N, D) features (CSR or dense) and (N, K) 0/1 labels.
    epochs
        Number of passes over the data (in total, counting epochs restored from a checkpoint);
        at least 1.
    batch_size
        Points per minibatch.
    negatives
        Negative labels sampled per point; ``None`` uses all labels (the exact label sum).
    learning_rate, optimizer
        Adam step size, or an explicit tf-keras optimizer.
    seed
        Seeds TensorFlow and the minibatch/negative sampling.
    validation
        Optional ``(X_val, Y_val)``; P@k for ``validation_ks`` is added to the trace each epoch
        (the model needs ``predict_topk``, as :class:`~mlgp.models.MLGPF` has).
    checkpoint_dir
        Folder for ``tf.train.CheckpointManager`` checkpoints (and ``trace.csv``); training resumes
        from the latest one found there.
    batch_growth
        ``(every, increment)``: grow the batch by ``increment`` points every ``every`` epochs (the
        paper's schedule is ``(10, 20)``).
    strategy
        A ``tf.distribute.Strategy`` whose scope the model was built in; each minibatch is split
        across its replicas.
    jit_compile
        ``False``: a plain ``tf.function`` step. ``True``: the whole step compiled with XLA
        (``tf.function(jit_compile=True)``), which fuses the element-wise passes over the (P, M, M)
        Cholesky factors and Adam's update. ``"except-cholesky"``: chol(K_ZZ) and its gradient in
        plain TensorFlow, the rest of the bound, its gradient and the update under XLA, because XLA's
        CPU Cholesky and triangular solves are several times slower than TensorFlow's; needs a model
        with ``kuu_cholesky()`` and ``elbo(data, kuu_cholesky)`` (:class:`~mlgp.models.MLGPF`).
        ``experiments/bench_mlgpf.py`` times the three; :func:`mlgp.recipes.train_mlgpf` chooses by
        its ``whiten`` argument. With ``True``, a failed Cholesky factorisation does not raise; the
        bound becomes NaN instead, which stops training the same way. Not available with
        ``strategy``.
    progress
        Show a tqdm progress bar.
    callback
        Called as ``callback(epoch, model, row)`` after each epoch.
    check_input
        Check ``data`` (finite features, 0/1 labels, matching rows); ``False`` trusts a caller that
        has checked them (:func:`mlgp.recipes.train_mlgpf` does, after ``from_data`` checked them). ``validation`` is checked
        once here either way, not at every epoch.

    Returns
    -------
    pandas.DataFrame
        One row per epoch: ``epoch``, ``elbo`` (mean of the step estimates), ``elbo_std``,
        ``seconds`` (epoch wall time), ``batch_size`` and ``P@k`` columns with ``validation``.

    Raises
    ------
    ShapeError
        For a bad argument or data that do not fit the model, before any tracing.
    TrainingDivergedError
        When a step gives a non-finite bound or a failed Cholesky; the model (and the optimizer)
        are restored to the end of the last good epoch first.
    """
    from tqdm.auto import tqdm

    X, Y = data
    epochs = check_positive_int(epochs, "epochs")
    batch_size = check_positive_int(batch_size, "batch_size")
    checkpoint_every = check_positive_int(checkpoint_every, "checkpoint_every")
    if batch_growth is not None:
        batch_growth = check_batch_growth(batch_growth)
    tf.random.set_seed(seed)
    sampler = MinibatchSampler(X, Y, batch_size, negatives, seed=seed, check_input=check_input)
    _check_model_fits_data(model, sampler.X, sampler.Y)
    if validation is not None:
        Xv, Yv = validation
        Xv = check_features(Xv, name="validation X", num_features=sampler.X.shape[1])
        Yv = check_labels(Yv, name="validation Y", num_points=Xv.shape[0], num_labels=sampler.Y.shape[1])
        validation = (Xv, Yv)
    variables = model.trainable_variables
    if not variables:
        raise MLGPError("the model has no trainable variables")
    if jit_compile not in (False, True, "except-cholesky"):
        raise ArgumentError(f"jit_compile must be False, True or 'except-cholesky', got {jit_compile!r}")
    if jit_compile == "except-cholesky" and not hasattr(model, "kuu_cholesky"):
        raise ArgumentError("jit_compile='except-cholesky' needs a model with kuu_cholesky() and elbo(data, kuu_cholesky)")
    if jit_compile and strategy is not None:
        raise ArgumentError(f"jit_compile={jit_compile!r} cannot be combined with a tf.distribute strategy")
    if strategy is not None:
        outside = [v.name for v in variables if not strategy.extended.variable_created_in_scope(v)]
        if outside:
            raise ArgumentError(f"with a strategy, build the model inside `with strategy.scope():` ({len(outside)} variables were not, e.g. {outside[0]})")
        with strategy.scope():
            opt = optimizer or tf_keras.optimizers.Adam(learning_rate)
    else:
        opt = optimizer or tf_keras.optimizers.Adam(learning_rate)

    step = make_step(model, opt, strategy, sampler.num_data, jit_compile)

    epoch_var = tf.Variable(0, dtype=tf.int64, trainable=False, name="epoch")
    manager = None
    rows: list[dict] = []
    if checkpoint_dir is not None:
        checkpoint_dir = Path(checkpoint_dir)
        ckpt = tf.train.Checkpoint(model=model, optimizer=opt, epoch=epoch_var)
        manager = tf.train.CheckpointManager(ckpt, str(checkpoint_dir), max_to_keep=3)
        if manager.latest_checkpoint:
            # Build the optimizer's slots so that restoring fills them instead of deferring.
            _build_optimizer(opt, variables, strategy)
            ckpt.restore(manager.latest_checkpoint).assert_existing_objects_matched()
            trace_file = checkpoint_dir / "trace.csv"
            if trace_file.exists():
                rows = pd.read_csv(trace_file).to_dict("records")[: int(epoch_var.numpy())]

    _build_optimizer(opt, variables, strategy)
    state = lambda: list(variables) + list(opt.variables())  # noqa: E731
    good = _snapshot(state())
    start = int(epoch_var.numpy())
    if start > epochs:
        raise MLGPError(
            f"the latest checkpoint in {checkpoint_dir} is at epoch {start}, past epochs={epochs}; "
            "ask for at least that many epochs or use another checkpoint folder"
        )
    bar = tqdm(range(start, epochs), disable=not progress, desc="MLGPF", unit="epoch")
    for epoch in bar:
        # One random stream per epoch, so that a run resumed from a checkpoint draws the same
        # minibatches and negatives as an uninterrupted one.
        sampler.rng = np.random.default_rng([seed, epoch])
        if batch_growth is not None:
            every, inc = batch_growth
            sampler.batch_size = min(sampler.num_data, batch_size + inc * (epoch // every))
        t0 = time.perf_counter()
        values = []
        for s, (xb, yb) in enumerate(sampler.epoch()):
            try:
                elbo = float(step(xb, yb))
            except tf.errors.InvalidArgumentError as err:
                _restore(state(), good)
                raise TrainingDivergedError(
                    f"training failed at epoch {epoch + 1}, step {s + 1}: {str(err).splitlines()[0]} "
                    f"(a Cholesky factorisation failed?); the model was restored to the end of epoch {epoch}"
                    + (f"; last checkpoint: {manager.latest_checkpoint}" if manager and manager.latest_checkpoint else "")
                ) from None
            if not np.isfinite(elbo):
                _restore(state(), good)
                raise TrainingDivergedError(
                    f"the ELBO became {elbo} at epoch {epoch + 1}, step {s + 1}; the model was restored to "
                    f"the end of epoch {epoch}"
                    + (f"; last checkpoint: {manager.latest_checkpoint}" if manager and manager.latest_checkpoint else "")
                    + ". Try a smaller learning rate."
                )
            values.append(elbo)
        row = dict(
            epoch=epoch + 1,
            elbo=float(np.mean(values)),
            elbo_std=float(np.std(values)),
            seconds=time.perf_counter() - t0,
            batch_size=sampler.batch_size,
        )
        if validation is not None:
            row.update(_validate(model, validation, validation_ks))
        rows.append(row)
        good = _snapshot(state())
        epoch_var.assign(epoch + 1)
        if manager is not None and ((epoch + 1) % checkpoint_every == 0 or epoch + 1 == epochs):
            manager.save(checkpoint_number=epoch + 1)
            pd.DataFrame(rows).to_csv(checkpoint_dir / "trace.csv", index=False)
        bar.set_postfix(elbo=f"{row['elbo']:.4g}")
        if callback is not None:
            callback(epoch + 1, model, row)
    return pd.DataFrame(rows, columns=None if rows else ["epoch", "elbo", "elbo_std", "seconds", "batch_size"])


def _check_model_fits_data(model, X, Y) -> None:
    """Raise :class:`ShapeError` (before any tracing) when the data do not fit the model's sizes."""
    N, D = X.shape
    K = Y.shape[1]
    if getattr(model, "num_data", None) is not None and int(model.num_data) != N:
        raise ShapeError(f"model.num_data = {model.num_data} but the training data has N = {N} points")
    num_labels = getattr(model, "num_labels", None)
    if num_labels is not None and int(num_labels) != K:
        raise ShapeError(f"the labels have K = {K} columns but the model has {num_labels} labels")
    num_features = getattr(model, "num_features", None)
    if num_features is not None and int(num_features) != D:
        raise ShapeError(f"the features have D = {D} columns but the model expects {num_features}")


def _build_optimizer(opt, variables, strategy) -> None:
    """Create the optimizer's slot variables now (so that they can be snapshotted or restored).

    tf-keras optimizers build once; a second ``build`` returns at once.
    """
    if strategy is not None:
        with strategy.scope():
            opt.build(variables)
    else:
        opt.build(variables)


def _log_prior(model) -> tf.Tensor:
    """Log prior density of the parameters that have priors (0 when none has)."""
    return model.log_prior_density() if hasattr(model, "log_prior_density") else tf.constant(0.0, default_float())


def make_step(model, opt, strategy=None, num_data: int | None = None, jit_compile: bool | str = False):
    """The training step that :func:`fit` runs: ``step(X_b, labels_b)`` → the bound's estimate.

    Each call takes one optimizer step on ``-(elbo + log prior)``. ``jit_compile`` as in
    :func:`fit`; ``num_data`` (N) is needed only with a ``strategy``. Public so that benchmarks time
    exactly the step that training uses.
    """
    variables = model.trainable_variables
    if jit_compile == "except-cholesky":
        return _make_split_step(model, opt)
    if strategy is None:

        @tf.function(reduce_retracing=True, jit_compile=jit_compile)
        def step(xb, yb):
            with tf.GradientTape(watch_accessed_variables=False) as tape:
                tape.watch(variables)
                elbo = model.elbo((xb, yb))
                loss = -(elbo + _log_prior(model))
            opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
            return elbo

        return step

    replicas = strategy.num_replicas_in_sync

    def replica_step(d, global_batch):
        # Each replica holds part of the batch: its share of N/|B| Σ ve, plus KL/R. This is not a
        # tf.function of its own: apply_gradients all-reduces (a merge_call), which TensorFlow does
        # not allow inside a tf.function nested in strategy.run; the whole run is compiled instead.
        xb, yb = d
        with tf.GradientTape(watch_accessed_variables=False) as tape:
            tape.watch(variables)
            ve = tf.reduce_sum(model.expected_log_likelihood((xb, yb)))
            kl = model.prior_kl()
            elbo = ve * tf.cast(num_data, ve.dtype) / global_batch - kl / replicas
            loss = -(elbo + _log_prior(model) / replicas)
        opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return elbo

    @tf.function(reduce_retracing=True)
    def distributed_step(dist, global_batch):
        per_replica = strategy.run(replica_step, args=(dist, global_batch))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    def step(xb, yb):
        B = int(xb.shape[0])
        bounds = np.linspace(0, B, replicas + 1).astype(int)

        def part(ctx):
            r = ctx.replica_id_in_sync_group
            return tf.nest.map_structure(lambda t: t[bounds[r] : bounds[r + 1]], (xb, yb))

        dist = strategy.experimental_distribute_values_from_function(part)
        return distributed_step(dist, tf.constant(float(B), dtype=default_float()))

    return step


def _make_split_step(model, opt):
    """A step with chol(K_ZZ) outside XLA and everything else inside.

    The bound is a function of the variables θ and of L = chol(K_ZZ(θ)). The XLA part returns the
    bound, ∂loss/∂θ with L held fixed and ∂loss/∂L; plain TensorFlow adds the chain-rule term
    (∂L/∂θ)ᵀ ∂loss/∂L by differentiating its own Cholesky with ``output_gradients``.
    """
    variables = model.trainable_variables
    index = {v.ref(): i for i, v in enumerate(variables)}

    @tf.function(jit_compile=True)
    def bound_and_gradients(xb, yb, Lm):
        with tf.GradientTape(watch_accessed_variables=False) as tape:
            tape.watch(variables)
            tape.watch(Lm)
            elbo = model.elbo((xb, yb), kuu_cholesky=Lm)
            loss = -(elbo + _log_prior(model))
        grads = tape.gradient(loss, [*variables, Lm], unconnected_gradients=tf.UnconnectedGradients.ZERO)
        return elbo, grads[:-1], grads[-1]

    @tf.function(jit_compile=True)
    def apply(grads):
        opt.apply_gradients(zip(grads, variables))

    @tf.function(reduce_retracing=True)
    def step(xb, yb):
        with tf.GradientTape() as tape:  # watches the trainable variables that K_ZZ reads
            Lm = model.kuu_cholesky()
        elbo, grads, dLm = bound_and_gradients(xb, yb, Lm)
        watched = [v for v in tape.watched_variables() if v.ref() in index]
        grads = list(grads)
        for v, g in zip(watched, tape.gradient(Lm, watched, output_gradients=dLm)):
            if g is not None:
                grads[index[v.ref()]] += g
        apply(grads)
        return elbo

    return step


def _validate(model, validation, ks) -> dict:
    from ..metrics import precision_at_k, topk

    Xv, Yv = validation  # checked once, before the first epoch
    scores = model.predict_topk(Xv, max(ks), check_input=False)
    return {f"P@{k}": 100.0 * precision_at_k(Yv, topk(scores, k), k) for k in ks}
