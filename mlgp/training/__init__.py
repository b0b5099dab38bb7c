"""Training: doubly stochastic minibatches (points × labels) and the fit loop."""

from .fit import fit
from .steps import make_step
from .natgrad import NatGradAdam
from .sampler import MinibatchSampler, sample_labels

__all__ = ["MinibatchSampler", "NatGradAdam", "fit", "make_step", "sample_labels"]
