"""Models: MLGPF as a ``gpflow.models.GPModel``; building it from data; saving it without pickle."""

from .builders import label_log_odds
from .initialisation import kmeans_inducing, random_inducing
from .mlgpf import MLGPF
from .persistence import load_parameters, save_mlgpf

#: MLGPF from training data, the paper's way (:func:`mlgp.models.builders.mlgpf_from_data`).
mlgpf_from_data = MLGPF.from_data
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
