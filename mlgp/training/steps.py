"""The compiled training steps that :func:`mlgp.training.fit` runs: :func:`make_step`.

A step takes one optimizer step on −(ELBO + log prior) for a minibatch — or, with a KL weight
w < 1, on −(ELBO + (1 − w) KL + log prior), the bound with its KL term weighted by w — and returns
the bound's estimate (always the ELBO itself) and its KL term. Three forms: a plain ``tf.function``; the whole step under XLA; and a
split step with the q(u) family's factorisation in plain TensorFlow and the rest under XLA. With a
``tf.distribute.Strategy`` each minibatch is split across the replicas.

Every step is traced without AutoGraph (``autograph=False``): the traced code has no Python
control flow on tensors, and converting GPflow's call tree costs several seconds at the first
trace in a process.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf
from gpflow import default_float

from ..errors import ArgumentError
from .contracts import PlainApplyOptimizer

__all__ = ["make_step"]


def _log_prior(model) -> tf.Tensor:
    """Log prior density of the parameters that have priors (0 when none has)."""
    return model.log_prior_density()


def _needs_plain_apply(opt) -> bool:
    """Whether the optimizer's update must stay out of XLA (:class:`PlainApplyOptimizer`)."""
    return isinstance(opt, PlainApplyOptimizer) and bool(opt.needs_plain_apply)


def _traced_once_for_any_batch(step):
    """``step`` traced on its first call for any batch size (the batch dimension of every argument
    left unknown), so that an epoch's last, smaller minibatch does not trace it again (the cost of
    a trace: docs/results.md, "MLGPF training speed"). Under XLA each batch size is still
    compiled once."""
    traced = []

    def call(xb, yb):
        if not traced:
            specs = tf.nest.map_structure(lambda t: tf.TensorSpec([None, *t.shape[1:]], t.dtype), (xb, yb))
            step.get_concrete_function(*specs)
            traced.append(True)
        return step(xb, yb)

    call.tracing_count = step.experimental_get_tracing_count
    return call


def _objective(elbo, kl, log_prior, kl_weight: float):
    """The quantity a step maximises: ``elbo + (1 − kl_weight) kl + log_prior`` (the ELBO's KL term
    weighted by ``kl_weight``); the graph of ``kl_weight = 1`` has no extra term."""
    if kl_weight == 1.0:
        return elbo + log_prior
    return elbo + (1.0 - kl_weight) * kl + log_prior


def make_step(model, opt, strategy=None, num_data: int | None = None, jit_compile: bool | str = False,
              kl_weight: float = 1.0):
    """The training step that :func:`fit` runs: ``step(X_b, labels_b)`` → ``(elbo, kl)``.

    Each call takes one optimizer step on ``-(elbo + (1 - kl_weight) kl + log prior)`` and returns
    the bound's estimate and its KL term. ``jit_compile`` and ``kl_weight`` (a float in (0, 1],
    checked by the caller) as in :func:`fit`; ``num_data`` (N) is needed only with a ``strategy``.
    Public so that benchmarks time exactly the step that training uses.
    """
    variables = model.trainable_variables
    kl_weight = float(kl_weight)
    if jit_compile == "except-cholesky":
        return _make_split_step(model, opt, kl_weight)
    if jit_compile and _needs_plain_apply(opt):
        raise ArgumentError("jit_compile=True cannot compile this optimizer's update; use 'except-cholesky' or False")
    if strategy is None:

        @tf.function(reduce_retracing=True, jit_compile=jit_compile, autograph=False)
        def step(xb, yb):
            with tf.GradientTape(watch_accessed_variables=False) as tape:
                tape.watch(variables)
                elbo, kl = _elbo_and_kl(model, (xb, yb))
                loss = -_objective(elbo, kl, _log_prior(model), kl_weight)
            opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
            return elbo, kl

        return _traced_once_for_any_batch(step)

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
            loss = -_objective(elbo, kl / replicas, _log_prior(model) / replicas, kl_weight)
        opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return elbo, kl / replicas

    @tf.function(reduce_retracing=True, autograph=False)
    def distributed_step(dist, global_batch):
        per_replica = strategy.run(replica_step, args=(dist, global_batch))
        return tuple(strategy.reduce(tf.distribute.ReduceOp.SUM, t, axis=None) for t in per_replica)

    def step(xb, yb):
        B = int(xb.shape[0])
        bounds = np.linspace(0, B, replicas + 1).astype(int)

        def part(ctx):
            r = ctx.replica_id_in_sync_group
            return tf.nest.map_structure(lambda t: t[bounds[r] : bounds[r + 1]], (xb, yb))

        dist = strategy.experimental_distribute_values_from_function(part)
        return distributed_step(dist, tf.constant(float(B), dtype=default_float()))

    return step


def _elbo_and_kl(model, data, factorisation=None):
    """The bound on ``data`` and its KL term (:class:`~mlgp.training.TrainableModel`)."""
    return model.elbo_and_kl(data, factorisation)


def _make_split_step(model, opt, kl_weight: float = 1.0):
    """A step with the q(u) family's factorisation outside XLA and everything else inside.

    The bound is a function of the variables θ and of (K_ZZ(θ), F(θ)), F the family's
    factorisation (chol(K_ZZ + jitter I), or chol(K_ZZ + Σ_p) for each p). The XLA part returns the
    bound, ∂loss/∂θ with (K_ZZ, F) held fixed and ∂loss/∂(K_ZZ, F); plain TensorFlow adds the
    chain-rule term by differentiating its own factorisation with ``output_gradients``.
    """
    variables = model.trainable_variables
    index = {v.ref(): i for i, v in enumerate(variables)}

    @tf.function(jit_compile=True, autograph=False)
    def bound_and_gradients(xb, yb, Kuu, factor):
        with tf.GradientTape(watch_accessed_variables=False) as tape:
            tape.watch(variables)
            tape.watch([Kuu, factor])
            elbo, kl = _elbo_and_kl(model, (xb, yb), (Kuu, factor))
            loss = -_objective(elbo, kl, _log_prior(model), kl_weight)
        grads = tape.gradient(loss, [*variables, Kuu, factor], unconnected_gradients=tf.UnconnectedGradients.ZERO)
        return elbo, kl, grads[:-2], grads[-2], grads[-1]

    def apply_update(grads):
        opt.apply_gradients(zip(grads, variables))

    apply = tf.function(apply_update, jit_compile=not _needs_plain_apply(opt), autograph=False)

    @tf.function(reduce_retracing=True, autograph=False)
    def step(xb, yb):
        with tf.GradientTape() as tape:  # watches the trainable variables that K_ZZ and F read
            Kuu, factor = model.factorisation()
        elbo, kl, grads, dK, dF = bound_and_gradients(xb, yb, Kuu, factor)
        watched = [v for v in tape.watched_variables() if v.ref() in index]
        grads = list(grads)
        for v, g in zip(watched, tape.gradient([Kuu, factor], watched, output_gradients=[dK, dF])):
            if g is not None:
                grads[index[v.ref()]] += g
        apply(grads)
        return elbo, kl

    return step
