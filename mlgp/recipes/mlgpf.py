"""The MLGPF paper's training recipe: :func:`train_mlgpf`, the estimator with the paper's schedule.

Panos, Dellaportas & Titsias (2021) L2-normalise every input row, initialise the inducing inputs by
k-means (their code keeps them on the unit sphere, like the inputs), train with Adam on minibatches
of every training row for a given number of epochs, and rank labels by the mean utility.
:func:`train_mlgpf` is :class:`~mlgp.recipes.MLGPFClassifier` with that schedule
(:func:`paper_classifier`): no rows held out (so no early stopping, bias guard or refit), the
epochs given, every setting of :class:`~mlgp.recipes.MLGPFSettings` passed as a parameter (its
defaults are the recipe's: ``preprocessing="rows"``, P and M the paper's for the dataset) and the
step compiled as the recipe chooses; the recipe and the estimator differ only by the parameters
passed. It fits the classifier on the dataset's training split, scores the test split and returns
the fitted model, the estimator, its trace and the test metric table. The model carries the row
normalisation as the outermost part of its input map (:class:`mlgp.blocks.RowNormalised`), so it
is trained, validated and scored on raw rows. Every argument the classifier does not take is
checked here, before any work; the classifier checks the rest before any k-means or TensorFlow work.
"""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
import scipy.sparse as sp

from .. import arguments
from ..errors import ArgumentError, warn
from ..validation import check_num_inducing
from .build import default_jit_compile, recorded_settings, resolved_warmup
from .estimator import MLGPFClassifier
from .settings import MLGPFSettings
from .wrapped import _NOT_PARAMETERS, epoch_rows

__all__ = ["MLGPFRun", "paper_classifier", "train_mlgpf"]


class MLGPFRun:
    """What :func:`train_mlgpf` returns.

    Parameters
    ----------
    model, trace
        A fitted :class:`mlgp.models.MLGPF` and its per-epoch trace (:func:`mlgp.training.fit`'s),
        wrapped by :meth:`MLGPFClassifier.from_model` when ``estimator`` is not given.
    metrics, seconds, settings
        The attributes below.
    estimator
        The fitted :class:`~mlgp.recipes.MLGPFClassifier` (``train_mlgpf`` gives it; then ``trace``
        is not given and ``model`` is its ``model_``).

    Attributes
    ----------
    estimator
        The :class:`~mlgp.recipes.MLGPFClassifier` that trained the model (or wraps it): it scores it
        (``run.estimator.predict_topk(X, k)`` on raw rows) and saves it.
    model
        The fitted :class:`mlgp.models.MLGPF` (the estimator's ``model_``).
    trace
        The estimator's ``trace_`` without its set-up row: one row per epoch, with
        :func:`mlgp.training.fit`'s columns (``epoch``, ``elbo``, ``kl``, ``seconds``, ``batch_size``,
        the test ``P@k`` with ``validate``, …) and the estimator's (``step``, ``elapsed``, ``objective``).
    metrics
        Test metric table from :func:`mlgp.metrics.evaluate` (percent; rows P, nDCG, PSP,
        PSnDCG; columns k = 1, 3, 5).
    seconds
        ``train``: wall time of the estimator's ``fit`` (s; validation included, restored epochs not);
        ``epochs``: the per-epoch training seconds of the trace summed, restored epochs included
        (what a run resumed from checkpoints cost in all); ``predict``: prediction (s).
    settings
        Everything the run was configured with (:func:`mlgp.recipes.build.recorded_settings` of the
        estimator's ``settings_``, with ``dataset``, ``num_train``, ``whiten`` and ``jit_compile``).
    """

    def __init__(self, model, trace: pd.DataFrame | None = None, metrics: pd.DataFrame | None = None,
                 seconds: dict | None = None, settings: dict | None = None,
                 estimator: MLGPFClassifier | None = None) -> None:
        if estimator is None:
            estimator = MLGPFClassifier.from_model(model, trace)
        elif trace is not None or model is not estimator.model_:
            raise ArgumentError("MLGPFRun takes the model and the trace from its estimator: give the estimator's "
                                "model_ and no trace")
        self.estimator, self.metrics = estimator, metrics
        self.seconds, self.settings = dict(seconds or {}), dict(settings or {})

    @property
    def model(self):
        return self.estimator.model_

    @property
    def trace(self) -> pd.DataFrame:
        return epoch_rows(self.estimator.trace_).reset_index(drop=True)

    def __repr__(self) -> str:
        return f"MLGPFRun(epochs={len(self.trace)}, metrics={None if self.metrics is None else self.metrics.shape})"


