r"""MLGPF: the multi-label Gaussian-process latent factor model (Panos, Dellaportas & Titsias, 2021).

P latent functions h_p ~ GP(0, k) share one kernel and one set of M inducing inputs Z (a
``SharedIndependent`` kernel with ``SharedIndependentInducingVariables``). The model holds one q(u)
family object (:mod:`mlgp.variational`): ``"cholesky"`` q(u_p) = N(μ_p, L_p L_pᵀ) (the paper's
form, the default), ``"whitened"`` (u = L_K v) or ``"preconditioned"`` (2M parameters per GP); the
family gives the marginals q(h_p(x)) = N(m_p(x), s_p(x)) and the KL from K_ZZ, and the
:class:`~mlgp.likelihoods.MultiLabelBernoulli` likelihood mixes the marginals into the K label
utilities f = Φ h + b. The bound on a minibatch B of N points is

    ELBO = N/|B| Σ_{i∈B} Σ_k E_q[log σ(y_ik f_ik)] − Σ_p KL[q(u_p) ‖ p(u_p)],

with the full KL, and the label sum either exact or estimated from a subsample of negatives.

:class:`MLGPF` holds the bound, the latent marginals and, for a block of the kernel's inputs, the
mean utilities f̄ = Φ m(x) + b that rank the labels (:meth:`MLGPF.mean_utilities`, one compiled
function per model) and the label probabilities E_q[σ(f)] (:meth:`MLGPF.label_probabilities`).
Scoring raw features (CSR or dense, a block of rows at a time through the input map) is
:class:`mlgp.recipes.MLGPFClassifier`'s (``MLGPFClassifier.from_model(model)``). Building a model
from training data is :func:`mlgp.models.mlgpf_from_data`; saving and
loading without pickle is :mod:`mlgp.models.persistence` (``MLGPF.save``, ``MLGPF.load``,
``MLGPF.load_parameters``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tensorflow as tf
from check_shapes import check_shapes, inherit_check_shapes
from gpflow import covariances, default_float
from gpflow.conditionals import conditional
from gpflow.kernels import Kernel, SharedIndependent
from gpflow.models import GPModel
from gpflow.models.training_mixins import ExternalDataTrainingLossMixin

from ..blocks import InputMap, take_rows
from ..errors import ArgumentError, ShapeError, warn
from ..floats import float_policy
from ..inducing import input_dim, shared_inducing_variable
from ..likelihoods import LabelBatch, MultiLabelBernoulli
from ..validation import check_features
from ..variational import CholeskyQ, QDistribution, WhitenedQ
from ._mean import compiled_mean_utilities
from .persistence import load_mlgpf, load_parameters, save_mlgpf

__all__ = ["MLGPF"]

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
        Z as an (M, d) array or any GPflow ``InducingVariables`` (``InducingPoints``,
        :class:`~mlgp.inducing.UnitSphereInducingPoints`, …), normalised once by
        :func:`mlgp.inducing.shared_inducing_variable`; d is the width the kernel sees
        (:data:`mlgp.inducing.InputDim`).
    num_data
        N, the number of training points (scales minibatch bounds by N/|B|).
    q_mu
        (M, P) initial variational means (default zeros), for the Cholesky families.
    q_sqrt
        (P, M, M) lower-triangular initial Cholesky factors (default identity).
    whiten
        Deprecated alias of ``q_family="whitened"`` (warns).
    q
        A q(u) family object (:class:`~mlgp.variational.QDistribution`) for M inducing inputs and
        P latent GPs, instead of ``q_mu`` / ``q_sqrt`` / ``q_family``.
    q_family
        With ``q_mu`` / ``q_sqrt``: ``"cholesky"`` (default, the paper's) or ``"whitened"``.
    input_map
        The map from a block of D raw features to the d inputs of the kernel
        (:class:`mlgp.blocks.InputMap`, e.g. a projection of sparse inputs), applied a block
        of rows at a time before anything densifies it; ``None``: the identity (D = d).

    Attributes
    ----------
    q
        The q(u) family object, which owns the variational parameters.
    float_type
        The dtype of the model (GPflow's ``default_float()`` when it was built); inputs are cast to it.
    input_map
        The input map, or ``None``.

    The model takes raw features of width D (``num_features``: the input map's, or d without a
    map) and its kernel sees inputs of width d (``input_dim``, from the inducing variables).
    spec
        The arguments of :func:`~mlgp.models.mlgpf_from_data` for a model built by it, else ``{}``;
        saved with the model.
    """

    def __init__(
        self,
        kernel: Kernel,
        likelihood: MultiLabelBernoulli,
        inducing_variable,
        *,
        num_data: int | None = None,
        q_mu: np.ndarray | None = None,
        q_sqrt: np.ndarray | None = None,
        whiten: bool = False,
        q: QDistribution | None = None,
        q_family: str | None = None,
        input_map: InputMap | None = None,
    ) -> None:
        # Shapes are checked here rather than by @check_shapes so that a wrong q_mu / q_sqrt raises
        # the package's ShapeError (an MLGPError), like every other bad input.
        P = likelihood.num_latent
        if not isinstance(kernel, SharedIndependent):
            kernel = SharedIndependent(kernel, output_dim=P)
        super().__init__(kernel, likelihood, mean_function=None, num_latent_gps=P)
        self.float_type = np.dtype(default_float())
        self.inducing_variable = shared_inducing_variable(inducing_variable, self.float_type)
        M = int(self.inducing_variable.num_inducing)
        self.input_dim = input_dim(self.inducing_variable)
        if input_map is not None:
            if not isinstance(input_map, InputMap):
                raise ArgumentError(f"input_map must have num_features, num_outputs and be callable (mlgp.blocks."
                                    f"InputMap); got {type(input_map).__name__}")
            if int(input_map.num_outputs) != self.input_dim:
                raise ShapeError(f"the input map gives {input_map.num_outputs} columns but the inducing variables "
                                 f"live in d = {self.input_dim}")
        self.input_map = input_map
        self.num_features = self.input_dim if input_map is None else int(input_map.num_features)
        self.num_data = num_data
        if whiten:
            warn("MLGPF(whiten=True) is deprecated; use q_family='whitened'", FutureWarning)
            if q_family not in (None, "whitened"):
                raise ArgumentError(f"whiten=True asks for the whitened family but q_family={q_family!r}")
            q_family = "whitened"
        if q is None:
            family = {None: CholeskyQ, "cholesky": CholeskyQ, "whitened": WhitenedQ}.get(q_family)
            if family is None:
                raise ArgumentError(f"with q_mu / q_sqrt, q_family must be 'cholesky' or 'whitened'; got {q_family!r} "
                                    "(pass q=... for other families)")
            q = family(M, P, q_mu=q_mu, q_sqrt=q_sqrt)
        elif q_mu is not None or q_sqrt is not None or q_family is not None:
            raise ArgumentError("give either q (a q(u) family object) or q_mu / q_sqrt / q_family, not both")
        elif not isinstance(q, QDistribution):
            raise ArgumentError(f"q must be a mlgp.variational.QDistribution, got {type(q).__name__}")
        if (q.num_inducing, q.num_latent_gps) != (M, P):
            raise ShapeError(f"q is for (M, P) = {(q.num_inducing, q.num_latent_gps)} but the model has {(M, P)}")
        self.q = q
        self.spec: dict = {}

    def float_context(self):
        """A context with GPflow's ``default_float`` and jitter set to this model's, for eager calls
        of a model whose float type is not the global one (``fit`` and the scoring functions use it)."""
        from dataclasses import replace

        from gpflow.config import as_context, config

        return as_context(replace(config(), float=self.float_type, jitter=self.q.jitter))

    @property
    def q_family(self) -> str:
        """The name of the q(u) family: ``"cholesky"``, ``"whitened"`` or ``"preconditioned"``."""
        return self.q.family

    @property
    def whiten(self) -> bool:
        """Whether q(u) is the whitened Cholesky family."""
        return bool(getattr(self.q, "whiten", False))

    @property
    def q_mu(self):
        """The family's ``q_mu`` Parameter (M, P)."""
        return self.q.q_mu

    @property
    def q_sqrt(self):
        """The Cholesky families' ``q_sqrt`` Parameter (P, M, M)."""
        if not hasattr(self.q, "q_sqrt"):
            raise AttributeError(f"the {self.q_family!r} q(u) family has no q_sqrt")
        return self.q.q_sqrt

    # ----------------------------------------------------------------- sizes
    @property
    def num_labels(self) -> int:
        """K."""
        return self.likelihood.num_labels

    @property
    def num_inducing(self) -> int:
        """M."""
        return int(self.inducing_variable.num_inducing)

    # ----------------------------------------------------------------- building and saving (elsewhere)
    def save(self, path: str | Path) -> Path:
        """Write the model to the folder ``path``: :func:`mlgp.models.save_mlgpf`."""
        return save_mlgpf(self, path)

    @classmethod
    def load(cls, path: str | Path) -> "MLGPF":
        """Rebuild a model written by :meth:`save`: :func:`mlgp.models.load_mlgpf`."""
        return load_mlgpf(path, model_class=cls)

    def load_parameters(self, path: str | Path) -> None:
        """Assign the values saved in ``path`` to this model: :func:`mlgp.models.load_parameters`."""
        load_parameters(self, path)

    # ----------------------------------------------------------------- the bound
    @check_shapes("return: [M, M]")
    def kuu(self) -> tf.Tensor:
        """K_ZZ (M, M) without jitter (each q(u) family adds what it needs)."""
        return covariances.Kuu(self.inducing_variable, self.kernel, jitter=0.0)

    def factorisation(self) -> tuple[tf.Tensor, tf.Tensor]:
        """``(K_ZZ, factor)``: what the marginals and the KL share, ``factor`` being the family's
        :meth:`~mlgp.variational.QDistribution.factorise` (chol(K_ZZ + jitter I) for the Cholesky
        families, the P factors chol(K_ZZ + Σ_p) for the preconditioned one)."""
        Kuu = self.kuu()
        return Kuu, self.q.factorise(Kuu)

    @check_shapes("return: [M, M]")
    def kuu_cholesky(self) -> tf.Tensor:
        """chol(K_ZZ + jitter I), (M, M), with the family's jitter."""
        return self.q.kuu_cholesky(self.kuu())

    @check_shapes("return: []")
    def prior_kl(self, factorisation: tuple[tf.Tensor, tf.Tensor] | None = None) -> tf.Tensor:
        """Σ_p KL[q(u_p) ‖ p(u_p)] (the full KL, not halved).

        ``factorisation``: :meth:`factorisation`, when the caller has it already.
        """
        Kuu, factor = self.factorisation() if factorisation is None else factorisation
        return self.q.kl(Kuu, factor)

    @inherit_check_shapes
    def maximum_log_likelihood_objective(self, data) -> tf.Tensor:  # type: ignore[override]
        return self.elbo(data)

    @inherit_check_shapes
    def training_loss(self, data) -> tf.Tensor:  # type: ignore[override]
        """−(ELBO + log prior density of the parameters) on ``data``.

        GPflow's ``training_loss_closure`` builds on this; the log prior is zero unless priors were
        set on parameters (``model.likelihood.loadings.prior = ...``).
        """
        return -(self.elbo(data) + self.log_prior_density())

    @check_shapes("data[0]: [B, d]", "return: [B]")
    def expected_log_likelihood(self, data, factorisation: tuple[tf.Tensor, tf.Tensor] | None = None) -> tf.Tensor:
        """Per-point Σ_k E_q[log σ(y_ik f_ik)], shape (B,), at the kernel's inputs (B, d) (as in
        :meth:`elbo`); labels dense 0/1 (B, K) or a LabelBatch.

        ``factorisation``: :meth:`factorisation`, when the caller has it already.
        """
        X, Y = data
        f_mean, f_var = self._marginals(X, factorisation)
        if isinstance(Y, LabelBatch):
            return self.likelihood.subsampled_expectations(f_mean, f_var, Y)
        return self.likelihood.variational_expectations(X, f_mean, f_var, Y)

    @check_shapes("data[0]: [B, d]", "return: []")
    def elbo(self, data, factorisation: tuple[tf.Tensor, tf.Tensor] | None = None) -> tf.Tensor:
        """The bound (an unbiased estimate of it for minibatches and subsampled labels).

        ``data`` is ``(X, Y)``: X (B, d) the kernel's inputs, already mapped (:meth:`model_inputs`
        of raw features; the raw features themselves when the model has no input map); Y either (B, K) 0/1 labels (exact label
        sum) or a :class:`~mlgp.likelihoods.LabelBatch` (subsampled negatives).
        ``factorisation`` is :meth:`factorisation`, computed here (once, for the marginals and the
        KL) when not given; passing it lets a caller differentiate the factorisation separately
        (``fit(jit_compile="except-cholesky")``).
        """
        return self.elbo_and_kl(data, factorisation)[0]

    @check_shapes("data[0]: [B, d]", "return[0]: []", "return[1]: []")
    def elbo_and_kl(self, data, factorisation: tuple[tf.Tensor, tf.Tensor] | None = None) -> tuple[tf.Tensor, tf.Tensor]:
        """:meth:`elbo` and its KL term Σ_p KL[q(u_p) ‖ p(u_p)], from one factorisation."""
        X = data[0]
        if factorisation is None:
            factorisation = self.factorisation()
        kl = self.prior_kl(factorisation)
        var_exp = self.expected_log_likelihood(data, factorisation)
        if self.num_data is not None:
            scale = tf.cast(self.num_data, kl.dtype) / tf.cast(tf.shape(X)[0], kl.dtype)
        else:
            scale = tf.cast(1.0, kl.dtype)
        return tf.reduce_sum(var_exp) * scale - kl, kl

    def _marginals(self, Xnew, factorisation=None) -> tuple[tf.Tensor, tf.Tensor]:
        Kuu, factor = self.factorisation() if factorisation is None else factorisation
        Kmn = covariances.Kuf(self.inducing_variable, self.kernel, Xnew)
        Knn = self.kernel.kernel(Xnew, full_cov=False)
        return self.q.marginals(Kmn, Knn, factor)

    # ----------------------------------------------------------------- predictions
    def model_inputs(self, X) -> tf.Tensor:
        """Raw features (N, D) — CSR, an array or a tensor — as the (N, d) tensor the kernel sees:
        through the input map (on CSR, before anything densifies it), in the model's float type.

        Raises :class:`~mlgp.errors.ShapeError` for X of another width than the model's raw
        features, or with NaN or inf (a tensor without an input map is passed as it is).
        """
        if self.input_map is None and tf.is_tensor(X):
            return tf.cast(X, self.float_type)
        X = X.numpy() if tf.is_tensor(X) else X
        X = check_features(X, num_features=self.num_features, max_magnitude=self._max_feature_magnitude)
        return tf.convert_to_tensor(take_rows(X, slice(None), input_map=self.input_map), dtype=self.float_type)

    def predict_f(self, Xnew, full_cov: bool = False, full_output_cov: bool = False):
        """Marginals of the P latent GPs at raw features ``Xnew`` (N, D): mean and variance (N, P).

        ``Xnew`` is dense, a tensor or, for a batch of rows, CSR; it goes through the model's input
        map (:meth:`model_inputs`) whole: score large inputs with
        :class:`mlgp.recipes.MLGPFClassifier`, which goes a block at a time. Marginals (the
        default) come from the q(u) family, which shares the work on K_Zx among the P functions;
        full covariances from GPflow's ``conditional`` given the family's implied non-whitened
        (m, S).
        """
        return self.predict_latent(self.model_inputs(Xnew), full_cov, full_output_cov)

    @check_shapes("Xnew: [N, d]")
    def predict_latent(self, Xnew: tf.Tensor, full_cov: bool = False, full_output_cov: bool = False):
        """:meth:`predict_f` at inputs the kernel sees, (N, d), already mapped."""
        if not full_cov and not full_output_cov:
            return self._marginals(Xnew)
        m, S = self.q.implied_gaussian(self.kuu())
        return conditional(Xnew, self.inducing_variable, self.kernel, m, q_sqrt=tf.linalg.cholesky(S),
                           full_cov=full_cov, white=False, full_output_cov=full_output_cov)

    @check_shapes("Xnew: [N, d]", "return: [N, K]")
    def _mean_utilities(self, Xnew: tf.Tensor) -> tf.Tensor:
        """f̄ = Φ m(x) + b at the kernel's inputs ``Xnew`` (N, d); (N, K)."""
        mu, _ = self.predict_latent(Xnew)
        return tf.linalg.matmul(mu, self.likelihood.loadings, transpose_b=True) + self.likelihood.bias

    def mean_utilities(self, Xb) -> np.ndarray:
        """f̄ = Φ m(x) + b, the scores that rank the labels, for a block (B, d) of the kernel's
        inputs (raw rows through the input map: :meth:`model_inputs`): (B, K) float64, by one
        compiled function per model for any B."""
        with self.float_context():
            fn = compiled_mean_utilities(self)
            return fn(tf.constant(Xb, dtype=self.float_type)).numpy().astype(np.float64, copy=False)

    def label_probabilities(self, Xb) -> np.ndarray:
        """E_q[σ(f)] for a block (B, d) of the kernel's inputs: (B, K) float64, eagerly."""
        x = tf.constant(Xb, dtype=self.float_type)
        with self.float_context():
            mu, var = self.predict_latent(x)
            return self.likelihood.predict_mean_and_var(x, mu, var)[0].numpy().astype(np.float64, copy=False)

    @property
    def _max_feature_magnitude(self) -> float:
        """The largest feature magnitude the model's float type accepts."""
        return float_policy(self.float_type).max_feature_magnitude
