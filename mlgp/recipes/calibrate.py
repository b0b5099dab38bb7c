"""MLGPFClassifier's ``calibration="prior"``: the map toward the label prior fitted on its held-out rows.

Contract: :func:`held_out_prior_map` scores the held-out rows (the ones early stopping and the bias
guard judged on, which the model was not trained on) with the trained model's E_q[σ(f)], a block of
rows at a time, and fits :class:`mlgp.estimator.prior_map.PriorMap` on them, with the label prior of
the rows the model was trained on for the fit and that of all training rows for prediction; a model
the bias guard reduced to its bias gets the label prior itself. The model is not changed.
"""

from __future__ import annotations

import numpy as np

from ..estimator.prior_map import PRIOR_THETA, PriorMap, label_prior

__all__ = ["held_out_prior_map"]

_BLOCK_ROWS = 1000


def held_out_prior_map(model, X_held, Y_held, Y_trained, Y_all, seed: int = 0, bias_only: bool = False) -> PriorMap:
    """The :class:`PriorMap` of ``model`` on raw held-out rows ``X_held`` (N_held, D) with 0/1 labels
    ``Y_held`` (N_held, K) CSR; ``Y_trained`` (N_train, K): the labels it was trained on; ``Y_all``
    (N, K): every training row's (the prior applied at prediction). ``bias_only``: the bias guard
    found that the features predict nothing; the map is then the label prior itself (θ_π), the
    estimate of σ(b) from every training row, not refitted on the held-out few."""
    from ..blocks import take_rows

    if bias_only:
        return PriorMap(PRIOR_THETA, label_prior(Y_all))

    N = X_held.shape[0]
    P = np.concatenate([
        np.asarray(model.label_probabilities(take_rows(X_held, slice(start, min(start + _BLOCK_ROWS, N)),
                                                       input_map=model.input_map)), dtype=np.float64)
        for start in range(0, N, _BLOCK_ROWS)])
    return PriorMap.fit(P, Y_held, label_prior(Y_trained), label_prior(Y_all), seed=seed)
