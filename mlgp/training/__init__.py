"""Training: doubly stochastic minibatches (points × labels) and the fit loop."""

from ..quiet import quiet_tensorflow

quiet_tensorflow()  # TensorFlow's first import, without its start-up lines (mlgp.quiet)

from .contracts import StepOptimizer, TrainableModel
from .fit import fit
from .optimizers import OPTIMIZERS, make_optimizer
from .steps import make_step
from .natgrad import NatGradAdam
from .sampler import MinibatchSampler, sample_labels

__all__ = ["OPTIMIZERS", "MinibatchSampler", "NatGradAdam", "StepOptimizer", "TrainableModel", "fit", "make_optimizer",
           "make_step", "sample_labels"]
