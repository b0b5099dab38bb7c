r"""The MLGPF likelihood: P latent GPs mixed into K Bernoulli-logistic label utilities.

Given the marginals q(h_p(x_i)) = N(m_ip, s_ip) of P latent functions, the K label utilities are
f = Φ h + b, so q(f_ik) = N(Σ_p φ_kp m_ip + b_k, Σ_p φ_kp² s_ip). Each label is y_ik ∈ {−1, +1}
with p(y_ik | f_ik) = σ(y_ik f_ik), and the data term of the bound is

    Σ_k E_q(f_ik)[log σ(y_ik f_ik)] = −Σ_k E_q(f_ik)[softplus(−y_ik f_ik)],

each a 1-D Gauss–Hermite quadrature. GPflow's multi-latent quadrature likelihoods integrate over
an n^P grid; here P only enters through the two moments of f, so the cost is O(K P + K n).

Labels come either whole, as a dense (B, K) 0/1 matrix (GPflow's observation convention; the
exact bound), or subsampled as a :class:`~mlgp.likelihoods.LabelBatch` (all positives plus a
weighted sample of negatives; an unbiased estimate of the same bound).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf
from check_shapes import check_shapes, inherit_check_shapes
from gpflow import Parameter, default_float
from gpflow.likelihoods import Likelihood

from ..errors import ShapeError
from .labels import LabelBatch

__all__ = ["MultiLabelBernoulli"]


class MultiLabelBernoulli(Likelihood):
    """Bernoulli-logistic likelihood of K labels driven by P latent GPs through Φ and b.

    Parameters
    ----------
    num_labels
        K.
    num_latent
        P, the latent dimension.
    loadings
        Φ, (K, P); default N(0, 1/P) entries drawn with ``seed``.
    bias
        b, (K,); default N(0, 1/P) entries.
    num_gauss_hermite_points
        Quadrature nodes per 1-D expectation (10 in the paper).
    seed
        Seed for the default random initial Φ and b.
    """

    def __init__(
        self,
        num_labels: int,
        num_latent: int,
        loadings: np.ndarray | None = None,
        bias: np.ndarray | None = None,
        num_gauss_hermite_points: int = 10,
        seed: int | None = 0,
    ) -> None:
        if int(num_labels) < 1 or int(num_latent) < 1:
            raise ShapeError(f"need num_labels ≥ 1 and num_latent ≥ 1, got K={num_labels}, P={num_latent}")
        if int(num_gauss_hermite_points) < 1:
            raise ShapeError(f"num_gauss_hermite_points must be ≥ 1, got {num_gauss_hermite_points}")
        super().__init__(input_dim=None, latent_dim=int(num_latent), observation_dim=int(num_labels))
        K, P = int(num_labels), int(num_latent)
        rng = np.random.default_rng(seed)
        if loadings is None:
            loadings = rng.normal(0.0, np.sqrt(1.0 / P), size=(K, P))
        if bias is None:
            bias = rng.normal(0.0, np.sqrt(1.0 / P), size=(K,))
        loadings = np.asarray(loadings, dtype=np.float64)
        bias = np.asarray(bias, dtype=np.float64)
        if loadings.shape != (K, P):
            raise ShapeError(f"loadings must have shape (K, P) = {(K, P)}, got {loadings.shape}")
        if bias.shape != (K,):
            raise ShapeError(f"bias must have shape (K,) = {(K,)}, got {bias.shape}")
        self.num_labels, self.num_latent = K, P
        self.loadings = Parameter(loadings, dtype=default_float(), name="loadings")
        self.bias = Parameter(bias, dtype=default_float(), name="bias")
        self.num_gauss_hermite_points = int(num_gauss_hermite_points)
        x, w = np.polynomial.hermite.hermgauss(self.num_gauss_hermite_points)
        # E[g(f)] for f ~ N(μ, v) is Σ_j w_j/√π g(μ + √(2v) x_j).
        self._gh_x = tf.constant(x, dtype=default_float())
        self._gh_w = tf.constant(w / np.sqrt(np.pi), dtype=default_float())

    # ------------------------------------------------------------------ moments of the utilities
    @check_shapes(
        "Fmu: [batch..., P]",
        "Fvar: [batch..., P]",
        "return[0]: [batch..., K]",
        "return[1]: [batch..., K]",
    )
    def utilities(self, Fmu: tf.Tensor, Fvar: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """Mean and variance of all K utilities f = Φ h + b under q(h) = N(Fmu, diag Fvar)."""
        mean = tf.linalg.matmul(Fmu, self.loadings, transpose_b=True) + self.bias
        var = tf.linalg.matmul(Fvar, tf.square(self.loadings), transpose_b=True)
        return mean, var

    @check_shapes(
        "Fmu: [B, P]",
        "Fvar: [B, P]",
        "indices: [B, S]",
        "return[0]: [B, S]",
        "return[1]: [B, S]",
    )
    def gathered_utilities(self, Fmu: tf.Tensor, Fvar: tf.Tensor, indices: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """Mean and variance of the utilities of the labels ``indices`` (B, S) only."""
        phi = tf.gather(self.loadings, indices)  # (B, S, P)
        mean = tf.einsum("bsp,bp->bs", phi, Fmu) + tf.gather(self.bias, indices)
        var = tf.einsum("bsp,bp->bs", tf.square(phi), Fvar)
        return mean, var

    def _expected_log_sigmoid(self, y: tf.Tensor, mean: tf.Tensor, var: tf.Tensor) -> tf.Tensor:
        """E_{f~N(mean, var)}[log σ(y f)] elementwise, by Gauss–Hermite quadrature."""
        f = mean[..., None] + _gh_scale(var)[..., None] * self._gh_x  # (..., n)
        return -tf.reduce_sum(tf.nn.softplus(-y[..., None] * f) * self._gh_w, axis=-1)

    # ------------------------------------------------------------------ bound, exact and subsampled
    @inherit_check_shapes
    def _variational_expectations(self, X, Fmu: tf.Tensor, Fvar: tf.Tensor, Y: tf.Tensor) -> tf.Tensor:
        """Σ_k E_q[log σ(y_ik f_ik)] per point, all labels; ``Y`` (B, K) holds 0/1 labels."""
        mean, var = self.utilities(Fmu, Fvar)
        signs = 2.0 * tf.cast(Y, mean.dtype) - 1.0
        return tf.reduce_sum(self._expected_log_sigmoid(signs, mean, var), axis=-1)

    @check_shapes(
        "Fmu: [B, P]",
        "Fvar: [B, P]",
        "return: [B]",
    )
    def subsampled_expectations(self, Fmu: tf.Tensor, Fvar: tf.Tensor, labels: LabelBatch) -> tf.Tensor:
        """Unbiased estimate of Σ_k E_q[log σ(y_ik f_ik)] per point from a :class:`LabelBatch`.

        Positives count with weight 1 and each sampled negative with weight |N_i|/|L_i|, so the
        expectation over the negative sample equals :meth:`variational_expectations`.
        """
        mean, var = self.gathered_utilities(Fmu, Fvar, labels.indices)
        signs = tf.cast(labels.signs, mean.dtype)
        weights = tf.cast(labels.weights, mean.dtype)
        return tf.reduce_sum(weights * self._expected_log_sigmoid(signs, mean, var), axis=-1)

    # ------------------------------------------------------------------ predictions
    @inherit_check_shapes
    def _predict_log_density(self, X, Fmu: tf.Tensor, Fvar: tf.Tensor, Y: tf.Tensor) -> tf.Tensor:
        """Σ_k log ∫ σ(y_ik f) q(f) df per point (labels treated independently given q)."""
        mean, var = self.utilities(Fmu, Fvar)
        signs = 2.0 * tf.cast(Y, mean.dtype) - 1.0
        f = mean[..., None] + _gh_scale(var)[..., None] * self._gh_x
        logp = tf.reduce_logsumexp(-tf.nn.softplus(-signs[..., None] * f) + tf.math.log(self._gh_w), axis=-1)
        return tf.reduce_sum(logp, axis=-1)

    @inherit_check_shapes
    def _predict_mean_and_var(self, X, Fmu: tf.Tensor, Fvar: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """Predictive label probabilities E_q[σ(f_ik)] (B, K) and their Bernoulli variances."""
        mean, var = self.utilities(Fmu, Fvar)
        f = mean[..., None] + _gh_scale(var)[..., None] * self._gh_x
        p = tf.reduce_sum(tf.sigmoid(f) * self._gh_w, axis=-1)
        return p, p - tf.square(p)

    @inherit_check_shapes
    def _log_prob(self, X, F: tf.Tensor, Y: tf.Tensor) -> tf.Tensor:
        """Σ_k log σ(y_ik f_ik) per point for latent values F (B, P) and 0/1 labels Y (B, K)."""
        f = tf.linalg.matmul(F, self.loadings, transpose_b=True) + self.bias
        signs = 2.0 * tf.cast(Y, f.dtype) - 1.0
        return -tf.reduce_sum(tf.nn.softplus(-signs * f), axis=-1)

    @inherit_check_shapes
    def _conditional_mean(self, X, F: tf.Tensor) -> tf.Tensor:
        return tf.sigmoid(tf.linalg.matmul(F, self.loadings, transpose_b=True) + self.bias)

    @inherit_check_shapes
    def _conditional_variance(self, X, F: tf.Tensor) -> tf.Tensor:
        p = self._conditional_mean(X, F)
        return p - tf.square(p)


def _gh_scale(var: tf.Tensor) -> tf.Tensor:
    """√(2 var), floored at √(2·10⁻³⁰) so that its gradient stays finite where var is 0 (a label
    whose loadings are all zero)."""
    return tf.sqrt(tf.maximum(2.0 * var, tf.cast(2e-30, var.dtype)))

