"""A fitted GenEML's Gibbs draws for ArviZ (``inference_data()``) and its warning when the chains
disagree (split R-hat of the log posterior above 1.01), naming the figures."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from mlgp.errors import ArgumentError
from mlgp.geneml import GenEML
from mlgp.geneml.diagnostics import RHAT_LIMIT, ConvergenceWarning, warn_unconverged


def _data():
    rng = np.random.default_rng(0)
    X = sp.csr_matrix(rng.random((40, 6)) * (rng.random((40, 6)) < 0.6) + np.eye(40, 6))
    Y = sp.csr_matrix((rng.random((40, 5)) < 0.3).astype(float))
    return X, Y


def test_a_gibbs_fit_gives_its_draws_to_arviz() -> None:
    X, Y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = GenEML(n_components=2, inference="gibbs", num_chains=2, num_burnin_steps=2, num_results=5,
                     random_state=0, calibration=None).fit(X, Y)
    data = est.inference_data()
    assert data.posterior.sizes["chain"] == 2 and data.posterior.sizes["draw"] == 5
    kept = est.trace_[est.trace_["kept"]]
    np.testing.assert_array_equal(data.sample_stats["lp"].values[1], kept.loc[kept["chain"] == 1, "log_posterior"])
    with pytest.raises(ArgumentError, match="inference='gibbs'"):
        GenEML(n_components=2, max_iter=2, calibration=None).fit(X, Y).inference_data()


@pytest.mark.parametrize("rhat, chains, warned", [(1.2, 4, True), (RHAT_LIMIT, 4, False), (1.005, 4, False),
                                                  (np.nan, 4, False), (1.3, 1, True)])
def test_the_warning_reads_the_log_posteriors_rhat(rhat, chains, warned) -> None:
    diagnostics = {"draws": 400.0, "rhat_log_posterior": rhat, "ess_log_posterior": 25.0, "rhat_watched_share_1.1": 0.21}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert warn_unconverged(diagnostics, chains) is diagnostics
    found = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert len(found) == int(warned)
    if warned:
        text = str(found[0].message)
        assert f"{rhat:.3f}" in text and "21 %" in text and "ESS of the log posterior 25 of 400" in text
        assert ("two halves" in text) == (chains == 1)


@pytest.mark.parametrize("params, match", [
    (dict(balance_move=True), "balance_move is a move of the Gibbs sampler"),
    (dict(collapse_exposure=True), "collapse_exposure is a move of the Gibbs sampler"),
    (dict(collapse_exposure=True, inference="gibbs", exposure=None), "needs exposure='global', not None"),
    (dict(collapse_exposure=True, inference="gibbs", exposure="covariates"), "not 'covariates'"),
])
def test_a_move_where_it_cannot_run_is_refused(params, match) -> None:
    X, Y = _data()
    with pytest.raises(ArgumentError, match=match):
        GenEML(n_components=2, max_iter=1, calibration=None, **params).fit(X, Y)


@pytest.mark.parametrize("move", ["balance_move", "collapse_exposure"])
def test_each_move_reaches_the_sampler(move: str) -> None:
    """The same seed with and without the move: the draws differ (the move ran), and the fit is
    reproducible with it."""
    X, Y = _data()
    fit = lambda **kw: GenEML(n_components=2, inference="gibbs", num_chains=1, num_burnin_steps=1,  # noqa: E731
                              num_results=3, random_state=0, calibration=None, **kw).fit(X, Y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        plain, moved, again = fit(), fit(**{move: True}), fit(**{move: True})
    assert not np.array_equal(plain.samples_["V"], moved.samples_["V"])
    np.testing.assert_array_equal(moved.samples_["V"], again.samples_["V"])
