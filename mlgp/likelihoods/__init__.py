"""Likelihoods: the multi-latent Bernoulli-logistic likelihood with loadings and label subsampling."""

from .labels import LabelBatch
from .multilabel_bernoulli import MultiLabelBernoulli

__all__ = ["LabelBatch", "MultiLabelBernoulli"]
