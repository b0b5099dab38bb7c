"""The collapsed exposure step of GenEML's Gibbs sweep (:func:`mlgp.geneml.draws.draw_exposure`)
and its vectorised slice sampler: started from an exact draw of the target, one step must give an
exact draw again (checked by KS against the target, thousands of independent copies at once), and
it must move."""

from __future__ import annotations

import numpy as np
from scipy.special import expit
from scipy.stats import kstest, norm

from mlgp.geneml.draws import draw_exposure, slice_sample_each


def test_the_slice_sampler_keeps_each_target() -> None:
    rng = np.random.default_rng(0)
    n = 3000
    means, sds = np.repeat([-2.0, 0.0, 5.0], n), np.repeat([0.5, 1.0, 3.0], n)
    x0 = rng.normal(means, sds)
    x = slice_sample_each(lambda x: norm.logpdf(x, means, sds), x0, rng)
    for j in range(3):
        part = slice(j * n, (j + 1) * n)
        assert kstest((x[part] - means[part]) / sds[part], "norm").pvalue > 1e-3, j
        assert np.median(np.abs(x[part] - x0[part])) > 0.2 * sds[part][0]  # it moves


def _exact_posterior(p_zero: np.ndarray, positives: int, alpha: float, beta: float):
    """The grid CDF of p(μ) ∝ Beta(μ; α, β) μ^{n₁} Π (1 − μ s_n), and a sampler from it."""
    grid = np.linspace(1e-6, 1 - 1e-6, 20001)
    log_f = ((alpha - 1 + positives) * np.log(grid) + (beta - 1) * np.log1p(-grid)
             + np.sum(np.log1p(-grid[:, None] * p_zero[None, :]), axis=1))
    f = np.exp(log_f - log_f.max())
    cdf = np.cumsum(f)
    cdf /= cdf[-1]
    return (lambda q: np.interp(q, grid, cdf)), (lambda u: np.interp(u, cdf, grid))


def test_the_exposure_step_keeps_its_conditional() -> None:
    """One label's column repeated K times: μ₀ drawn exactly from p(μ | ψ, Y), one step, KS
    against the grid CDF. Dropping the likelihood, the prior or the Jacobian fails it."""
    rng = np.random.default_rng(1)
    N, K = 40, 4000
    psi = rng.normal(0.0, 2.0, N)
    y = rng.random(N) < 0.3 * expit(psi)
    p_zero = np.where(y, 0.0, expit(psi))
    alpha, beta = 2.0, 3.0
    cdf, inverse = _exact_posterior(p_zero[~y], int(y.sum()), alpha, beta)
    mu0 = inverse(rng.random(K))
    blocks = [np.repeat(p_zero[:20, None], K, axis=1), np.repeat(p_zero[20:, None], K, axis=1)]
    mu = draw_exposure(lambda: iter(blocks), np.full(K, y.sum()), mu0, alpha, beta, rng)
    assert kstest(mu, cdf).pvalue > 1e-3
    assert np.median(np.abs(mu - mu0)) > 0.02  # it moves


def test_the_sweep_draws_the_same_with_the_probabilities_held_or_formed(monkeypatch) -> None:
    """The exposure step reads σ(ψ) at each density evaluation: held once where it fits
    (``PSI_CACHE_BYTES``), formed afresh otherwise — the same numbers, so the same draws."""
    import scipy.sparse as sp

    import mlgp.geneml.gibbs as gibbs_module
    from mlgp.geneml.em import EMState, Priors

    rng = np.random.default_rng(3)
    X = sp.csr_matrix(rng.standard_normal((30, 5)))
    Y = sp.csr_matrix((rng.random((30, 6)) < 0.3).astype(float))
    start = EMState(np.zeros((5, 2)), 0.1 * rng.standard_normal((30, 2)), 0.1 * rng.standard_normal((6, 2)),
                    np.full(6, 0.9))
    options = gibbs_module.GibbsOptions(3, 1, block_rows=7, collapse_exposure=True)
    held, _, _ = gibbs_module.gibbs(X, Y, start, Priors(), options, seed=2)
    monkeypatch.setattr(gibbs_module, "PSI_CACHE_BYTES", 0)
    formed, _, _ = gibbs_module.gibbs(X, Y, start, Priors(), options, seed=2)
    np.testing.assert_array_equal(held["mu"], formed["mu"])
    assert not np.allclose(held["mu"][0], 0.9)  # the step moved μ
