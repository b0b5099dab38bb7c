"""fit(covariance_warmup=…): the factors held while tied, freed after exactly the warm-up's steps,
untied whatever happens, and combinations that cannot run refused before any work."""

from __future__ import annotations

import numpy as np
import pytest
from _training_problem import build, small_problem

from mlgp.errors import ArgumentError, TrainingDivergedError
from mlgp.training import fit

STEPS_PER_EPOCH = 2  # 60 points, batch 30


@pytest.fixture(scope="module")
def problem():
    return small_problem()


def _fit(problem, model, epochs, **kw):
    return fit(model, (problem.train.X, problem.train.Y), epochs=epochs, batch_size=30, learning_rate=0.05,
               progress=False, **kw)


@pytest.mark.parametrize("family", ["cholesky", "whitened"])
def test_the_factors_are_held_for_exactly_the_warmup_steps(problem, family):
    start = build(problem, q_family=family).q_sqrt.numpy()
    held = build(problem, q_family=family)
    _fit(problem, held, epochs=2, covariance_warmup=2 * STEPS_PER_EPOCH)  # every step tied
    assert np.array_equal(held.q_sqrt.numpy(), start)
    freed = build(problem, q_family=family)
    trace = _fit(problem, freed, epochs=3, covariance_warmup=2 * STEPS_PER_EPOCH + 1)  # the 6th step is untied
    assert list(trace["step"]) == [2, 4, 6]
    assert not np.array_equal(freed.q_sqrt.numpy(), start)
    for model in (held, freed):
        assert not model.q.tied and model.q_sqrt.trainable


def test_all_ties_the_whole_run_and_the_means_still_train(problem):
    model = build(problem, q_family="whitened")
    start_sqrt, start_mu = model.q_sqrt.numpy(), model.q_mu.numpy()
    trace = _fit(problem, model, epochs=3, covariance_warmup="all")
    assert np.array_equal(model.q_sqrt.numpy(), start_sqrt)
    assert not np.allclose(model.q_mu.numpy(), start_mu)
    assert trace["elbo"].iloc[-1] > trace["elbo"].iloc[0]
    assert not model.q.tied


def test_a_tied_step_computes_the_same_bound_as_the_untied_one(problem):
    """The first step's bound (the trace's ELBO of a one-step epoch) is the same tied or not: the
    factors are all equal at the start."""
    a, b = build(problem), build(problem)
    tied = fit(a, (problem.train.X, problem.train.Y), epochs=1, batch_size=60, progress=False, covariance_warmup=1)
    untied = fit(b, (problem.train.X, problem.train.Y), epochs=1, batch_size=60, progress=False)
    assert tied["elbo"].iloc[0] == pytest.approx(untied["elbo"].iloc[0], rel=1e-9)
    assert tied["kl"].iloc[0] == pytest.approx(untied["kl"].iloc[0], rel=1e-9)


def test_the_model_leaves_fit_untied_when_training_stops_with_an_error(problem):
    model = build(problem)

    def poison(epoch, m, row):
        m.q_mu.unconstrained_variable.assign(np.full(m.q_mu.shape, np.nan))

    with pytest.raises(TrainingDivergedError, match=r"^the ELBO became nan at epoch 2, step 1; the model was restored "
                       r"to the end of epoch 1\."):
        _fit(problem, model, epochs=3, covariance_warmup="all", callback=poison)
    assert not model.q.tied and model.q_sqrt.trainable


@pytest.mark.parametrize(
    "kw, message",
    [
        (dict(covariance_warmup=-1), "covariance_warmup must be a non-negative integer, got -1"),
        (dict(covariance_warmup="most"), "covariance_warmup must be 'all' or a whole number of steps ≥ 0; got 'most'"),
        (dict(covariance_warmup="auto"), "covariance_warmup must be 'all' or a whole number"),
        (dict(covariance_warmup=3, optimizer="natgrad"), "cannot be combined with optimizer='natgrad'"),
    ],
)
def test_fit_refuses_a_warmup_it_cannot_run(problem, kw, message):
    model = build(problem)
    start = [v.numpy().copy() for v in model.trainable_variables]
    with pytest.raises(ArgumentError, match=message):
        _fit(problem, model, epochs=1, **kw)
    assert all(np.array_equal(a, v.numpy()) for a, v in zip(start, model.trainable_variables))
    assert not model.q.tied


def test_fit_refuses_a_warmup_for_a_family_without_factors(problem):
    model = build(problem, q_family="preconditioned")
    with pytest.raises(ArgumentError, match="needs a q\\(u\\) family with Cholesky factors to tie.*'preconditioned'"):
        _fit(problem, model, epochs=1, covariance_warmup="all")
    _fit(problem, model, epochs=1, covariance_warmup=0)  # none asked: trains


@pytest.mark.slow  # 4 s or more on 2 cores (README: the slow tier)
def test_a_run_resumed_past_the_warmup_is_not_tied_again(problem, tmp_path):
    """Resumed from a checkpoint after 4 steps with a warm-up of 2, the factors train from the first
    resumed step (tying them again would also fail: they differ by then)."""
    model = build(problem)
    _fit(problem, model, epochs=2, covariance_warmup=2, checkpoint_dir=tmp_path)
    resumed = build(problem)
    _fit(problem, resumed, epochs=2, covariance_warmup=2, checkpoint_dir=tmp_path)  # restores epoch 2, trains none
    after_two = resumed.q_sqrt.numpy()
    trace = _fit(problem, resumed, epochs=3, covariance_warmup=2, checkpoint_dir=tmp_path)
    assert list(trace["step"]) == [2, 4, 6]
    assert not np.array_equal(resumed.q_sqrt.numpy(), after_two)
    assert not resumed.q.tied
