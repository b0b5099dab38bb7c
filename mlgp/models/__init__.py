"""Models: MLGPF as a ``gpflow.models.GPModel``; building it from data; saving it without pickle."""

from ..quiet import quiet_tensorflow

quiet_tensorflow()  # TensorFlow's first import, without its start-up lines (mlgp.quiet)

from .builders import label_log_odds, mlgpf_from_data
from .initialisation import kmeans_inducing, random_inducing
from .mlgpf import MLGPF
from .persistence import load_parameters, save_mlgpf

#: Rebuild a model written by :func:`save_mlgpf` (:func:`mlgp.models.persistence.load_mlgpf`).
load_mlgpf = MLGPF.load

__all__ = [
    "MLGPF",
    "kmeans_inducing",
    "label_log_odds",
    "load_mlgpf",
    "load_parameters",
    "mlgpf_from_data",
    "random_inducing",
    "save_mlgpf",
]
