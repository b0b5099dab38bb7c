"""The covariance warm-up of :func:`mlgp.training.fit`: the first steps with q(u)'s factors tied.

For its first ``covariance_warmup`` optimiser steps (``"all"``: every step) ``fit`` ties the q(u) family's P Cholesky
factors (:meth:`mlgp.variational.CholeskyQ.tie`): they stay at their shared start while Φ, b, the
means, the kernel and Z train. Such a step needs one (M, M) × (M, B) product for the marginals
instead of P, and no optimizer update of the P·M(M+1)/2 factor entries: a fraction of a full
step's cost, with the same test P@1 after a given number of steps (figures in docs/results.md,
"MLGPF training speed" and "MLGPF: time to accuracy"). Then the factors are
untied and the step traced again with every variable.

:class:`CovarianceWarmup` holds that schedule for one run; ``fit`` unties in any case when it
returns or raises, so a model never leaves ``fit`` tied.
"""

from __future__ import annotations

from typing import Callable

from ..errors import ArgumentError

__all__ = ["CovarianceWarmup", "check_warmup"]


def check_warmup(model, steps: int, optimizer) -> None:
    """ArgumentError, before any work, for a warm-up the model or the optimizer cannot run."""
    if steps == 0:  # "all" or a positive number of steps from here on
        return
    q = getattr(model, "q", None)
    if not callable(getattr(q, "tie", None)):
        family = getattr(q, "family", type(model).__name__)
        raise ArgumentError(f"covariance_warmup={steps} needs a q(u) family with Cholesky factors to tie (the "
                            f"'cholesky' and 'whitened' families); this model's is {family!r}: use covariance_warmup=0")
    if optimizer == "natgrad":
        raise ArgumentError(f"covariance_warmup={steps} cannot be combined with optimizer='natgrad' (natural gradients "
                            "move the factors the warm-up holds): use covariance_warmup=0 or optimizer='adam'")


class CovarianceWarmup:
    """The warm-up of one run: tied until ``steps`` optimiser steps are done (counting steps
    restored from a checkpoint), then untied.

    Parameters
    ----------
    model
        The model, whose ``q`` has ``tie`` / ``untie`` when ``steps`` > 0 (:func:`check_warmup`).
    steps
        Length of the warm-up in optimiser steps (0: none; ``"all"``: the whole run).
    done
        Steps the run has taken already (a resumed run past the warm-up is not tied again).
    make_step
        ``make_step()`` → the run's step for the model's trainable variables as they are now.
    """

    def __init__(self, model, steps: int, done: int, make_step: Callable[[], Callable]) -> None:
        self.model, self.make_step = model, make_step
        self.steps = float("inf") if steps == "all" else int(steps)
        self.active = done < self.steps
        if self.active:
            model.q.tie()

    def step_after(self, done: int, step: Callable) -> Callable:
        """The step to run after ``done`` steps: ``step`` itself, or at the warm-up's end the
        untied model's step (traced again on its first call)."""
        if self.active and done >= self.steps:
            self.close()
            return self.make_step()
        return step

    def close(self) -> None:
        """Untie the factors (nothing if the warm-up is over)."""
        if self.active:
            self.model.q.untie()
            self.active = False
