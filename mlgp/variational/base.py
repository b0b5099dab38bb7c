r"""The contract every q(u) family of MLGPF meets: :class:`QDistribution`.

P latent GPs share one kernel and M inducing inputs Z, with prior u_p ~ N(0, K_ZZ). A family owns
the variational parameters of q(u) = Π_p q(u_p) and provides, from K_ZZ (M, M) *without* jitter:

- :meth:`~QDistribution.factorise`: the one factorisation a bound needs (a tensor; which one is the
  family's business). Training steps may compute it outside XLA and pass it back in
  (``fit(jit_compile="except-cholesky")``);
- :meth:`~QDistribution.kl`: Σ_p KL[q(u_p) ‖ p(u_p)];
- :meth:`~QDistribution.marginals`: the means and variances (B, P) of h_p at a batch from K_Zx
  (M, B) and diag k(x, x) (B,);
- :meth:`~QDistribution.implied_gaussian`: the non-whitened (m, S) it represents (for checks and
  conversions, O(P M³)).

Families whose parameters are a mean and a Cholesky factor also expose them to GPflow's
``NaturalGradient`` through :meth:`~QDistribution.natgrad_parameters`.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import tensorflow as tf
from check_shapes import check_shapes
from gpflow import default_float
from gpflow.base import Module
from gpflow.config import default_jitter

from ..errors import ArgumentError

__all__ = ["QDistribution"]


class QDistribution(Module):
    """q(u) = Π_p q(u_p) for P latent GPs at M shared inducing inputs (abstract).

    Parameters
    ----------
    num_inducing, num_latent_gps
        M and P.
    jitter
        Added to the diagonal of K_ZZ where a family factorises it; default GPflow's
        ``default_jitter()`` when the family is built.

    Attributes
    ----------
    family
        The family's name, as :func:`mlgp.variational.make_q` accepts it.
    float_type
        The dtype of its parameters (GPflow's ``default_float()`` when it was built).
    """

    family: ClassVar[str] = ""

    def __init__(self, num_inducing: int, num_latent_gps: int, jitter: float | None = None, name: str | None = None) -> None:
        super().__init__(name=name)
        self.num_inducing = int(num_inducing)
        self.num_latent_gps = int(num_latent_gps)
        self.jitter = float(default_jitter() if jitter is None else jitter)
        self.float_type = np.dtype(default_float())

    # ------------------------------------------------------------------ what a bound needs
    def factorise(self, Kuu: tf.Tensor) -> tf.Tensor:
        """The factorisation that :meth:`kl` and :meth:`marginals` share, from K_ZZ (M, M)."""
        raise NotImplementedError

    def kl(self, Kuu: tf.Tensor, factor: tf.Tensor) -> tf.Tensor:
        """Σ_p KL[q(u_p) ‖ N(0, K_ZZ)], a scalar."""
        raise NotImplementedError

    def marginals(self, Kmn: tf.Tensor, Knn_diag: tf.Tensor, factor: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """Means and variances (B, P) of the P latent GPs from K_Zx (M, B) and diag k(x, x) (B,)."""
        raise NotImplementedError

    def implied_gaussian(self, Kuu: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """The non-whitened q(u_p) = N(m_p, S_p) it represents: m (M, P) and S (P, M, M)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ optional
    def natgrad_parameters(self) -> list[tuple]:
        """``(q_mu, q_sqrt)`` pairs for GPflow's ``NaturalGradient``."""
        raise ArgumentError(f"the {self.family!r} q(u) family has no (mean, Cholesky factor) parameters for "
                            "natural gradients; use optimizer='adam'")

    @check_shapes("Kuu: [M, M]", "return: [M, M]")
    def kuu_cholesky(self, Kuu: tf.Tensor) -> tf.Tensor:
        """chol(K_ZZ + jitter I)."""
        return tf.linalg.cholesky(Kuu + tf.cast(self.jitter, Kuu.dtype) * tf.eye(tf.shape(Kuu)[0], dtype=Kuu.dtype))

    def describe(self) -> dict:
        """What rebuilding this family needs besides its parameters (saved with a model)."""
        return {"family": self.family, "jitter": self.jitter}
