"""The GenEML estimator: scikit-learn's contract and mlgp's scoring interface over GenEML's inference.

``GenEML(n_components=k, exposure="global" | None, inference="em" | "online-em" | "gibbs")`` fits
the MAP of (W, U, V, μ) by batch or online EM, or draws from the posterior by Gibbs sampling, on CSR
features and 0/1 labels, and ranks labels for new points by ψ = (x W)ᵀ v_l (``decision_function``;
``predict_proba`` gives the model's probability of observing each label, μ_l E[σ(uᵀ v_l)] with u's
prior noise around x W integrated out, and ``predict`` thresholds it); ``exposure_`` holds the
inferred μ_l. The data are checked once, in ``fit`` (:class:`mlgp.estimator.MultiLabelEstimator`);
``save`` / ``load`` use the floor's array format. :meth:`GenEML.joint_distribution` gives the TFP
model (:func:`mlgp.geneml.model.geneml_joint`) with the estimator's priors. TensorFlow is imported
only by that method and by ``inference="gibbs"`` (its Pólya-Gamma draws). Beside it: the parameters'
constraints and cross-checks (:mod:`mlgp.geneml.parameters`), the inferences by name
(:mod:`mlgp.geneml.inference`) and the fitted attributes, set and saved
(:mod:`mlgp.geneml.estimator_state`).
"""

from __future__ import annotations

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils.validation import check_is_fitted

from ..errors import ArgumentError
from ..estimator import MultiLabelEstimator
from ..estimator.recorder import checked_validation
from ..estimator.budget import Budget
from .em import Priors
from .estimator_state import GenEMLState
from .features import FeatureMap
from .inference import INFERENCES, FitRun, exposure_covariates, progress_bar
from .parameters import PARAMETER_CONSTRAINTS, check_gibbs_moves, check_m_step, check_precision_prior, components
from .relevance import check_relevance_prior

__all__ = ["GenEML"]


