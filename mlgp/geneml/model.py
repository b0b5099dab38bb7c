"""GenEML's generative model as a TensorFlow Probability joint distribution.

For N points with features X (N, D), K labels and k latent dimensions:

- with ARD (``relevance_prior = (a, b)``), ``relevance`` r (k,): r_j ~ Gamma(a, b), the relevance
  of latent dimension j (:mod:`mlgp.geneml.relevance`); without it r = 1;
- W (D, k): each entry N(0, 1/λ_w) (the rows w_j of the paper's k × D matrix, transposed);
- U (N, k): u_n ~ N(x_n W, I/λ_u);
- V (K, k): v_l ~ N(0, diag(1/(λ_v r)));
- exposure, one of
  ``"global"``: μ_l ~ Beta(α, β) per label (``mu``, (K,)), ξ_nl ~ Bernoulli(μ_l);
  ``"covariates"``: ``coef`` = (β_F, β_G) (C_F + C_G,) ~ N(0, I/λ_β), μ_nl = σ(η_nl) with
  η_nl = f_l · β_F + g_n · β_G for given covariates (F (K, C_F), G (N, C_G)) — the label and point
  parts of :class:`mlgp.geneml.exposure.CovariateExposure`; the (N, K, C) array is never formed —
  and ξ_nl ~ Bernoulli(μ_nl);
  ``None``: every label exposed (the logistic low-rank model, a LEML-like baseline);
- Y (N, K): y_nl ~ Bernoulli(ξ_nl σ(u_nᵀ v_l)) — 0 whenever the label was not exposed.

:func:`geneml_joint` returns the ``tfd.JointDistributionNamed`` over (W, U, V, [mu | coef], [xi], Y):
``sample(seed=…)`` draws a synthetic data set with its latent variables, ``log_prob(values)`` is the
complete-data log joint. The random variables' names are :data:`NAMES` (``relevance`` first with
ARD). With ξ summed out, the log
joint is :func:`mlgp.geneml.em.log_posterior` (NumPy, exact, every normalising constant included).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..quiet import quiet_tensorflow

quiet_tensorflow()  # TensorFlow's first import, without its start-up lines (mlgp.quiet)

import tensorflow as tf
import tensorflow_probability as tfp

from .. import arguments
from ..errors import ArgumentError, ShapeError
from .relevance import check_relevance_prior

__all__ = ["EXPOSURES", "NAMES", "geneml_joint"]

tfd = tfp.distributions

#: The exposure models.
EXPOSURES = ("global", "covariates", None)
#: The joint distribution's variables for each exposure model.
NAMES = {"global": ("W", "U", "V", "mu", "xi", "Y"), "covariates": ("W", "U", "V", "coef", "xi", "Y"),
         None: ("W", "U", "V", "Y")}


def geneml_joint(X, num_labels: int, n_components: int, *, exposure: str | None = "global", covariates=None,
                 lambda_u: float = 1.0, lambda_v: float = 1.0, lambda_w: float = 1.0, alpha: float = 1.0,
                 beta: float = 1.0, lambda_coef: float = 1.0, relevance_prior: tuple[float, float] | None = None,
                 dtype=tf.float64) -> tfd.JointDistributionNamed:
    """The GenEML joint distribution given the features (module docstring).

    Parameters
    ----------
    X
        (N, D) features, dense or scipy sparse (multiplied as a ``tf.sparse.SparseTensor``).
    num_labels, n_components
        K and k.
    exposure
        ``"global"``, ``"covariates"`` or ``None``.
    covariates
        ``(F, G)``: the label part F (K, C_F) and the point part G (N, C_G), finite, C_F + C_G ≥ 1
        (either may have no columns), with ``exposure="covariates"`` only.
    lambda_u, lambda_v, lambda_w, lambda_coef
        Prior precisions (> 0).
    alpha, beta
        The Beta prior of the global exposures (> 0).
    relevance_prior
        (shape, rate) of the latent dimensions' Gamma relevance prior (ARD), or None.
    dtype
        Float type of the continuous variables (``xi`` and ``Y`` are int32).

    Returns
    -------
    tfd.JointDistributionNamed
    """
    K = arguments.positive_int(num_labels, "num_labels")
    k = arguments.positive_int(n_components, "n_components")
    if exposure not in EXPOSURES:
        raise ArgumentError(f"exposure must be one of {EXPOSURES}; got {exposure!r}")
    precisions = dict(lambda_u=lambda_u, lambda_v=lambda_v, lambda_w=lambda_w, lambda_coef=lambda_coef,
                      alpha=alpha, beta=beta)
    p = {name: arguments.positive_real(value, name) for name, value in precisions.items()}
    relevance_prior = check_relevance_prior(relevance_prior)
    x = _features(X, dtype)
    N, D = int(x.shape[0]), int(x.shape[1])
    F = G = None
    if exposure == "covariates":
        F, G = _covariates(covariates, N, K, dtype)
    elif covariates is not None:
        raise ArgumentError(f"covariates are used only with exposure='covariates', not {exposure!r}")

    def normal(loc, precision, ndims):
        scale = tf.math.rsqrt(tf.cast(precision, dtype))
        return tfd.Independent(tfd.Normal(loc, scale), reinterpreted_batch_ndims=ndims)

    zero = tf.zeros([], dtype)
    if relevance_prior is None:
        model = {
            "W": normal(tf.zeros([D, k], dtype), p["lambda_w"], 2),
            "U": lambda W: normal(_matmul(x, W), p["lambda_u"], 2),
            "V": normal(tf.zeros([K, k], dtype), p["lambda_v"], 2),
        }
    else:
        shape, rate = relevance_prior
        model = {
            "relevance": tfd.Independent(tfd.Gamma(tf.fill([k], zero + shape), tf.fill([k], zero + rate)), 1),
            "W": normal(tf.zeros([D, k], dtype), p["lambda_w"], 2),
            "U": lambda W: normal(_matmul(x, W), p["lambda_u"], 2),
            "V": lambda relevance: normal(tf.zeros([K, k], dtype), p["lambda_v"] * relevance, 2),
        }
    logits = lambda U, V: tf.matmul(U, V, transpose_b=True)  # noqa: E731
    if exposure is None:
        model["Y"] = lambda U, V: tfd.Independent(tfd.Bernoulli(logits=logits(U, V), dtype=tf.int32), 2)
    else:
        if exposure == "global":
            model["mu"] = tfd.Independent(tfd.Beta(tf.fill([K], zero + p["alpha"]), tf.fill([K], zero + p["beta"])), 1)
            model["xi"] = lambda mu: tfd.Independent(tfd.Bernoulli(probs=tf.broadcast_to(mu, [N, K]), dtype=tf.int32), 2)
        else:
            C_F = int(F.shape[1])
            model["coef"] = normal(tf.zeros([C_F + int(G.shape[1])], dtype), p["lambda_coef"], 1)
            model["xi"] = lambda coef: tfd.Independent(tfd.Bernoulli(logits=_exposure_logits(F, G, coef, C_F),
                                                                     dtype=tf.int32), 2)
        # an unexposed entry has logit −1e30 (probability 0 of a 1): logits, not ξ σ(ψ), so that a large
        # ψ keeps log p(y = 0 | ξ = 1) = −softplus(ψ) instead of rounding σ(ψ) to 1
        model["Y"] = lambda U, V, xi: tfd.Independent(
            tfd.Bernoulli(logits=tf.where(xi > 0, logits(U, V), tf.constant(-1e30, dtype)), dtype=tf.int32), 2)
    return tfd.JointDistributionNamed(model, name="GenEML")


def _covariates(covariates, N: int, K: int, dtype) -> tuple[tf.Tensor, tf.Tensor]:
    """``covariates`` = (F, G) as tensors F (K, C_F) and G (N, C_G), checked finite, C_F + C_G ≥ 1."""
    if covariates is None:
        raise ArgumentError("exposure='covariates' needs covariates (F, G): F (K, C_F) and G (N, C_G)")
    if not isinstance(covariates, (tuple, list)) or len(covariates) != 2:
        raise ShapeError(f"covariates must be a pair (F, G) of arrays F (K, C_F) and G (N, C_G); got "
                         f"{type(covariates).__name__}")
    F, G = (np.asarray(part, dtype=np.float64) for part in covariates)
    if F.ndim != 2 or G.ndim != 2 or F.shape[0] != K or G.shape[0] != N or F.shape[1] + G.shape[1] < 1 \
            or not (np.all(np.isfinite(F)) and np.all(np.isfinite(G))):
        raise ShapeError(f"covariates (F, G) must be finite with shapes F (K, C_F) = ({K}, C_F) and G (N, C_G) = "
                         f"({N}, C_G), C_F + C_G ≥ 1; got {F.shape} and {G.shape}")
    return tf.constant(F, dtype), tf.constant(G, dtype)


def _exposure_logits(F: tf.Tensor, G: tf.Tensor, coef: tf.Tensor, C_F: int) -> tf.Tensor:
    """η (N, K) = F β_F ⊕ G β_G: the label part (K,) broadcast over the points' part (N,)."""
    return tf.linalg.matvec(F, coef[..., :C_F])[..., None, :] + tf.linalg.matvec(G, coef[..., C_F:])[..., :, None]


def _features(X, dtype):
    """X as a dense tensor or a ``tf.sparse.SparseTensor`` (canonical order), checked finite."""
    if sp.issparse(X):
        X = sp.coo_matrix(sp.csr_matrix(X, dtype=np.float64))
        if not np.all(np.isfinite(X.data)):
            raise ShapeError("X contains NaN or inf")
        indices = np.stack([X.row, X.col], axis=1).astype(np.int64)
        return tf.sparse.reorder(tf.sparse.SparseTensor(indices, tf.constant(X.data, dtype), X.shape))
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or not np.all(np.isfinite(X)):
        raise ShapeError(f"X must be a finite (N, D) array; got shape {X.shape}")
    return tf.constant(X, dtype)


def _matmul(x, W):
    return tf.sparse.sparse_dense_matmul(x, W) if isinstance(x, tf.sparse.SparseTensor) else tf.matmul(x, W)