def train_mlgpf(
    dataset,
    settings: MLGPFSettings | None = None,
    *,
    validate: bool = False,
    checkpoint_dir: str | Path | None = None,
    progress: bool = True,
    callback=None,
    jit_compile: bool | str | None = None,
    max_seconds: float | None = None,
    log_dir: str | Path | None = None,
    whiten: bool | None = None,
    strategy=None,
    **overrides,
) -> MLGPFRun:
    """Train MLGPF on ``dataset`` with the paper's recipe and evaluate it on the test split.

    Parameters
    ----------
    dataset
        A :class:`mlgp.data.Dataset` (train/test splits with CSR ``X`` (N, D) and ``Y`` (N, K)).
    settings
        The recipe's settings (default: ``MLGPFSettings()``, whose defaults are the recipe's).
    **overrides
        Fields of :class:`~mlgp.recipes.MLGPFSettings` to change (``kernel``, ``num_latent_gps``,
        ``num_inducing``, ``epochs``, ``batch_size``, ``negatives``, ``learning_rate``,
        ``fixed_inducing``, ``unit_sphere_inducing``, ``q_family``, ``optimizer``,
        ``natgrad_gamma``, ``dtype``, ``warm_start``, ``batch_growth``, ``bias_init``,
        ``subspace_rank``, ``subspace_sample``, ``preprocessing``, ``covariance_warmup``,
        ``kl_weight``, ``seed``, ``max_train``); that class documents each one and its default. P and M
        left ``None`` are the dataset's (:meth:`MLGPFSettings.sized_for`), M lowered to N when
        ``max_train`` leaves fewer points; the batch is kept at most N by :func:`mlgp.training.fit`'s sampler.
    validate
        Track test P@1/3/5 in the trace every epoch.
    checkpoint_dir
        Checkpoint after every epoch in this folder and resume from the latest checkpoint there
        (the classifier's ``checkpoint_dir``; :func:`mlgp.training.fit`); ``epochs`` counts the
        restored ones, so a larger value extends a finished run. The folder's manifest records the
        run's settings; resuming with different settings (other than ``epochs``, ``validate``,
        ``jit_compile`` and ``progress``) raises :class:`mlgp.errors.CheckpointMismatchError` naming
        them. A folder written before the manifest carried them (with ``settings.json``) resumes,
        or is refused by name, the same way.
    progress, callback, log_dir
        The classifier's ``progress`` (a progress bar) and ``log_dir`` (TensorBoard scalars), and
        its ``fit``'s ``callback`` (``callback(epoch, model, row)`` after every epoch; a true return
        stops training).
    jit_compile
        How :func:`mlgp.training.fit` compiles the step (``False``, ``True`` or
        ``"except-cholesky"``). ``None`` (default): ``"except-cholesky"`` for whitened models (XLA
        for everything but chol(K_ZZ)), ``False`` for the non-whitened and preconditioned
        families, whose bounds solve P triangular systems that XLA's CPU backend handles slowly
        (:func:`mlgp.recipes.build.default_jit_compile`; ``experiments/bench_mlgpf.py`` times the
        three; docs/results.md gives the figures). ``False`` with a ``strategy``, which cannot be
        combined with the other two.
    strategy
        A ``tf.distribute.Strategy`` to train on (the model is built in its scope): several
        devices, or several machines with :func:`mlgp.training.workers.multi_worker_strategy`
        (run the same call on every worker; see :func:`mlgp.training.fit`).
    max_seconds
        Wall seconds from the start of the classifier's ``fit``, which this call starts once its
        own arguments are checked (checking the data, preprocessing and building the model
        included), looked at after every optimiser step (:class:`mlgp.estimator.budget.Budget`).
    whiten
        Deprecated (a ``FutureWarning``): ``whiten=True`` is ``q_family="whitened"``, ``whiten=False``
        is ``q_family="cholesky"`` unless ``q_family`` is given. ``q_family=None`` is the same
        older spelling: the family follows ``whiten`` (``"cholesky"`` without it).

    Returns
    -------
    MLGPFRun

    Raises
    ------
    ArgumentError
        For a bad argument value or choice, before any k-means or TensorFlow work (the classifier's
        parameters as its :class:`~mlgp.estimator.ParameterError`).
    ShapeError
        For sizes the dataset rules out (P > K, ``negatives`` ≥ K, a given ``num_inducing`` above
        the number of training points), before any work.
    CheckpointMismatchError
        When ``checkpoint_dir`` holds a run with other settings (or unreadable ones).
    """
    from mlgp.metrics import evaluate

    K = dataset.num_labels
    given = _recipe_settings(settings, overrides, whiten)
    s = given.sized_for(dataset.name, K)
    arguments.flag(validate, "validate")
    Xtr, Ytr = dataset.train.X, dataset.train.Y
    if s.max_train is not None:
        Xtr, Ytr = Xtr[: s.max_train], Ytr[: s.max_train]
    N = Xtr.shape[0]
    if given.num_inducing is None:  # the dataset's M, on fewer points (max_train): all of them
        s = s.replace(num_inducing=check_num_inducing(s.num_inducing, N, given=False))
    clf = paper_classifier(s, jit_compile=jit_compile, strategy=strategy, max_seconds=max_seconds, progress=progress,
                           checkpoint_dir=checkpoint_dir, log_dir=log_dir)
    Xte, Yte = dataset.test.X, sp.csr_matrix(dataset.test.Y)  # raw rows: the model normalises them
    t0 = time.perf_counter()
    clf.fit(Xtr, Ytr, validation=(Xte, Yte) if validate else None, strategy=strategy, callback=callback)
    train_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    scores = clf.predict_topk(Xte, min(5, K), batch_size=1000)
    predict_s = time.perf_counter() - t0
    table = evaluate(Yte, scores, ks=[k for k in (1, 3, 5) if k <= K], inv_propensity=dataset.inverse_propensity(),
                     percent=True)
    fitted = clf.settings_
    record = dict(recorded_settings(fitted.replace(covariance_warmup=resolved_warmup(fitted))), dataset=dataset.name,
                  whiten=fitted.q_family == "whitened", jit_compile=clf.jit_compile, num_train=N)
    seconds = {"train": train_s, "epochs": float(epoch_rows(clf.trace_)["seconds"].sum()), "predict": predict_s}
    return MLGPFRun(clf.model_, metrics=table, seconds=seconds, settings=record, estimator=clf)


