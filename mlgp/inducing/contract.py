"""What MLGPF needs of an inducing variable, as GPflow-style multiple dispatch.

MLGPF shares one set of inducing variables among its P latent GPs. :func:`shared_inducing_variable`
normalises what a user passes, once (as GPflow's ``inducingpoint_wrapper`` does for single-output
models): an (M, d) array becomes ``InducingPoints``, and any single-output GPflow
``InducingVariables`` (``InducingPoints``, :class:`UnitSphereInducingPoints`, a subspace inducing
variable, …) is wrapped in ``SharedIndependentInducingVariables``; nothing is coerced into another
type. :data:`InputDim` tells the width d of the inputs an inducing variable lives with — the width
of the (mapped) blocks the kernel sees — by the inducing variable's type; a new kind of inducing
variable registers one small function, as it registers ``covariances.Kuu`` / ``Kuf``.
"""

from __future__ import annotations

import numpy as np
from gpflow.inducing_variables import (
    InducingPoints,
    InducingVariables,
    MultioutputInducingVariables,
    SharedIndependentInducingVariables,
)
from gpflow.utilities import Dispatcher

from ..errors import ArgumentError

__all__ = ["InputDim", "input_dim", "shared_inducing_variable"]

#: ``InputDim(inducing_variable) -> int``: the input width d of an inducing variable.
InputDim = Dispatcher("InputDim")


@InputDim.register(InducingPoints)
def _input_dim_points(inducing_variable: InducingPoints) -> int:
    return int(inducing_variable.Z.shape[-1])


@InputDim.register(SharedIndependentInducingVariables)
def _input_dim_shared(inducing_variable: SharedIndependentInducingVariables) -> int:
    return InputDim(inducing_variable.inducing_variable)


def shared_inducing_variable(inducing_variable, float_type) -> SharedIndependentInducingVariables:
    """``inducing_variable`` as the ``SharedIndependentInducingVariables`` MLGPF holds.

    Parameters
    ----------
    inducing_variable
        An (M, d) array, a single-output GPflow ``InducingVariables`` or a
        ``SharedIndependentInducingVariables``.
    float_type
        The dtype of an array's ``InducingPoints``.

    Raises
    ------
    ArgumentError
        For separate (per-GP) multi-output inducing variables or anything that is not inducing
        variables.
    """
    if isinstance(inducing_variable, SharedIndependentInducingVariables):
        return inducing_variable
    if isinstance(inducing_variable, MultioutputInducingVariables):
        raise ArgumentError(f"MLGPF shares one set of inducing variables among its latent GPs; got "
                            f"{type(inducing_variable).__name__}")
    if isinstance(inducing_variable, InducingVariables):
        return SharedIndependentInducingVariables(inducing_variable)
    Z = np.asarray(inducing_variable, dtype=float_type)
    if Z.ndim != 2:
        raise ArgumentError(f"inducing_variable must be GPflow inducing variables or an (M, d) array; got shape {Z.shape}")
    return SharedIndependentInducingVariables(InducingPoints(Z))


def input_dim(inducing_variable) -> int:
    """:data:`InputDim` of ``inducing_variable``, or :class:`~mlgp.errors.ArgumentError` naming the
    registration a new kind of inducing variable needs."""
    try:
        return int(InputDim(inducing_variable))
    except NotImplementedError:
        inner = getattr(inducing_variable, "inducing_variable", inducing_variable)
        raise ArgumentError(f"MLGPF cannot tell the input width of {type(inner).__name__}: register it with "
                            f"mlgp.inducing.InputDim.register({type(inner).__name__})") from None
