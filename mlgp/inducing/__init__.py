"""Inducing variables for MLGPF beyond GPflow's stock ``InducingPoints``, and the contract MLGPF
holds them to (:mod:`mlgp.inducing.contract`)."""

from ..quiet import quiet_tensorflow

quiet_tensorflow()  # TensorFlow's first import, without its start-up lines (mlgp.quiet)

from .contract import InputDim, input_dim, shared_inducing_variable
from .subspace import SubspaceInducingPoints
from .unit_sphere import UnitRows, UnitSphereInducingPoints

__all__ = ["InputDim", "input_dim", "SubspaceInducingPoints", "UnitRows", "UnitSphereInducingPoints",
           "shared_inducing_variable"]
