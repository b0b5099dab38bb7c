"""Inducing variables for MLGPF beyond GPflow's stock ``InducingPoints``."""

from .unit_sphere import UnitRows, UnitSphereInducingPoints

__all__ = ["UnitRows", "UnitSphereInducingPoints"]
