"""Probability distributions missing from TensorFlow Probability, written TFP's way.

Subclasses of ``tfp.distributions.Distribution`` with TFP's private hooks (``_sample_n``,
``_log_prob``, ``_mean``, ``_variance``), ``validate_args``, parameter properties and batch shapes,
each with a test file beside it: :class:`PolyaGamma`, PG(b, c), which GenEML's augmentation needs.
Nothing here imports the GP modules, GenEML or the baselines.
"""

from ..quiet import quiet_tensorflow

quiet_tensorflow()  # TensorFlow's first import, without its start-up lines (mlgp.quiet)

from .polya_gamma import PolyaGamma

__all__ = ["PolyaGamma"]
