"""The optimizers :func:`mlgp.training.fit` steps with: :data:`OPTIMIZERS` and :func:`make_optimizer`.

``"adam"`` is tf-keras's Adam on every variable; ``"natgrad"`` is :class:`NatGradAdam` (natural
gradients on the q(u) family's (q_mu, q_sqrt), Adam on the rest). Any object with tf-keras's
optimizer interface (:class:`mlgp.training.contracts.StepOptimizer`) may be passed instead.
"""

from __future__ import annotations

from gpflow.keras import tf_keras

from ..errors import ArgumentError
from .contracts import StepOptimizer, missing_members
from .natgrad import NatGradAdam

__all__ = ["OPTIMIZERS", "build_optimizer", "make_optimizer", "optimizer_for"]

#: The optimizers :func:`mlgp.training.fit` builds by name.
OPTIMIZERS: tuple[str, ...] = ("adam", "natgrad")


def make_optimizer(model, optimizer, learning_rate, natgrad_gamma):
    """The optimizer object :func:`mlgp.training.fit` steps with (see its ``optimizer`` argument).

    Raises
    ------
    ArgumentError
        For a name not in :data:`OPTIMIZERS`, an object without the optimizer interface, a bad γ
        schedule, or natural gradients on a model without a Cholesky q(u) family.
    """
    if optimizer is None or (isinstance(optimizer, str) and optimizer == "adam"):
        return tf_keras.optimizers.Adam(learning_rate)
    if isinstance(optimizer, str) and optimizer == "natgrad":
        if getattr(model, "q", None) is None:
            raise ArgumentError("optimizer='natgrad' needs a model with a q(u) family (model.q)")
        if isinstance(natgrad_gamma, (tuple, list)):
            if len(natgrad_gamma) != 3:
                raise ArgumentError(f"natgrad_gamma must be γ or (gamma_start, gamma, ramp_steps), got {natgrad_gamma!r}")
            g0, g1, ramp = natgrad_gamma
        else:
            g0 = g1 = natgrad_gamma
            ramp = 0
        return NatGradAdam(model, gamma=g1, gamma_start=g0, ramp_steps=ramp, learning_rate=learning_rate)
    if isinstance(optimizer, str):
        raise ArgumentError(f"optimizer must be one of {', '.join(repr(n) for n in OPTIMIZERS)} or an optimizer "
                            f"object, got {optimizer!r}")
    if not isinstance(optimizer, StepOptimizer):
        raise ArgumentError(f"optimizer {type(optimizer).__name__} lacks {missing_members(optimizer, StepOptimizer)} "
                            "of the tf-keras optimizer interface")
    return optimizer


def optimizer_for(model, name: str, learning_rate, natgrad_gamma, strategy=None):
    """:func:`make_optimizer`, in ``strategy``'s scope when one is given (its variables then live
    where the strategy puts them)."""
    if strategy is None:
        return make_optimizer(model, name, learning_rate, natgrad_gamma)
    with strategy.scope():
        return make_optimizer(model, name, learning_rate, natgrad_gamma)


def build_optimizer(opt, variables, strategy) -> None:
    """Create the optimizer's slot variables now (so that they can be snapshotted or restored).

    tf-keras optimizers build once; a second ``build`` returns at once.
    """
    if strategy is not None:
        with strategy.scope():
            opt.build(variables)
    else:
        opt.build(variables)
