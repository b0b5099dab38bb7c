"""GenEML (Jain, Modhe & Rai, 2017): the exposure model for multi-label data with missing labels.

:func:`~mlgp.geneml.model.geneml_joint` is the generative model as a TFP joint distribution;
:mod:`~mlgp.geneml.updates` holds the Pólya-Gamma conditional updates every inference shares;
:mod:`~mlgp.geneml.em` is batch EM; :class:`GenEML` is the estimator (scikit-learn's contract, the
shared scoring interface ``decision_function`` / ``predict_topk``, ``save`` / ``load``);
:class:`GenEMLCV` chooses its settings per dataset on held-out rows (:mod:`~mlgp.geneml.cv`). It uses
NumPy, SciPy, joblib, TensorFlow Probability and :mod:`mlgp.distributions`, never the GP modules
(kernels, inducing, likelihoods, variational, models, training) nor :mod:`mlgp.baselines`, and they
never import it. Importing this package imports no TensorFlow; the joint distribution does.
"""

from .cv import GenEMLCV
from .estimator import GenEML

__all__ = ["GenEML", "GenEMLCV", "geneml_joint"]


def __getattr__(name: str):
    if name == "geneml_joint":  # TensorFlow Probability only when the model is asked for
        from .model import geneml_joint

        return geneml_joint
    raise AttributeError(f"module 'mlgp.geneml' has no attribute {name!r}")
