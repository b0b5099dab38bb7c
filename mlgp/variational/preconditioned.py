r"""The preconditioned q(u) of Panos et al. ("Fully scalable GPs", section 2.3): 2M parameters per GP.

q(u_p) = N(K_Z μ_p, (K_Z⁻¹ + Σ_p⁻¹)⁻¹) with Σ_p = diag(σ_p) and every σ_pj ≥ ``sigma_lower``.
With A_p = K_Z + Σ_p = L_p L_pᵀ (the only factorisation, one per latent GP):

    mean_p(x) = k_xZ μ_p,
    var_p(x)  = k(x, x) − ‖L_p⁻¹ k_Zx‖²,
    KL_p      = ½ μ_pᵀ K_Z μ_p − ½ tr(A_p⁻¹ K_Z) + ½ log|A_p| − ½ log|Σ_p|,

with tr(A_p⁻¹ K_Z) = M − ‖L_p⁻¹ Σ_p^{1/2}‖²_F. The factorisation the family shares between the KL
and the marginals is the stack of inverse factors L_p⁻¹ (P, M, M), so that the marginals are one
batched matrix product rather than P triangular solves. K_Z itself is never factorised and gets no
jitter, so the bound stays finite when K_Z is singular (duplicate inducing inputs, a linear kernel
with M > D). A step costs one Cholesky and one triangular inverse of an M × M matrix per latent GP,
O(P M³), beside the O(P M² B) of the marginals that every family pays.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf
from check_shapes import check_shapes
from gpflow import Parameter
from gpflow.utilities import positive

from ..errors import ShapeError
from ..floats import float_policy
from .base import QDistribution

__all__ = ["PreconditionedQ", "default_sigma_lower"]


def default_sigma_lower(float_type) -> float:
    """The floor on Σ's diagonal: the float policy's variance floor (:data:`mlgp.floats.FLOAT_POLICIES`;
    1e-6, the paper's, in float64, 1e-4 in float32)."""
    return float_policy(float_type).variance_floor


class PreconditionedQ(QDistribution):
    """q(u_p) = N(K_Z μ_p, (K_Z⁻¹ + Σ_p⁻¹)⁻¹), Σ_p diagonal.

    Parameters
    ----------
    num_inducing, num_latent_gps
        M and P.
    q_mu
        (M, P) the μ_p (default zeros); the means of u are K_Z μ_p.
    q_sigma
        (P, M) the diagonals of Σ_p (default ones), each at least ``sigma_lower``.
    sigma_lower
        The floor on Σ's diagonal (default :func:`default_sigma_lower` of the dtype).
    jitter
        Unused by the bound (kept for :meth:`kuu_cholesky`, which conversions use).
    """

    family = "preconditioned"

    def __init__(self, num_inducing: int, num_latent_gps: int, q_mu=None, q_sigma=None, sigma_lower: float | None = None,
                 jitter: float | None = None) -> None:
        super().__init__(num_inducing, num_latent_gps, jitter)
        M, P = self.num_inducing, self.num_latent_gps
        self.sigma_lower = float(default_sigma_lower(self.float_type) if sigma_lower is None else sigma_lower)
        if not self.sigma_lower > 0:
            raise ShapeError(f"sigma_lower must be positive, got {sigma_lower}")
        q_mu = np.zeros((M, P)) if q_mu is None else np.asarray(q_mu, dtype=np.float64)
        q_sigma = np.ones((P, M)) if q_sigma is None else np.asarray(q_sigma, dtype=np.float64)
        if q_mu.shape != (M, P):
            raise ShapeError(f"q_mu must have shape (M, P) = {(M, P)}, got {q_mu.shape}")
        if q_sigma.shape != (P, M):
            raise ShapeError(f"q_sigma must have shape (P, M) = {(P, M)}, got {q_sigma.shape}")
        if not np.all(q_sigma > self.sigma_lower):
            raise ShapeError(f"q_sigma must be above sigma_lower = {self.sigma_lower:g} everywhere (min {q_sigma.min():g})")
        self.q_mu = Parameter(q_mu, dtype=self.float_type, name="q_mu")
        self.q_sigma = Parameter(q_sigma, transform=positive(lower=self.sigma_lower), dtype=self.float_type, name="q_sigma")

    @check_shapes("Kuu: [M, M]", "return: [P, M, M]")
    def factorise(self, Kuu: tf.Tensor) -> tf.Tensor:
        """L_p⁻¹ with L_p = chol(K_Z + Σ_p), for each latent GP: (P, M, M), lower triangular."""
        L = tf.linalg.cholesky(Kuu[None, :, :] + tf.linalg.diag(self.q_sigma))
        eye = tf.eye(self.num_inducing, batch_shape=[self.num_latent_gps], dtype=L.dtype)
        return tf.linalg.triangular_solve(L, eye, lower=True)

    @check_shapes("Kuu: [M, M]", "factor: [P, M, M]", "return: []")
    def kl(self, Kuu: tf.Tensor, factor: tf.Tensor) -> tf.Tensor:
        sigma = tf.convert_to_tensor(self.q_sigma)  # [P, M]
        mu = tf.convert_to_tensor(self.q_mu)  # [M, P]
        quad = tf.reduce_sum(mu * tf.linalg.matmul(Kuu, mu))
        # ‖L⁻¹ Σ^{1/2}‖²_F: the columns of L⁻¹ scaled by σ^{1/2}
        trace = tf.cast(tf.size(sigma), Kuu.dtype) - tf.reduce_sum(tf.square(factor) * sigma[:, None, :])
        logdet_a = -2.0 * tf.reduce_sum(tf.math.log(tf.linalg.diag_part(factor)))
        logdet_s = tf.reduce_sum(tf.math.log(sigma))
        return 0.5 * (quad - trace + logdet_a - logdet_s)

    @check_shapes("Kmn: [M, B]", "Knn_diag: [B]", "factor: [P, M, M]", "return[0]: [B, P]", "return[1]: [B, P]")
    def marginals(self, Kmn: tf.Tensor, Knn_diag: tf.Tensor, factor: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        mean = tf.linalg.matmul(Kmn, self.q_mu, transpose_a=True)  # [B, P]
        P, M = tf.shape(factor)[0], tf.shape(factor)[1]
        V = tf.reshape(tf.linalg.matmul(tf.reshape(factor, [P * M, M]), Kmn), [P, M, -1])  # L_p⁻¹ K_Zx: [P, M, B]
        var = Knn_diag[:, None] - tf.transpose(tf.reduce_sum(tf.square(V), axis=1))  # [B, P]
        return mean, var

    @check_shapes("Kuu: [M, M]", "return[0]: [M, P]", "return[1]: [P, M, M]")
    def implied_gaussian(self, Kuu: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        V = tf.linalg.matmul(self.factorise(Kuu), Kuu)  # L_p⁻¹ K_Z
        return tf.linalg.matmul(Kuu, self.q_mu), Kuu[None] - tf.linalg.matmul(V, V, transpose_a=True)

    def describe(self) -> dict:
        return {**super().describe(), "sigma_lower": self.sigma_lower}
