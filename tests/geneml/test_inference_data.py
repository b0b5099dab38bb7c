"""GenEML's Gibbs draws as an ``arviz.InferenceData`` (:mod:`mlgp.geneml.inference_data`): every
variable in ArviZ's (chain, draw, …) order, the log posterior as ``lp``, the burn-in apart, and
ArviZ's own functions (``summary``, ``rhat``, ``ess``, ``plot_trace``) working on it with the values
of mlgp's diagnostics."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from mlgp.geneml.diagnostics import arviz, ess, split_rhat
from mlgp.geneml.em import EMState, Priors
from mlgp.geneml.gibbs import GibbsOptions, gibbs
from mlgp.geneml.inference_data import inference_data


@pytest.fixture(scope="module")
def drawn():
    rng = np.random.default_rng(0)
    N, D, K, k = 30, 5, 6, 2
    X = sp.csr_matrix(rng.standard_normal((N, D)))
    Y = sp.csr_matrix((rng.random((N, K)) < 0.3).astype(float))
    start = EMState(np.zeros((D, k)), 0.1 * rng.standard_normal((N, k)), 0.1 * rng.standard_normal((K, k)),
                    np.full(K, 0.9))
    options = GibbsOptions(6, 3, block_rows=7, precision_prior=(1.0, 1.0))
    samples, trace, _ = gibbs(X, Y, start, Priors(), options, num_chains=3, seed=5, watch=X[:4])
    return samples, trace


def test_every_draw_is_in_chain_draw_order(drawn) -> None:
    samples, trace = drawn
    data = inference_data(samples, trace)
    post = data.posterior
    assert post.sizes["chain"] == 3 and post.sizes["draw"] == 6
    np.testing.assert_array_equal(post["V"].values, np.moveaxis(samples["V"], 0, 1))
    np.testing.assert_array_equal(post["mu"].values[2, 4], samples["mu"][4, 2])
    np.testing.assert_array_equal(post["watched"].values[1], samples["watched"][:, 1])
    assert post["V"].dims == ("chain", "draw", "label", "latent")
    assert post["watched"].dims == ("chain", "draw", "watched_point", "label")
    np.testing.assert_array_equal(post["lambda_u"].values, samples["precisions"][..., 0].T)
    np.testing.assert_array_equal(post["lambda_v"].values, np.moveaxis(samples["precisions"][..., 2:], 0, 1))
    np.testing.assert_array_equal(post["draw"].values, np.arange(4, 10))  # the kept sweeps' numbers


def test_the_log_posterior_is_lp_and_the_burn_in_apart(drawn) -> None:
    samples, trace = drawn
    data = inference_data(samples, trace)
    kept = trace[trace["kept"]]
    lp = data.sample_stats["lp"].values
    assert lp.shape == (3, 6)
    np.testing.assert_array_equal(lp[1], kept.loc[kept["chain"] == 1, "objective"].to_numpy())
    warm = data.warmup_sample_stats["lp"].values
    assert warm.shape == (3, 3)
    np.testing.assert_array_equal(warm[2], trace.loc[(trace["chain"] == 2) & ~trace["kept"], "objective"])


def test_arviz_reads_it_with_mlgps_values(drawn) -> None:
    samples, trace = drawn
    az = arviz()
    data = inference_data(samples, trace)
    table = az.summary(data, var_names=["mu", "lambda_u"], kind="diagnostics")
    assert "r_hat" in table and "ess_bulk" in table and "ess_tail" in table and len(table) == 6 + 1
    np.testing.assert_allclose(az.rhat(data)["mu"].values, split_rhat(samples["mu"]), rtol=1e-12)
    np.testing.assert_allclose(az.ess(data, method="bulk")["mu"].values, ess(samples["mu"]), rtol=1e-12)
    lp = data.sample_stats["lp"].values
    np.testing.assert_allclose(float(az.rhat(lp)), float(split_rhat(lp.T)), rtol=1e-12)


def test_plot_trace_draws_it(drawn) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    samples, trace = drawn
    axes = arviz().plot_trace(inference_data(samples, trace), var_names=["lambda_u", "lambda_w"])
    assert axes.shape == (2, 2)
    plt.close("all")


def test_without_burn_in_there_is_no_warmup_group() -> None:
    rng = np.random.default_rng(1)
    X = sp.csr_matrix(rng.standard_normal((12, 3)))
    Y = sp.csr_matrix((rng.random((12, 4)) < 0.4).astype(float))
    start = EMState(np.zeros((3, 2)), 0.1 * rng.standard_normal((12, 2)), 0.1 * rng.standard_normal((4, 2)),
                    np.full(4, 0.9))
    samples, trace, _ = gibbs(X, Y, start, Priors(), GibbsOptions(4, 0, block_rows=6), num_chains=2, seed=1)
    data = inference_data(samples, trace)
    assert "warmup_sample_stats" not in data.groups() and "lambda_u" not in data.posterior
