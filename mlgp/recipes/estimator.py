"""MLGPF as a scikit-learn estimator on mlgp's floor: :class:`MLGPFClassifier`.

It runs the MLGPF paper's recipe (:func:`mlgp.recipes.build.build_and_train`: rows L2-normalised,
k-means inducing inputs, doubly stochastic training) on ``fit(X, Y)``, or wraps a model trained
elsewhere (:meth:`MLGPFClassifier.from_model`), and is the one way to score an MLGPF model: on the
floor's scoring path (:class:`mlgp.estimator.MultiLabelEstimator`) each block of raw rows (CSR, or
dense as given) goes through the model's input map (:class:`mlgp.blocks.RowNormalised` first for the
recipe's models) and is ranked by f̄ = Φ m(x) + b (:meth:`mlgp.models.MLGPF.mean_utilities`);
``predict_proba`` is E_q[σ(f)]; float64 whatever the model's float type. The parameters are the fields of
:class:`mlgp.recipes.MLGPFSettings` (which checks every value) without ``max_train``, plus
``max_seconds``, ``validation_fraction``, ``early_stopping``, ``n_iter_no_change``, ``average_from``, ``refit``,
``jit_compile``, ``progress``, ``threshold``, ``calibration``, ``checkpoint_dir`` and ``log_dir``; P, M
and the batch left ``None`` are chosen from N, D and K (:func:`mlgp.recipes.build.sizes_for_data`).
:func:`mlgp.recipes.train_mlgpf` is this estimator with the paper's schedule (no hold-out, a given
number of epochs). The GPflow model is ``model_``. ``save`` / ``load`` write the model's parameters
and structure in the floor's single-file format (:mod:`mlgp.recipes.estimator_state`).

On its held-out rows (``validation_fraction``, :mod:`mlgp.recipes.held_out`) ``fit`` stops
training early by their log predictive density and keeps the best epoch, then keeps the bias-only
model (Φ = 0, ``bias_only_``) when the bias alone predicts them better (the same density): the
fitted estimator never predicts the held-out rows worse than its own bias does. With ``refit``, a
model the guard kept is then trained again from the start on every row for the best epoch's
number of epochs (:func:`mlgp.recipes.held_out.refit_epochs`: small data sets, where the held-out
tenth is worth a second fit, and only when the budget has room for it).
"""

from __future__ import annotations

import os
from numbers import Integral, Real

import numpy as np
import pandas as pd
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..errors import ArgumentError
from ..estimator.budget import MAX_SECONDS, Budget
from ..estimator.prior_map import CALIBRATION
from ..estimator import MultiLabelEstimator, ParameterError
from ..floats import float_policy
from ..estimator.recorder import checked_validation
from ..validation import check_estimator_features, check_features, check_num_inducing
from .build import auto_epochs, auto_jit_compile, check_sizes, check_strategy, resolved_preprocessing, sized_for_data
from .held_out import REFIT_MAX_ROWS, auto_or_flag, held_out_rows, refit_epochs
from .kernel_choice import AUTO, DEFAULT_KERNEL, is_auto, refit_on_every_row, train_kernels
from .calibrate import held_out_prior_map
from .estimator_state import SavedClassifierState
from .settings import MLGPFSettings, setting_fields
from .wrapped import _NOT_PARAMETERS, classifier_trace, epoch_rows, wrapped_classifier

__all__ = ["MLGPFClassifier"]

_DEFAULTS = {name: f.default for name, f in setting_fields().items()}


