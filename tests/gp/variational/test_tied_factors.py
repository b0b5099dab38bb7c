"""Tied q(u) factors (CholeskyQ.tie): the marginals and the KL against the untied family with every
factor equal, and tie / untie's contract."""

from __future__ import annotations

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from gpflow import kullback_leiblers

from mlgp.errors import ArgumentError
from mlgp.variational import CholeskyQ, WhitenedQ

M, P, B = 5, 3, 7


def _family(cls, rng, equal=True):
    L0 = np.tril(0.3 * rng.normal(size=(M, M)), -1) + np.diag(rng.uniform(0.3, 1.2, M))
    L = np.tile(L0, (P, 1, 1)) if equal else np.stack([L0 * (1 + 0.1 * p) for p in range(P)])
    return cls(M, P, q_mu=rng.normal(size=(M, P)), q_sqrt=L)


def _inputs(rng):
    A = rng.normal(size=(M, M))
    Kuu = A @ A.T + M * np.eye(M)
    Kmn = rng.normal(size=(M, B))
    Knn = np.full(B, 10.0)
    return tf.constant(Kuu), tf.constant(Kmn), tf.constant(Knn)


@pytest.mark.parametrize("cls", [CholeskyQ, WhitenedQ])
def test_tied_marginals_and_kl_equal_the_untied_family_with_equal_factors(cls):
    rng = np.random.default_rng(3)
    q = _family(cls, rng)
    Kuu, Kmn, Knn = _inputs(rng)
    factor = q.factorise(Kuu)
    mean, var = q.marginals(Kmn, Knn, factor)
    kl = q.kl(Kuu, factor)
    reference = kullback_leiblers.gauss_kl(q.q_mu, q.q_sqrt, K_cholesky=None if q.whiten else factor)  # GPflow's, every factor
    q.tie()
    tied_mean, tied_var = q.marginals(Kmn, Knn, factor)
    assert tied_var.shape == (B, P)
    np.testing.assert_allclose(tied_mean.numpy(), mean.numpy(), rtol=1e-12)
    np.testing.assert_allclose(tied_var.numpy(), var.numpy(), rtol=1e-10)
    np.testing.assert_allclose(q.kl(Kuu, factor).numpy(), reference.numpy(), rtol=1e-10)
    np.testing.assert_allclose(kl.numpy(), reference.numpy(), rtol=1e-10)


@pytest.mark.parametrize("cls", [CholeskyQ, WhitenedQ])
def test_tied_kl_depends_on_every_mean(cls):
    """The mean part of the tied KL sums over all P means, not only the first."""
    rng = np.random.default_rng(4)
    q = _family(cls, rng)
    Kuu, _, _ = _inputs(rng)
    q.tie()
    factor = q.factorise(Kuu)
    before = float(q.kl(Kuu, factor))
    mu = q.q_mu.numpy()
    mu[:, -1] += 1.0
    q.q_mu.assign(mu)
    expected = float(kullback_leiblers.gauss_kl(q.q_mu, q.q_sqrt, K_cholesky=None if q.whiten else factor))
    assert float(q.kl(Kuu, factor)) == pytest.approx(expected, rel=1e-10)
    assert float(q.kl(Kuu, factor)) != pytest.approx(before, rel=1e-6)


def test_tie_holds_the_factors_and_untie_restores_the_trainable_flag():
    rng = np.random.default_rng(5)
    q = _family(WhitenedQ, rng)
    assert not q.tied and q.q_sqrt.trainable
    q.tie()
    assert q.tied and not q.q_sqrt.trainable
    assert q.q_sqrt.unconstrained_variable.ref() not in {v.ref() for v in q.trainable_variables}
    q.tie()  # a second tie keeps the flag it saved
    q.untie()
    assert not q.tied and q.q_sqrt.trainable
    q.untie()  # untying an untied family does nothing
    assert q.q_sqrt.trainable
    gpflow.utilities.set_trainable(q.q_sqrt, False)  # held by the user: untie leaves it held
    q.tie()
    q.untie()
    assert not q.tied and not q.q_sqrt.trainable


def test_tie_refuses_factors_that_differ():
    q = _family(CholeskyQ, np.random.default_rng(6), equal=False)
    with pytest.raises(ArgumentError, match="needs the P factors of q_sqrt to be equal"):
        q.tie()
    assert not q.tied and q.q_sqrt.trainable


@pytest.mark.parametrize("scaled, changes", [(slice(None), True), (slice(1, None), False)])
def test_tied_marginals_read_the_first_factor_as_it_is_now(scaled, changes):
    """Tied, the marginals and the KL read the current L_1 (not a copy taken by tie) and L_1 alone:
    one (M, M) product, not P. Scaling every factor changes them; scaling factors 2…P does not."""
    rng = np.random.default_rng(9)
    q = _family(WhitenedQ, rng)
    Kuu, Kmn, Knn = _inputs(rng)
    q.tie()
    factor = q.factorise(Kuu)
    _, var = q.marginals(Kmn, Knn, factor)
    kl = float(q.kl(Kuu, factor))
    L = q.q_sqrt.numpy()
    L[scaled] *= 3.0
    q.q_sqrt.assign(L)
    _, var2 = q.marginals(Kmn, Knn, factor)
    if changes:
        assert np.all(var2.numpy() > var.numpy()) and float(q.kl(Kuu, factor)) != kl
    else:
        np.testing.assert_array_equal(var2.numpy(), var.numpy())
        assert float(q.kl(Kuu, factor)) == kl
