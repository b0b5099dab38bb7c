"""A cheap lower-triangular transform for stacks of Cholesky factors.

GPflow's ``triangular()`` stores the M(M+1)/2 free entries of each factor as a vector and rebuilds
the matrix with ``FillTriangular`` on every call; for P = 159 factors of size 400 × 400 that gather
and its gradient's scatter cost more than the linear algebra. :class:`LowerTriangular` instead
stores the full (..., M, M) array and keeps its lower triangle (``band_part``): the forward pass is
one masking pass, the gradient of the upper triangle is exactly zero (so Adam never moves it), and
the value a user sees is the same lower-triangular matrix.
"""

from __future__ import annotations

import tensorflow as tf
import tensorflow_probability as tfp

__all__ = ["LowerTriangular", "lower_triangular"]


class LowerTriangular(tfp.bijectors.Bijector):
    """Identity on lower-triangular matrices; zeroes the strict upper triangle of its input."""

    def __init__(self, validate_args: bool = False, name: str = "lower_triangular") -> None:
        super().__init__(
            validate_args=validate_args,
            forward_min_event_ndims=2,
            is_constant_jacobian=True,
            name=name,
        )

    def _forward(self, x: tf.Tensor) -> tf.Tensor:
        return tf.linalg.band_part(x, -1, 0)

    def _inverse(self, y: tf.Tensor) -> tf.Tensor:
        return tf.linalg.band_part(y, -1, 0)

    def _forward_log_det_jacobian(self, x: tf.Tensor) -> tf.Tensor:
        return tf.zeros([], dtype=x.dtype)


def lower_triangular() -> LowerTriangular:
    """The transform for ``q_sqrt`` Parameters of shape (P, M, M)."""
    return LowerTriangular()
