"""The ranking losses a FastXML split can optimise, as point weights, label weights and discounts.

Contract: :func:`split_loss` turns 0/1 labels Y (N, K) into ``G = diag(ω) Y diag(a)`` (CSR) and a
discount vector (K,) so that a point's gain under a ranking r is Σ_j G[i, j] · discount[pos_r(j)]
(see :mod:`.split`):

- ``"ndcg"`` (FastXML): ω_i = I_k(y_i) = 1 / Σ_{l=1}^{min(k, |y_i|)} 1/log2(1 + l), discount
  1/log2(2 + p) for positions p < k (0-based), 0 after; k = K gives the paper's nDCG@L;
- ``"dcg"`` (PfastXML, with ``a`` the inverse propensities): ω_i = 1, the same discount;
- ``"precision"``: ω_i = 1/k, discount 1 for p < k: precision@k (the paper's Table 7 P@5 loss).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["SPLIT_LOSSES", "split_loss"]

SPLIT_LOSSES = ("ndcg", "dcg", "precision")


def split_loss(Y: sp.csr_matrix, loss: str = "ndcg", k: int | None = None,
               label_weights: np.ndarray | None = None) -> tuple[sp.csr_matrix, np.ndarray]:
    """``(G, discount)`` for labels ``Y`` (N, K): CSR (N, K) float64 and (K,) float64.

    ``k`` (default K) truncates the loss at rank k; ``label_weights`` (K,) scales each label.
    """
    if loss not in SPLIT_LOSSES:
        raise ValueError(f"split_loss must be one of {SPLIT_LOSSES}, got {loss!r}")
    N, K = Y.shape
    k = K if k is None else min(int(k), K)
    pos = np.arange(K)
    if loss == "precision":
        discount = (pos < k).astype(np.float64)
        point = np.full(N, 1.0 / k)
    else:
        discount = np.where(pos < k, 1.0 / np.log2(pos + 2.0), 0.0)
        if loss == "ndcg":
            ideal = np.concatenate([[0.0], np.cumsum(discount)])  # ideal[c]: DCG of c relevant labels
            n_pos = np.minimum(np.diff(Y.indptr), k)
            point = np.divide(1.0, ideal[n_pos], out=np.zeros(N), where=n_pos > 0)
        else:
            point = np.ones(N)
    G = sp.csr_matrix(Y, dtype=np.float64, copy=True)
    G.data = G.data * np.repeat(point, np.diff(G.indptr))
    if label_weights is not None:
        G.data = G.data * np.asarray(label_weights, dtype=np.float64)[G.indices]
    return G, discount
