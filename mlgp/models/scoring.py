"""The scoring interface of MLGPF: :class:`MLGPFScoring`, mixed into :class:`~mlgp.models.MLGPF`.

Labels are ranked by the mean utilities f̄ = Φ m(x) + b: :meth:`MLGPFScoring.mean_utilities` of a
block of the kernel's inputs is the one function that computes them (and
:meth:`MLGPFScoring.label_probabilities` E_q[σ(f)]), which :class:`mlgp.recipes.MLGPFClassifier`
scores through; ``decision_function`` gives them dense
(N, K) and ``predict_topk`` as a :class:`~mlgp.scores.TopK`, for CSR or dense features, a block of
rows at a time through :func:`mlgp.scores.score_in_batches` (the scoring interface of every mlgp
model) on the floor's row-block path, each block through the model's input map before anything
densifies it; ``predict_proba`` gives E_q[σ(f)]. Scores are float64 whatever the model's float type.
The mixin needs ``predict_latent``, ``likelihood``, ``num_labels``, ``num_features``, ``input_dim``,
``input_map``, ``float_type`` and ``float_context`` from the model.
"""

from __future__ import annotations

import functools
import weakref
from typing import Callable

import numpy as np
import tensorflow as tf
from check_shapes import check_shapes

from ..floats import float_policy
from ..scores import TopK, score_in_batches

__all__ = ["MLGPFScoring"]

# One compiled f̄(X) per model, built on first use. Kept beside the model rather than in its
# attributes, so that tf.Module's tracking, checkpoints and deepcopy never see (or copy) a function
# bound to another model's variables; the model is held weakly, so the entry dies with it.
_COMPILED: "weakref.WeakKeyDictionary[object, Callable[[tf.Tensor], tf.Tensor]]" = weakref.WeakKeyDictionary()


class MLGPFScoring:
    """``decision_function``, ``predict_topk``, ``predict_scores`` and ``predict_proba`` of MLGPF."""

    @check_shapes("Xnew: [N, d]", "return: [N, K]")
    def _mean_utilities(self, Xnew: tf.Tensor) -> tf.Tensor:
        """f̄ = Φ m(x) + b at the kernel's inputs ``Xnew`` (N, d); (N, K)."""
        mu, _ = self.predict_latent(Xnew)
        return tf.linalg.matmul(mu, self.likelihood.loadings, transpose_b=True) + self.likelihood.bias

    def _compiled_mean_utilities(self) -> Callable[[tf.Tensor], tf.Tensor]:
        """:meth:`_mean_utilities` compiled once for this model, for any number of rows.

        The fixed input signature (None, d) means batches of any size share one trace. The
        function wraps a ``functools.partial`` rather than a closure because TensorFlow counts
        retracing per Python code object: closures made by many models would share one counter and
        their first (legitimate) traces would be reported as retracing.
        """
        fn = _COMPILED.get(self)
        if fn is None:
            spec = tf.TensorSpec([None, self.input_dim], self.float_type)
            fn = tf.function(functools.partial(_call_mean_utilities, weakref.ref(self)), input_signature=[spec])
            _COMPILED[self] = fn
        return fn

    @property
    def _max_feature_magnitude(self) -> float:
        """The largest feature magnitude the model's float type accepts."""
        return float_policy(self.float_type).max_feature_magnitude

    def mean_utilities(self, Xb: np.ndarray) -> np.ndarray:
        """f̄ = Φ m(x) + b for a block (B, d) of the kernel's inputs (rows through the input map,
        :meth:`model_inputs`): (B, K) float64, by one compiled function for any B."""
        with self.float_context():
            return self._compiled_mean_utilities()(tf.constant(Xb, dtype=self.float_type)).numpy().astype(np.float64, copy=False)

    def label_probabilities(self, Xb: np.ndarray) -> np.ndarray:
        """E_q[σ(f)] for a block (B, d) of the kernel's inputs: (B, K) float64, eagerly."""
        x = tf.constant(Xb, dtype=self.float_type)
        with self.float_context():
            mu, var = self.predict_latent(x)
            return self.likelihood.predict_mean_and_var(x, mu, var)[0].numpy().astype(np.float64, copy=False)

    def decision_function(self, X, batch_size: int = 1000, *, check_input: bool = True) -> np.ndarray:
        """Mean utilities f̄ = Φ m(x) + b, the scores that rank the labels.

        Parameters
        ----------
        X
            (N, D) features, CSR or dense; ``batch_size`` rows at a time go through the input map
            (or are densified).
        batch_size
            Rows per call of the compiled function.
        check_input
            Check ``X`` (D columns, finite values); ``False`` trusts a caller that has checked it.

        Returns
        -------
        np.ndarray
            (N, K) float64.
        """
        return score_in_batches(self.mean_utilities, X, batch_size, num_labels=self.num_labels,
                                num_features=self.num_features, check_input=check_input, input_map=self.input_map,
                                max_magnitude=self._max_feature_magnitude)

    def predict_topk(self, X, k: int, batch_size: int = 1000, *, check_input: bool = True) -> TopK:
        """Each row's ``k`` labels of highest mean utility, in O(N k) memory.

        Parameters
        ----------
        X
            (N, D) features, CSR or dense; scored ``batch_size`` rows at a time.
        k
            Labels kept per row, 1 ≤ k ≤ K.
        batch_size
            Rows per call of the compiled function.
        check_input
            As in :meth:`decision_function`.

        Returns
        -------
        TopK
            (N, k) label indices and scores, best first (ties by lower label index).
        """
        return score_in_batches(self.mean_utilities, X, batch_size, top_k=k, num_labels=self.num_labels,
                                num_features=self.num_features, check_input=check_input, input_map=self.input_map,
                                max_magnitude=self._max_feature_magnitude)

    def predict_scores(self, X, batch_size: int = 1000, top_k: int | None = None) -> np.ndarray | TopK:
        """One call for both: :meth:`predict_topk` when ``top_k`` is given, else
        :meth:`decision_function`.

        Parameters
        ----------
        X
            (N, D) features, CSR or dense.
        batch_size
            Rows per call of the compiled function.
        top_k
            If given, return :class:`~mlgp.scores.TopK` with the ``top_k`` best labels per row;
            otherwise the dense (N, K) array.
        """
        if top_k is None:
            return self.decision_function(X, batch_size)
        return self.predict_topk(X, top_k, batch_size)

    def predict_proba(self, X, batch_size: int = 1000) -> np.ndarray:
        """Predictive label probabilities E_q[σ(f_k(x))], dense (N, K).

        ``X`` (N, D) is CSR or dense, scored ``batch_size`` rows at a time (eagerly).
        """

        return score_in_batches(self.label_probabilities, X, batch_size, num_labels=self.num_labels, num_features=self.num_features,
                                input_map=self.input_map,
                                max_magnitude=self._max_feature_magnitude)


def _call_mean_utilities(model_ref: "weakref.ReferenceType[MLGPFScoring]", Xnew: tf.Tensor) -> tf.Tensor:
    return model_ref()._mean_utilities(Xnew)
