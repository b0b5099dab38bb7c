"""Training: doubly stochastic minibatches (points × labels) and the fit loop."""

from .fit import fit
from .sampler import MinibatchSampler, sample_labels

__all__ = ["MinibatchSampler", "fit", "sample_labels"]
