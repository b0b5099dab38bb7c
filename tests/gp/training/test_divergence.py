"""``fit`` restores the last good state and raises in one place (:func:`mlgp.training.diagnosis.diverged`),
whichever way training diverges: a failed step (a Cholesky factorisation), a non-finite bound, or
parameters left non-finite by an epoch's last step. Each error names what happened and where the
model was restored to, and the model holds the end of the last good epoch again."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import tensorflow as tf
from _training_problem import build, small_problem, values

from mlgp.errors import TrainingDivergedError
from mlgp.training import fit

fit_module = importlib.import_module("mlgp.training.fit")


@pytest.fixture(scope="module")
def problem():
    return small_problem()


def _breaking_step(monkeypatch, call: int, how: str) -> None:
    """Make the ``call``-th training step (after doing its work) fail as ``how`` says: raise a
    failed Cholesky, return a NaN bound, or leave a parameter NaN behind a finite bound."""
    real = fit_module.make_step
    calls = []

    def make_step(model, *args, **kwargs):
        step = real(model, *args, **kwargs)

        def broken(xb, yb):
            calls.append(1)
            elbo, kl = step(xb, yb)
            if len(calls) == call:
                if how == "cholesky":
                    raise tf.errors.InvalidArgumentError(None, None, "Cholesky decomposition was not successful.")
                if how == "bound":
                    return tf.constant(np.nan, elbo.dtype), kl
                variable = model.trainable_variables[0]
                variable.assign(tf.fill(variable.shape, tf.constant(np.nan, variable.dtype)))
            return elbo, kl

        return broken

    monkeypatch.setattr(fit_module, "make_step", make_step)


#: How training breaks → the step that breaks (2 steps per epoch) and the start of the message.
CASES = {"cholesky": (3, r"^training failed at epoch 2, step 1: Cholesky decomposition was not successful\. "
                         r"\(a Cholesky factorisation failed\?\); the model was restored to the end of epoch 1\."),
         "bound": (3, r"^the ELBO became nan at epoch 2, step 1; the model was restored to the end of epoch 1\."),
         "parameter": (4, r"^the last step of epoch 2 made \S+ non-finite; the model was restored to the end of epoch 1\.")}


@pytest.mark.parametrize("how", list(CASES))
def test_the_run_is_restored_to_the_last_good_epoch_and_the_error_says_so(how, problem, monkeypatch) -> None:
    call, message = CASES[how]
    _breaking_step(monkeypatch, call, how)
    model = build(problem)
    good = {}

    def keep(epoch, state, row) -> None:  # returns None: a true return would stop training
        good[epoch] = values(state)

    with pytest.raises(TrainingDivergedError, match=message):
        fit(model, (problem.train.X, problem.train.Y), epochs=4, batch_size=30, progress=False, callback=keep)
    assert list(good) == [1]
    for restored, kept in zip(values(model), good[1]):
        np.testing.assert_array_equal(restored, kept)
