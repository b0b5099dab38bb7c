"""What :func:`mlgp.training.fit` adds to an epoch's trace row beyond the bound, and where it writes
the row: the validation split's P@k (:func:`validation_row`) and the TensorBoard scalars
(:func:`write_scalars`)."""

from __future__ import annotations

import tensorflow as tf

__all__ = ["validation_row", "write_scalars"]


def write_scalars(writer, epoch: int, row: dict) -> None:
    """Write ``row``'s values (all but ``epoch``) as scalars at step ``epoch`` (nothing without a writer)."""
    if writer is None:
        return
    with writer.as_default(step=epoch):
        for key, value in row.items():
            if key != "epoch":
                tf.summary.scalar(key, value)
    writer.flush()


def validation_row(model, validation, ks) -> dict:
    """``{"P@k": percent}`` for ``ks`` on the checked ``validation`` = (X, Y), ranked by the model's
    ``mean_utilities`` a block of rows at a time through its input map."""
    from ..metrics import precision_at_k, topk
    from ..scores import score_in_batches

    Xv, Yv = validation  # checked once, before the first epoch
    scores = score_in_batches(model.mean_utilities, Xv, 1000, top_k=max(ks), num_labels=model.num_labels,
                              check_input=False, input_map=model.input_map)
    return {f"P@{k}": 100.0 * precision_at_k(Yv, topk(scores, k), k) for k in ks}
