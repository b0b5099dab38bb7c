"""The MLGPF paper's training recipe: :func:`train_mlgpf`.

Panos, Dellaportas & Titsias (2021) L2-normalise every input row, initialise the inducing inputs by
k-means (their code keeps them on the unit sphere, like the inputs), train with Adam on
minibatches, and rank labels by the mean utility. :func:`train_mlgpf` does that with the package's
own parts and returns the fitted model, the estimator that scores it
(:class:`~mlgp.recipes.MLGPFClassifier`), its ELBO trace and the test metric table. The model carries
the row normalisation as the outermost part of its input map (:class:`mlgp.blocks.RowNormalised`
around the subspace projection, if any): it is built from the normalised training rows, then
trained, validated and scored on raw rows, so no caller normalises by hand. Its settings,
their defaults and where those depart from the paper are :class:`mlgp.recipes.MLGPFSettings`.
Every argument is checked once, here, before any k-means or TensorFlow work; the layers below get
checked values.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import scipy.sparse as sp

from .. import arguments
from ..estimator.training import Budget
from ..errors import ArgumentError, CheckpointMismatchError, FileAccessError, warn
from ..files import atomic_write
from ..validation import check_num_inducing, check_training_data
from .setting_checks import resolved_warmup
from .build import build_and_train, check_sizes, check_strategy, default_jit_compile, resolved_preprocessing
from .estimator import MLGPFClassifier
from .settings import MLGPFSettings


@dataclass
class MLGPFRun:
    """What :func:`train_mlgpf` returns.

    Attributes
    ----------
    model
        The fitted :class:`mlgp.models.MLGPF`.
    estimator
        The :class:`~mlgp.recipes.MLGPFClassifier` around ``model`` that scores it
        (``run.estimator.predict_topk(X, k)`` on raw rows) and saves it; made from ``model`` and
        ``trace`` when not given (:meth:`MLGPFClassifier.from_model`).
    trace
        Per-epoch ELBO trace (``pandas.DataFrame`` from :func:`mlgp.training.fit`).
    metrics
        Test metric table from :func:`mlgp.metrics.evaluate` (percent; rows P, nDCG, PSP,
        PSnDCG; columns k = 1, 3, 5).
    seconds
        ``train``: wall time of this call's training (s; validation included, restored epochs not);
        ``epochs``: the per-epoch training seconds of the trace summed, restored epochs included
        (what a run resumed from checkpoints cost in all); ``predict``: prediction (s).
    settings
        Everything the run was configured with.
    """

    model: object
    trace: pd.DataFrame
    metrics: pd.DataFrame
    seconds: dict[str, float] = field(default_factory=dict)
    settings: dict = field(default_factory=dict)
    estimator: MLGPFClassifier | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.estimator is None:
            self.estimator = MLGPFClassifier.from_model(self.model, self.trace)


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
        ``subspace_rank``, ``subspace_sample``, ``seed``, ``max_train``); that class documents each one and its default. P and M left ``None`` are
        the dataset's (:meth:`MLGPFSettings.sized_for`); M is kept at most N (and the batch, by
        :func:`mlgp.training.fit`'s sampler).
    validate
        Track test P@1/3/5 in the trace every epoch.
    checkpoint_dir
        Checkpoint after every epoch in this folder and resume from the latest checkpoint there
        (see :func:`mlgp.training.fit`); ``epochs`` counts the restored ones, so a larger value
        extends a finished run. The run's settings are kept beside the checkpoints in
        ``settings.json``; resuming with different settings (other than ``epochs``, ``validate``
        and ``jit_compile``) raises :class:`mlgp.errors.CheckpointMismatchError`.
    progress, callback
        Passed to :func:`mlgp.training.fit` (a progress bar; ``callback(epoch, model, row)`` after
        every epoch).
    jit_compile
        How :func:`mlgp.training.fit` compiles the step (``False``, ``True`` or
        ``"except-cholesky"``). ``None`` (default): ``"except-cholesky"`` for whitened models (XLA
        for everything but chol(K_ZZ)), ``False`` for the non-whitened and preconditioned
        families, whose bounds solve P triangular systems that XLA's CPU backend handles slowly
        (``experiments/bench_mlgpf.py`` times the three; docs/results.md gives the figures).
        ``False`` with a ``strategy``, which cannot be combined with the other two.
    strategy
        A ``tf.distribute.Strategy`` to train on (the model is built in its scope): several
        devices, or several machines with :func:`mlgp.training.workers.multi_worker_strategy`
        (run the same call on every worker; see :func:`mlgp.training.fit`).
    max_seconds
        Wall seconds of this call from its start (preparing the data and building the model
        included), looked at after every optimiser step (:class:`mlgp.estimator.training.Budget`).
    log_dir
        TensorBoard folder for the trace (:func:`mlgp.training.fit`).
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
        For a bad argument value or choice, before any k-means or TensorFlow work.
    ShapeError
        For sizes the dataset rules out (P > K, ``negatives`` ≥ K, a given ``num_inducing`` above
        the number of training points), before any work. The dataset's default M is lowered to N
        when ``max_train`` leaves fewer points.
    CheckpointMismatchError
        When ``checkpoint_dir`` holds a run with other settings (or unreadable ones).
    """
    from mlgp.metrics import evaluate

    K = dataset.num_labels
    given = _recipe_settings(settings, overrides, whiten)
    s = given.sized_for(dataset.name, K)
    check_sizes(s, K)
    arguments.flag(validate, "validate"), arguments.flag(progress, "progress")
    if jit_compile not in (None, False, True, "except-cholesky"):
        raise ArgumentError(f"jit_compile must be None, False, True or 'except-cholesky'; got {jit_compile!r}")
    budget = Budget(max_seconds)  # checks it; counts from here, the data's preparation included
    Xtr, Ytr = dataset.train.X, dataset.train.Y
    if s.max_train is not None:
        Xtr, Ytr = Xtr[: s.max_train], Ytr[: s.max_train]
    Xtr, Ytr = check_training_data(Xtr, Ytr)  # the training data's one check: the layers below trust it
    Xte, Yte = dataset.test.X, sp.csr_matrix(dataset.test.Y)  # raw rows: the model normalises them
    N = Xtr.shape[0]
    s = resolved_preprocessing(s, Xtr)  # "auto" chosen from the training rows, so a checkpoint records it
    s = s.replace(covariance_warmup=resolved_warmup(s))  # and "auto" resolved, likewise
    if given.num_inducing is not None:
        check_num_inducing(given.num_inducing, N)
    M = min(s.num_inducing, N)  # the dataset's default M, on fewer points (max_train): all of them
    whitened = s.q_family == "whitened"
    if jit_compile is None:
        jit_compile = False if strategy is not None else default_jit_compile(s.q_family)
    check_strategy(strategy, jit_compile)
    record = {k: v for k, v in s.as_dict().items() if k != "max_train"}  # num_train says what max_train did
    if not isinstance(record["kernel"], str):  # a kernel object: its class is what a checkpoint can compare
        record["kernel"] = f"{type(s.kernel).__module__}:{type(s.kernel).__qualname__}"
    record.update(dataset=dataset.name, num_inducing=M, whiten=whitened, jit_compile=jit_compile, num_train=N,
                  natgrad_gamma=s.natgrad_gamma if s.optimizer == "natgrad" else None)
    if checkpoint_dir is not None:
        # everything but the epoch count (which may grow) and how the step is compiled must match
        _check_checkpoint_settings(Path(checkpoint_dir), {k: v for k, v in record.items() if k not in ("epochs", "jit_compile", "whiten")})

    t0 = time.perf_counter()
    model, trace = build_and_train(Xtr, Ytr, s.replace(num_inducing=M), jit_compile=jit_compile,
                                   max_seconds=budget, log_dir=log_dir,
                                   validation=(Xte, Yte) if validate else None, checkpoint_dir=checkpoint_dir,
                                   progress=progress, callback=callback, strategy=strategy)
    train_s = time.perf_counter() - t0
    estimator = MLGPFClassifier.from_model(model, trace, s.replace(num_inducing=M))
    t0 = time.perf_counter()
    scores = estimator.predict_topk(Xte, min(5, K), batch_size=1000)  # the test split's first check
    predict_s = time.perf_counter() - t0
    ks = [k for k in (1, 3, 5) if k <= K]
    table = evaluate(Yte, scores, ks=ks, inv_propensity=dataset.inverse_propensity(), percent=True)
    seconds = {"train": train_s, "epochs": float(trace["seconds"].sum()), "predict": predict_s}
    return MLGPFRun(model, trace, table, seconds, record, estimator)


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


