"""Subspace inducing inputs: Z = A X̃, M inducing inputs in the span of the R basis rows X̃.

A model on the projected inputs of :class:`mlgp.data.subspace.SubspaceProjection` sees each data
point as (c, r) = (x X̃ᵀ, residual ‖x‖²) and each inducing input z_m = a_m X̃ as (a_m, 0): it lies in
the subspace, so its residual is 0. :class:`SubspaceInducingPoints` holds the trainable A (M, R) and
gives that (M, R + 1) input as ``Z``; GPflow's ``covariances.Kuu`` / ``Kuf`` are registered for it
(one small function each), and :data:`mlgp.inducing.InputDim` gives R + 1, so
``SharedIndependentInducingVariables``, GPflow's ``conditional`` and mlgp's marginals use it
unchanged. With the kernels of :mod:`mlgp.kernels.subspace`, K_ZZ and K_XZ cost O(M² R) and
O(B M R): nothing depends on D.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf
from check_shapes import check_shapes
from gpflow import Parameter, covariances, default_float
from gpflow.inducing_variables import InducingVariables
from gpflow.kernels import Kernel

from ..errors import ShapeError
from .contract import InputDim
from .unit_sphere import UnitRows

__all__ = ["SubspaceInducingPoints"]


class SubspaceInducingPoints(InducingVariables):
    """M inducing inputs z_m = a_m X̃ in an R-dimensional subspace.

    Parameters
    ----------
    A
        (M, R) initial coordinates (e.g. k-means centres of the training points' coordinates
        :attr:`mlgp.data.subspace.SubspaceBasis.coordinates`), finite.
    unit_rows
        Keep each z_m on the unit sphere, like L2-normalised inputs: since X̃ has orthonormal rows,
        ‖a_m X̃‖ = ‖a_m‖, so A carries the :class:`~mlgp.inducing.UnitRows` transform (rows of zeros
        are refused).
    name
        Module name.
    """

    def __init__(self, A, unit_rows: bool = False, name: str | None = None) -> None:
        super().__init__(name=name)
        A = np.asarray(A, dtype=np.float64)
        if A.ndim != 2 or min(A.shape) < 1 or not np.all(np.isfinite(A)):
            raise ShapeError(f"A must be a finite non-empty (M, R) array, got shape {A.shape}")
        self.unit_rows = bool(unit_rows)
        if self.unit_rows:
            norms = np.linalg.norm(A, axis=1)
            if np.any(norms == 0):
                raise ShapeError(f"unit-norm subspace inducing inputs need non-zero rows of A; rows "
                                 f"{np.flatnonzero(norms == 0)[:10].tolist()} are zero")
            self.A = Parameter(A / norms[:, None], transform=UnitRows(), dtype=default_float(), name="A")
        else:
            self.A = Parameter(A, dtype=default_float(), name="A")

    @property
    def num_inducing(self) -> tf.Tensor:
        return tf.shape(self.A)[0]

    @property
    def Z(self) -> tf.Tensor:
        """(M, R + 1): the inputs (a_m, 0) a subspace kernel sees."""
        A = tf.convert_to_tensor(self.A)
        return tf.concat([A, tf.zeros_like(A[:, :1])], axis=1)

    @property
    def shape(self):
        return (int(self.A.shape[0]), int(self.A.shape[1]) + 1, 1)


@InputDim.register(SubspaceInducingPoints)
def _input_dim_subspace(inducing_variable: SubspaceInducingPoints) -> int:
    return int(inducing_variable.A.shape[-1]) + 1


@covariances.Kuu.register(SubspaceInducingPoints, Kernel)
@check_shapes("return: [M, M]")
def _kuu_subspace(inducing_variable: SubspaceInducingPoints, kernel: Kernel, *, jitter: float = 0.0) -> tf.Tensor:
    Kzz = kernel(inducing_variable.Z)
    return Kzz + jitter * tf.eye(tf.shape(Kzz)[0], dtype=Kzz.dtype)


@covariances.Kuf.register(SubspaceInducingPoints, Kernel, object)
@check_shapes("Xnew: [N, D]", "return: [M, N]")
def _kuf_subspace(inducing_variable: SubspaceInducingPoints, kernel: Kernel, Xnew) -> tf.Tensor:
    return kernel(inducing_variable.Z, Xnew)
