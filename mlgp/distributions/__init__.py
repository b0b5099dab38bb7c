"""Probability distributions missing from TensorFlow Probability, written TFP's way.

Contract for what lands here (first the Pólya-Gamma distribution PG(b, c) that GenEML's
augmentation needs): subclasses of ``tfp.distributions.Distribution`` with private hooks
(``_sample_n``, ``_log_prob``, ``_mean``, ``_variance``), ``validate_args``, parameter properties
and batch shapes, each with a test file beside it. Nothing here imports the GP modules, GenEML or
the baselines. Empty for now.
"""