#: Settings added after checkpoints were first written, with the value an older ``settings.json``
#: (which lacks them) implies.
_SETTINGS_ADDED = {"unit_sphere_inducing": False, "optimizer": "adam", "natgrad_gamma": None, "dtype": "float64",
                   "warm_start": False, "subspace_rank": None, "subspace_sample": None, "preprocessing": "rows",
                   "covariance_warmup": 0, "kl_weight": 1.0}


def _check_checkpoint_settings(folder: Path, settings: dict) -> None:
    """Write ``settings.json`` in a new checkpoint folder; refuse to resume one made with other settings."""
    if folder.exists() and not folder.is_dir():
        raise ArgumentError(f"checkpoint_dir {folder} is a file, not a folder")
    path = folder / "settings.json"
    settings = json.loads(json.dumps(settings))  # as stored: tuples become lists
    if path.is_file():
        try:
            stored = json.loads(path.read_bytes().decode("utf-8"))
        except (OSError, ValueError, RecursionError) as err:  # ValueError: bad UTF-8 or JSON
            raise CheckpointMismatchError(f"{path}: the run's settings are not readable ({err}); use another "
                                          "checkpoint_dir or delete it") from None
        if not isinstance(stored, dict):
            raise CheckpointMismatchError(f"{path}: the run's settings are not a JSON object; use another "
                                          "checkpoint_dir or delete it")
        saved = {**_SETTINGS_ADDED, **stored}
        saved.setdefault("q_family", "whitened" if saved.get("whiten") else "cholesky")
        saved["kernel"] = _canonical_kernel(saved.get("kernel"))  # older runs kept the name as given
        differ = {k: (saved.get(k), v) for k, v in settings.items() if saved.get(k) != v}
        if differ:
            text = ", ".join(f"{k}: checkpoint {a!r}, now {b!r}" for k, (a, b) in differ.items())
            raise CheckpointMismatchError(f"checkpoint folder {folder} holds a run with other settings ({text}); "
                                          "use another folder")
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise FileAccessError(f"cannot make the checkpoint folder {folder}: {err.strerror or err}") from None
    text = json.dumps(settings, indent=2) + "\n"
    atomic_write(path, lambda f: f.write(text.encode()))


def _canonical_kernel(name):
    """A stored kernel name in canonical form (unchanged when it is not a known name)."""
    from mlgp.kernels.factory import canonical_kernel_name

    try:
        return canonical_kernel_name(name)
    except ArgumentError:
        return name
