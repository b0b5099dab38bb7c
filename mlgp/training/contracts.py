"""What :func:`mlgp.training.fit` needs of a model and of an optimizer, written as ``Protocol``s.

:class:`TrainableModel` is the model contract (MLGPF satisfies it): the bound and its KL from one
factorisation, the sizes ``fit`` checks the data against, the float type and the input map its
minibatches go through. :class:`StepOptimizer` is the optimizer contract (a tf-keras optimizer, or
:class:`mlgp.training.NatGradAdam`). ``fit`` checks both with ``isinstance`` before any tracing
and names what is missing, instead of probing attributes one at a time.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

__all__ = ["PlainApplyOptimizer", "StepOptimizer", "TrainableModel", "missing_members"]


@runtime_checkable
class TrainableModel(Protocol):
    """A model :func:`mlgp.training.fit` can train."""

    num_data: int | None
    num_labels: int
    num_features: int
    input_map: Any
    float_type: Any
    trainable_variables: Any

    def float_context(self) -> Any:
        """A context setting GPflow's float type and jitter to the model's."""

    def factorisation(self) -> Any:
        """What the bound and the KL share (K_ZZ and its factor)."""

    def elbo_and_kl(self, data, factorisation=None) -> Any:
        """The bound on ``data`` and its KL term."""

    def log_prior_density(self) -> Any:
        """The log prior density of the parameters."""

    def mean_utilities(self, Xb) -> Any:
        """The (B, K) label scores of a block (B, d) of inputs through the input map (for the
        validation P@k)."""


@runtime_checkable
class StepOptimizer(Protocol):
    """An optimizer :func:`mlgp.training.fit` can step with (tf-keras's interface)."""

    def build(self, variables) -> Any:
        """Create the slot variables."""

    def apply_gradients(self, grads_and_vars) -> Any:
        """One update."""

    def variables(self) -> Any:
        """The state to snapshot and checkpoint."""


@runtime_checkable
class PlainApplyOptimizer(StepOptimizer, Protocol):
    """An optimizer whose update must run outside XLA (``needs_plain_apply``, e.g. one that solves
    M × M systems, as :class:`mlgp.training.NatGradAdam` does)."""

    needs_plain_apply: bool


def missing_members(obj, protocol: type) -> list[str]:
    """The members of ``protocol`` that ``obj`` lacks (empty when ``obj`` satisfies it)."""
    names = set(protocol.__dict__.get("__annotations__", {}))
    names |= {n for n, v in protocol.__dict__.items() if callable(v)}
    return sorted(n for n in names if not n.startswith("_") and not hasattr(obj, n))