class MLGPFClassifier(SavedClassifierState, MultiLabelEstimator):
    """MLGPF (Panos, Dellaportas & Titsias, 2021): P latent GPs mixed by Φ, b into K label utilities.

    Parameters
    ----------
    kernel, num_latent_gps, num_inducing, batch_size, negatives, learning_rate, fixed_inducing, unit_sphere_inducing, q_family, optimizer, natgrad_gamma, dtype, warm_start, batch_growth, bias_init, subspace_rank, subspace_sample, preprocessing, covariance_warmup, kl_weight, seed
        The recipe's settings (:class:`mlgp.recipes.MLGPFSettings` documents each one and checks
        them); defaults are the recipe's. P, M and ``batch_size`` ``None``: chosen from N, D and K
        (:func:`mlgp.recipes.build.sizes_for_data`; P ≤ K, M ≤ the rows left after the hold-out).
        A given M above those rows is refused (:class:`~mlgp.errors.ShapeError`).
        ``preprocessing`` defaults to ``"auto"`` (the recipe's to ``"rows"``): columns standardised
        before the rows are normalised for dense or signed features. ``kernel`` defaults to
        ``"auto"`` (the recipe's to ``"se+linear-shared"``): with held-out rows, ``fit`` trains each
        of ``se+linear-shared``, ``linear`` and ``se`` on the kept rows within an equal share of
        ``max_seconds`` (70 % of it together when a refit on every row may follow), each with its
        own early stopping and bias guard, and keeps the one with the highest held-out log
        predictive density (``kernel_choice_``; :mod:`mlgp.recipes.kernel_choice`). Without
        held-out rows, or with under 5 s per candidate, only ``se+linear-shared`` is trained (a
        :class:`~mlgp.errors.BudgetWarning` says so when the budget was the cause).
    epochs : int or "auto", default="auto"
        Most passes over the training rows (early stopping usually ends training sooner).
        ``"auto"``: a cap of max(20, ⌈200 / steps per epoch⌉) epochs
        (:func:`mlgp.recipes.build.auto_epochs`), so that a data set of one minibatch is not
        stopped after 20 steps.
    max_seconds : float or None, default=None
        Wall seconds of ``fit``, counted from its start (checking the data, building the model,
        compiling the step and the ``validation`` evaluations included): the clock is looked at
        after every optimiser step and training stops after the step that reaches the bound, so a
        fit overruns it by one step and the scoring of the held-out rows that ends the epoch
        (``epochs`` is then an upper bound; :class:`mlgp.estimator.budget.Budget`).
    validation_fraction : float, default=0.1
        Share of the training rows held out (at random, by ``seed``) for early stopping and to
        choose between the trained model and its bias alone (see the module docstring); 0 trains
        on every row and keeps the trained model. At least one row is held out when the fraction is
        positive.
    early_stopping : {"auto", True, False}, default="auto"
        Score the held-out rows by their log predictive density after every epoch up to the 19th,
        then after about ten epochs per tenfold, stop after ``n_iter_no_change`` scored epochs without a
        better one and at least 100 optimiser steps, and keep the best epoch's parameters
        (:class:`mlgp.recipes.held_out.HeldOutStopping`): the ELBO fits Φ and b as
        hyperparameters and, with few rows per label, keeps rising while the predictions get
        worse. ``"auto"``: on when rows are held out; ``True`` with ``validation_fraction=0`` is refused.
    refit : {"auto", True, False}, default="auto"
        After early stopping chose the epochs on the held-out rows (and the guard kept the model),
        train again from the start on every row for that many epochs, when ``max_seconds`` leaves
        room for it at the first fit's pace (else the first model is kept, as it is when a refit is
        cut short by the budget). ``"auto"``: up to 2,000 training rows
        (:data:`mlgp.recipes.held_out.REFIT_MAX_ROWS`), where the held-out rows are worth it.
    n_iter_no_change : int, default=5
        Scored epochs without a better held-out density before early stopping stops (and at least
        100 optimiser steps since the best: a small data set has one step per epoch).
    average_from : int or None, default=None
        Average the parameters at the ends of the epochs from this one (1-based) on, and keep the
        mean (:class:`mlgp.recipes.held_out.IterateAverage`): early stopping scores and keeps the
        averaged parameters, a refit averages its own epochs. Training continues from the iterates.
        ``None`` (the default): the last (or best) iterate (docs/results.md has the measurements).
    jit_compile : {"auto", False, True, "except-cholesky"}, default="auto"
        How the training step is compiled (:func:`mlgp.training.fit`). ``"auto"``: XLA but for
        chol(K_ZZ) with the whitened family (:func:`mlgp.recipes.build.default_jit_compile`, what
        :func:`mlgp.recipes.train_mlgpf` passes) from N = 2,000 training points on, with no
        ``max_seconds`` or one of at least 60 and no strategy; no XLA below, where compiling
        (seconds) costs more than it saves.
    progress : bool, default=False
        Show the progress of each training run, named for it (``"MLGPF fit"``, ``"MLGPF kernel se
        (3 of 3)"``, ``"MLGPF refit on all rows"``): a bar on a terminal, a line on standard error
        every few seconds off it (:mod:`mlgp.estimator.progress`); ``False``: nothing is printed.
    threshold : float, default=0.5
        ``predict`` marks labels whose probability is ``>= threshold``.
    calibration : {"prior"} or None, default="prior"
        ``"prior"``: ``predict_proba`` is E_q[σ(f)] through the map toward the label prior fitted
        on the held-out rows (:mod:`mlgp.estimator.prior_map`, ``proba_map_``); ``None``: E_q[σ(f)].
    checkpoint_dir : str, os.PathLike or None, default=None
        Checkpoint the training run after every epoch in this folder and resume from its latest
        checkpoint (:func:`mlgp.training.fit`; ``epochs`` counts the restored ones). Its manifest records
        the settings: others (but ``epochs``, ``jit_compile``, ``progress``) raise
        :class:`~mlgp.errors.CheckpointMismatchError` naming them, before the model is built. Not with
        early stopping, ``kernel="auto"`` on held-out rows or ``average_from``: no checkpoint keeps their state.
    log_dir : str, os.PathLike or None, default=None
        TensorBoard scalars of every epoch (:func:`mlgp.training.fit`), of each training run in turn.

    Attributes
    ----------
    model_ : mlgp.models.MLGPF
        The fitted GPflow model (for notebooks: ``print_summary``, ``elbo``, ``predict_f``).
    trace_ : pandas.DataFrame
        First the set-up row (``epoch`` and ``step`` 0; ``elapsed``: seconds from the start of
        ``fit`` to the first optimiser step — checks, building the model, k-means, earlier candidate
        kernels —, ``seconds``: this run's own set-up, NaN for the bound), so that epoch 1's
        ``elapsed`` is the set-up's plus its ``seconds``. Then per epoch (the last cut short by
        ``max_seconds``): ``step`` (optimiser steps so far), ``elapsed`` (wall seconds from the
        start of ``fit`` to the epoch's last step), ``objective`` (the ELBO over the N training
        points, comparable across data sizes; also as ``elbo_per_point``), ``epoch``, ``elbo`` (the
        epoch's minibatch estimates averaged with weights |B|/N: every row counted once,
        :func:`mlgp.training.fit`), ``elbo_std``, ``kl``, ``expected_log_lik`` and ``batch_size`` (as
        ``fit`` gives them), ``seconds`` (the epoch's steps; the first includes compiling the step)
        and, with ``validation``, ``P@1``, ``P@3``, ``P@5`` (percent) on it (:mod:`mlgp.estimator.budget`).
    settings_ : MLGPFSettings or None
        The settings trained with, sizes filled in (``None`` for a model wrapped by
        :meth:`from_model` without them).
    bias_only_ : bool
        Whether the held-out rows chose the bias alone (Φ set to 0): their log predictive density
        under σ(b) beat the trained model's.
    best_epoch_ : int or None
        With early stopping, the epoch whose parameters were kept (``trace_`` then has
        ``held-out lpd``, nats per held-out row); ``None`` without it.
    refitted_ : bool
        Whether ``model_`` was trained again on every row (``refit``); ``trace_``, ``best_epoch_``
        and ``n_iter_`` are the first fit's.
    n_iter_ : int
        Epochs run (``trace_``'s rows but the set-up row).
    kernel_choice_ : pandas.DataFrame or None
        With ``kernel="auto"``: one row per candidate kernel trained (``kernel``, ``held_out_lpd``
        in nats per held-out row, ``epochs``, ``best_epoch``, ``seconds``, ``bias_only``,
        ``chosen``); ``trace_`` is the winner's. ``None`` for a given kernel. Not saved.
    proba_map_ : mlgp.estimator.prior_map.PriorMap or None
        The map of ``calibration="prior"`` (None without held-out rows or with ``calibration=None``).
    n_features_in_, n_labels_, n_samples_, classes_
        As every mlgp estimator.

    Examples
    --------
    >>> from mlgp.data.synthetic import make_multilabel  # doctest: +SKIP
    >>> clf = MLGPFClassifier(epochs=5).fit(X, Y)  # doctest: +SKIP
    >>> clf.predict_topk(X_test, k=5).indices  # doctest: +SKIP
    >>> MLGPFClassifier.from_model(model).predict_topk(X_test, k=5)  # a model fitted elsewhere  # doctest: +SKIP
    """

    _block_format = "csr"
    _predict_from = "proba"
    _parameter_constraints: dict = {
        "max_seconds": MAX_SECONDS,
        "validation_fraction": [Interval(Real, 0, 1, closed="left")],
        "early_stopping": [StrOptions({"auto"}), "boolean"],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "average_from": [Interval(Integral, 1, None, closed="left"), None],
        "refit": [StrOptions({"auto"}), "boolean"],
        "jit_compile": [StrOptions({"auto", "except-cholesky"}), "boolean"],
        "progress": ["boolean"],
        "threshold": [Interval(Real, 0, 1, closed="both")],
        "calibration": CALIBRATION,
        "checkpoint_dir": [str, os.PathLike, None],
        "log_dir": [str, os.PathLike, None],
        # every setting of the recipe is checked by MLGPFSettings (see _validate_params)
        **{name: "no_validation" for name in _DEFAULTS if name not in _NOT_PARAMETERS},
    }

    def __init__(self, *, kernel=AUTO, num_latent_gps: int | None = None, num_inducing: int | None = None,
                 epochs: int | str = "auto", batch_size: int | None = None,
                 negatives: int | None = _DEFAULTS["negatives"], learning_rate: float = _DEFAULTS["learning_rate"],
                 fixed_inducing: bool = _DEFAULTS["fixed_inducing"],
                 unit_sphere_inducing: bool = _DEFAULTS["unit_sphere_inducing"], q_family: str = _DEFAULTS["q_family"],
                 optimizer: str = _DEFAULTS["optimizer"], natgrad_gamma=_DEFAULTS["natgrad_gamma"],
                 dtype: str = _DEFAULTS["dtype"], warm_start: bool = _DEFAULTS["warm_start"],
                 batch_growth=_DEFAULTS["batch_growth"], bias_init: str = _DEFAULTS["bias_init"],
                 subspace_rank: int | None = _DEFAULTS["subspace_rank"], subspace_sample: int | None = None,
                 preprocessing: str = "auto", covariance_warmup=_DEFAULTS["covariance_warmup"],
                 kl_weight: float = _DEFAULTS["kl_weight"], seed: int = _DEFAULTS["seed"],
                 max_seconds: float | None = None, validation_fraction: float = 0.1, early_stopping="auto",
                 n_iter_no_change: int = 5, average_from: int | None = None, refit="auto", jit_compile="auto",
                 progress: bool = False, threshold: float = 0.5, calibration: str | None = "prior",
                 checkpoint_dir=None, log_dir=None) -> None:
        self.kernel = kernel
        self.num_latent_gps = num_latent_gps
        self.num_inducing = num_inducing
        self.epochs = epochs
        self.batch_size = batch_size
        self.negatives = negatives
        self.learning_rate = learning_rate
        self.fixed_inducing = fixed_inducing
        self.unit_sphere_inducing = unit_sphere_inducing
        self.q_family = q_family
        self.optimizer = optimizer
        self.natgrad_gamma = natgrad_gamma
        self.dtype = dtype
        self.warm_start = warm_start
        self.batch_growth = batch_growth
        self.bias_init = bias_init
        self.subspace_rank = subspace_rank
        self.subspace_sample = subspace_sample
        self.preprocessing = preprocessing
        self.covariance_warmup = covariance_warmup
        self.kl_weight = kl_weight
        self.seed = seed
        self.max_seconds = max_seconds
        self.validation_fraction = validation_fraction
        self.early_stopping = early_stopping
        self.n_iter_no_change = n_iter_no_change
        self.average_from = average_from
        self.refit = refit
        self.jit_compile = jit_compile
        self.progress = progress
        self.threshold = threshold
        self.calibration = calibration
        self.checkpoint_dir = checkpoint_dir
        self.log_dir = log_dir

    # ----------------------------------------------------------------------------------- fit --
    def _settings(self, trusted: tuple[str, ...] = ()) -> MLGPFSettings:
        """The parameters as checked settings (sizes still None where not given), those named in
        ``trusted`` not checked again; a bad value raises :class:`~mlgp.estimator.ParameterError`
        naming it. Kept until a parameter changes: ``fit`` reuses the settings its parameter check made."""
        values = {name: getattr(self, name) for name in _DEFAULTS if name not in _NOT_PARAMETERS}
        values["batch_size"] = _DEFAULTS["batch_size"] if self.batch_size is None else self.batch_size
        if is_auto(self.kernel):  # chosen in fit: the default checks the rest
            values["kernel"] = DEFAULT_KERNEL
        if isinstance(self.epochs, str):  # "auto": set from the steps per epoch in fit
            values["epochs"] = _DEFAULTS["epochs"]
        kept = getattr(self, "_checked_settings", None)
        if kept is not None and all(kept[0][name] is value for name, value in values.items()):  # the same objects
            return kept[1]
        try:
            settings = MLGPFSettings.trusting(values, trusted)
        except ArgumentError as err:
            raise ParameterError(f"{type(self).__name__}: {err}") from None
        self._checked_settings = (values, settings)
        return settings

    def _validate_params(self, trusted: tuple[str, ...] = ()) -> None:
        super()._validate_params(trusted)
        if isinstance(self.epochs, str) and self.epochs != "auto":
            raise ParameterError(f"{type(self).__name__}: epochs must be 'auto' or a positive integer; "
                                 f"got {self.epochs!r}")
        if auto_or_flag(self.early_stopping) is True and self.validation_fraction == 0:
            raise ParameterError(f"{type(self).__name__}: early_stopping=True needs held-out rows; set "
                                 "validation_fraction > 0 (or early_stopping='auto' or False)")
        if self.checkpoint_dir is not None:  # one training run, resumed as it was: no checkpoint keeps ...
            held, early = self.validation_fraction > 0, auto_or_flag(self.early_stopping)
            why = ("early stopping's best epoch (set early_stopping=False or validation_fraction=0)"
                   if early is True or (early == "auto" and held) else
                   "the candidates of kernel='auto' on held-out rows (give a kernel)" if held and is_auto(self.kernel)
                   else "the running mean of average_from" if self.average_from is not None else None)
            if why:
                raise ParameterError(f"{type(self).__name__}: checkpoint_dir checkpoints one training run and resumes "
                                     f"it as it was, but no checkpoint keeps {why}")
        self._settings(trusted)

    def fit(self, X, Y, validation=None, strategy=None, callback=None) -> "MLGPFClassifier":
        """Fit on features ``X`` (N, D) and 0/1 labels ``Y`` (N, K); returns ``self``.

        ``validation``: ``(X_val, Y_val)`` whose P@1/3/5 (percent) the trace records after every
        epoch (checked like ``X``, ``Y``; raw rows, normalised by the model like the training rows). ``strategy``: a
        ``tf.distribute.Strategy`` to train on (several devices, or several machines through
        :func:`mlgp.training.workers.multi_worker_strategy`: the same call on every worker), not with
        ``jit_compile=True`` or ``"except-cholesky"`` (``"auto"`` turns XLA off with one). ``callback``:
        ``callback(epoch, model, row)`` after every epoch of every training run (the candidates, the
        refit; :func:`mlgp.training.fit`), after early stopping's; a true return stops that run.
        """
        return self._fit(Budget.now(), X, Y, validation, strategy, callback)

    @_fit_context(prefer_skip_nested_validation=True)
    def _fit(self, started: float, X, Y, validation, strategy, callback) -> "MLGPFClassifier":
        """:meth:`fit` after its parameter checks (which import GPflow: counted in the budget)."""
        budget = Budget.trusted(self.max_seconds, started)  # set-up, compilation and validation included
        X, Y = self._validate_fit_data(X, Y)
        (N, D), K = X.shape, Y.shape[1]
        s = sized_for_data(self._settings(), N, D, K, batch_given=self.batch_size is not None)
        check_sizes(s, K)  # P > K or negatives ≥ K: a ShapeError before any work
        validation = checked_validation(validation, num_features=D, num_labels=K)  # the one check; fit keeps it
        early, refit = auto_or_flag(self.early_stopping), auto_or_flag(self.refit)
        train, held = held_out_rows(N, self.validation_fraction, early, self.seed)
        Xtr, Ytr = (X, Y) if held is None else (X[train], Y[train])
        s = resolved_preprocessing(s, Xtr)
        n = Xtr.shape[0]
        why = f": {N} sample{'' if N == 1 else 's'} given, {n} left{'' if held is None else ' after the hold-out'}"
        s = s.replace(num_inducing=check_num_inducing(s.num_inducing, n, why, given=self.num_inducing is not None))
        jit = self.jit_compile
        if jit == "auto":
            jit = auto_jit_compile(s.q_family, Xtr.shape[0], self.max_seconds, strategy)
        check_strategy(strategy, jit)
        steps_per_epoch = -(-Xtr.shape[0] // s.batch_size)
        if isinstance(self.epochs, str):
            s = s.replace(epochs=auto_epochs(steps_per_epoch))
        held_rows = None if held is None else (X[held], Y[held])
        refit_possible = early is not False and (refit is True or (refit == "auto" and N <= REFIT_MAX_ROWS))
        winner, self.kernel_choice_ = train_kernels(self, budget, s, (Xtr, Ytr), held_rows, steps_per_epoch, jit,
                                                    validation, strategy, early, refit_possible, callback)
        self.bias_only_ = winner.bias_only
        self.best_epoch_ = None if winner.stopping is None else winner.stopping.best_epoch
        self.proba_map_ = None
        if self.calibration == "prior" and held is not None:  # before any refit: held rows unseen
            self.proba_map_ = held_out_prior_map(winner.model, X[held], Y[held], Ytr, Y, self.seed, self.bias_only_)
        epochs = refit_epochs(refit, winner.stopping, self.bias_only_, budget, len(winner.trace), N, Xtr.shape[0],
                              winner.seconds)
        self.model_, self.refitted_ = refit_on_every_row(self, winner, (X, Y), epochs, jit, budget, strategy, callback)
        self.settings_ = winner.settings
        self._set_fitted_shape(N, D, K)
        self.trace_ = classifier_trace(winner.trace, Xtr.shape[0], winner.begun)
        self.n_iter_ = len(epoch_rows(self.trace_))
        budget.warn_if_first_step_spent(int(self.trace_["step"].max()) if len(self.trace_) else 0, type(self).__name__,
                                        "the bias alone is kept" if self.bias_only_ else "the model is its start after one step")
        return self

    @classmethod
    def from_model(cls, model, trace: pd.DataFrame | None = None,
                   settings: MLGPFSettings | None = None) -> "MLGPFClassifier":
        """A fitted estimator around an MLGPF trained elsewhere: the way to score it.

        Parameters
        ----------
        model : mlgp.models.MLGPF
            Kept as ``model_`` (not copied) and scored as it is: raw rows through its input map.
            ``num_data`` (N) must be set; D and K are its ``num_features`` and ``num_labels``.
        trace : pandas.DataFrame, optional
            Its per-epoch trace from :func:`mlgp.training.fit`, kept as ``trace_`` in the common
            form (``step``, ``elapsed``, ``objective`` first); ``None``: no rows.
        settings : MLGPFSettings, optional
            What it was trained with: kept as ``settings_`` and set as the parameters (with
            ``validation_fraction=0``); ``None``: ``settings_`` is ``None``, default parameters.

        Returns a fitted estimator (``bias_only_`` False, ``n_iter_`` the trace's rows): it scores and
        saves as after ``fit``.
        """
        return wrapped_classifier(cls, model, trace, settings)

    # ------------------------------------------------------------------------------- scoring --
    def _validate_score_data(self, X):
        """``X`` (N, D) checked once for scoring: fitted, D columns, finite and within the model's
        float type's bound (1e18 for float32); canonical CSR, or dense as given (the input map takes
        either, so a dense ``X`` is never copied into CSR)."""
        check_is_fitted(self)
        X = check_estimator_features(X, self.n_features_in_, type(self).__name__)
        bound = float_policy(self.model_.float_type).max_feature_magnitude
        return check_features(X, num_features=self.n_features_in_, max_magnitude=bound)

    def _inputs(self, xb):
        from ..blocks import take_rows

        return take_rows(xb, slice(None), input_map=self.model_.input_map)

    def _decision_block(self, xb) -> np.ndarray:
        """f̄ = Φ m(x) + b for a block (B, D) of raw rows, CSR or dense: (B, K) float64."""
        return self.model_.mean_utilities(self._inputs(xb))

    def _proba_block(self, xb) -> np.ndarray:
        """E_q[σ(f)] for a block (B, D) of raw rows, CSR or dense: (B, K) float64."""
        return self.model_.label_probabilities(self._inputs(xb))
