"""Building and training the MLGPF recipe's model from checked data and settings, with what is left
to the data resolved on it: :func:`build_and_train`.

The one place :func:`mlgp.recipes.train_mlgpf` (through :class:`mlgp.recipes.MLGPFClassifier`) and
the classifier turn :class:`~mlgp.recipes.MLGPFSettings` into a model and a training run, with the
checks made before any work (:func:`check_sizes`, :func:`check_strategy`) and what the settings leave
to the data: P, M and the batch (:func:`sizes_for_data`), the epochs (:func:`auto_epochs`), the
preprocessing (:func:`resolved_preprocessing`), the factors' warm-up (:func:`resolved_warmup`) and
the compilation of the step (:func:`default_jit_compile`, :func:`auto_jit_compile`). The model
carries its preprocessing as the outer part of its input map: the row normalisation
(:class:`mlgp.blocks.RowNormalised`) and, with ``preprocessing="columns"``, the column
standardisation before it (:class:`mlgp.blocks.ColumnStandardised`). It is built from the
preprocessed training rows, then trained on raw rows. A checkpointed run's settings
(:func:`recorded_settings`) are its checkpoint manifest's (:func:`mlgp.training.checkpoints.recipe_settings`).
"""

from __future__ import annotations

from ..data.preprocessing import chosen_preprocessing, column_statistics, normalise_rows
from ..errors import ArgumentError, ShapeError
from .settings import MLGPFSettings, can_tie

__all__ = ["AUTO_MIN_EPOCHS", "AUTO_MIN_STEPS", "auto_epochs", "auto_jit_compile", "build_and_train", "check_sizes",
           "check_strategy", "default_jit_compile", "recorded_settings", "resolved_preprocessing", "resolved_warmup",
           "sized_for_data", "sizes_for_data"]

#: Training points from which :func:`auto_jit_compile` compiles the step with XLA.
XLA_FROM_POINTS = 2000
#: The smallest budget (seconds) for which :func:`auto_jit_compile` compiles with XLA: where XLA's
#: compilation was measured to be paid back on Bibtex (docs/results.md).
XLA_FROM_SECONDS = 60.0


def check_strategy(strategy, jit_compile) -> None:
    """ArgumentError, at the call, for a strategy that is not a ``tf.distribute.Strategy`` or one
    asked to run with XLA (``fit`` compiles a strategy's step without it)."""
    if strategy is None:
        return
    import tensorflow as tf

    if not isinstance(strategy, tf.distribute.Strategy):
        raise ArgumentError(f"strategy must be a tf.distribute.Strategy, got {type(strategy).__name__}")
    if jit_compile:
        raise ArgumentError(f"strategy= cannot be combined with jit_compile={jit_compile!r}: a distributed step is "
                            "compiled without XLA; pass jit_compile=False (the default with a strategy)")


def build_and_train(Xtr, Ytr, s: MLGPFSettings, *, jit_compile, max_seconds=None, log_dir=None, validation=None,
                    checkpoint_dir=None, progress: bool = True, callback=None, strategy=None,
                    progress_name: str = "MLGPF fit"):
    """Build MLGPF from checked training data with the sized, checked settings ``s`` (P and M set)
    and train it; returns ``(model, trace)``. The one place the recipe and
    :class:`mlgp.recipes.MLGPFClassifier` turn settings into a model and a training run; it
    trusts its arguments (checked by its callers). With a ``strategy`` the model is built in its
    scope and trained on all its replicas and workers.

    ``Xtr`` and ``validation`` hold raw rows: the model is built from the preprocessed rows
    (k-means, the subspace's basis, the warm start), then its input map becomes
    :class:`~mlgp.blocks.RowNormalised` around the one it was built with (and
    :class:`~mlgp.blocks.ColumnStandardised` around that, by the training rows' statistics, with
    ``preprocessing="columns"``), and it is trained on the raw rows (each minibatch preprocessed as
    it is taken, bit for bit the preprocessed matrix's rows). With ``checkpoint_dir`` the run's
    settings (:func:`recorded_settings` but ``epochs``, which may grow) are checked against those
    the folder records before anything is built, and recorded in its manifest
    (:func:`mlgp.training.checkpoints.recipe_settings`). ``progress_name`` names the run's progress
    bar and lines (:mod:`mlgp.estimator.progress`)."""
    import contextlib

    from mlgp.blocks import ColumnStandardised, RowNormalised
    from mlgp.training import fit
    from mlgp.training.checkpoints import recipe_settings

    s = resolved_preprocessing(s, Xtr)
    s = s.replace(covariance_warmup=resolved_warmup(s))
    shared = {k: v for k, v in recorded_settings(s).items() if k != "epochs"}
    with recipe_settings(checkpoint_dir, shared, older=_older_record):  # other settings refused before any work
        columns = ColumnStandardised(*column_statistics(Xtr)) if s.preprocessing == "columns" else None
        with strategy.scope() if strategy is not None else contextlib.nullcontext():
            model = _build(normalise_rows(Xtr if columns is None else columns(Xtr)), Ytr, s)
        model.input_map = RowNormalised(model.input_map, num_features=model.num_features)
        if columns is not None:
            model.input_map = ColumnStandardised(columns.centre, columns.scale, inner=model.input_map)
        trace = fit(
            model,
            (Xtr, Ytr),
            epochs=s.epochs,
            batch_size=s.batch_size,  # the sampler keeps each epoch's batch at most N (it grows with batch_growth)
            negatives=s.negatives,
            learning_rate=s.learning_rate,
            optimizer=s.optimizer,
            natgrad_gamma=s.natgrad_gamma,
            batch_growth=s.batch_growth,
            jit_compile=jit_compile,
            max_seconds=max_seconds,
            log_dir=log_dir,
            validation=validation,
            checkpoint_dir=checkpoint_dir,
            seed=s.seed,
            progress=progress,
            progress_name=progress_name,
            callback=callback,
            strategy=strategy,
            check_input=False,  # settings checked when built, data by the caller
            covariance_warmup=s.covariance_warmup,
            kl_weight=s.kl_weight,
        )
    return model, trace


