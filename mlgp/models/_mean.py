"""One compiled f̄ = Φ m(x) + b per MLGPF model: :func:`compiled_mean_utilities`.

The function is built on first use and kept beside the model rather than in its attributes, so
that ``tf.Module``'s tracking, checkpoints and deepcopy never see (or copy) a function bound to
another model's variables; the model is held weakly, so the entry dies with it.
"""

from __future__ import annotations

import functools
import weakref
from typing import Callable

import tensorflow as tf

__all__ = ["compiled_mean_utilities"]

_COMPILED: "weakref.WeakKeyDictionary[object, Callable[[tf.Tensor], tf.Tensor]]" = weakref.WeakKeyDictionary()


def compiled_mean_utilities(model) -> Callable[[tf.Tensor], tf.Tensor]:
    """``model._mean_utilities`` compiled once for ``model``: (B, d) inputs → (B, K), any B.

    The fixed input signature (None, d) means blocks of any size share one trace. The function
    wraps a ``functools.partial`` rather than a closure because TensorFlow counts retracing per
    Python code object: closures made by many models would share one counter and their first
    (legitimate) traces would be reported as retracing.
    """
    fn = _COMPILED.get(model)
    if fn is None:
        spec = tf.TensorSpec([None, model.input_dim], model.float_type)
        fn = tf.function(functools.partial(_call_mean_utilities, weakref.ref(model)), input_signature=[spec],
                         autograph=False)
        _COMPILED[model] = fn
    return fn


def _call_mean_utilities(model_ref: weakref.ReferenceType, Xnew: tf.Tensor) -> tf.Tensor:
    return model_ref()._mean_utilities(Xnew)
