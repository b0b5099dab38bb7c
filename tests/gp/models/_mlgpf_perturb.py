"""A helper of the MLGPF model tests: move every parameter away from its initial value."""

from __future__ import annotations

import gpflow
import numpy as np

__all__ = ["perturb"]


def perturb(model: gpflow.models.GPModel, rng: np.random.Generator, scale: float = 0.3) -> None:
    """Add ``scale`` × N(0, 1) noise to every parameter's unconstrained value, in place."""
    for p in gpflow.utilities.parameter_dict(model).values():
        u = p.unconstrained_variable
        u.assign(u.numpy() + scale * rng.normal(size=u.shape))
