"""MLGPF from training data, initialised the paper's way.

:func:`mlgpf_from_data` checks the data once (before anything is built), picks the kernel, starts Z
at a few k-means iterations (or at random training points for SE-F), the bias at the labels'
log-odds and q(u_p) at a broad Gaussian, and records its arguments in ``model.spec`` (which
:func:`mlgp.models.save_mlgpf` saves with the model). :meth:`MLGPF.from_data
<mlgp.models.MLGPF.from_data>` calls it.
"""

from __future__ import annotations

import warnings

import numpy as np
from gpflow import set_trainable
from gpflow.kernels import Kernel

from ..errors import ShapeError
from ..likelihoods import MultiLabelBernoulli
from ..validation import check_training_data
from . import initialisation
from .mlgpf import MLGPF

__all__ = ["label_log_odds", "mlgpf_from_data"]


def mlgpf_from_data(
    X,
    Y,
    kernel: str | Kernel = "se+linear",
    num_latent_gps: int = 30,
    num_inducing: int = 100,
    fixed_inducing: bool = False,
    unit_sphere_inducing: bool = False,
    whiten: bool = False,
    kmeans_iterations: int = 5,
    q_mu_init: float = 0.5,
    q_sqrt_init: float = 0.2,
    bias_init: str = "log-odds",
    num_gauss_hermite_points: int = 10,
    seed: int = 0,
    *,
    model_class: type[MLGPF] = MLGPF,
) -> MLGPF:
    """MLGPF initialised the paper's way from training data.

    Parameters
    ----------
    X
        (N, D) features, CSR or dense (never densified as a whole).
    Y
        (N, K) 0/1 labels, CSR or dense.
    kernel
        ``"linear"``, ``"se"``, ``"se+linear"``, ``"se+linear-shared"`` (see
        :func:`mlgp.kernels.make_kernel`) or a GPflow kernel.
    num_latent_gps, num_inducing
        P (1 ≤ P ≤ K) and M (1 ≤ M ≤ N).
    fixed_inducing
        SE-F: Z fixed at random training points instead of trainable k-means centres.
    unit_sphere_inducing
        Keep Z on the unit sphere (:class:`mlgp.inducing.UnitSphereInducingPoints`), as the
        authors' code does for its L2-normalised inputs; the initial Z is scaled onto it.
    whiten
        Whitened parameterisation of q(u).
    kmeans_iterations
        k-means iterations for the initial Z (:func:`mlgp.models.kmeans_inducing`).
    q_mu_init, q_sqrt_init
        Initial q(u_p): mean ``q_mu_init`` everywhere, covariance ``q_sqrt_init**2 * I``.
    bias_init
        ``"log-odds"`` (default): b_k = log(f_k / (1 − f_k)) with the smoothed training label
        frequency f_k = (n_k + ½) / (N + 1) (:func:`label_log_odds`), so that training starts from
        the label marginals (on Bibtex, P = 60, M = 200, Adam at the paper's step size, it reaches
        a given test P@1 5–10 epochs sooner); ``"random"``: N(0, 1/P) entries, as in the authors'
        code.
    num_gauss_hermite_points
        Quadrature nodes per 1-D expectation.
    seed
        Seeds k-means, the random Z of SE-F and the N(0, 1/P) initial Φ (and b when random).
    model_class
        The class to build (:meth:`MLGPF.from_data <mlgp.models.MLGPF.from_data>` passes its own).

    Returns
    -------
    MLGPF
        With ``spec`` holding these arguments (the kernel's name, or ``None`` for a kernel object).
    """
    from ..kernels import make_kernel
    from ..kernels.factory import canonical_kernel_name

    X, Y = check_training_data(X, Y, num_latent_gps, num_inducing)
    if bias_init not in ("log-odds", "random"):
        raise ShapeError(f"bias_init must be 'log-odds' or 'random', got {bias_init!r}")
    N, D = X.shape
    K = Y.shape[1]
    P, M = int(num_latent_gps), int(num_inducing)
    name = None
    if isinstance(kernel, str):
        name = canonical_kernel_name(kernel)
        kernel = make_kernel(name, D)
    if name == "linear" and M > D:
        warnings.warn(
            f"linear kernel with M={M} inducing inputs in D={D} dimensions: K_ZZ has rank at most D "
            "and is invertible only through jitter; use M ≤ D, or the 'se' / 'se+linear' kernels",
            stacklevel=2,
        )
    if fixed_inducing:
        Z = initialisation.random_inducing(X, M, seed)
    else:
        Z = initialisation.kmeans_inducing(X, M, kmeans_iterations, seed)
    if unit_sphere_inducing:
        from ..inducing import UnitSphereInducingPoints

        Z = UnitSphereInducingPoints(Z)
    likelihood = MultiLabelBernoulli(K, P, num_gauss_hermite_points=num_gauss_hermite_points, seed=seed)
    if bias_init == "log-odds":
        likelihood.bias.assign(label_log_odds(Y))
    model = model_class(
        kernel,
        likelihood,
        Z,
        num_data=N,
        q_mu=np.full((M, P), float(q_mu_init)),
        q_sqrt=np.tile(float(q_sqrt_init) * np.eye(M), (P, 1, 1)),
        whiten=whiten,
    )
    if fixed_inducing:
        set_trainable(model.inducing_variable, False)
    model.spec = dict(
        kernel=name,
        num_features=D,
        num_labels=K,
        num_latent_gps=P,
        num_inducing=M,
        num_data=N,
        whiten=bool(whiten),
        fixed_inducing=bool(fixed_inducing),
        unit_sphere_inducing=bool(unit_sphere_inducing),
        bias_init=bias_init,
        num_gauss_hermite_points=int(num_gauss_hermite_points),
    )
    return model


def label_log_odds(Y) -> np.ndarray:
    """log(f_k / (1 − f_k)) of each label's smoothed frequency f_k = (n_k + ½) / (N + 1).

    ``Y``: (N, K) 0/1 labels, CSR or dense. Returns (K,) float64, finite for labels never seen.
    """
    N = Y.shape[0]
    counts = np.asarray(Y.sum(axis=0), dtype=np.float64).ravel()
    f = (counts + 0.5) / (N + 1.0)
    return np.log(f) - np.log1p(-f)
