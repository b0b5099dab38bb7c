"""MLGPF from training data, initialised the paper's way.

:func:`mlgpf_from_data` checks the data once (before anything is built), picks the kernel, starts Z
at a few k-means iterations (or at random training points for SE-F), the bias at the labels'
log-odds and q(u_p) at a broad Gaussian (or all of Φ and q(u)'s means at a linear warm start,
:mod:`mlgp.models.warm_start`), in the q(u) family and float type asked for, and records its
arguments in ``model.spec`` (which :func:`mlgp.models.save_mlgpf` saves with the model).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import tensorflow as tf
from gpflow import covariances, set_trainable
from gpflow.config import as_context, config
from gpflow.kernels import Kernel

from .. import arguments
from ..blocks import InputMap, input_width
from ..data.subspace import SubspaceProjection, subspace_basis
from ..errors import ArgumentError, ShapeError, warn
from ..floats import float_policy
from ..inducing import SubspaceInducingPoints
from ..kernels import make_kernel, make_subspace_kernel
from ..kernels.factory import canonical_kernel_name
from ..likelihoods import MultiLabelBernoulli
from ..validation import check_training_data
from ..variational import make_q
from ..variational.factory import check_q_family
from . import initialisation
from .warm_start import warm_start

__all__ = ["BIAS_INITS", "label_log_odds", "mlgpf_from_data"]

#: How the bias b starts: at the labels' log-odds, or at N(0, 1/P) draws (the authors' code).
BIAS_INITS: tuple[str, ...] = ("log-odds", "random")


def check_bias_init(value) -> str:
    """``value`` if it is one of :data:`BIAS_INITS`, else :class:`~mlgp.errors.ArgumentError`."""
    if value not in BIAS_INITS:
        raise ArgumentError(f"bias_init must be one of {', '.join(repr(n) for n in BIAS_INITS)}; got {value!r}")
    return value


def mlgpf_from_data(
    X,
    Y,
    *,
    kernel: str | Kernel = "se+linear",
    num_latent_gps: int = 30,
    num_inducing: int = 100,
    fixed_inducing: bool = False,
    unit_sphere_inducing: bool = False,
    whiten: bool | None = None,
    kmeans_iterations: int = 5,
    q_mu_init: float = 0.5,
    q_sqrt_init: float = 0.2,
    bias_init: str = "log-odds",
    num_gauss_hermite_points: int = 10,
    seed: int = 0,
    q_family: str | None = None,
    dtype: str = "float64",
    warm_start: bool = False,
    model_class: type | None = None,
    check_input: bool = True,
    input_map: InputMap | None = None,
    subspace_rank: int | None = None,
    subspace_sample: int | None = None,
    subspace_solver: str = "randomized",
):
    """MLGPF initialised the paper's way from training data.

    The defaults build the paper's model form (:data:`mlgp.recipes.PAPER_FORM`, with P and M as
    :data:`mlgp.recipes.OTHER_SIZES`); the MLGPF recipe's own defaults, which depart from it where
    they train faster, are those of :class:`mlgp.recipes.MLGPFSettings`.

    Parameters
    ----------
    X
        (N, D) features, CSR or dense (never densified as a whole).
    Y
        (N, K) 0/1 labels, CSR or dense.
    kernel
        A name of :data:`mlgp.kernels.factory.KERNELS` (or an alias; see
        :func:`mlgp.kernels.make_kernel`) or a GPflow kernel.
    num_latent_gps, num_inducing
        P (1 ≤ P ≤ K) and M (1 ≤ M ≤ N).
    fixed_inducing
        SE-F: Z fixed at random training points instead of trainable k-means centres.
    unit_sphere_inducing
        Keep Z on the unit sphere (:class:`mlgp.inducing.UnitSphereInducingPoints`), as the
        authors' code does for its L2-normalised inputs; the initial Z is scaled onto it.
    whiten
        Deprecated (a ``FutureWarning``): ``True`` is ``q_family="whitened"``; with ``q_family``
        left ``None``, ``False`` is ``"cholesky"``.
    kmeans_iterations
        k-means iterations for the initial Z (:func:`mlgp.models.kmeans_inducing`).
    q_mu_init, q_sqrt_init
        Initial q(u_p): mean ``q_mu_init`` everywhere, covariance ``q_sqrt_init**2 * I`` (Cholesky
        families). The preconditioned family starts at μ_p = c 1 with c chosen so that the mean of
        u_p = K_ZZ μ_p over Z is ``q_mu_init``, and Σ_p = ``q_sqrt_init**2`` I, which gives S_p the
        eigenvalues λ s/(λ + s) (s = ``q_sqrt_init**2``, λ those of K_ZZ): the Cholesky families'
        s in the directions the prior supports, never more than the prior's λ elsewhere.
    bias_init
        ``"log-odds"`` (default): b_k = log(f_k / (1 − f_k)) with the smoothed training label
        frequency f_k = (n_k + ½) / (N + 1) (:func:`label_log_odds`), so that training starts from
        the label marginals; ``"random"``: N(0, 1/P) entries, as in the authors'
        code.
    num_gauss_hermite_points
        Quadrature nodes per 1-D expectation.
    seed
        Seeds k-means, the random Z of SE-F and the N(0, 1/P) initial Φ (and b when random).
    q_family
        A name of :data:`mlgp.variational.Q_FAMILIES`: ``"cholesky"`` (the paper's), ``"whitened"``
        or ``"preconditioned"``; ``None``: ``"whitened"`` with the deprecated ``whiten=True``, else
        ``"cholesky"``.
    dtype
        A name of :data:`mlgp.floats.FLOAT_POLICIES`, ``"float64"`` or ``"float32"``: the model's
        float type (its parameters, and the precision :func:`mlgp.training.fit` trains in), with
        that policy's jitter on K_ZZ.
    warm_start
        Start Φ and q(u)'s means at the linear solution of :mod:`mlgp.models.warm_start` instead of
        random Φ and constant means.
    model_class
        The class to build: :class:`mlgp.models.MLGPF` (``None``) or a subclass.
    input_map
        A map from the D raw features to the d inputs of the kernel (:class:`mlgp.blocks.InputMap`),
        applied a block of rows at a time before anything densifies them: the kernel is built for
        d inputs, and k-means, the warm start, training and scoring all see mapped blocks.
    subspace_rank
        R: subspace inducing inputs. The top-R right singular vectors X̃ of X
        (:func:`mlgp.data.subspace.subspace_basis`) become the model's input map
        (:class:`~mlgp.data.subspace.SubspaceProjection`), the kernel its subspace form
        (:func:`mlgp.kernels.make_subspace_kernel`) and Z = A X̃ with A (M, R) from k-means on the
        training points' coordinates (random rows with ``fixed_inducing``), so a step costs
        O(B M R), not O(B M D); with ``unit_sphere_inducing`` the rows of A (so of Z) have unit
        norm. 1 ≤ R < min(N, D); not with ``input_map``.
    subspace_sample
        Take the basis from this many training rows drawn at random (``subspace_basis``'s
        ``sample_rows``), and A's k-means from their coordinates, so that the SVD's memory does
        not grow with N; at least M, and above R. ``None``: all rows.
    subspace_solver
        The truncated SVD: ``"randomized"`` (scikit-learn's ``randomized_svd``) or ``"svds"``
        (SciPy's ARPACK ``svds``); ``experiments/bench_subspace.py`` and
        ``experiments/amazoncat_scale.py`` time both.
    check_input
        Check the data, P, M and the choices; ``False`` trusts a caller that has checked them
        (:func:`mlgp.recipes.train_mlgpf`: its settings when built, its data once): X CSR or dense
        float64, Y CSR 0/1.

    Returns
    -------
    MLGPF
        With ``spec`` holding these arguments (the kernel's name, or ``None`` for a kernel object).

    Raises
    ------
    ArgumentError
        For an unknown kernel, q(u) family, dtype or bias_init (naming the choices), or a numeric or
        flag argument out of range (:mod:`mlgp.arguments`: ``q_sqrt_init`` > 0, ``q_mu_init``
        finite, ``kmeans_iterations`` and ``num_gauss_hermite_points`` ≥ 1, ``seed`` in
        [0, 2³¹ − 1]).
    ShapeError
        For data that do not fit (P, M beyond K, N), are not finite, or are too large for the
        float type (:data:`mlgp.validation.MAX_FEATURE_MAGNITUDE`; 1e18 in float32).
    """
    if whiten is not None:
        warn("whiten= is deprecated; use q_family='whitened' (or q_family='cholesky' for whiten=False)",
             FutureWarning)
    if check_input:
        _check_arguments(num_latent_gps, num_inducing, fixed_inducing, unit_sphere_inducing, kmeans_iterations,
                         q_mu_init, q_sqrt_init, num_gauss_hermite_points, seed, warm_start)
        X, Y = check_training_data(X, Y, num_latent_gps, num_inducing,
                                   max_magnitude=float_policy(dtype).max_feature_magnitude)
        check_bias_init(bias_init)
    subspace = None
    if subspace_sample is not None and subspace_rank is None:
        raise ArgumentError("subspace_sample chooses the rows of the subspace's basis: it needs subspace_rank")
    if model_class is None:
        from .mlgpf import MLGPF as model_class  # mlgpf.py imports this module's siblings, not this module
    if subspace_rank is not None:
        subspace_rank, subspace_sample, subspace = _subspace(X, subspace_rank, subspace_sample, subspace_solver,
                                                             num_inducing, input_map, seed)
        input_map = SubspaceProjection(subspace.basis)
    if q_family is None:
        q_family = "whitened" if whiten else "cholesky"
    if check_input:
        check_q_family(q_family)
    if whiten and q_family != "whitened":
        raise ArgumentError(f"whiten=True asks for the whitened family but q_family={q_family!r}")
    policy = float_policy(dtype)
    dtype = policy.name
    with as_context(replace(config(), float=policy.dtype.type, jitter=policy.jitter)):
        model = _build(X, Y, kernel, num_latent_gps, num_inducing, fixed_inducing, unit_sphere_inducing, q_family,
                       kmeans_iterations, q_mu_init, q_sqrt_init, bias_init, num_gauss_hermite_points, seed, warm_start,
                       model_class, input_map, subspace)
    model.spec = dict(
        kernel=model.spec.pop("kernel"),
        num_features=X.shape[1],
        num_labels=Y.shape[1],
        num_latent_gps=int(num_latent_gps),
        num_inducing=int(num_inducing),
        num_data=X.shape[0],
        whiten=q_family == "whitened",
        q_family=q_family,
        dtype=dtype,
        warm_start=bool(warm_start),
        fixed_inducing=bool(fixed_inducing),
        unit_sphere_inducing=bool(unit_sphere_inducing),
        bias_init=bias_init,
        num_gauss_hermite_points=int(num_gauss_hermite_points),
        subspace_rank=subspace_rank,
        subspace_sample=subspace_sample,
        subspace_solver=subspace_solver if subspace_rank is not None else None,
    )
    return model


def _subspace(X, rank, sample, solver, num_inducing: int, input_map, seed: int):
    """``(R, sample, SubspaceBasis)`` of subspace inducing inputs for X (N, D): R and the sample
    size checked against N, D and M (and against a given ``input_map``, which R replaces)."""
    rank = arguments.positive_int(rank, "subspace_rank")
    if input_map is not None:
        raise ArgumentError("subspace_rank makes its own input map: it cannot be combined with input_map")
    if rank >= min(X.shape):
        raise ShapeError(f"subspace_rank R must be below min(N, D) = {min(X.shape)}, got {rank}")
    sample = arguments.positive_int(sample, "subspace_sample", optional=True)
    if sample is not None and sample < X.shape[0] and (sample < num_inducing or sample <= rank):
        raise ShapeError(f"subspace_sample must be at least M = {num_inducing} and above R = {rank} "
                         f"(k-means of A and the SVD run on the sample); got {sample}")
    return rank, sample, subspace_basis(X, rank, seed=seed, sample_rows=sample, solver=solver)


#: The most Gauss-Hermite points per expectation (what a save may record; more adds nothing)
MAX_QUADRATURE_POINTS = 1000


def _check_arguments(num_latent_gps, num_inducing, fixed_inducing, unit_sphere_inducing, kmeans_iterations,
                     q_mu_init, q_sqrt_init, num_gauss_hermite_points, seed, warm_start) -> None:
    """The numeric and flag arguments of :func:`mlgpf_from_data`, through :mod:`mlgp.arguments`
    (the checks :class:`mlgp.recipes.MLGPFSettings` and the command line use)."""
    arguments.positive_int(num_latent_gps, "num_latent_gps")
    arguments.positive_int(num_inducing, "num_inducing")
    arguments.flag(fixed_inducing, "fixed_inducing")
    arguments.flag(unit_sphere_inducing, "unit_sphere_inducing")
    arguments.flag(warm_start, "warm_start")
    arguments.positive_int(kmeans_iterations, "kmeans_iterations")
    arguments.finite_real(q_mu_init, "q_mu_init")
    arguments.positive_real(q_sqrt_init, "q_sqrt_init")  # 0 would make q(u) singular
    if arguments.positive_int(num_gauss_hermite_points, "num_gauss_hermite_points") > MAX_QUADRATURE_POINTS:
        raise ArgumentError(f"num_gauss_hermite_points must be at most {MAX_QUADRATURE_POINTS}, got {num_gauss_hermite_points}")
    arguments.seed(seed)


def _build(X, Y, kernel, num_latent_gps, num_inducing, fixed_inducing, unit_sphere_inducing, q_family,
           kmeans_iterations, q_mu_init, q_sqrt_init, bias_init, num_gauss_hermite_points, seed, warm,
           model_class, input_map, subspace=None):
    """The model, built in the current GPflow float type and jitter (``subspace``: the
    :class:`~mlgp.data.subspace.SubspaceBasis` of subspace inducing inputs, whose projection is
    ``input_map``)."""
    if input_map is not None and int(input_map.num_features) != X.shape[1]:
        raise ShapeError(f"the input map takes D = {input_map.num_features} features but X has {X.shape[1]}")
    N, D = X.shape[0], input_width(X.shape[1], input_map)
    K = Y.shape[1]
    P, M = int(num_latent_gps), int(num_inducing)
    name = None
    if isinstance(kernel, str):
        name = canonical_kernel_name(kernel)
        kernel = make_kernel(name, D) if subspace is None else make_subspace_kernel(name, D - 1)
    span = D if subspace is None else D - 1  # subspace inducing inputs span R = D − 1 directions
    if name == "linear" and M > span:
        warn(
            f"linear kernel with M={M} inducing inputs in {span} dimensions: K_ZZ has rank at most {span} "
            f"and is invertible only through jitter; use M ≤ {span}, or the 'se' / 'se+linear' kernels"
        )
    # the registry's name for the two flags
    inducing = ("fixed-" if fixed_inducing else "") + ("unit-sphere" if unit_sphere_inducing else "")
    inducing = {"": "kmeans", "fixed-": "fixed"}.get(inducing, inducing)
    if subspace is None:
        Z = initialisation.make_inducing(inducing, X, M, iterations=kmeans_iterations, seed=seed, input_map=input_map)
    else:  # A from the training points' coordinates in the subspace
        Z = initialisation.make_inducing(inducing, subspace.coordinates, M, iterations=kmeans_iterations, seed=seed)
        Z = SubspaceInducingPoints(Z.Z.numpy(), unit_rows=unit_sphere_inducing)
        if fixed_inducing:
            set_trainable(Z, False)
    likelihood = MultiLabelBernoulli(K, P, num_gauss_hermite_points=num_gauss_hermite_points, seed=seed)
    if bias_init == "log-odds":
        likelihood.bias.assign(label_log_odds(Y))
    Kuu_tensor = covariances.Kuu(Z, kernel, jitter=0.0)
    Kuu_dtype = Kuu_tensor.dtype
    Kuu = Kuu_tensor.numpy().astype(np.float64)
    if warm:
        def kernel_matrix(xb: np.ndarray) -> np.ndarray:  # K_XZ (n, M) of a block of the kernel's inputs
            return tf.transpose(covariances.Kuf(Z, kernel, tf.constant(xb, Kuu_dtype))).numpy()

        alpha, loadings = warm_start(X, Y, kernel_matrix, Kuu, likelihood.bias.numpy().astype(np.float64), P,
                                     seed=seed, input_map=input_map)
        likelihood.loadings.assign(loadings)
    else:
        alpha = None
    q = _initial_q(q_family, M, P, Kuu, float(q_mu_init), float(q_sqrt_init), alpha)
    model = model_class(kernel, likelihood, Z, num_data=N, q=q, input_map=input_map)
    model.spec = {"kernel": name}
    return model


def _initial_q(family: str, M: int, P: int, Kuu: np.ndarray, q_mu_init: float, q_sqrt_init: float, alpha):
    """The initial q(u) of ``family`` (see :func:`mlgpf_from_data`); ``alpha`` (M, P): the warm
    start's m = K_ZZ α, or ``None`` for the constant start."""
    q_sqrt = np.tile(q_sqrt_init * np.eye(M), (P, 1, 1))
    if family == "preconditioned":
        if alpha is None:
            c = q_mu_init / max(float(Kuu.sum(axis=1).mean()), 1e-12)
            alpha = np.full((M, P), c)
        return make_q(family, M, P, q_mu=alpha, q_sigma=np.full((P, M), max(q_sqrt_init**2, 1e-3)))
    if alpha is None:
        return make_q(family, M, P, q_mu=np.full((M, P), q_mu_init), q_sqrt=q_sqrt)
    if family == "cholesky":
        return make_q(family, M, P, q_mu=Kuu @ alpha, q_sqrt=q_sqrt)
    from gpflow.config import default_jitter

    L = np.linalg.cholesky(Kuu + default_jitter() * np.eye(M))
    return make_q(family, M, P, q_mu=L.T @ alpha, q_sqrt=q_sqrt)


def label_log_odds(Y) -> np.ndarray:
    """log(f_k / (1 − f_k)) of each label's smoothed frequency f_k = (n_k + ½) / (N + 1).

    ``Y``: (N, K) 0/1 labels, CSR or dense. Returns (K,) float64, finite for labels never seen.
    """
    N = Y.shape[0]
    counts = np.asarray(Y.sum(axis=0), dtype=np.float64).ravel()
    f = (counts + 0.5) / (N + 1.0)
    return np.log(f) - np.log1p(-f)
