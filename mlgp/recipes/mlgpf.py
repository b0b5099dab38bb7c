"""The MLGPF paper's training recipe: :func:`train_mlgpf`.

Panos, Dellaportas & Titsias (2021) L2-normalise every input row, initialise the inducing inputs by
k-means (their code keeps them on the unit sphere, like the inputs), train with Adam at learning
rate 0.005 on minibatches, and rank labels by the mean utility. :func:`train_mlgpf` does that with
the package's own parts and returns the fitted model, its ELBO trace and the test metric table.
Its defaults depart from the paper where ``experiments/time_to_accuracy.py`` measured a faster
route to the same accuracy: the whitened q(u), float32, batches of 500 and a linear warm start of
Φ and q(u)'s means (``q_family="cholesky", dtype="float64", warm_start=False`` restore the paper's
form); and the bias b starts at the labels' log-odds instead of N(0, 1/P) (``bias_init="random"``
restores the authors' choice; README.md gives the measured effects).
Every argument is checked before any k-means or TensorFlow work.
"""

from __future__ import annotations

import json
import numbers
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..data.preprocessing import normalise_rows
from ..errors import MLGPError, ShapeError
from ..validation import check_positive_int
from .settings import PAPER_SETTINGS, batch_growth as _parse_batch_growth


@dataclass
class MLGPFRun:
    """What :func:`train_mlgpf` returns.

    Attributes
    ----------
    model
        The fitted :class:`mlgp.models.MLGPF`.
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


def train_mlgpf(
    dataset,
    kernel: str = "se+linear",
    num_latent_gps: int | None = None,
    num_inducing: int | None = None,
    epochs: int = 20,
    batch_size: int = 500,
    negatives: int | None = None,
    learning_rate: float = 0.005,
    fixed_inducing: bool = False,
    unit_sphere_inducing: bool = True,
    whiten: bool = False,
    batch_growth: str | tuple[int, int] | None = None,
    bias_init: str = "log-odds",
    jit_compile: bool | str | None = None,
    seed: int = 0,
    validate: bool = False,
    checkpoint_dir: str | None = None,
    progress: bool = True,
    callback=None,
    max_train: int | None = None,
    *,
    q_family: str | None = "whitened",
    optimizer: str = "adam",
    natgrad_gamma: float | tuple[float, float, int] = (0.01, 0.1, 100),
    dtype: str = "float32",
    warm_start: bool = True,
    max_seconds: float | None = None,
    log_dir: str | None = None,
) -> MLGPFRun:
    """Train MLGPF on ``dataset`` with the paper's recipe and evaluate it on the test split.

    Parameters
    ----------
    dataset
        A :class:`mlgp.data.Dataset` (train/test splits with CSR ``X`` (N, D) and ``Y`` (N, K)).
    kernel
        ``"linear"``, ``"se"``, ``"se+linear"`` or ``"se+linear-shared"`` (the authors' SE+LR with
        one ARD vector shared by both parts).
    num_latent_gps, num_inducing
        P and M; default to the paper's Table 2 values for the dataset, else P = min(K, 30),
        M = 100.
    epochs, batch_size, negatives, learning_rate
        Passed to :func:`mlgp.training.fit` (``negatives=None`` uses every label: exact bound).
    fixed_inducing
        The SE-F variant: Z fixed at random training points.
    unit_sphere_inducing
        Keep Z on the unit sphere like the (L2-normalised) inputs, as the authors' code does
        (:class:`mlgp.inducing.UnitSphereInducingPoints`; default). ``False`` leaves Z free (it
        then drifts off the sphere; README.md compares the two).
    whiten
        Whitened q(u) (u = L v, q(v) = N(μ, LLᵀ)) instead of the paper's non-whitened form (the
        same as ``q_family="whitened"``).
    batch_growth
        ``(every, increment)``: add ``increment`` points to the batch every ``every`` epochs; also
        ``"paper"`` (the authors' ``(10, 20)`` from a batch of 100,
        :data:`mlgp.recipes.PAPER_BATCH_GROWTH`) or ``"EVERY,INC"``, as the CLI accepts
        (:func:`mlgp.recipes.batch_growth`).
    bias_init
        ``"log-odds"`` (label frequencies) or ``"random"`` (the authors' N(0, 1/P)); see
        :func:`mlgp.models.mlgpf_from_data`.
    jit_compile
        How :func:`mlgp.training.fit` compiles the step (``False``, ``True`` or
        ``"except-cholesky"``). ``None`` (default): ``"except-cholesky"`` for whitened models (XLA
        for everything but chol(K_ZZ)), ``False`` for the non-whitened and preconditioned
        families, whose bounds solve P triangular systems that XLA's CPU backend handles slowly
        (``experiments/bench_mlgpf.py`` times the three; README.md gives the figures).
    validate
        Track test P@1/3/5 in the trace every epoch.
    checkpoint_dir
        Checkpoint after every epoch in this folder and resume from the latest checkpoint there
        (see :func:`mlgp.training.fit`); ``epochs`` counts the restored ones, so a larger value
        extends a finished run. The run's settings are kept beside the checkpoints in
        ``settings.json``; resuming with different settings (other than ``epochs``, ``validate``
        and ``jit_compile``) raises :class:`mlgp.errors.MLGPError`.
    progress, callback
        Passed to :func:`mlgp.training.fit` (a progress bar; ``callback(epoch, model, row)`` after
        every epoch).
    max_train
        Use only the first ``max_train`` training points (for quick runs).
    q_family
        ``"cholesky"``, ``"whitened"`` (default) or ``"preconditioned"`` (:mod:`mlgp.variational`);
        ``None``: ``"whitened"`` when ``whiten`` else ``"cholesky"`` (the paper's form).
    optimizer, natgrad_gamma
        ``"adam"`` or ``"natgrad"`` (natural gradients on q(u), Adam on the rest) and the latter's
        γ schedule: see :func:`mlgp.training.fit`.
    dtype
        ``"float32"`` (default) or ``"float64"`` (see :func:`mlgp.models.mlgpf_from_data`).
    warm_start
        Start Φ and q(u)'s means at a linear solution (:mod:`mlgp.models.warm_start`; default).
    max_seconds
        Stop after the epoch at which training time reaches this many seconds.
    log_dir
        TensorBoard folder for the trace (:func:`mlgp.training.fit`).

    Raises
    ------
    ShapeError
        For a bad argument, before any k-means or TensorFlow work.
    MLGPError
        When ``checkpoint_dir`` holds a run with other settings.
    """
    from mlgp.kernels.factory import canonical_kernel_name
    from mlgp.metrics import evaluate
    from mlgp.models import MLGPF
    from mlgp.training import fit

    defaults = PAPER_SETTINGS.get(dataset.name, {})
    K = dataset.num_labels
    P = defaults.get("num_latent_gps", min(K, 30)) if num_latent_gps is None else num_latent_gps
    M = defaults.get("num_inducing", 100) if num_inducing is None else num_inducing
    batch_growth = _parse_batch_growth(batch_growth)
    if isinstance(kernel, str):
        canonical_kernel_name(kernel)  # raises ShapeError naming the choices
    _check_arguments(K, P=P, M=M, epochs=epochs, batch_size=batch_size, negatives=negatives,
                     learning_rate=learning_rate, bias_init=bias_init, max_train=max_train, seed=seed)
    Xtr, Ytr = normalise_rows(dataset.train.X), sp.csr_matrix(dataset.train.Y)
    if max_train is not None:
        Xtr, Ytr = Xtr[:max_train], Ytr[:max_train]
    Xte, Yte = normalise_rows(dataset.test.X), sp.csr_matrix(dataset.test.Y)
    M = min(M, Xtr.shape[0])
    _check_choices(q_family, optimizer, dtype, whiten)
    if q_family is None:
        q_family = "whitened" if whiten else "cholesky"
    whiten = q_family == "whitened"
    if jit_compile is None:
        jit_compile = "except-cholesky" if whiten else False
    settings = dict(
        dataset=dataset.name,
        kernel=kernel,
        num_latent_gps=P,
        num_inducing=M,
        epochs=epochs,
        batch_size=batch_size,
        negatives=negatives,
        learning_rate=learning_rate,
        fixed_inducing=fixed_inducing,
        unit_sphere_inducing=unit_sphere_inducing,
        whiten=whiten,
        batch_growth=batch_growth,
        bias_init=bias_init,
        jit_compile=jit_compile,
        seed=seed,
        num_train=Xtr.shape[0],
        q_family=q_family,
        optimizer=optimizer,
        natgrad_gamma=natgrad_gamma if optimizer == "natgrad" else None,
        dtype=dtype,
        warm_start=bool(warm_start),
    )
    if checkpoint_dir is not None:
        # everything but the epoch count (which may grow) and how the step is compiled must match
        _check_checkpoint_settings(Path(checkpoint_dir), {k: v for k, v in settings.items() if k not in ("epochs", "jit_compile", "whiten")})

    model = MLGPF.from_data(
        Xtr,
        Ytr,
        kernel=kernel,
        num_latent_gps=P,
        num_inducing=M,
        fixed_inducing=fixed_inducing,
        unit_sphere_inducing=unit_sphere_inducing,
        q_family=q_family,
        bias_init=bias_init,
        seed=seed,
        dtype=dtype,
        warm_start=warm_start,
    )
    t0 = time.perf_counter()
    trace = fit(
        model,
        (Xtr, Ytr),
        epochs=epochs,
        batch_size=min(batch_size, Xtr.shape[0]),
        negatives=negatives,
        learning_rate=learning_rate,
        optimizer=optimizer,
        natgrad_gamma=natgrad_gamma,
        batch_growth=batch_growth,
        jit_compile=jit_compile,
        max_seconds=max_seconds,
        log_dir=log_dir,
        validation=(Xte, Yte) if validate else None,
        checkpoint_dir=checkpoint_dir,
        seed=seed,
        progress=progress,
        callback=callback,
        check_input=False,  # from_data has checked (Xtr, Ytr)
    )
    train_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    scores = model.predict_topk(Xte, min(5, K), batch_size=1000)  # the test split's first check
    predict_s = time.perf_counter() - t0
    ks = [k for k in (1, 3, 5) if k <= K]
    table = evaluate(Yte, scores, ks=ks, inv_propensity=dataset.inverse_propensity(), percent=True)
    return MLGPFRun(model, trace, table, {"train": train_s, "epochs": float(trace["seconds"].sum()), "predict": predict_s}, settings)


#: Settings added after checkpoints were first written, with the value an older ``settings.json``
#: (which lacks them) implies.
_SETTINGS_ADDED = {"unit_sphere_inducing": False, "optimizer": "adam", "natgrad_gamma": None, "dtype": "float64",
                   "warm_start": False}


def _check_arguments(K: int, *, P, M, epochs, batch_size, negatives, learning_rate, bias_init, max_train, seed) -> None:
    """Raise :class:`ShapeError` naming the first bad argument of :func:`train_mlgpf`."""
    check_positive_int(P, "num_latent_gps")
    check_positive_int(M, "num_inducing")
    if P > K:
        raise ShapeError(f"num_latent_gps must be at most the number of labels K={K}, got {P}")
    check_positive_int(epochs, "epochs")
    check_positive_int(batch_size, "batch_size")
    if negatives is not None:
        check_positive_int(negatives, "negatives")
        if negatives >= K:
            raise ShapeError(f"negatives={negatives} sampled negative labels per point needs more than "
                             f"K={K} labels; use negatives=None for every label (the exact bound)")
    if max_train is not None:
        check_positive_int(max_train, "max_train")
    if isinstance(learning_rate, bool) or not isinstance(learning_rate, numbers.Real) or not 0 < learning_rate < float("inf"):
        raise ShapeError(f"learning_rate must be a positive number, got {learning_rate!r}")
    if bias_init not in ("log-odds", "random"):
        raise ShapeError(f"bias_init must be 'log-odds' or 'random', got {bias_init!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ShapeError(f"seed must be a non-negative integer, got {seed!r}")


def _check_choices(q_family, optimizer, dtype, whiten) -> None:
    """Raise :class:`ShapeError` for an unknown q(u) family, optimizer or dtype, before any work."""
    from mlgp.models.builders import check_dtype
    from mlgp.variational.factory import check_q_family

    if q_family is not None:
        check_q_family(q_family)
    check_dtype(dtype)
    if whiten and q_family not in (None, "whitened"):
        raise ShapeError(f"whiten=True asks for the whitened family but q_family={q_family!r}")
    if optimizer not in ("adam", "natgrad"):
        raise ShapeError(f"optimizer must be 'adam' or 'natgrad', got {optimizer!r}")
    if optimizer == "natgrad" and q_family == "preconditioned":
        raise ShapeError("optimizer='natgrad' needs a Cholesky q(u) family ('cholesky' or 'whitened'); the "
                         "preconditioned family's natural-gradient step leaves the family (see docs/q_families.md)")


def _check_checkpoint_settings(folder: Path, settings: dict) -> None:
    """Write ``settings.json`` in a new checkpoint folder; refuse to resume one made with other settings."""
    path = folder / "settings.json"
    settings = json.loads(json.dumps(settings))  # as stored: tuples become lists
    if path.is_file():
        saved = {**_SETTINGS_ADDED, **json.loads(path.read_text())}
        saved.setdefault("q_family", "whitened" if saved.get("whiten") else "cholesky")
        differ = {k: (saved.get(k), v) for k, v in settings.items() if saved.get(k) != v}
        if differ:
            text = ", ".join(f"{k}: checkpoint {a!r}, now {b!r}" for k, (a, b) in differ.items())
            raise MLGPError(f"checkpoint folder {folder} holds a run with other settings ({text}); use another folder")
        return
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(settings, indent=2) + "\n")
