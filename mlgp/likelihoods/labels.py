"""The label part of a minibatch when negative labels are subsampled."""

from __future__ import annotations

from typing import NamedTuple

import tensorflow as tf


class LabelBatch(NamedTuple):
    """Labels of a minibatch of B points, S label slots per point.

    Slot ``(i, s)`` names label ``indices[i, s]`` of point ``i`` with sign ``signs[i, s]`` (+1 for
    a positive label, −1 for a negative one) and weight ``weights[i, s]`` ≥ 0: 1 for positives,
    ``|N_i| / |L_i|`` for the sampled negatives, 0 for padding slots.

    Attributes
    ----------
    indices
        (B, S) int32 label indices in ``[0, K)``.
    signs
        (B, S) float, ±1.
    weights
        (B, S) float, ≥ 0.
    """

    indices: tf.Tensor
    signs: tf.Tensor
    weights: tf.Tensor
