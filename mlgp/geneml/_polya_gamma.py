"""Elementwise Pólya-Gamma draws ω ~ PG(1, ψ) for the Gibbs sampler, through
:class:`mlgp.distributions.PolyaGamma` (the only TensorFlow in GenEML's sampler)."""

from __future__ import annotations

import numpy as np

from ..distributions import PolyaGamma  # first: it imports TensorFlow quietly (mlgp.quiet)

import tensorflow as tf  # noqa: E402 (after the quiet import above)

__all__ = ["polya_gamma_draws"]


@tf.function(input_signature=[tf.TensorSpec([None], tf.float64), tf.TensorSpec([2], tf.int32)])
def _draws(psi, seed):
    return PolyaGamma(tf.ones_like(psi), psi).sample(seed=seed)


def polya_gamma_draws(psi: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """ω (same shape as ``psi``) with ω ~ PG(1, ψ) elementwise; the stateless seed comes from ``rng``."""
    seed = tf.constant(rng.integers(0, 2**31 - 1, 2), tf.int32)
    return _draws(tf.constant(np.ravel(psi), tf.float64), seed).numpy().reshape(np.shape(psi))
