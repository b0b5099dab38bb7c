"""What :func:`mlgp.training.fit` gives its step recorder (:mod:`mlgp.estimator.recorder`) and where
it writes an epoch's row: how the model ranks the validation rows (:func:`ranking`, whose P@k the
recorder records as for every family) and the TensorBoard scalars (:func:`write_scalars`)."""

from __future__ import annotations

import tensorflow as tf

__all__ = ["ranking", "write_scalars"]


def write_scalars(writer, epoch: int, row: dict) -> None:
    """Write ``row``'s values (all but ``epoch``) as scalars at step ``epoch`` (nothing without a writer)."""
    if writer is None:
        return
    with writer.as_default(step=epoch):
        for key, value in row.items():
            if key != "epoch":
                tf.summary.scalar(key, value)
    writer.flush()


def ranking(model, X, k: int):
    """The :class:`~mlgp.scores.TopK` of the ``k`` best labels of each row of the checked features
    ``X``, ranked by the model's ``mean_utilities`` a block of rows at a time through its input map."""
    from ..scores import score_in_batches

    return score_in_batches(model.mean_utilities, X, 1000, top_k=k, num_labels=model.num_labels, check_input=False,
                            input_map=model.input_map)