def resolved_preprocessing(s: MLGPFSettings, Xtr) -> MLGPFSettings:
    """``s`` with ``preprocessing="auto"`` resolved on the training rows ``Xtr`` (N, D), CSR or
    dense: ``"columns"`` for dense or signed features, else ``"rows"`` — the one rule every family
    takes, :func:`mlgp.data.preprocessing.chosen_preprocessing`."""
    if s.preprocessing != "auto":
        return s
    return s.replace(preprocessing=chosen_preprocessing("auto", Xtr))


def resolved_warmup(s: MLGPFSettings) -> int | str:
    """``s.covariance_warmup`` with ``"auto"`` resolved: ``"all"`` where the factors can be tied
    (:func:`mlgp.recipes.settings.can_tie`), else 0."""
    if s.covariance_warmup != "auto":
        return s.covariance_warmup
    return "all" if can_tie(s) else 0


def _build(Xtr, Ytr, s: MLGPFSettings):
    """The recipe's MLGPF for checked data and settings."""
    from mlgp.models import MLGPF
    from mlgp.models.builders import mlgpf_from_data

    return mlgpf_from_data(
        Xtr,
        Ytr,
        model_class=MLGPF,
        kernel=s.kernel,
        num_latent_gps=s.num_latent_gps,
        num_inducing=s.num_inducing,
        fixed_inducing=s.fixed_inducing,
        unit_sphere_inducing=s.unit_sphere_inducing,
        q_family=s.q_family,
        bias_init=s.bias_init,
        seed=s.seed,
        dtype=s.dtype,
        warm_start=s.warm_start,
        subspace_rank=s.subspace_rank,
        subspace_sample=s.subspace_sample,
        check_input=False,  # settings checked when built, data by the caller
    )


def default_jit_compile(q_family: str):
    """How the step is compiled by default: ``"except-cholesky"`` for the whitened family, else
    ``False`` (see :func:`mlgp.recipes.train_mlgpf`'s ``jit_compile``)."""
    return "except-cholesky" if q_family == "whitened" else False


def auto_jit_compile(q_family: str, num_train: int, max_seconds: float | None, strategy=None):
    """``jit_compile="auto"`` of :class:`mlgp.recipes.MLGPFClassifier`: :func:`default_jit_compile`
    from :data:`XLA_FROM_POINTS` training points on, with no budget or one of at least
    :data:`XLA_FROM_SECONDS`, and no strategy; else ``False`` (compiling would cost more than it saves)."""
    long_enough = max_seconds is None or max_seconds >= XLA_FROM_SECONDS
    if num_train >= XLA_FROM_POINTS and long_enough and strategy is None:
        return default_jit_compile(q_family)
    return False


