"""The SE+LR kernel in the form of the authors' code: one ARD scale vector shared by both parts.

    k(x, z) = w exp(−‖Λ(x − z)‖²) + (1 − w) (Λx)ᵀ(Λz),   Λ = diag(λ),   w = s / (s + l),

with λ (D,), s and l positive. It is GPflow's ``SquaredExponential(variance=w,
lengthscales=1/(√2 λ))`` plus ``Linear(variance=(1 − w) λ²)`` with the two ARD vectors tied and the
variances summing to one (the loadings Φ carry the scale). It is the recipes' default kernel;
docs/results.md ("MLGPF: the kernel") compares it with GPflow's SE + linear sum (separate ARD
vectors and variances). :class:`PartWeights` holds s and l for it and for its subspace form
(:class:`mlgp.kernels.SubspaceSharedScaleSEPlusLinear`).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf
from check_shapes import inherit_check_shapes
from gpflow import Parameter
from gpflow.kernels import Kernel
from gpflow.utilities import positive

__all__ = ["PartWeights", "SharedScaleSEPlusLinear"]


class PartWeights:
    """The weights of the SE and linear parts, s and l (positive Parameters), as w = s / (s + l)."""

    def _init_weights(self, se_weight: float, linear_weight: float) -> None:
        self.se_weight = Parameter(float(se_weight), transform=positive(), name="se_weight")
        self.linear_weight = Parameter(float(linear_weight), transform=positive(), name="linear_weight")

    def _w(self) -> tf.Tensor:
        return self.se_weight / (self.se_weight + self.linear_weight)


class SharedScaleSEPlusLinear(PartWeights, Kernel):
    """SE + linear kernel with one ARD scale vector λ shared by both parts and weights w, 1 − w.

    Parameters
    ----------
    num_features
        D, the input dimension.
    scale
        Initial λ_d of every dimension (the authors' code starts at 1).
    se_weight, linear_weight
        Initial s and l; the parts are weighted w = s / (s + l) and 1 − w.
    """

    def __init__(self, num_features: int, scale: float = 1.0, se_weight: float = 1.0, linear_weight: float = 1.0, name: str | None = None) -> None:
        super().__init__(name=name)
        self.scales = Parameter(np.full(int(num_features), float(scale)), transform=positive(), name="scales")
        self._init_weights(se_weight, linear_weight)

    @inherit_check_shapes
    def K(self, X: tf.Tensor, X2: tf.Tensor | None = None) -> tf.Tensor:
        a = X * self.scales
        b = a if X2 is None else X2 * self.scales
        ab = tf.matmul(a, b, transpose_b=True)
        sq = tf.reduce_sum(a * a, axis=-1)[:, None] + tf.reduce_sum(b * b, axis=-1)[None, :] - 2.0 * ab
        w = self._w()
        return w * tf.exp(-tf.maximum(sq, 0.0)) + (1.0 - w) * ab

    @inherit_check_shapes
    def K_diag(self, X: tf.Tensor) -> tf.Tensor:
        a = X * self.scales
        w = self._w()
        return w + (1.0 - w) * tf.reduce_sum(a * a, axis=-1)