def paper_classifier(s: MLGPFSettings, *, jit_compile=None, strategy=None, **params) -> MLGPFClassifier:
    """The :class:`~mlgp.recipes.MLGPFClassifier` that trains as :func:`train_mlgpf` does: every
    setting of ``s`` (P and M set) as its parameter, every training row for ``s.epochs`` epochs (no
    rows held out: no early stopping, bias guard or refit), the step compiled as ``jit_compile``
    (``None``: :func:`mlgp.recipes.build.default_jit_compile` of the family, ``False`` with a
    ``strategy``), and ``params``, more of its parameters (``max_seconds``, ``progress``,
    ``checkpoint_dir``, ``log_dir``)."""
    if jit_compile is None:
        jit_compile = False if strategy is not None else default_jit_compile(s.q_family)
    settings = {name: value for name, value in s.as_dict().items() if name not in _NOT_PARAMETERS}
    return MLGPFClassifier(**settings, validation_fraction=0, early_stopping=False, refit=False,
                           jit_compile=jit_compile, **params)


def _recipe_settings(settings, overrides: dict, whiten) -> MLGPFSettings:
    """The run's checked settings: ``settings`` (or the defaults) with ``overrides``, the deprecated
    ``whiten`` and ``q_family=None`` turned into a ``q_family``."""
    if settings is not None and not isinstance(settings, MLGPFSettings):
        raise ArgumentError(f"settings must be an MLGPFSettings (give the other settings by name, e.g. kernel=...); "
                            f"got {settings!r}")
    overrides = dict(overrides)
    family_none = "q_family" in overrides and overrides["q_family"] is None
    family_given = "q_family" in overrides and not family_none
    if whiten is not None:
        warn("train_mlgpf(whiten=...) is deprecated; use q_family='whitened' (or q_family='cholesky' for "
             "whiten=False)", FutureWarning)
        if whiten and family_given and overrides["q_family"] != "whitened":
            raise ArgumentError(f"whiten=True asks for the whitened family but q_family={overrides['q_family']!r}")
    if not family_given and (whiten is not None or family_none):
        overrides["q_family"] = "whitened" if whiten else "cholesky"
    unknown = sorted(set(overrides) - set(MLGPFSettings.names()))
    if unknown:
        raise ArgumentError(f"train_mlgpf got unknown argument(s) {', '.join(map(repr, unknown))}; its settings are "
                            f"{', '.join(MLGPFSettings.names())}")
    return MLGPFSettings(**overrides) if settings is None else settings.replace(**overrides)
