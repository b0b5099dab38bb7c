"""Building a q(u) family by name, and converting any family into a Cholesky one."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from ..errors import ArgumentError, ShapeError
from .base import QDistribution
from .cholesky import CholeskyQ, WhitenedQ
from .preconditioned import PreconditionedQ

__all__ = ["Q_FAMILIES", "check_q_family", "make_q", "to_cholesky"]

#: The q(u) families by name: the registry every ``q_family`` argument and option is checked against.
Q_FAMILIES: dict[str, type[QDistribution]] = {
    "cholesky": CholeskyQ,
    "whitened": WhitenedQ,
    "preconditioned": PreconditionedQ,
}


def check_q_family(name) -> str:
    """``name`` if it names a family of :data:`Q_FAMILIES`.

    Raises
    ------
    ArgumentError
        For any other value, naming the choices.
    """
    if not isinstance(name, str) or name not in Q_FAMILIES:
        raise ArgumentError(f"q_family must be one of {', '.join(repr(n) for n in Q_FAMILIES)}; got {name!r}")
    return name


def make_q(family: str, num_inducing: int, num_latent_gps: int, **parameters) -> QDistribution:
    """The q(u) family ``family`` for M = ``num_inducing``, P = ``num_latent_gps``.

    ``parameters`` go to the family's constructor (``q_mu``, ``q_sqrt`` or ``q_sigma``, …).
    """
    return Q_FAMILIES[check_q_family(family)](num_inducing, num_latent_gps, **parameters)


def to_cholesky(q: QDistribution, Kuu, whiten: bool = False) -> CholeskyQ:
    """A :class:`CholeskyQ` (or, with ``whiten``, :class:`WhitenedQ`) representing the same q(u).

    ``Kuu`` is K_ZZ (M, M) without jitter; a whitened result uses chol(K_ZZ + jitter I) with ``q``'s
    jitter. Costs O(P M³).
    """
    Kuu = tf.convert_to_tensor(Kuu, dtype=q.float_type)
    m, S = q.implied_gaussian(Kuu)
    L = tf.linalg.cholesky(S)
    if whiten:
        Lk = q.kuu_cholesky(Kuu)
        m = tf.linalg.triangular_solve(Lk, m, lower=True)
        L = tf.linalg.triangular_solve(Lk[None], L, lower=True)
    if not np.all(np.isfinite(L.numpy())):
        raise ShapeError("the implied covariance is not numerically positive definite; cannot convert")
    cls = WhitenedQ if whiten else CholeskyQ
    return cls(q.num_inducing, q.num_latent_gps, q_mu=m.numpy(), q_sqrt=np.tril(L.numpy()), jitter=q.jitter)
