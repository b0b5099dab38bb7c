"""Training: doubly stochastic minibatches (points × labels) and the fit loop."""

from .fit import fit, make_step
from .sampler import MinibatchSampler, sample_labels

__all__ = ["MinibatchSampler", "fit", "make_step", "sample_labels"]