class GenEML(GenEMLState, MultiLabelEstimator):
    """GenEML (Jain, Modhe & Rai, 2017): low-rank logistic labels with per-label exposure.

    Parameters
    ----------
    n_components : int, default=100
        k, the dimension of u_n = x_n W + noise and of the label vectors v_l (at most min(N, K):
        a larger k is cut to it, with a warning).
    exposure : {"global", "covariates"} or None, default="global"
        ``"global"``: label l is exposed to a point with probability μ_l (Beta(alpha, beta) prior),
        so a missing label costs less than an observed negative; ``"covariates"``: μ_nl =
        σ(f_lᵀ β_F + g_nᵀ β_G) with f_l = (1, the label's standardised log frequency, the
        ``label_features`` given to ``fit``) and g_n the point's standardised log(1 + number of
        labels) (:mod:`mlgp.geneml.exposure`; β ~ N(0, I/lambda_coef)); ``None``: every label is
        exposed (the logistic low-rank model, LEML-like).
    inference : {"em", "online-em", "gibbs"}, default="em"
        Batch EM (:mod:`mlgp.geneml.em`); online EM over minibatches of ``batch_size`` rows with
        steps (t + tau)^−kappa (:mod:`mlgp.geneml.online_em`; memory bounded by the minibatch); or
        the Gibbs sampler (:mod:`mlgp.geneml.gibbs`: ``num_burnin_steps`` sweeps, then
        ``num_results`` kept draws per chain, ranking by the posterior mean of W Vᵀ).
    max_iter : int, default=30
        Most EM iterations, or online-EM epochs (passes over the rows).
    tol : float or None, default=1e-4
        EM and online EM stop after the first iteration (epoch) whose log posterior changed by at
        most ``tol`` times its size; None runs ``max_iter``. The Gibbs sampler ignores it.
    max_seconds : float or None, default=None
        Wall seconds of ``fit``, counted from its start (checks, objectives and ``validation``
        evaluations included), looked at after every step — an EM iteration, an online-EM
        minibatch or final pass, a Gibbs sweep (and the EM iterations of ``gibbs_start="em"``) —
        the step that reaches it being the last (:class:`mlgp.estimator.budget.Budget`).
        ``max_iter`` and the sweeps are then upper bounds. With a budget the Gibbs chains run one
        after another; the sweep that spends it ends its chain (kept as a draw when the chain has
        none yet), and a chain cut short is dropped unless it is the first.
    lambda_u, lambda_v, lambda_w : float, default=1.0
        Prior precisions of U around X W, of V, and of W.
    alpha, beta : float, default=1.0
        Beta prior of each μ_l (≥ 1 keeps its mode inside [0, 1]).
    exposure_init : float, default=0.9
        Every μ_l (or, with covariates, σ of the intercept) at the start, in (0, 1). Where most
        labels are zeros, the data pin μ down weakly (a zero the model predicts as negative is
        explained as well by either cause), so the start acts much like a prior choice.
    lambda_coef : float, default=1.0
        Prior precision of the exposure coefficients β (``exposure="covariates"``).
    cg_iterations : int, default=3
        Conjugate-gradient steps per EM iteration on W, and on U and V with CG M-steps.
    m_step : {"auto", "exact", "cg"}, default="auto"
        Batch EM's update of U and V (also in ``gibbs_start="em"``): exact solves of every u_n's
        and v_l's linear system, or ``cg_iterations`` warm-started, preconditioned conjugate-gradient
        steps on them (:mod:`mlgp.geneml.cg`; fewer multiplications for k above about 30, an (N, K)
        array of weights held); ``"auto"``: CG for k ≥ 32 when N K ≤ 2²⁷
        (:func:`mlgp.geneml.em.choose_m_step`). Online EM solves exactly.
    block_rows : int, default=1000
        Rows per block of the E-step and the sufficient statistics.
    batch_size : int, default=1000
        Online EM's largest minibatch: each epoch is split into ⌈N / batch_size⌉ minibatches of
        equal size (± 1 row).
    kappa, tau : float, default=0.7, 1.0
        Online EM's step schedule ρ_t = (t + tau)^−kappa, 0.5 < kappa ≤ 1, tau ≥ 0.
    final_passes : int, default=1
        Online EM only: after the epochs, passes that sum (not blend) every minibatch's statistics
        and set V, μ and W from them — batch-EM iterations streamed over minibatches, U still never
        held whole (:func:`mlgp.geneml.online_em.online_em`).
    carry_local : bool, default=True
        Online EM only: keep each row's u_n between visits (an (N, k) array, as batch EM holds) and
        start its local steps there, so that the u_n converge over the epochs as batch EM's do;
        False: start them at x_n W at every visit, memory bounded by the minibatch.
    num_results, num_burnin_steps, num_chains : int, default=100, 25, 4
        The Gibbs sampler's kept draws per chain, discarded sweeps, and chains (run through joblib
        with ``n_jobs``; the draws are the same for any ``n_jobs``).
    gibbs_start : {"random", "em"}, default="random"
        Where the chains start: the random U and V every inference starts from, or the MAP
        estimate after ``max_iter`` batch-EM iterations from there (counted in the fit's time, not
        in ``n_iter_`` or ``trace_``).
    scale_move : bool, default=True
        Gibbs only: end every sweep with the label-scale move V → t V, t drawn from its conditional
        with ξ and ω summed out (:func:`mlgp.geneml.draws.scale_labels`). Without it the scale of
        ψ = U Vᵀ creeps a few per cent per sweep and the chains take hundreds of sweeps to reach it.
    balance_move : bool, default=False
        Gibbs only: redraw, for each latent dimension j, the balance of scale (U_j, W_j, V_j) →
        (c U_j, c W_j, V_j / c) from its exact conditional (ψ unchanged; a parameter-expansion step,
        :func:`mlgp.geneml.draws.balance_columns`).
    collapse_exposure : bool, default=False
        Gibbs with global exposure only: draw each μ_l with ξ summed out (slice sampling,
        :func:`mlgp.geneml.draws.draw_exposure`) instead of from its Beta given ξ; the exposures
        then mix several times faster (docs/results.md gives the figures).
    precision_prior : (float, float) or None, default=None
        Gibbs only: a Gamma(shape, rate) hyperprior on λ_u, λ_w and on one λ_v per latent dimension,
        all drawn in the sweep from the values above; None keeps the precisions fixed. Exclusive
        with ``relevance_prior``.
    relevance_prior : (float, float) or None, default=None
        Automatic relevance determination of the latent dimensions: a Gamma(shape, rate) prior on
        a relevance r_j per dimension that scales λ_v in V's column j (:mod:`mlgp.geneml.relevance`);
        set to its conditional mode by EM, drawn by Gibbs.
    preprocessing : {"auto", "rows", "columns"} or None, default="auto"
        The features' preprocessing, fitted on the training rows and applied in every scoring call
        (:mod:`mlgp.geneml.features`): ``"rows"`` L2-normalises rows (non-negative sparse counts or
        TF-IDF), ``"columns"`` standardises columns (dense or signed features), ``"auto"`` chooses
        between the two from the training features, None keeps them as given.
    normalize_rows : bool or None, default=None
        The earlier switch: True is ``preprocessing="rows"``, False is ``preprocessing=None``; None
        follows ``preprocessing``.
    progress : bool, default=False
        Show the progress over the iterations, epochs or sweeps, named for the inference
        (``"GenEML EM"``, ``"GenEML online EM"``, ``"GenEML Gibbs"``): a bar on a terminal, a line
        on standard error every few seconds off it (:mod:`mlgp.estimator.progress`); ``False``:
        nothing is printed.
    n_jobs : int or None, default=None
        joblib workers over the blocks (the fit is the same for any value).
    random_state : int, default=0
        Seeds the initial U and V.
    threshold : float, default=0.5
        ``predict`` marks labels whose probability σ(ψ) is ``>= threshold``.
    calibration : {"prior"} or None, default="prior"
        ``"prior"``: ``predict_proba`` through the map toward the label prior fitted on held-out rows
        (:mod:`mlgp.estimator.prior_map`, ``proba_map_``; docs/probabilities.md); None: its own.

    Attributes
    ----------
    W_ : np.ndarray (D, k)
        EM and online EM (the Gibbs sampler's last draw).
    V_ : np.ndarray (K, k)
        Likewise.
    coef_ : np.ndarray (D, K)
        Gibbs only: a Monte Carlo estimate of the posterior mean of W Vᵀ — the average of the
        Rao-Blackwellised E[W | U] Vᵀ over the kept draws of every chain; ψ = x ``coef_``. Its
        precision is in ``diagnostics_``.
    diagnostics_ : dict
        Gibbs only (not saved): effective sample sizes (chains pooled) and split R-hat of the log
        posterior, of the predictions for the watched points (``validation``'s X, else 100
        training rows) and of μ (:func:`mlgp.geneml.diagnostics.chain_diagnostics`).
    exposure_ : np.ndarray (K,) or None
        Inferred μ_l (the posterior mean with Gibbs; with covariates, each label's μ_nl averaged
        over the training points; ``None`` without exposure).
    residual_covariance_ : np.ndarray (k, k)
        The covariance of u_n − x_n W over the training rows (the prior's I / λ_u where the fit
        keeps no U: Gibbs, online EM without ``carry_local``): ``predict_proba``'s spread of a new
        point's u about x W.
    exposure_coef_ : np.ndarray (C,)
        ``exposure="covariates"`` only: β = (β_F, β_G) (the posterior mean with Gibbs).
    samples_ : dict
        Gibbs only (not saved): ``V`` (R, C, K, k), ``mu`` (R, C, K), ``precisions`` (R, C, 2 + k)
        with a hyperprior, ``watched`` (R, C, P, K) predictions, as ``tfp.mcmc`` returns draws
        (W is not kept: D × k per draw).
    trace_ : pandas.DataFrame
        One row per EM iteration, online-EM epoch or Gibbs sweep: ``step`` (iterations, minibatch
        steps, or sweeps over all chains so far), ``elapsed`` (seconds since ``fit`` began),
        ``objective`` (the log posterior per training point; EM's is non-decreasing), then the
        inference's own columns, with the total as ``log_posterior`` (:mod:`mlgp.geneml.inference`).
    n_components_ : int
        The k used: ``n_components``, or min(N, K) where that is smaller (with a warning).
    relevance_ : np.ndarray (k,) or None
        The latent dimensions' relevances with ARD (the posterior mean with Gibbs), else None.
    effective_rank_ : int
        The rank in use: how many singular values of the training points' ψ = (X W) Vᵀ carry 99 %
        of its squared Frobenius norm (:func:`mlgp.geneml.relevance.effective_rank`).
    components_in_use_ : int
        The latent dimensions ARD left on: those whose ‖W_j‖ ‖V_j‖ exceeds 1e-3 of the largest
        (:func:`mlgp.geneml.relevance.components_in_use`; ``n_components_`` without ARD, normally).
    n_iter_ : int
        EM iterations, online-EM epochs (final passes included), or Gibbs sweeps (over all chains)
        run.
    n_features_in_, n_labels_, n_samples_, classes_
        As every mlgp estimator.
    """

    _block_format = "csr"
    _predict_from = "proba"
    _parameter_constraints: dict = PARAMETER_CONSTRAINTS

    def __init__(self, *, n_components: int = 100, exposure: str | None = "global", inference: str = "em",
                 max_iter: int = 30, lambda_u: float = 1.0, lambda_v: float = 1.0, lambda_w: float = 1.0,
                 alpha: float = 1.0, beta: float = 1.0, exposure_init: float = 0.9, lambda_coef: float = 1.0,
                 cg_iterations: int = 3, block_rows: int = 1000, batch_size: int = 1000, kappa: float = 0.7,
                 tau: float = 1.0, num_results: int = 100, num_burnin_steps: int = 25, num_chains: int = 4,
                 gibbs_start: str = "random", n_jobs: int | None = None, random_state: int = 0,
                 threshold: float = 0.5, progress: bool = False, max_seconds: float | None = None,
                 normalize_rows: bool | None = None, scale_move: bool = True,
                 precision_prior: tuple[float, float] | None = None, final_passes: int = 1,
                 carry_local: bool = True, relevance_prior: tuple[float, float] | None = None,
                 tol: float | None = 1e-4, preprocessing: str | None = "auto", m_step: str = "auto",
                 calibration: str | None = "prior", balance_move: bool = False,
                 collapse_exposure: bool = False) -> None:
        self.n_components = n_components
        self.exposure = exposure
        self.inference = inference
        self.max_iter = max_iter
        self.lambda_u = lambda_u
        self.lambda_v = lambda_v
        self.lambda_w = lambda_w
        self.alpha = alpha
        self.beta = beta
        self.exposure_init = exposure_init
        self.lambda_coef = lambda_coef
        self.cg_iterations = cg_iterations
        self.block_rows = block_rows
        self.batch_size = batch_size
        self.kappa = kappa
        self.tau = tau
        self.num_results = num_results
        self.num_burnin_steps = num_burnin_steps
        self.num_chains = num_chains
        self.gibbs_start = gibbs_start
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.threshold = threshold
        self.progress = progress
        self.max_seconds = max_seconds
        self.normalize_rows = normalize_rows
        self.scale_move = scale_move
        self.precision_prior = precision_prior
        self.final_passes = final_passes
        self.carry_local = carry_local
        self.relevance_prior = relevance_prior
        self.tol = tol
        self.preprocessing = preprocessing
        self.m_step = m_step
        self.calibration = calibration
        self.balance_move = balance_move
        self.collapse_exposure = collapse_exposure

    def _priors(self) -> Priors:
        return Priors(float(self.lambda_u), float(self.lambda_v), float(self.lambda_w), float(self.alpha),
                      float(self.beta), check_relevance_prior(self.relevance_prior))

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, Y, label_features=None, validation=None) -> "GenEML":
        """Fit on features ``X`` (N, D) and 0/1 labels ``Y`` (N, K); returns ``self``.

        ``label_features`` (K, C), finite: extra per-label exposure covariates
        (``exposure="covariates"`` only). ``validation``: ``(X_val, Y_val)`` whose P@1/3/5 (percent;
        those at most K) the trace records after every EM iteration or online-EM epoch, checked
        once by the check of every entry that takes a validation pair
        (:func:`mlgp.estimator.recorder.checked_validation`) and preprocessed as ``X``; with Gibbs,
        the points whose predictions the draws keep (``samples_["watched"]``).
        """
        budget = Budget.trusted(self.max_seconds)
        X, Y = self._validate_fit_data(X, Y)
        precision_prior = check_precision_prior(self.precision_prior, self.inference)
        check_m_step(self.m_step, self.inference, self.gibbs_start)
        check_gibbs_moves(self.balance_move, self.collapse_exposure, self.inference, self.exposure)
        priors = self._priors()
        if precision_prior is not None and priors.relevance is not None:
            raise ArgumentError("precision_prior and relevance_prior both set the precisions of V's columns: choose one")
        self.feature_map_ = FeatureMap.fit(X, self.preprocessing if self.normalize_rows is None
                                           else "rows" if self.normalize_rows else None)
        X_given, X = X, self._rows(X)
        for stale in ("coef_", "samples_", "exposure_coef_", "diagnostics_"):  # from an earlier fit with other settings
            self.__dict__.pop(stale, None)
        (N, D), K = X.shape, Y.shape[1]
        self.n_components_ = components(int(self.n_components), N, K)
        init = float(self.exposure_init)
        covariates = exposure_covariates(self.exposure, Y, label_features, init, float(self.lambda_coef))
        validation = checked_validation(validation, num_features=D, num_labels=K, preprocess=self.feature_map_)
        self._fit_proba_map(X_given, Y, budget, label_features=label_features)  # after every check
        run = FitRun(self, X, Y, priors, np.full(K, init) if self.exposure == "global" else None, covariates,
                     budget, np.random.default_rng(self.random_state), validation,
                     progress_bar(self.inference, budget, int(self.num_chains) if self.inference == "gibbs" else 1)
                     if self.progress else None,
                     precision_prior, self.n_components_, None if self.tol is None else float(self.tol))
        self._set_fitted_state(INFERENCES[self.inference](run), X)
        self._set_fitted_shape(N, D, K)
        return self

    def _rows(self, X):
        """``X`` preprocessed as the training rows were (:class:`~mlgp.geneml.features.FeatureMap`)."""
        return self.feature_map_(X)

    def _decision_block(self, xb) -> np.ndarray:
        """ψ = (x W) Vᵀ (Gibbs: x coef_) for a CSR block (B, D): (B, K), the preferences' logits."""
        xb = self._rows(xb)
        if getattr(self, "coef_", None) is not None:  # fitted by the Gibbs sampler
            return np.asarray(xb @ self.coef_)
        return np.asarray(xb @ self.W_) @ self.V_.T

    def _proba_block(self, xb) -> np.ndarray:
        """The model's probability of observing each label, (B, K): μ_l E[σ(uᵀ v_l)] with
        u ~ N(x W, Σ), Σ = ``residual_covariance_``, so the logit's variance is v_lᵀ Σ v_l
        (:mod:`mlgp.geneml.predictive`); μ_l = ``exposure_`` (1 without exposure; with covariates,
        their mean over the training points). Gibbs: at ψ = x ``coef_``, the posterior mean."""
        from .predictive import expected_sigmoid

        variance = np.einsum("lk,kj,lj->l", self.V_, self.residual_covariance_, self.V_)
        p = expected_sigmoid(self._decision_block(xb), variance[None, :])
        return p if self.exposure_ is None else p * self.exposure_[None, :]

    def joint_distribution(self, X, covariates=None):
        """The TFP joint distribution of GenEML at features ``X`` (N, D) with this estimator's priors
        and K (:func:`mlgp.geneml.model.geneml_joint`); fitted estimators only. ``covariates``:
        ``(F, G)``, F (K, C_F) and G (N, C_G), with ``exposure="covariates"`` only (e.g.
        :func:`mlgp.geneml.exposure.default_covariates` of the labels)."""
        from .model import geneml_joint

        check_is_fitted(self)
        return geneml_joint(X, self.n_labels_, self.n_components_, exposure=self.exposure,
                            covariates=covariates, lambda_u=self.lambda_u, lambda_v=self.lambda_v,
                            lambda_w=self.lambda_w, alpha=self.alpha, beta=self.beta, lambda_coef=self.lambda_coef,
                            relevance_prior=self.relevance_prior)

    def inference_data(self):
        """The Gibbs draws of a fit with ``inference="gibbs"`` as an ``arviz.InferenceData``
        (:func:`mlgp.geneml.inference_data.inference_data`): ``az.summary``, ``az.rhat``,
        ``az.ess`` and ``az.plot_trace`` take it; ``sample_stats.lp`` is the log posterior (total)."""
        from .inference_data import inference_data

        check_is_fitted(self)
        if getattr(self, "samples_", None) is None:
            raise ArgumentError(f"inference_data() needs a fit with inference='gibbs' (this one: {self.inference!r})")
        return inference_data(self.samples_, self.trace_)
