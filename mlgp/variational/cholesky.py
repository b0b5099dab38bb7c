r"""The Cholesky q(u) families: q(u_p) = N(μ_p, L_p L_pᵀ) and its whitened form u_p = L_K v_p.

:class:`CholeskyQ` is the MLGPF paper's form; :class:`WhitenedQ` puts the same Gaussian on
v_p = L_K⁻¹ u_p, so that its prior is N(0, I). Both keep q_mu (M, P) and q_sqrt (P, M, M), whose
P·M(M+1)/2 free entries dominate a step's cost at large M, and both factorise K_ZZ + jitter I once
per step (:meth:`CholeskyQ.factorise`). The marginals are
:func:`mlgp.variational.shared_marginals_from_projection`, the KL is GPflow's ``gauss_kl``.

While *tied* (:meth:`CholeskyQ.tie`, a training schedule's warm-up: ``fit(covariance_warmup=…)``)
the P factors are held fixed at one shared value, so that a step's marginals need one (M, M) × (M, B)
product instead of P and the optimizer leaves the P·M² entries alone; the means train as usual.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf
from check_shapes import check_shapes
from gpflow import Parameter, kullback_leiblers
from gpflow.utilities import set_trainable

from ..errors import ArgumentError, ShapeError
from .base import QDistribution
from .marginals import shared_marginals_from_projection
from .transforms import lower_triangular

__all__ = ["CholeskyQ", "WhitenedQ"]


class CholeskyQ(QDistribution):
    """q(u_p) = N(μ_p, L_p L_pᵀ), non-whitened.

    Parameters
    ----------
    num_inducing, num_latent_gps
        M and P.
    q_mu
        (M, P) means (default zeros).
    q_sqrt
        (P, M, M) lower-triangular factors (default identity).
    jitter
        See :class:`~mlgp.variational.QDistribution`.
    """

    family = "cholesky"
    whiten = False

    def __init__(self, num_inducing: int, num_latent_gps: int, q_mu=None, q_sqrt=None, jitter: float | None = None) -> None:
        super().__init__(num_inducing, num_latent_gps, jitter)
        M, P = self.num_inducing, self.num_latent_gps
        q_mu = np.zeros((M, P)) if q_mu is None else np.asarray(q_mu, dtype=np.float64)
        q_sqrt = np.tile(np.eye(M), (P, 1, 1)) if q_sqrt is None else np.asarray(q_sqrt, dtype=np.float64)
        if q_mu.shape != (M, P):
            raise ShapeError(f"q_mu must have shape (M, P) = {(M, P)}, got {q_mu.shape}")
        if q_sqrt.shape != (P, M, M):
            raise ShapeError(f"q_sqrt must have shape (P, M, M) = {(P, M, M)}, got {q_sqrt.shape}")
        self.q_mu = Parameter(q_mu, dtype=self.float_type, name="q_mu")
        self.q_sqrt = Parameter(q_sqrt, transform=lower_triangular(), dtype=self.float_type, name="q_sqrt")
        self._tied_from: bool | None = None  # q_sqrt's trainable flag before tie(); None: not tied

    @property
    def tied(self) -> bool:
        """Whether the P factors are held at one shared value (:meth:`tie`)."""
        return self._tied_from is not None

    def tie(self) -> None:
        """Hold the P factors fixed, sharing the first: the marginals and the KL then use L_1 for
        every p (one (M, M) product per batch) and ``q_sqrt`` is not trainable until :meth:`untie`.

        Raises
        ------
        ArgumentError
            When the P factors differ (a model's start has them equal; a trained one does not).
        """
        if self.tied:
            return
        L = self.q_sqrt.numpy()
        if not np.array_equal(L, np.broadcast_to(L[:1], L.shape)):
            raise ArgumentError("tie() needs the P factors of q_sqrt to be equal, as a model's start has them; these "
                                "differ (the model was trained already?)")
        self._tied_from = bool(self.q_sqrt.trainable)
        set_trainable(self.q_sqrt, False)

    def untie(self) -> None:
        """End :meth:`tie`: each factor is its own again (all equal to the shared one) and ``q_sqrt``
        trainable as it was before :meth:`tie`. A compiled step traced while tied must be traced again."""
        if self.tied:
            set_trainable(self.q_sqrt, self._tied_from)
            self._tied_from = None

    def _factors(self) -> tf.Tensor:
        """q_sqrt (P, M, M), or its first factor (1, M, M) while tied."""
        L = tf.convert_to_tensor(self.q_sqrt)
        return L[:1] if self.tied else L

    @check_shapes("Kuu: [M, M]", "return: [M, M]")
    def factorise(self, Kuu: tf.Tensor) -> tf.Tensor:
        """chol(K_ZZ + jitter I), shared by the KL and the marginals."""
        return self.kuu_cholesky(Kuu)

    @check_shapes("Kuu: [M, M]", "factor: [M, M]", "return: []")
    def kl(self, Kuu: tf.Tensor, factor: tf.Tensor) -> tf.Tensor:
        K_cholesky = None if self.whiten else factor
        if not self.tied:
            return kullback_leiblers.gauss_kl(self.q_mu, self.q_sqrt, K_cholesky=K_cholesky)
        # Σ_p KL = P · KL[N(0, S_1) ‖ prior] + ½ Σ_p μ_pᵀ K⁻¹ μ_p (K = I whitened)
        zero = tf.zeros([self.num_inducing, 1], dtype=factor.dtype)
        covariance_part = kullback_leiblers.gauss_kl(zero, self._factors(), K_cholesky=K_cholesky)
        scaled_mu = self.q_mu if self.whiten else tf.linalg.triangular_solve(factor, self.q_mu, lower=True)
        return self.num_latent_gps * covariance_part + 0.5 * tf.reduce_sum(tf.square(scaled_mu))

    @check_shapes("Kmn: [M, B]", "Knn_diag: [B]", "factor: [M, M]", "return[0]: [B, P]", "return[1]: [B, P]")
    def marginals(self, Kmn: tf.Tensor, Knn_diag: tf.Tensor, factor: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        return shared_marginals_from_projection(Kmn, factor, Knn_diag, self.q_mu, self._factors(), self.whiten)

    @check_shapes("Kuu: [M, M]", "return[0]: [M, P]", "return[1]: [P, M, M]")
    def implied_gaussian(self, Kuu: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        mean, L = tf.convert_to_tensor(self.q_mu), tf.convert_to_tensor(self.q_sqrt)
        if self.whiten:
            Lk = self.kuu_cholesky(Kuu)
            mean, L = Lk @ mean, Lk @ L
        return mean, L @ tf.linalg.matrix_transpose(L)

    def natgrad_parameters(self) -> list[tuple]:
        return [(self.q_mu, self.q_sqrt)]


class WhitenedQ(CholeskyQ):
    """u_p = L_K v_p with q(v_p) = N(μ_p, L_p L_pᵀ) and L_K = chol(K_ZZ + jitter I).

    Parameters as :class:`CholeskyQ` (q_mu and q_sqrt describe v).
    """

    family = "whitened"
    whiten = True
