"""What the Gibbs sampler's Geweke tests share: labels drawn from GenEML's likelihood at a state."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.special import expit

from mlgp.geneml.em import EMState


def draw_labels(state: EMState, rng: np.random.Generator) -> sp.csr_matrix:
    """Y ~ p(Y | U, V, μ): each entry exposed with probability μ_l, then relevant with σ(u_n · v_l)."""
    exposed = rng.random(state.U.shape[:1] + state.V.shape[:1]) < state.mu
    return sp.csr_matrix((exposed & (rng.random(exposed.shape) < expit(state.U @ state.V.T))).astype(float))
