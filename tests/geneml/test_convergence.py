"""GenEML's convergence stop (``tol``): batch and online EM end at the first iteration (epoch)
whose log posterior changed by at most ``tol`` times its size, and not before; ``tol=None`` runs
every iteration."""

from __future__ import annotations

import numpy as np
import pytest

from mlgp.geneml import GenEML
from mlgp.geneml.em import converged


@pytest.fixture(scope="module")
def data():
    from _clock import random_problem

    return random_problem(300, 25, 15, seed=3)


def _relative_changes(trace) -> np.ndarray:
    total = trace["log_posterior"].to_numpy()
    return np.abs(np.diff(total)) / np.abs(total[1:])


@pytest.mark.parametrize("inference", ["em", "online-em"])
def test_the_fit_stops_at_the_first_small_change_and_not_before(data, inference):
    X, Y = data
    full = GenEML(n_components=3, max_iter=60, tol=None, inference=inference, batch_size=100,
                  final_passes=0).fit(X, Y)
    assert full.n_iter_ == 60
    changes = _relative_changes(full.trace_)
    tol = float(np.quantile(changes, 0.5))  # a tolerance met part-way through
    first = int(np.argmax(changes <= tol)) + 2  # the iteration whose change is the first ≤ tol
    assert 2 < first < 60
    stopped = GenEML(n_components=3, max_iter=60, tol=tol, inference=inference, batch_size=100,
                     final_passes=0).fit(X, Y)
    assert stopped.n_iter_ == first
    np.testing.assert_array_equal(stopped.trace_["log_posterior"], full.trace_["log_posterior"][:first])


def test_converged_compares_the_last_two_values_relative_to_the_last():
    assert not converged([-100.0], 1.0)
    assert not converged([-100.0, -90.0], None)
    assert converged([-100.0, -99.0], 0.0102) and not converged([-100.0, -99.0], 0.0100)
    assert converged([5.0, 5.0], 0.0)
    assert not converged([-200.0, -100.0, -99.9], 1e-4)
