"""Parameterisations of q(u): transforms for Cholesky factors."""

from .transforms import LowerTriangular, lower_triangular

__all__ = ["LowerTriangular", "lower_triangular"]
