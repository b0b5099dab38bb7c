"""Models: MLGPF as a ``gpflow.models.GPModel``."""

from .initialisation import kmeans_inducing, random_inducing
from .mlgpf import MLGPF

__all__ = ["MLGPF", "kmeans_inducing", "random_inducing"]
