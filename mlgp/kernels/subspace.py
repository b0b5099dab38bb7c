"""Kernels on projected inputs: subspace-SE, subspace-linear and the shared-scale SE + linear, with
ARD over the basis directions.

Their inputs are the (R + 1)-wide blocks of :class:`mlgp.data.subspace.SubspaceProjection`:
u = (c, r) with c = x X̃ᵀ (R coordinates in the subspace spanned by X̃'s orthonormal rows) and
r = ‖x‖² − ‖c‖² (the squared norm of x's residual orthogonal to it). Subspace inducing inputs
z = a X̃ lie in the subspace, so their inputs are (a, 0) (:mod:`mlgp.inducing.subspace`).

ARD: one lengthscale (SE) or variance (linear) per basis direction and one for the residual, i.e.
the metric W = X̃ᵀ diag(w) X̃ + w_res (I − X̃ᵀ X̃) on the raw inputs, a positive-definite metric, so
both are exact kernels on R^D:

- subspace-SE   k(x, z) = σ² exp(−½ (x − z)ᵀ W (x − z)) = σ² exp(−½ (Σ_j (c_j − a_j)² / ℓ_j² + r_x / ℓ_res²)),
  w = 1/ℓ²;
- subspace-linear   k(x, z) = xᵀ W z = Σ_j v_j c_j a_j, w = v, with k(x, x) = Σ_j v_j c_j² + v_res r_x;
- subspace shared-scale SE + linear (:class:`mlgp.kernels.SharedScaleSEPlusLinear` on projected
  inputs)   k(x, z) = ω exp(−(x − z)ᵀ W (x − z)) + (1 − ω) xᵀ W z, w = λ² (one scale λ per direction
  and one for the residual, shared by both parts), ω = s / (s + l).

Each is exact — equal to the D-dimensional kernel with metric W — whenever one argument lies in the
subspace (K_ZZ, K_XZ) and on the diagonal k(x, x), which is all a sparse variational GP uses. For two
data points (the off-diagonal of K(X, X)) the residuals' inner product is unknown: it is taken as 0,
as if the residuals were orthogonal (the diagonal of K(X) is k(x, x) itself). With equal weights they reduce to the paper's isotropic
subspace kernels (GPflow's ``SquaredExponential`` / ``Linear`` on the raw inputs). Cost per block:
O(B M R), never O(D).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf
from check_shapes import inherit_check_shapes
from gpflow import Parameter
from gpflow.kernels import Kernel
from gpflow.utilities import positive

from ..errors import ShapeError
from .shared_scale import PartWeights

__all__ = ["SubspaceLinear", "SubspaceSE", "SubspaceSharedScaleSEPlusLinear", "make_subspace_kernel"]


def _weights(value, rank: int, name: str) -> np.ndarray:
    """``value`` (a number, or R + 1 numbers: the basis directions, then the residual) as (R + 1,)."""
    w = np.asarray(value, dtype=np.float64)
    w = np.full(rank + 1, float(w)) if w.ndim == 0 else w
    if w.shape != (rank + 1,) or not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ShapeError(f"{name} must be a positive number or R + 1 = {rank + 1} positive numbers; got {value!r}")
    return w


class _SubspaceKernel(Kernel):
    """The shared part: inputs (c, r) of width R + 1."""

    def __init__(self, rank: int, name: str | None = None) -> None:
        super().__init__(name=name)
        if int(rank) != rank or rank < 1:
            raise ShapeError(f"rank R must be a positive integer, got {rank!r}")
        self.rank = int(rank)

    def _split(self, X: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        return X[..., : self.rank], X[..., self.rank]


class SubspaceSE(_SubspaceKernel):
    """Subspace squared-exponential kernel (module docstring).

    Parameters
    ----------
    rank
        R, the number of basis directions (inputs are R + 1 wide).
    variance
        σ².
    lengthscales
        ℓ: one number, or R + 1 (the basis directions, then the residual).
    """

    def __init__(self, rank: int, variance: float = 1.0, lengthscales=1.0, name: str | None = None) -> None:
        super().__init__(rank, name=name)
        self.variance = Parameter(float(variance), transform=positive(), name="variance")
        self.lengthscales = Parameter(_weights(lengthscales, self.rank, "lengthscales"), transform=positive(),
                                      name="lengthscales")

    @inherit_check_shapes
    def K(self, X: tf.Tensor, X2: tf.Tensor | None = None) -> tf.Tensor:
        c, r = self._split(X)
        c2, r2 = (c, r) if X2 is None else self._split(X2)
        ell = self.lengthscales[: self.rank]
        a, b = c / ell, c2 / ell
        sq = (tf.reduce_sum(a * a, -1)[:, None] + tf.reduce_sum(b * b, -1)[None, :]
              - 2.0 * tf.matmul(a, b, transpose_b=True))
        res = (r[:, None] + r2[None, :]) / tf.square(self.lengthscales[self.rank])
        K = self.variance * tf.exp(-0.5 * (tf.maximum(sq, 0.0) + res))
        return K if X2 is not None else tf.linalg.set_diag(K, self.K_diag(X))  # k(x, x) exactly

    @inherit_check_shapes
    def K_diag(self, X: tf.Tensor) -> tf.Tensor:
        return tf.fill(tf.shape(X)[:-1], tf.squeeze(self.variance))


class SubspaceLinear(_SubspaceKernel):
    """Subspace linear kernel (module docstring).

    Parameters
    ----------
    rank
        R, the number of basis directions (inputs are R + 1 wide).
    variance
        v: one number, or R + 1 (the basis directions, then the residual).
    """

    def __init__(self, rank: int, variance=1.0, name: str | None = None) -> None:
        super().__init__(rank, name=name)
        self.variance = Parameter(_weights(variance, self.rank, "variance"), transform=positive(), name="variance")

    @inherit_check_shapes
    def K(self, X: tf.Tensor, X2: tf.Tensor | None = None) -> tf.Tensor:
        c, _ = self._split(X)
        c2 = c if X2 is None else self._split(X2)[0]
        K = tf.matmul(c * self.variance[: self.rank], c2, transpose_b=True)
        return K if X2 is not None else tf.linalg.set_diag(K, self.K_diag(X))  # k(x, x) with the residual

    @inherit_check_shapes
    def K_diag(self, X: tf.Tensor) -> tf.Tensor:
        c, r = self._split(X)
        return tf.reduce_sum(c * c * self.variance[: self.rank], -1) + self.variance[self.rank] * r


class SubspaceSharedScaleSEPlusLinear(PartWeights, _SubspaceKernel):
    """Shared-scale SE + linear kernel on subspace inputs (module docstring): with equal scales it is
    :class:`mlgp.kernels.SharedScaleSEPlusLinear` on the raw inputs.

    Parameters
    ----------
    rank
        R, the number of basis directions (inputs are R + 1 wide).
    scale
        λ: one number, or R + 1 (the basis directions, then the residual).
    se_weight, linear_weight
        Initial s and l; the parts are weighted ω = s / (s + l) and 1 − ω.
    """

    def __init__(self, rank: int, scale=1.0, se_weight: float = 1.0, linear_weight: float = 1.0,
                 name: str | None = None) -> None:
        super().__init__(rank, name=name)
        self.scales = Parameter(_weights(scale, self.rank, "scale"), transform=positive(), name="scales")
        self._init_weights(se_weight, linear_weight)

    @inherit_check_shapes
    def K(self, X: tf.Tensor, X2: tf.Tensor | None = None) -> tf.Tensor:
        c, r = self._split(X)
        c2, r2 = (c, r) if X2 is None else self._split(X2)
        scales = self.scales[: self.rank]
        a, b = c * scales, c2 * scales
        ab = tf.matmul(a, b, transpose_b=True)
        sq = tf.reduce_sum(a * a, -1)[:, None] + tf.reduce_sum(b * b, -1)[None, :] - 2.0 * ab
        res = (r[:, None] + r2[None, :]) * tf.square(self.scales[self.rank])
        w = self._w()
        K = w * tf.exp(-(tf.maximum(sq, 0.0) + res)) + (1.0 - w) * ab
        return K if X2 is not None else tf.linalg.set_diag(K, self.K_diag(X))  # k(x, x) with the residual

    @inherit_check_shapes
    def K_diag(self, X: tf.Tensor) -> tf.Tensor:
        c, r = self._split(X)
        a = c * self.scales[: self.rank]
        w = self._w()
        return w + (1.0 - w) * (tf.reduce_sum(a * a, -1) + tf.square(self.scales[self.rank]) * r)


def make_subspace_kernel(name: str, rank: int, lengthscale: float = 1.0 / np.sqrt(2.0), variance: float = 1.0) -> Kernel:
    """The subspace form of the kernel ``name`` for inputs of R = ``rank`` directions (plus the residual).

    ``name``: ``"linear"``, ``"se"``, ``"se+linear"`` or ``"se+linear-shared"`` (canonical names of
    :data:`mlgp.kernels.factory.KERNELS`; the sum splits ``variance`` equally, and the shared-scale
    kernel starts at λ = 1 / (√2 ℓ) with equal weights, as :func:`mlgp.kernels.make_kernel` does). Raises :class:`~mlgp.errors.ArgumentError` for a kernel
    without a subspace form.
    """
    from gpflow.kernels import Sum

    from ..errors import ArgumentError

    if name == "linear":
        return SubspaceLinear(rank, variance=variance)
    if name == "se":
        return SubspaceSE(rank, variance=variance, lengthscales=lengthscale)
    if name == "se+linear":
        return Sum([SubspaceSE(rank, variance=variance / 2.0, lengthscales=lengthscale),
                    SubspaceLinear(rank, variance=variance / 2.0)])
    if name == "se+linear-shared":
        return SubspaceSharedScaleSEPlusLinear(rank, scale=1.0 / (np.sqrt(2.0) * lengthscale))
    raise ArgumentError(f"the kernel {name!r} has no subspace form; with subspace_rank use 'linear', 'se', "
                        "'se+linear' or 'se+linear-shared'")
