"""The float policy every family shares: which float types a model may compute in, and the
numerical safeguards that go with each.

:data:`FLOAT_POLICIES` maps a name (``"float64"``, ``"float32"``) to a :class:`FloatPolicy`: the
NumPy dtype, the jitter added to kernel matrices before a Cholesky factorisation, the floor kept
under variances and diagonal covariance parameters (the preconditioned q(u)'s Σ, a
Pólya-Gamma-weighted ridge), and the largest feature magnitude a model in that type accepts. :func:`float_policy` is the one check of a ``dtype`` argument. NumPy
only: the floor imports no TensorFlow.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import ArgumentError

__all__ = ["FLOAT_POLICIES", "FloatPolicy", "float_policy"]


@dataclass(frozen=True)
class FloatPolicy:
    """A float type and its safeguards.

    Attributes
    ----------
    name
        ``"float64"`` or ``"float32"``.
    dtype
        The NumPy dtype.
    jitter
        Added to the diagonal of a kernel matrix before it is factorised.
    variance_floor
        The smallest value a variance or a diagonal covariance parameter may take.
    max_feature_magnitude
        The largest feature magnitude a model in this type accepts: squares of larger values,
        summed over the columns, would overflow it.
    """

    name: str
    dtype: np.dtype
    jitter: float
    variance_floor: float
    max_feature_magnitude: float


#: The float types mlgp computes in (1e-6 is the MLGPF paper's jitter and Σ floor in float64).
FLOAT_POLICIES: dict[str, FloatPolicy] = {
    "float64": FloatPolicy("float64", np.dtype(np.float64), 1e-6, 1e-6, 1e150),
    "float32": FloatPolicy("float32", np.dtype(np.float32), 1e-4, 1e-4, 1e18),
}


def float_policy(dtype) -> FloatPolicy:
    """The policy of ``dtype``: a name of :data:`FLOAT_POLICIES` or a NumPy float type.

    Raises
    ------
    ArgumentError
        For any other value, naming the choices.
    """
    name = dtype
    if dtype is not None and not isinstance(dtype, str):  # np.dtype(None) would be float64
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = None
    if name not in FLOAT_POLICIES:
        raise ArgumentError(f"dtype must be one of {', '.join(repr(n) for n in FLOAT_POLICIES)}; got {dtype!r}")
    return FLOAT_POLICIES[name]
