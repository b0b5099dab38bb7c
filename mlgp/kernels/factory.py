"""Build the paper's kernels (LR, SE, SE+LR) from GPflow's stock kernels with one ARD weight per input.

``"se+linear-shared"`` is the SE+LR kernel as the authors' code writes it, one ARD scale vector
shared by both parts (:class:`mlgp.kernels.SharedScaleSEPlusLinear`).

The paper writes the SE kernel as k(x, z) = σ² exp(−‖Λ(x − z)‖²) and the linear one as
k(x, z) = xᵀ diag(v) z. GPflow's ``SquaredExponential`` is σ² exp(−½ Σ_d (x_d − z_d)²/ℓ_d²), so the
paper's Λ = I corresponds to ℓ_d = 1/√2, which is the default here. GPflow's ``Linear`` with a
vector ``variance`` is exactly the ARD linear kernel.
"""

from __future__ import annotations

import numpy as np
from gpflow.kernels import Kernel, Linear, SquaredExponential, Sum

from ..errors import ShapeError

__all__ = ["KERNEL_NAMES", "make_kernel"]

_ALIASES = {
    "linear": "linear",
    "lr": "linear",
    "se": "se",
    "rbf": "se",
    "se+linear": "se+linear",
    "se+lr": "se+linear",
    "linear+se": "se+linear",
    "se+linear-shared": "se+linear-shared",
    "se+lr-shared": "se+linear-shared",
}
#: Names :func:`make_kernel` accepts (case-insensitive), with their canonical form.
KERNEL_NAMES: tuple[str, ...] = tuple(sorted(_ALIASES))


def canonical_kernel_name(name: str) -> str:
    """``"lr"`` → ``"linear"``, ``"se+lr"`` → ``"se+linear"`` …; raises ``ValueError`` otherwise."""
    key = str(name).lower().replace(" ", "")
    if key not in _ALIASES:
        raise ShapeError(f"unknown kernel {name!r}; choose one of {sorted(set(_ALIASES.values()))}")
    return _ALIASES[key]


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
        ``"linear"`` (``"lr"``), ``"se"``, ``"se+linear"`` (``"se+lr"``) or ``"se+linear-shared"``
        (the authors' SE+LR with one shared ARD vector; ``lengthscale`` sets its scales to
        1/(√2 ℓ), ``variance`` is not used: its two weights sum to one).
    num_features
        D, the input dimension (one ARD weight per dimension).
    lengthscale
        Initial SE lengthscale of every dimension.
    variance
        Prior variance k(x, x) for unit-norm inputs; in the sum it is split equally.

    Returns
    -------
    gpflow.kernels.Kernel
    """
    kind = canonical_kernel_name(name)
    D = int(num_features)
    if D < 1:
        raise ShapeError(f"num_features must be ≥ 1, got {num_features}")
    if kind == "se+linear-shared":
        from .shared_scale import SharedScaleSEPlusLinear

        return SharedScaleSEPlusLinear(D, scale=1.0 / (np.sqrt(2.0) * lengthscale))
    share = variance / 2.0 if kind == "se+linear" else variance
    parts: list[Kernel] = []
    if kind in ("se", "se+linear"):
        parts.append(SquaredExponential(variance=share, lengthscales=np.full(D, lengthscale)))
    if kind in ("linear", "se+linear"):
        parts.append(Linear(variance=np.full(D, share)))
    return parts[0] if len(parts) == 1 else Sum(parts)
