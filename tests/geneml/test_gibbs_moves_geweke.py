"""The Gibbs sweep with the balance move and the exposure drawn with ξ summed out, by Geweke's
successive-conditional test (as ``test_gibbs.py``'s for the plain sweep): θ ~ p(θ); repeat
Y ~ p(Y | θ), θ ← one sweep given Y. If every step leaves the posterior invariant, θ's marginal
stays the prior."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from mlgp.geneml.em import EMState, Priors
from mlgp.geneml.gibbs import GibbsOptions, gibbs
from _geweke import draw_labels  # noqa: E402 (tests/geneml is on the path)



@pytest.mark.slow
@pytest.mark.parametrize("balance, collapse", [(True, False), (False, True), (True, True)])
def test_geweke_with_the_new_moves(balance: bool, collapse: bool) -> None:
    N, D, K, k = 6, 3, 4, 2
    p = Priors(lambda_u=2.0, lambda_v=1.5, lambda_w=3.0, alpha=2.0, beta=3.0)
    rng = np.random.default_rng(3)
    X = sp.csr_matrix(rng.standard_normal((N, D)))
    W = rng.standard_normal((D, k)) / np.sqrt(p.lambda_w)
    state = EMState(W, np.asarray(X @ W) + rng.standard_normal((N, k)) / np.sqrt(p.lambda_u),
                    rng.standard_normal((K, k)) / np.sqrt(p.lambda_v), rng.beta(p.alpha, p.beta, K))
    options = GibbsOptions(1, block_rows=4, balance_move=balance, collapse_exposure=collapse)
    mu, V, Wd, R = [], [], [], []
    for it in range(600):
        _, _, state = gibbs(X, draw_labels(state, rng), state, p, options, seed=it)
        mu.append(state.mu), V.append(state.V), Wd.append(state.W), R.append(state.U - X @ state.W)
    mu = np.array(mu)
    assert abs(mu.mean() - 0.4) < 0.03 and abs(mu.var() / 0.04 - 1) < 0.25
    assert abs(np.var(V) * p.lambda_v - 1) < 0.15
    assert abs(np.var(Wd) * p.lambda_w - 1) < 0.2
    assert abs(np.var(R) * p.lambda_u - 1) < 0.12
