"""Build the paper's kernels (LR, SE, SE+LR) from GPflow's stock kernels with one ARD weight per input.

:data:`KERNELS` is the registry of kernel names: each canonical name with the function that builds
it; :data:`KERNEL_ALIASES` maps the other accepted spellings to them. :func:`canonical_kernel_name`
is the one check of a kernel name (the recipes, the CLI and :func:`make_kernel` use it).

``"se+linear-shared"`` is the SE+LR kernel as the authors' code writes it, one ARD scale vector
shared by both parts (:class:`mlgp.kernels.SharedScaleSEPlusLinear`).

The paper writes the SE kernel as k(x, z) = σ² exp(−‖Λ(x − z)‖²) and the linear one as
k(x, z) = xᵀ diag(v) z. GPflow's ``SquaredExponential`` is σ² exp(−½ Σ_d (x_d − z_d)²/ℓ_d²), so the
paper's Λ = I corresponds to ℓ_d = 1/√2, which is the default here. GPflow's ``Linear`` with a
vector ``variance`` is exactly the ARD linear kernel.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from gpflow.kernels import Kernel, Linear, SquaredExponential, Sum

from ..errors import ArgumentError, ShapeError

__all__ = ["KERNELS", "KERNEL_ALIASES", "KERNEL_NAMES", "canonical_kernel_name", "make_kernel"]


def _linear(D: int, lengthscale: float, variance: float) -> Kernel:
    return Linear(variance=np.full(D, variance))


def _se(D: int, lengthscale: float, variance: float) -> Kernel:
    return SquaredExponential(variance=variance, lengthscales=np.full(D, lengthscale))


def _se_plus_linear(D: int, lengthscale: float, variance: float) -> Kernel:
    return Sum([_se(D, lengthscale, variance / 2.0), _linear(D, lengthscale, variance / 2.0)])


def _se_plus_linear_shared(D: int, lengthscale: float, variance: float) -> Kernel:
    from .shared_scale import SharedScaleSEPlusLinear

    return SharedScaleSEPlusLinear(D, scale=1.0 / (np.sqrt(2.0) * lengthscale))


#: The kernels by canonical name: ``builder(D, lengthscale, variance)`` for each.
KERNELS: dict[str, Callable[[int, float, float], Kernel]] = {
    "linear": _linear,
    "se": _se,
    "se+linear": _se_plus_linear,
    "se+linear-shared": _se_plus_linear_shared,
}

#: Other spellings :func:`canonical_kernel_name` accepts, and the kernel each names.
KERNEL_ALIASES: dict[str, str] = {
    "lr": "linear",
    "rbf": "se",
    "se+lr": "se+linear",
    "linear+se": "se+linear",
    "se+lr-shared": "se+linear-shared",
}

#: Every name :func:`make_kernel` accepts (case-insensitive): the canonical ones and the aliases.
KERNEL_NAMES: tuple[str, ...] = tuple(sorted({*KERNELS, *KERNEL_ALIASES}))


def canonical_kernel_name(name) -> str:
    """The canonical name of a kernel: ``"lr"`` → ``"linear"``, ``"SE+LR"`` → ``"se+linear"`` ….

    Raises
    ------
    ArgumentError
        For a name that is neither in :data:`KERNELS` nor in :data:`KERNEL_ALIASES`, naming the
        choices.
    """
    key = name.lower().replace(" ", "") if isinstance(name, str) else None
    key = KERNEL_ALIASES.get(key, key)
    if key not in KERNELS:
        raise ArgumentError(f"kernel must be one of {', '.join(repr(n) for n in KERNELS)} (or an alias: "
                            f"{', '.join(repr(n) for n in KERNEL_ALIASES)}); got {name!r}")
    return key


def make_kernel(
    name: str,
    num_features: int,
    lengthscale: float = 1.0 / np.sqrt(2.0),
    variance: float = 1.0,
) -> Kernel:
    """A GPflow kernel with ARD over ``num_features`` input dimensions.

    Parameters
    ----------
    name
        A name of :data:`KERNELS`: ``"linear"``, ``"se"``, ``"se+linear"`` or
        ``"se+linear-shared"`` (the authors' SE+LR with one shared ARD vector; ``lengthscale``
        sets its scales to 1/(√2 ℓ), ``variance`` is not used: its two weights sum to one), or an
        alias of :data:`KERNEL_ALIASES`.
    num_features
        D, the input dimension (one ARD weight per dimension).
    lengthscale
        Initial SE lengthscale of every dimension.
    variance
        Prior variance k(x, x) for unit-norm inputs; in the sum it is split equally.

    Returns
    -------
    gpflow.kernels.Kernel

    Raises
    ------
    ArgumentError
        For an unknown name.
    ShapeError
        For ``num_features`` < 1.
    """
    kind = canonical_kernel_name(name)
    D = int(num_features)
    if D < 1:
        raise ShapeError(f"num_features must be ≥ 1, got {num_features}")
    return KERNELS[kind](D, lengthscale, variance)
