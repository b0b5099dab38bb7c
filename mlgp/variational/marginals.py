r"""Marginals of P latent GPs that share one kernel and one set of inducing inputs.

For q(u_p) = N(μ_p, L_p L_pᵀ) (or, whitened, u_p = L_K v_p with q(v_p) = N(μ_p, L_p L_pᵀ)) the
marginal of h_p at x is N(m_p(x), s_p(x)) with

    m_p(x) = aᵀ μ_p,   s_p(x) = k(x, x) − ‖L_K⁻¹ k_Zx‖² + ‖L_pᵀ a‖²,

where a = K_ZZ⁻¹ k_Zx (non-whitened) or a = L_K⁻¹ k_Zx (whitened). The kernel and Z are shared, so
a is computed once for all P functions, and the P products L_pᵀ a are one matrix product
(P·M, M) × (M, B) instead of GPflow's batched product with a copy of a per function
(``experiments/bench_mlgpf.py`` times the two routes). ``K_ZZ`` and ``K_Zx`` come from
GPflow's ``covariances.Kuu`` / ``Kuf`` dispatch, so inducing variables registered there work here.
"""

from __future__ import annotations

import tensorflow as tf
from check_shapes import check_shapes
from gpflow import covariances
from gpflow.config import default_jitter
from gpflow.inducing_variables import InducingVariables
from gpflow.kernels import Kernel

__all__ = ["shared_marginals", "shared_marginals_from_projection"]


@check_shapes(
    "Kmn: [M, N]",
    "Lm: [M, M]",
    "Knn_diag: [N]",
    "q_mu: [M, P]",
    "q_sqrt: [broadcast P, M, M]",
    "return[0]: [N, P]",
    "return[1]: [N, P]",
)
def shared_marginals_from_projection(
    Kmn: tf.Tensor, Lm: tf.Tensor, Knn_diag: tf.Tensor, q_mu: tf.Tensor, q_sqrt: tf.Tensor, white: bool
) -> tuple[tf.Tensor, tf.Tensor]:
    """Means and variances (N, P) of the P latent GPs from K_Zx, chol(K_ZZ) and diag K_xx.

    ``q_sqrt`` must be lower triangular (the model's transform guarantees it); its upper triangle
    is not masked again here. A ``q_sqrt`` of one factor (1, M, M) is shared by the P functions:
    the P products L_pᵀ a are then one (M, M) × (M, N) product.
    """
    A = tf.linalg.triangular_solve(Lm, Kmn, lower=True)  # [M, N]
    base = Knn_diag - tf.reduce_sum(tf.square(A), axis=0)  # [N]
    if not white:
        A = tf.linalg.triangular_solve(Lm, A, lower=True, adjoint=True)  # K_ZZ⁻¹ K_Zx
    mean = tf.linalg.matmul(A, q_mu, transpose_a=True)  # [N, P]
    P, M = tf.shape(q_sqrt)[0], tf.shape(q_sqrt)[1]
    Lt = tf.reshape(tf.linalg.matrix_transpose(q_sqrt), [P * M, M])  # rows (p, j), columns i
    LtA = tf.reshape(tf.linalg.matmul(Lt, A), [P, M, -1])  # L_pᵀ a: [P, M, N]
    var = base[:, None] + tf.transpose(tf.reduce_sum(tf.square(LtA), axis=1))  # [N, P] (or [N, 1]: one factor)
    return mean, tf.broadcast_to(var, tf.shape(mean))


def shared_marginals(
    Xnew: tf.Tensor,
    inducing_variable: InducingVariables,
    kernel: Kernel,
    q_mu: tf.Tensor,
    q_sqrt: tf.Tensor,
    white: bool = False,
    kuu_cholesky: tf.Tensor | None = None,
) -> tuple[tf.Tensor, tf.Tensor]:
    """Means and variances (N, P) at ``Xnew`` (N, D) for a shared kernel and shared Z.

    Parameters
    ----------
    Xnew
        (N, D) inputs.
    inducing_variable
        ``SharedIndependentInducingVariables`` (or any inducing variable whose ``Kuu``/``Kuf``
        with ``kernel`` are registered and give (M, M) and (M, N)).
    kernel
        ``SharedIndependent`` kernel (or the shared base kernel).
    q_mu, q_sqrt
        (M, P) means and (P, M, M) lower-triangular Cholesky factors.
    white
        Whitened parameterisation.
    kuu_cholesky
        (M, M) chol(K_ZZ + jitter I) when the caller has it already (the KL needs it too);
        computed here otherwise.
    """
    if kuu_cholesky is None:
        kuu_cholesky = tf.linalg.cholesky(covariances.Kuu(inducing_variable, kernel, jitter=default_jitter()))
    Kmn = covariances.Kuf(inducing_variable, kernel, Xnew)
    base_kernel = getattr(kernel, "kernel", kernel)
    Knn = base_kernel(Xnew, full_cov=False)
    return shared_marginals_from_projection(Kmn, kuu_cholesky, Knn, q_mu, q_sqrt, white)
