"""Likelihoods: the multi-latent Bernoulli-logistic likelihood with loadings and label subsampling."""

from ..quiet import quiet_tensorflow

quiet_tensorflow()  # TensorFlow's first import, without its start-up lines (mlgp.quiet)

from .labels import LabelBatch
from .multilabel_bernoulli import MultiLabelBernoulli

__all__ = ["LabelBatch", "MultiLabelBernoulli"]
