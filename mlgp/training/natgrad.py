r"""Natural-gradient steps on a Gaussian q(u) and Adam on everything else: :class:`NatGradAdam`.

GPflow's ``NaturalGradient`` moves each ``(q_mu, q_sqrt)`` pair of a q(u) family
(:meth:`mlgp.variational.QDistribution.natgrad_parameters`) along the natural gradient of the loss,
in the natural parameters (ξ = θ, GPflow's default); a tf-keras Adam moves the kernel, Z, Φ and b.
Both use the gradients of one evaluation of the loss (GPflow's documented recipe calls the loss once
per optimizer). The step size γ follows a log-linear ramp from ``gamma_start`` to ``gamma`` over
``ramp_steps`` steps (Salimbeni, Eleftheriadis & Hensman, 2018, advise starting small for
non-conjugate likelihoods), then stays at ``gamma``.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf
from gpflow.keras import tf_keras
from gpflow.optimizers import NaturalGradient

from ..errors import ArgumentError

__all__ = ["NatGradAdam"]


class NatGradAdam(tf.Module):
    """Natural gradients on q(u)'s (mean, Cholesky factor) pairs, Adam on the other variables.

    Parameters
    ----------
    model
        A model with a q(u) family ``model.q`` that has natural-gradient parameters (the Cholesky
        and whitened families).
    gamma
        The natural-gradient step size after the ramp, in (0, 1].
    gamma_start
        The step size of the first step (≤ ``gamma``).
    ramp_steps
        Steps of the log-linear ramp (0: ``gamma`` from the start).
    learning_rate
        Adam's step size for the other variables.

    Attributes
    ----------
    iterations
        Steps taken (a variable, checkpointed).
    """

    #: The update solves M × M systems; :func:`mlgp.training.fit` keeps it out of XLA.
    needs_plain_apply = True

    def __init__(self, model, gamma: float = 0.1, gamma_start: float = 0.01, ramp_steps: int = 100,
                 learning_rate: float = 0.005) -> None:
        super().__init__(name="natgrad_adam")
        if not 0 < float(gamma) <= 1 or not 0 < float(gamma_start) <= float(gamma):
            raise ArgumentError(f"need 0 < gamma_start ≤ gamma ≤ 1, got gamma_start={gamma_start}, gamma={gamma}")
        if int(ramp_steps) < 0:
            raise ArgumentError(f"ramp_steps must be ≥ 0, got {ramp_steps}")
        self.pairs = [tuple(p) for p in model.q.natgrad_parameters()]
        self.gamma, self.gamma_start, self.ramp_steps = float(gamma), float(gamma_start), int(ramp_steps)
        self._q_refs = {p.unconstrained_variable.ref() for pair in self.pairs for p in pair}
        self.natgrad = NaturalGradient(gamma=self.gamma)
        self.adam = tf_keras.optimizers.Adam(learning_rate)
        self.iterations = tf.Variable(0, dtype=tf.int64, trainable=False, name="iterations")

    def current_gamma(self) -> tf.Tensor:
        """γ of the next step (float64 scalar)."""
        if self.ramp_steps == 0:
            return tf.constant(self.gamma, tf.float64)
        t = tf.minimum(tf.cast(self.iterations, tf.float64) / self.ramp_steps, 1.0)
        return tf.exp((1.0 - t) * np.log(self.gamma_start) + t * np.log(self.gamma))

    def is_natural(self, variable) -> bool:
        """Whether ``variable`` takes natural-gradient steps."""
        return variable.ref() in self._q_refs

    def build(self, variables) -> None:
        self.adam.build([v for v in variables if not self.is_natural(v)])

    def variables(self) -> list:  # noqa: D401 - the optimizer-interface name
        """The state to snapshot or checkpoint: the step counter and Adam's slots."""
        return [self.iterations, *self.adam.variables()]

    def apply_gradients(self, grads_and_vars) -> None:
        """One step: ``grads_and_vars`` pairs gradients with *all* trainable variables (any
        iterable, read once: a ``zip`` as tf-keras optimizers accept it)."""
        grads_and_vars = list(grads_and_vars)
        grads = {v.ref(): g for g, v in grads_and_vars}
        rest = [(g, v) for g, v in grads_and_vars if not self.is_natural(v)]
        gamma = self.current_gamma()
        for q_mu, q_sqrt in self.pairs:
            self.natgrad.gamma = tf.cast(gamma, q_mu.dtype)
            self.natgrad._natgrad_apply_gradients(  # the update that NaturalGradient.minimize applies
                grads[q_mu.unconstrained_variable.ref()], grads[q_sqrt.unconstrained_variable.ref()], q_mu, q_sqrt
            )
        if rest:
            self.adam.apply_gradients(rest)
        self.iterations.assign_add(1)