def check_sizes(s: MLGPFSettings, K: int) -> None:
    """Raise :class:`ShapeError` for sizes the dataset's K rules out."""
    if s.num_latent_gps > K:
        raise ShapeError(f"num_latent_gps must be at most the number of labels K={K}, got {s.num_latent_gps}")
    if s.negatives is not None and s.negatives >= K:
        raise ShapeError(f"negatives={s.negatives} sampled negative labels per point needs more than "
                         f"K={K} labels; use negatives=None for every label (the exact bound)")


def sizes_for_data(num_points: int, num_features: int, num_labels: int) -> dict[str, int]:
    """P, M and the batch for data of N points, D features and K labels (what
    :class:`mlgp.recipes.MLGPFClassifier` uses where they are ``None``).

    P = min(K, max(20, min(300, K // 2))): half the labels up to the paper's largest P (300 on
    Delicious), all of them for K ≤ 20; M = min(N, 400, max(50, N // 10)): the paper's 400 from
    4,000 points on, a tenth of the points below; the batch min(N, 500). ``num_features`` does not
    enter (a step's cost grows with D only through the kernel's ARD weights).
    """
    P = min(num_labels, max(20, min(300, num_labels // 2)))
    M = min(num_points, 400, max(50, num_points // 10))
    return {"num_latent_gps": P, "num_inducing": M, "batch_size": min(num_points, 500)}


def sized_for_data(s: MLGPFSettings, N: int, D: int, K: int, batch_given: bool) -> MLGPFSettings:
    """``s`` with P and M filled in where they are ``None``, and the batch unless ``batch_given``, by
    :func:`sizes_for_data` for data of N points, D features and K labels (what
    :class:`mlgp.recipes.MLGPFClassifier` trains with)."""
    sizes = sizes_for_data(N, D, K)
    names = ("num_latent_gps", "num_inducing") + (() if batch_given else ("batch_size",))
    return s.replace(**{n: sizes[n] for n in names if n == "batch_size" or getattr(s, n) is None})


#: ``MLGPFClassifier(epochs="auto")`` allows at least this many epochs ...
AUTO_MIN_EPOCHS = 20
#: ... and at least this many optimiser steps (:func:`auto_epochs`).
AUTO_MIN_STEPS = 200


def auto_epochs(steps_per_epoch: int) -> int:
    """The epoch cap of ``MLGPFClassifier(epochs="auto")``: max(:data:`AUTO_MIN_EPOCHS`,
    ⌈:data:`AUTO_MIN_STEPS` / ``steps_per_epoch``⌉), so that a data set of one minibatch may take
    200 optimiser steps rather than 20 (early stopping usually ends training sooner). The steps
    per epoch are those of the first epoch's batch (``batch_growth`` makes later epochs shorter)."""
    return max(AUTO_MIN_EPOCHS, -(-AUTO_MIN_STEPS // max(1, int(steps_per_epoch))))


def recorded_settings(s: MLGPFSettings) -> dict:
    """The settings of a run as its records give them (:class:`mlgp.recipes.MLGPFRun`'s ``settings``
    and, but ``epochs``, its checkpoint manifest's): every field but ``max_train`` (the data's size and
    fingerprint say which rows), a kernel object as its class's path, ``natgrad_gamma`` only with
    ``optimizer="natgrad"``."""
    out = {k: v for k, v in s.as_dict().items() if k != "max_train"}
    if not isinstance(out["kernel"], str):  # a kernel object: its class is what a record can compare
        out["kernel"] = f"{type(s.kernel).__module__}:{type(s.kernel).__qualname__}"
    out["natgrad_gamma"] = s.natgrad_gamma if s.optimizer == "natgrad" else None
    return out


#: Settings added after the recipe first wrote checkpoints, with the value a record written
#: before them (which lacks them) implies.
_SETTINGS_ADDED = {"unit_sphere_inducing": False, "optimizer": "adam", "natgrad_gamma": None, "dtype": "float64",
                   "warm_start": False, "subspace_rank": None, "subspace_sample": None, "preprocessing": "rows",
                   "covariance_warmup": 0, "kl_weight": 1.0}


def _older_record(stored: dict) -> dict:
    """A checkpoint folder's record of the recipe's settings as the settings now read it: the settings
    added since at the values it implies, ``q_family`` from an old ``whiten`` and the kernel's
    canonical name (older records kept the name as given)."""
    from mlgp.kernels.factory import canonical_kernel_name

    saved = {**_SETTINGS_ADDED, **stored}
    saved.setdefault("q_family", "whitened" if saved.get("whiten") else "cholesky")
    try:
        saved["kernel"] = canonical_kernel_name(saved.get("kernel"))
    except ArgumentError:
        pass  # not a known name (a kernel object's class): compared as it is
    return saved
