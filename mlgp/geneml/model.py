"""GenEML's generative model as a TensorFlow Probability joint distribution.

For N points with features X (N, D), K labels and k latent dimensions:

- W (D, k): each entry N(0, 1/λ_w) (the rows w_j of the paper's k × D matrix, transposed);
- U (N, k): u_n ~ N(x_n W, I/λ_u);
- V (K, k): v_l ~ N(0, I/λ_v);
- exposure, one of
  ``"global"``: μ_l ~ Beta(α, β) per label (``mu``, (K,)), ξ_nl ~ Bernoulli(μ_l);
  ``"covariates"``: ``coef`` (C,) ~ N(0, I/λ_β), μ_nl = σ(c_nl · coef) for given covariates
  c (N, K, C), ξ_nl ~ Bernoulli(μ_nl);
  ``None``: every label exposed (the logistic low-rank model, a LEML-like baseline);
- Y (N, K): y_nl ~ Bernoulli(ξ_nl σ(u_nᵀ v_l)) — 0 whenever the label was not exposed.

:func:`geneml_joint` returns the ``tfd.JointDistributionNamed`` over (W, U, V, [mu | coef], [xi], Y):
``sample(seed=…)`` draws a synthetic data set with its latent variables, ``log_prob(values)`` is the
complete-data log joint. The random variables' names are :data:`NAMES`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import tensorflow as tf
import tensorflow_probability as tfp

from .. import arguments
from ..errors import ArgumentError, ShapeError

__all__ = ["EXPOSURES", "NAMES", "geneml_joint"]

tfd = tfp.distributions

#: The exposure models.
EXPOSURES = ("global", "covariates", None)
#: The joint distribution's variables for each exposure model.
NAMES = {"global": ("W", "U", "V", "mu", "xi", "Y"), "covariates": ("W", "U", "V", "coef", "xi", "Y"),
         None: ("W", "U", "V", "Y")}


def geneml_joint(X, num_labels: int, n_components: int, *, exposure: str | None = "global", covariates=None,
                 lambda_u: float = 1.0, lambda_v: float = 1.0, lambda_w: float = 1.0, alpha: float = 1.0,
                 beta: float = 1.0, lambda_coef: float = 1.0, dtype=tf.float64) -> tfd.JointDistributionNamed:
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
        (N, K, C) per-entry covariates, with ``exposure="covariates"`` only.
    lambda_u, lambda_v, lambda_w, lambda_coef
        Prior precisions (> 0).
    alpha, beta
        The Beta prior of the global exposures (> 0).
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
    x = _features(X, dtype)
    N, D = int(x.shape[0]), int(x.shape[1])
    c = None
    if exposure == "covariates":
        if covariates is None:
            raise ArgumentError("exposure='covariates' needs covariates (N, K, C)")
        c = tf.convert_to_tensor(np.asarray(covariates, dtype=np.float64), dtype=dtype)
        if c.shape.rank != 3 or tuple(c.shape[:2]) != (N, K) or not np.all(np.isfinite(c.numpy())):
            raise ShapeError(f"covariates must be finite with shape (N, K, C) = ({N}, {K}, C); got {tuple(c.shape)}")
    elif covariates is not None:
        raise ArgumentError(f"covariates are used only with exposure='covariates', not {exposure!r}")

    def normal(loc, precision, ndims):
        scale = tf.cast(1.0 / np.sqrt(precision), dtype)
        return tfd.Independent(tfd.Normal(loc, scale), reinterpreted_batch_ndims=ndims)

    zero = tf.zeros([], dtype)
    model = {
        "W": normal(tf.zeros([D, k], dtype), p["lambda_w"], 2),
        "U": lambda W: normal(_matmul(x, W), p["lambda_u"], 2),
        "V": normal(tf.zeros([K, k], dtype), p["lambda_v"], 2),
    }
    logits = lambda U, V: tf.matmul(U, V, transpose_b=True)  # noqa: E731
    if exposure is None:
        model["Y"] = lambda U, V: tfd.Independent(tfd.Bernoulli(logits=logits(U, V), dtype=tf.int32), 2)
    else:
        if exposure == "global":
            model["mu"] = tfd.Independent(tfd.Beta(tf.fill([K], zero + p["alpha"]), tf.fill([K], zero + p["beta"])), 1)
            model["xi"] = lambda mu: tfd.Independent(tfd.Bernoulli(probs=tf.broadcast_to(mu, [N, K]), dtype=tf.int32), 2)
        else:
            model["coef"] = normal(tf.zeros([int(c.shape[2])], dtype), p["lambda_coef"], 1)
            model["xi"] = lambda coef: tfd.Independent(
                tfd.Bernoulli(logits=tf.linalg.matvec(c, coef), dtype=tf.int32), 2)
        # an unexposed entry has logit −1e30 (probability 0 of a 1): logits, not ξ σ(ψ), so that a large
        # ψ keeps log p(y = 0 | ξ = 1) = −softplus(ψ) instead of rounding σ(ψ) to 1
        model["Y"] = lambda U, V, xi: tfd.Independent(
            tfd.Bernoulli(logits=tf.where(xi > 0, logits(U, V), tf.constant(-1e30, dtype)), dtype=tf.int32), 2)
    return tfd.JointDistributionNamed(model, name="GenEML")


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
