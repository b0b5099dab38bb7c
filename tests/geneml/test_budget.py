"""``max_seconds`` in GenEML: wall seconds from the start of ``fit``, looked at after every step of
every inference (an EM iteration, an online-EM minibatch, a Gibbs sweep), on a fake clock that moves
1 s per reading (:mod:`tests._clock`)."""

from __future__ import annotations

import pytest
from _clock import fake_clock, random_problem, slowed

import mlgp.geneml.estimator as estimator_module
from mlgp.geneml import GenEML


@pytest.fixture(scope="module")
def data():
    return random_problem(200, 12, 6, seed=1)


def test_em_stops_after_the_iteration_that_spends_the_budget(data, monkeypatch) -> None:
    clock = fake_clock(monkeypatch)
    est = GenEML(n_components=2, max_iter=50, max_seconds=3.5, random_state=0, calibration=None).fit(*data)
    assert list(est.trace_["step"]) == [1, 2, 3, 4] and list(est.trace_["elapsed"]) == [1.0, 2.0, 3.0, 4.0]
    assert est.n_iter_ == 4 and clock.readings == 5


def test_online_em_looks_after_every_minibatch_and_skips_the_final_passes(data, monkeypatch) -> None:
    """10 minibatches an epoch: the budget ends the first epoch after its 4th step; the final
    passes are steps too, and none is left."""
    fake_clock(monkeypatch)
    est = GenEML(n_components=2, inference="online-em", batch_size=20, max_iter=5, final_passes=2, max_seconds=3.5,
                 random_state=0, calibration=None).fit(*data)
    assert list(est.trace_["step"]) == [4] and list(est.trace_["final"]) == [False]
    assert list(est.trace_["elapsed"]) == [4.0]


def test_online_em_final_passes_are_bounded_too(data, monkeypatch) -> None:
    """One epoch of 10 steps (readings 1..10), then final passes at 11 and 12: a 11.5 s budget
    stops after the second."""
    fake_clock(monkeypatch)
    est = GenEML(n_components=2, inference="online-em", batch_size=20, max_iter=1, final_passes=5,
                 max_seconds=11.5, random_state=0, calibration=None).fit(*data)
    assert list(est.trace_["final"]) == [False, True, True] and list(est.trace_["elapsed"]) == [10.0, 11.0, 12.0]


def test_gibbs_stops_after_the_sweep_that_spends_the_budget(data, monkeypatch) -> None:
    """Chain 0 is cut in its burn-in at sweep 4, which it keeps as its one draw; chain 1 never
    starts. Without a budget all 2 × 10 sweeps run."""
    fake_clock(monkeypatch)
    est = GenEML(n_components=2, inference="gibbs", num_chains=2, num_burnin_steps=5, num_results=5,
                 max_seconds=3.5, random_state=0, calibration=None, exposure=None).fit(*data)
    assert list(est.trace_["sweep"]) == [1, 2, 3, 4] and list(est.trace_["kept"]) == [False, False, False, True]
    assert est.samples_["V"].shape[:2] == (1, 1) and list(est.trace_["step"]) == [1, 2, 3, 4]


def test_a_later_chain_cut_short_is_dropped(data, monkeypatch) -> None:
    """Chain 0's 4 sweeps read 1..4; chain 1 is cut at its second sweep (6 s ≥ 5.5 s): only chain
    0's draws are kept, so that the chains' draws line up."""
    fake_clock(monkeypatch)
    est = GenEML(n_components=2, inference="gibbs", num_chains=3, num_burnin_steps=2, num_results=2,
                 max_seconds=5.5, random_state=0, calibration=None, exposure=None).fit(*data)
    assert est.samples_["V"].shape[:2] == (2, 1) and est.diagnostics_ is not None


def test_the_budget_counts_the_set_up(data, monkeypatch) -> None:
    """Work before the first iteration (here the exposure set-up, made to take 100 s) counts: a
    50 s budget leaves one iteration."""
    slowed(monkeypatch, fake_clock(monkeypatch), estimator_module, "exposure_covariates")
    est = GenEML(n_components=2, max_iter=50, max_seconds=50.0, random_state=0, calibration=None).fit(*data)
    assert list(est.trace_["step"]) == [1] and est.trace_["elapsed"].iloc[0] == 101.0
