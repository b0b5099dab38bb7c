"""Parameterisations of q(u): transforms for Cholesky factors, and the latent marginals they give."""

from .marginals import shared_marginals, shared_marginals_from_projection
from .transforms import LowerTriangular, lower_triangular

__all__ = ["LowerTriangular", "lower_triangular", "shared_marginals", "shared_marginals_from_projection"]
