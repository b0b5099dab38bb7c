r"""MLGPF: the multi-label Gaussian-process latent factor model (Panos, Dellaportas & Titsias, 2021).

P latent functions h_p ~ GP(0, k) share one kernel and one set of M inducing inputs Z. With
q(u_p) = N(μ_p, L_p L_pᵀ) (non-whitened, as in the paper; ``whiten=True`` uses u = L_K v instead)
the marginals q(h_p(x)) = N(m_p(x), s_p(x)) come from GPflow's own ``conditional`` for a
``SharedIndependent`` kernel with ``SharedIndependentInducingVariables``; the
:class:`~mlgp.likelihoods.MultiLabelBernoulli` likelihood mixes them into the K label utilities
f = Φ h + b. The bound on a minibatch B of N points is

    ELBO = N/|B| Σ_{i∈B} Σ_k E_q[log σ(y_ik f_ik)] − Σ_p KL[q(u_p) ‖ p(u_p)],

with the full KL, and the label sum either exact or estimated from a subsample of negatives.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import tensorflow as tf
from check_shapes import check_shapes, inherit_check_shapes
from gpflow import Parameter, covariances, default_float, kullback_leiblers
from gpflow.config import default_jitter
from gpflow.conditionals import conditional
from gpflow.inducing_variables import InducingPoints, SharedIndependentInducingVariables
from gpflow.kernels import Kernel, SharedIndependent
from gpflow.models import GPModel
from gpflow.models.training_mixins import ExternalDataTrainingLossMixin
from ..variational import lower_triangular, shared_marginals

from ..likelihoods import LabelBatch, MultiLabelBernoulli
from ..errors import DataFormatError, ShapeError
from ..validation import check_features, check_training_data

__all__ = ["MLGPF"]

_FORMAT = "mlgp.MLGPF/1"


class MLGPF(GPModel, ExternalDataTrainingLossMixin):
    """Multi-label GP latent factor model.

    Parameters
    ----------
    kernel
        A GPflow kernel over the D inputs, shared by all P latent GPs (wrapped in
        ``SharedIndependent``), or an already shared multi-output kernel.
    likelihood
        :class:`~mlgp.likelihoods.MultiLabelBernoulli` with latent dimension P.
    inducing_variable
        Z as an (M, D) array, ``InducingPoints`` or ``SharedIndependentInducingVariables``.
    num_data
        N, the number of training points (scales minibatch bounds by N/|B|).
    q_mu
        (M, P) initial variational means (default zeros).
    q_sqrt
        (P, M, M) lower-triangular initial Cholesky factors (default identity).
    whiten
        Whitened parameterisation of q(u).
    """

    def __init__(
        self,
        kernel: Kernel,
        likelihood: MultiLabelBernoulli,
        inducing_variable,
        num_data: int | None = None,
        q_mu: np.ndarray | None = None,
        q_sqrt: np.ndarray | None = None,
        whiten: bool = False,
    ) -> None:
        P = likelihood.num_latent
        if not isinstance(kernel, SharedIndependent):
            kernel = SharedIndependent(kernel, output_dim=P)
        super().__init__(kernel, likelihood, mean_function=None, num_latent_gps=P)
        if isinstance(inducing_variable, SharedIndependentInducingVariables):
            self.inducing_variable = inducing_variable
        else:
            if not isinstance(inducing_variable, InducingPoints):
                inducing_variable = InducingPoints(np.asarray(inducing_variable, dtype=np.float64))
            self.inducing_variable = SharedIndependentInducingVariables(inducing_variable)
        M = int(self.inducing_variable.num_inducing)
        self.num_data = num_data
        self.whiten = bool(whiten)
        q_mu = np.zeros((M, P)) if q_mu is None else np.asarray(q_mu, dtype=np.float64)
        q_sqrt = np.tile(np.eye(M), (P, 1, 1)) if q_sqrt is None else np.asarray(q_sqrt, dtype=np.float64)
        if q_mu.shape != (M, P):
            raise ShapeError(f"q_mu must have shape (M, P) = {(M, P)}, got {q_mu.shape}")
        if q_sqrt.shape != (P, M, M):
            raise ShapeError(f"q_sqrt must have shape (P, M, M) = {(P, M, M)}, got {q_sqrt.shape}")
        self.q_mu = Parameter(q_mu, dtype=default_float(), name="q_mu")
        self.q_sqrt = Parameter(q_sqrt, transform=lower_triangular(), dtype=default_float(), name="q_sqrt")
        self.spec: dict = {}

    # ----------------------------------------------------------------- sizes
    @property
    def num_labels(self) -> int:
        """K."""
        return self.likelihood.num_labels

    @property
    def num_features(self) -> int:
        """D, the input dimension."""
        return int(self.inducing_variable.inducing_variable.Z.shape[-1])

    @property
    def num_inducing(self) -> int:
        """M."""
        return int(self.inducing_variable.num_inducing)

    # ----------------------------------------------------------------- construction from data
    @classmethod
    def from_data(
        cls,
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
    ) -> "MLGPF":
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
        q_mu_init, q_sqrt_init
            Initial q(u_p): mean ``q_mu_init`` everywhere, covariance ``q_sqrt_init``² I.
        bias_init
            ``"log-odds"`` (default): b_k = log(f_k / (1 − f_k)) with the smoothed training label
            frequency f_k = (n_k + ½) / (N + 1), so that training starts from the label marginals
            (on Bibtex, P = 60, M = 200, Adam at the paper's step size, it reaches a given test P@1
            5–10 epochs sooner);
            ``"random"``: N(0, 1/P) entries, as in the authors' code.
        seed
            Seeds k-means, the random Z of SE-F and the N(0, 1/P) initial Φ (and b when random).
        """
        from ..kernels import make_kernel
        from ..kernels.factory import canonical_kernel_name
        from .initialisation import kmeans_inducing, random_inducing

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
            import warnings

            warnings.warn(
                f"linear kernel with M={M} inducing inputs in D={D} dimensions: K_ZZ has rank at most D "
                "and is invertible only through jitter; use M ≤ D, or the 'se' / 'se+linear' kernels",
                stacklevel=2,
            )
        Z = random_inducing(X, M, seed) if fixed_inducing else kmeans_inducing(X, M, kmeans_iterations, seed)
        if unit_sphere_inducing:
            from ..inducing import UnitSphereInducingPoints

            Z = UnitSphereInducingPoints(Z)
        likelihood = MultiLabelBernoulli(K, P, num_gauss_hermite_points=num_gauss_hermite_points, seed=seed)
        if bias_init == "log-odds":
            likelihood.bias.assign(label_log_odds(Y))
        model = cls(
            kernel,
            likelihood,
            Z,
            num_data=N,
            q_mu=np.full((M, P), float(q_mu_init)),
            q_sqrt=np.tile(float(q_sqrt_init) * np.eye(M), (P, 1, 1)),
            whiten=whiten,
        )
        if fixed_inducing:
            from gpflow import set_trainable

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

    # ----------------------------------------------------------------- the bound
    @check_shapes("return: [M, M]")
    def kuu_cholesky(self) -> tf.Tensor:
        """chol(K_ZZ + jitter I), (M, M): the one factorisation that the marginals and the KL share."""
        Kmm = covariances.Kuu(self.inducing_variable, self.kernel, jitter=default_jitter())
        return tf.linalg.cholesky(Kmm)

    @check_shapes("kuu_cholesky: [M, M]", "return: []")
    def prior_kl(self, kuu_cholesky: tf.Tensor | None = None) -> tf.Tensor:
        """Σ_p KL[q(u_p) ‖ p(u_p)] (the full KL, not halved).

        ``kuu_cholesky``: :meth:`kuu_cholesky`, when the caller has it already (the whitened KL
        does not need it).
        """
        if kuu_cholesky is None or self.whiten:
            return kullback_leiblers.prior_kl(self.inducing_variable, self.kernel, self.q_mu, self.q_sqrt, whiten=self.whiten)
        return kullback_leiblers.gauss_kl(self.q_mu, self.q_sqrt, K_cholesky=kuu_cholesky)

    def maximum_log_likelihood_objective(self, data) -> tf.Tensor:  # type: ignore[override]
        return self.elbo(data)

    def training_loss(self, data) -> tf.Tensor:  # type: ignore[override]
        """−(ELBO + log prior density of the parameters) on ``data``.

        GPflow's ``training_loss_closure`` builds on this; the log prior is zero unless priors were
        set on parameters (``model.likelihood.loadings.prior = ...``).
        """
        return -(self.elbo(data) + self.log_prior_density())

    def expected_log_likelihood(self, data, kuu_cholesky: tf.Tensor | None = None) -> tf.Tensor:
        """Per-point Σ_k E_q[log σ(y_ik f_ik)], shape (B,); labels dense 0/1 (B, K) or a LabelBatch.

        ``kuu_cholesky``: (M, M) :meth:`kuu_cholesky`, when the caller has it already.
        """
        X, Y = data
        if kuu_cholesky is None:
            f_mean, f_var = self.predict_f(X)
        else:
            f_mean, f_var = shared_marginals(
                X, self.inducing_variable, self.kernel, self.q_mu, self.q_sqrt, white=self.whiten, kuu_cholesky=kuu_cholesky
            )
        if isinstance(Y, LabelBatch):
            return self.likelihood.subsampled_expectations(f_mean, f_var, Y)
        return self.likelihood.variational_expectations(X, f_mean, f_var, Y)

    def elbo(self, data, kuu_cholesky: tf.Tensor | None = None) -> tf.Tensor:
        """The bound (an unbiased estimate of it for minibatches and subsampled labels).

        Parameters
        ----------
        data
            ``(X, Y)``: X (B, D) dense features; Y either (B, K) 0/1 labels (exact label sum) or a
            :class:`~mlgp.likelihoods.LabelBatch` (subsampled negatives).
        kuu_cholesky
            (M, M) :meth:`kuu_cholesky`; computed here (once, for the marginals and the KL) when
            not given. Passing it lets a caller differentiate the factorisation separately
            (``fit(jit_compile="except-cholesky")``).
        """
        X = data[0]
        if kuu_cholesky is None:
            kuu_cholesky = self.kuu_cholesky()
        kl = self.prior_kl(kuu_cholesky)
        var_exp = self.expected_log_likelihood(data, kuu_cholesky)
        if self.num_data is not None:
            scale = tf.cast(self.num_data, kl.dtype) / tf.cast(tf.shape(X)[0], kl.dtype)
        else:
            scale = tf.cast(1.0, kl.dtype)
        return tf.reduce_sum(var_exp) * scale - kl

    # ----------------------------------------------------------------- predictions
    @inherit_check_shapes
    def predict_f(self, Xnew, full_cov: bool = False, full_output_cov: bool = False):
        """Marginals of the P latent GPs at dense ``Xnew`` (N, D): mean and variance (N, P).

        Marginals (the default) use :func:`mlgp.variational.shared_marginals`, which shares the
        projection K_ZZ⁻¹ K_Zx among the P functions; full covariances come from GPflow's
        ``conditional``.
        """
        if not full_cov and not full_output_cov:
            return shared_marginals(Xnew, self.inducing_variable, self.kernel, self.q_mu, self.q_sqrt, white=self.whiten)
        mu, var = conditional(
            Xnew,
            self.inducing_variable,
            self.kernel,
            self.q_mu,
            q_sqrt=self.q_sqrt,
            full_cov=full_cov,
            white=self.whiten,
            full_output_cov=full_output_cov,
        )
        return mu, var

    @tf.function(reduce_retracing=True)
    def _mean_utilities(self, Xb: tf.Tensor) -> tf.Tensor:
        mu, _ = self.predict_f(Xb)
        return tf.linalg.matmul(mu, self.likelihood.loadings, transpose_b=True) + self.likelihood.bias

    def predict_scores(self, X, batch_size: int = 1000, top_k: int | None = None):
        """Mean utilities f̄ = Φ m(x) + b for ranking labels.

        Parameters
        ----------
        X
            (N, D) features, CSR or dense; densified ``batch_size`` rows at a time.
        top_k
            If given, return :class:`mlgp.metrics.TopK` with the ``top_k`` best labels per row
            (memory O(N top_k)); otherwise the dense (N, K) array.
        """
        X = check_features(X, num_features=self.num_features)
        batch_size = _check_batch_size(batch_size)
        N = X.shape[0]
        if top_k is not None:
            from ..metrics import TopK, topk

            k = int(top_k)
            if k != top_k or not 1 <= k <= self.num_labels:
                raise ShapeError(f"top_k must be an integer in [1, K={self.num_labels}], got {top_k!r}")
            idx = np.empty((N, k), dtype=np.int64)
            val = np.empty((N, k), dtype=np.float64)
        else:
            out = np.empty((N, self.num_labels), dtype=np.float64)
        for start in range(0, N, int(batch_size)):
            rows = slice(start, min(N, start + int(batch_size)))
            xb = X[rows]
            xb = xb.toarray() if sp.issparse(xb) else xb
            f = self._mean_utilities(tf.constant(xb, dtype=default_float())).numpy()
            if top_k is None:
                out[rows] = f
            else:
                t = topk(f, k)
                idx[rows], val[rows] = t.indices, t.scores
        return out if top_k is None else TopK(idx, val)

    def predict_proba(self, X, batch_size: int = 1000) -> np.ndarray:
        """Predictive label probabilities E_q[σ(f_k(x))], dense (N, K)."""
        X = check_features(X, num_features=self.num_features)
        batch_size = _check_batch_size(batch_size)
        out = []
        for start in range(0, X.shape[0], int(batch_size)):
            xb = X[start : start + int(batch_size)]
            xb = tf.constant(xb.toarray() if sp.issparse(xb) else xb, dtype=default_float())
            mu, var = self.predict_f(xb)
            out.append(self.likelihood.predict_mean_and_var(xb, mu, var)[0].numpy())
        return np.concatenate(out, axis=0)


    # ----------------------------------------------------------------- saving without pickle
    def save(self, path: str | Path) -> Path:
        """Write ``path/model.json`` (structure) and ``path/parameters.npz`` (unconstrained values).

        Only models built by :meth:`from_data` can be rebuilt by :meth:`load`; any model's values can
        be restored into a model of the same structure with :meth:`load_parameters`.
        """
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        values = {name: p.unconstrained_variable.numpy() for name, p in _parameters(self).items()}
        trainable = {name: bool(p.trainable) for name, p in _parameters(self).items()}
        np.savez(path / "parameters.npz", **values)
        (path / "model.json").write_text(json.dumps({"format": _FORMAT, "spec": self.spec, "trainable": trainable}, indent=2))
        return path

    def load_parameters(self, path: str | Path) -> None:
        """Assign the values saved by :meth:`save` (exactly, in unconstrained space)."""
        path = Path(path)
        with np.load(path / "parameters.npz", allow_pickle=False) as npz:
            params = _parameters(self)
            missing = sorted(set(params) - set(npz.files))
            extra = sorted(set(npz.files) - set(params))
            if missing or extra:
                raise ShapeError(f"saved parameters do not match this model: missing {missing}, unexpected {extra}")
            values = {name: npz[name] for name in params}
            for name, p in params.items():  # check every shape before assigning anything
                if values[name].shape != tuple(p.unconstrained_variable.shape):
                    raise ShapeError(f"{name}: saved shape {values[name].shape} ≠ model shape {tuple(p.unconstrained_variable.shape)}")
            for name, p in params.items():
                p.unconstrained_variable.assign(values[name])

    @classmethod
    def load(cls, path: str | Path) -> "MLGPF":
        """Rebuild a model written by :meth:`save` (of a model made by :meth:`from_data`)."""
        from gpflow import set_trainable

        from ..kernels import make_kernel

        path = Path(path)
        meta = json.loads((path / "model.json").read_text())
        if meta.get("format") != _FORMAT:
            raise DataFormatError(f"{path / 'model.json'} is not an MLGPF save (format {meta.get('format')!r})")
        spec = meta["spec"]
        if not spec or spec.get("kernel") is None:
            raise DataFormatError("this save holds no model structure (model not built by MLGPF.from_data); use load_parameters")
        D, K, P, M = spec["num_features"], spec["num_labels"], spec["num_latent_gps"], spec["num_inducing"]
        if spec.get("unit_sphere_inducing", False):  # saves made before the option lack the key
            from ..inducing import UnitSphereInducingPoints

            Z = UnitSphereInducingPoints(np.ones((M, D)))
        else:
            Z = np.zeros((M, D))
        model = cls(
            make_kernel(spec["kernel"], D),
            MultiLabelBernoulli(K, P, num_gauss_hermite_points=spec["num_gauss_hermite_points"]),
            Z,
            num_data=spec["num_data"],
            whiten=spec["whiten"],
        )
        model.spec = spec
        model.load_parameters(path)
        params = _parameters(model)
        for name, flag in meta.get("trainable", {}).items():
            if name in params:
                set_trainable(params[name], flag)
        return model


def label_log_odds(Y) -> np.ndarray:
    """log(f_k / (1 − f_k)) of each label's smoothed frequency f_k = (n_k + ½) / (N + 1); Y (N, K) → (K,)."""
    N = Y.shape[0]
    counts = np.asarray(Y.sum(axis=0), dtype=np.float64).ravel()
    f = (counts + 0.5) / (N + 1.0)
    return np.log(f) - np.log1p(-f)


def _check_batch_size(batch_size) -> int:
    if isinstance(batch_size, bool) or int(batch_size) != batch_size or int(batch_size) < 1:
        raise ShapeError(f"batch_size must be a positive integer, got {batch_size!r}")
    return int(batch_size)


def _parameters(module) -> dict:
    from gpflow.utilities import parameter_dict

    return {name.lstrip("."): p for name, p in parameter_dict(module).items()}
