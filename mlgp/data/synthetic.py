"""Synthetic multi-label problems (numpy only) with known generating parameters.

Every generator returns a :class:`~mlgp.data.registry.Dataset` whose splits hold
CSR float64 features and CSR int8 labels; generating parameters go in
``Dataset.extras``. The same ``seed`` gives the same data.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..arguments import positive_int
from ..errors import ArgumentError
from .registry import Dataset, Split

__all__ = ["default_problem", "geneml_lowrank", "informative_zipf", "lspc_toy", "mlgpf_prior", "uninformative_zipf"]


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def _check_sizes(**sizes: int) -> None:
    for name, v in sizes.items():
        positive_int(v, name)


def _make(name: str, X: np.ndarray, Y: np.ndarray, num_train: int, extras: dict) -> Dataset:
    Xc = sp.csr_matrix(np.asarray(X, dtype=np.float64))
    Yc = sp.csr_matrix(np.asarray(Y, dtype=np.int8))
    Xc.sort_indices()
    Yc.sort_indices()
    return Dataset(
        name=name,
        train=Split("train", Xc[:num_train], Yc[:num_train], None),
        test=Split("test", Xc[num_train:], Yc[num_train:], None),
        extras=extras,
    )


def lspc_toy(num_train: int = 200, num_test: int = 200, num_labels: int = 5,
             num_features: int = 300, noise: float = 0.0, seed: int = 0,
             inputs: str = "normal") -> Dataset:
    """The ML-LSPC toy problem (Nam et al., section 6.1).

    ``x ~ N(0, I_D)`` (the paper's; ``inputs="uniform"``: ``x ~ U(-1, 1)^D``); only ``x1, x2`` are
    informative. Label ``t = 1..T`` is
    positive iff ``cos(2 pi t / T) x1 + sin(2 pi t / T) x2 > 0``; then each label
    entry is flipped with probability ``noise``.

    Returns
    -------
    Dataset
        X (N, D) dense-in-CSR float64, Y (N, T) int8. ``extras``: ``angles`` (T,),
        ``noise``, ``inputs``.
    """
    _check_sizes(num_train=num_train, num_test=num_test, num_labels=num_labels,
                 num_features=num_features)
    if num_features < 2:
        raise ArgumentError("lspc_toy needs num_features >= 2")
    if not 0.0 <= noise <= 1.0:
        raise ArgumentError(f"noise must be a probability, got {noise}")
    if inputs not in ("normal", "uniform"):
        raise ArgumentError(f"inputs must be 'normal' or 'uniform', got {inputs!r}")
    rng = np.random.default_rng(seed)
    n = num_train + num_test
    if inputs == "normal":
        X = rng.standard_normal(size=(n, num_features))
    else:
        X = rng.uniform(-1.0, 1.0, size=(n, num_features))
    t = np.arange(1, num_labels + 1)
    angles = 2.0 * np.pi * t / num_labels
    score = np.outer(X[:, 0], np.cos(angles)) + np.outer(X[:, 1], np.sin(angles))
    Y = score > 0
    if noise > 0:
        Y ^= rng.random(Y.shape) < noise
    return _make("lspc_toy", X, Y, num_train, {"angles": angles, "noise": float(noise),
                                                      "inputs": inputs})


def geneml_lowrank(num_train: int = 500, num_test: int = 200, num_labels: int = 50,
                   num_features: int = 20, rank: int = 5,
                   exposure: tuple[float, float] = (5.0, 2.0), noise: float = 0.1,
                   seed: int = 0) -> Dataset:
    """Low-rank labels with missing positives (exposure model).

    ``x_n ~ N(0, I_D)``, ``u_n = W x_n + noise * eps`` with ``W`` (R, D),
    ``v_l ~ N(0, I_R)``, ``y_full[n, l] ~ Bernoulli(sigmoid(u_n . v_l))``; label
    exposure ``mu_l ~ Beta(alpha, beta)``, ``xi[n, l] ~ Bernoulli(mu_l)`` and the
    observed label is ``y = y_full * xi`` (only positives are hidden).

    Returns
    -------
    Dataset
        X (N, D), Y (N, K). ``extras``: ``Y_full`` (N_train + N_test, K) CSR int8,
        rows train then test, also as ``Y_full_train`` / ``Y_full_test``;
        ``exposure`` (K,); ``W`` (R, D); ``V`` (K, R); ``U`` (N, R).
    """
    _check_sizes(num_train=num_train, num_test=num_test, num_labels=num_labels,
                 num_features=num_features, rank=rank)
    alpha, beta = exposure
    if alpha <= 0 or beta <= 0:
        raise ArgumentError(f"exposure Beta parameters must be positive, got {exposure}")
    rng = np.random.default_rng(seed)
    n = num_train + num_test
    X = rng.standard_normal((n, num_features))
    W = rng.standard_normal((rank, num_features)) / np.sqrt(num_features)
    U = X @ W.T + noise * rng.standard_normal((n, rank))
    V = rng.standard_normal((num_labels, rank))
    Y_full = rng.random((n, num_labels)) < _sigmoid(U @ V.T)
    mu = rng.beta(alpha, beta, size=num_labels)
    xi = rng.random((n, num_labels)) < mu
    Y = Y_full & xi
    Yf = sp.csr_matrix(Y_full.astype(np.int8))
    extras = {
        "Y_full": Yf,
        "Y_full_train": Yf[:num_train],
        "Y_full_test": Yf[num_train:],
        "exposure": mu,
        "W": W,
        "V": V,
        "U": U,
    }
    return _make("geneml_lowrank", X, Y, num_train, extras)


def _se_kernel(X: np.ndarray, lengthscale: float) -> np.ndarray:
    sq = np.sum(X * X, axis=1)
    d2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * X @ X.T, 0.0)
    return np.exp(-0.5 * d2 / lengthscale**2)


def _jittered_cholesky(K: np.ndarray) -> np.ndarray:
    jitter = 1e-8 * max(float(np.mean(np.diag(K))), 1.0)
    for _ in range(8):
        try:
            return np.linalg.cholesky(K + jitter * np.eye(K.shape[0]))
        except np.linalg.LinAlgError:
            jitter *= 10.0
    raise np.linalg.LinAlgError("kernel matrix is not positive definite even with jitter")


def mlgpf_prior(num_train: int = 300, num_test: int = 200, num_features: int = 10,
                num_labels: int = 20, num_latent: int = 3, lengthscale: float = 1.0,
                seed: int = 0) -> Dataset:
    """A draw from the MLGPF prior (shared GP latent functions, linear label mixing).

    ``x ~ N(0, I_D)``; ``h_p ~ GP(0, SE(lengthscale))`` for ``p = 1..P``, sampled
    jointly over train and test points; ``Phi ~ N(0, 1)`` (K, P);
    ``b ~ N(-1, 0.5)`` (K,) (0.5 is the variance); ``y[n, k] ~
    Bernoulli(sigmoid(Phi_k . h_n + b_k))``.

    Returns
    -------
    Dataset
        X (N, D), Y (N, K). ``extras``: ``Phi`` (K, P), ``b`` (K,), ``H`` (N, P)
        latent values (rows train then test), ``lengthscale``.
    """
    _check_sizes(num_train=num_train, num_test=num_test, num_features=num_features,
                 num_labels=num_labels, num_latent=num_latent)
    if lengthscale <= 0:
        raise ArgumentError(f"lengthscale must be positive, got {lengthscale}")
    rng = np.random.default_rng(seed)
    n = num_train + num_test
    X = rng.standard_normal((n, num_features))
    L = _jittered_cholesky(_se_kernel(X, lengthscale))
    H = L @ rng.standard_normal((n, num_latent))
    Phi = rng.standard_normal((num_labels, num_latent))
    b = -1.0 + np.sqrt(0.5) * rng.standard_normal(num_labels)
    Y = rng.random((n, num_labels)) < _sigmoid(H @ Phi.T + b)
    extras = {"Phi": Phi, "b": b, "H": H, "lengthscale": float(lengthscale)}
    return _make("mlgpf_prior", X, Y, num_train, extras)


def uninformative_zipf(num_train: int = 2000, num_test: int = 1000, num_labels: int = 1700, num_groups: int = 4,
                       group_size: int = 3, labels_per_point: float = 4.0, exponent: float = 1.1,
                       seed: int = 0) -> Dataset:
    """Labels that the features say nothing about: the case where a model must rank as its bias does.

    Each point has ``num_groups`` one-hot categorical features of ``group_size`` values each
    (D = ``num_groups * group_size``, drawn uniformly) and labels drawn independently of them:
    label l is present with probability min(1, c · (l + 1)^−``exponent``), c set so that a point has
    ``labels_per_point`` labels on average (Zipf popularity). The best ranking of any model is the
    labels' frequency order. ``extras["label_probs"]`` holds the K probabilities.
    """
    _check_sizes(num_train=num_train, num_test=num_test, num_labels=num_labels, num_groups=num_groups,
                 group_size=group_size)
    if not (labels_per_point > 0 and exponent > 0):
        raise ArgumentError("labels_per_point and exponent must be positive")
    rng = np.random.default_rng(seed)
    N = num_train + num_test
    weights = (np.arange(1, num_labels + 1, dtype=np.float64)) ** -exponent
    probs = np.minimum(1.0, weights * labels_per_point / weights.sum())
    columns = rng.integers(0, group_size, size=(N, num_groups)) + group_size * np.arange(num_groups)
    X = np.zeros((N, num_groups * group_size))
    np.put_along_axis(X, columns, 1.0, axis=1)
    Y = rng.random((N, num_labels)) < probs
    return _make("uninformative-zipf", X, Y, num_train, {"label_probs": probs})


def informative_zipf(num_train: int = 600, num_test: int = 600, num_labels: int = 300, num_groups: int = 8,
                     group_size: int = 4, groups_per_label: int = 2, top_probability: float = 0.6,
                     exponent: float = 0.5, strength: float = 1.0, seed: int = 0) -> Dataset:
    """Sparse one-hot features that carry the labels, on top of Zipf label popularity.

    Each point has ``num_groups`` one-hot categorical features of ``group_size`` values each
    (D = ``num_groups * group_size``, values drawn uniformly), like :func:`uninformative_zipf`. Label
    l (from 0) has a popularity p_l = ``top_probability`` · (l + 1)^−``exponent`` and depends on
    ``groups_per_label`` groups drawn at random: its logit is
    logit(p_l) + Σ_g e_l[g, x_g] over its groups, the effects e_l[g, ·] drawn N(0, ``strength``²)
    and centred over the group's values. The frequency order is a fair ranking; a model that reads
    the features ranks better (the generating logits rank best).

    Returns
    -------
    Dataset
        X (N, D), Y (N, K). ``extras``: ``effects`` (K, D), the e_l laid out by feature column;
        ``base`` (K,), logit(p_l); ``logits`` (N_train + N_test, K), rows train then test.
    """
    _check_sizes(num_train=num_train, num_test=num_test, num_labels=num_labels, num_groups=num_groups,
                 group_size=group_size, groups_per_label=groups_per_label)
    if groups_per_label > num_groups:
        raise ArgumentError(f"groups_per_label ({groups_per_label}) must be at most num_groups ({num_groups})")
    if not (0 < top_probability < 1 and exponent > 0 and strength >= 0):
        raise ArgumentError(f"informative_zipf needs 0 < top_probability < 1, exponent > 0 and strength ≥ 0; got "
                            f"{top_probability}, {exponent} and {strength}")
    rng = np.random.default_rng(seed)
    N, D = num_train + num_test, num_groups * group_size
    probs = top_probability * np.arange(1, num_labels + 1, dtype=np.float64) ** -exponent
    base = np.log(probs) - np.log1p(-probs)
    effects = np.zeros((num_labels, num_groups, group_size))
    for label in range(num_labels):
        groups = rng.choice(num_groups, size=groups_per_label, replace=False)
        e = strength * rng.standard_normal((groups_per_label, group_size))
        effects[label, groups] = e - e.mean(axis=1, keepdims=True)
    effects = effects.reshape(num_labels, D)
    columns = rng.integers(0, group_size, size=(N, num_groups)) + group_size * np.arange(num_groups)
    X = np.zeros((N, D))
    np.put_along_axis(X, columns, 1.0, axis=1)
    logits = X @ effects.T + base
    Y = rng.random((N, num_labels)) < _sigmoid(logits)
    return _make("informative-zipf", X, Y, num_train, {"effects": effects, "base": base, "logits": logits})


def default_problem(seed: int = 0) -> Dataset:
    """A modest MLGPF-prior problem named ``"synthetic"``: 600 train / 300 test,
    D=20, K=30, P=4, lengthscale sqrt(D) (so the latent functions vary smoothly)."""
    ds = mlgpf_prior(num_train=600, num_test=300, num_features=20, num_labels=30,
                     num_latent=4, lengthscale=float(np.sqrt(20.0)), seed=seed)
    return Dataset(name="synthetic", train=ds.train, test=ds.test, extras=ds.extras)
