"""Inducing inputs kept on the unit sphere, as in the authors' MLGPF code.

The paper's recipe L2-normalises every input row, so the data lie on the unit sphere. The authors'
code keeps the inducing inputs there too: it stores free vectors z̃_m and uses z_m = z̃_m / ‖z̃_m‖.
:class:`UnitSphereInducingPoints` does that with GPflow's own machinery: an ``InducingPoints`` whose
``Z`` Parameter carries the :class:`UnitRows` transform, so ``Z`` always reads as unit rows and
GPflow's ``Kuu`` / ``Kuf`` dispatch, ``print_summary``, checkpoints and the package's save format
work unchanged. The measured effect on test P@1 is in docs/results.md and the MLGPF notebook.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp
from gpflow import Parameter, default_float
from gpflow.inducing_variables import InducingPoints

from ..errors import ShapeError

__all__ = ["UnitRows", "UnitSphereInducingPoints"]


class UnitRows(tfp.bijectors.Bijector):
    """Scale each row (last axis) to unit Euclidean norm: x ↦ x / ‖x‖.

    Not a bijection (every positive multiple of a row maps to the same point), so it has no
    log-determinant and cannot carry a prior; ``inverse`` maps unit rows to themselves (and any
    other row to its direction), which makes it a right inverse of ``forward``. TFP caches each
    forward/inverse pair by tensor object, so ``forward`` of the very tensor ``inverse`` returned
    gives back ``inverse``'s input; GPflow never does that (it transforms the stored variable).
    """

    def __init__(self, validate_args: bool = False, name: str = "unit_rows") -> None:
        super().__init__(validate_args=validate_args, forward_min_event_ndims=1, name=name)

    def _forward(self, x: tf.Tensor) -> tf.Tensor:
        return tf.math.l2_normalize(x, axis=-1)

    def _inverse(self, y: tf.Tensor) -> tf.Tensor:
        return tf.math.l2_normalize(y, axis=-1)


class UnitSphereInducingPoints(InducingPoints):
    """M inducing inputs on the unit sphere in D dimensions.

    Parameters
    ----------
    Z
        (M, D) initial inducing inputs; each row is scaled to unit norm (rows of zeros are refused).
    name
        Module name.
    """

    def __init__(self, Z, name: str | None = None) -> None:
        Z = np.asarray(Z, dtype=np.float64)
        if Z.ndim != 2 or Z.shape[0] < 1 or Z.shape[1] < 1:
            raise ShapeError(f"Z must be a non-empty (M, D) array, got shape {Z.shape}")
        norms = np.linalg.norm(Z, axis=1)
        if not np.all(np.isfinite(norms)) or np.any(norms == 0):
            bad = np.flatnonzero(~np.isfinite(norms) | (norms == 0))
            raise ShapeError(f"inducing inputs on the unit sphere need finite non-zero rows; rows {bad[:10].tolist()} are not")
        # GPflow's base class keeps a Parameter it is given, so Z is built once, with its transform
        super().__init__(Parameter(Z / norms[:, None], transform=UnitRows(), dtype=default_float(), name="Z"), name=name)
