"""Building and training the MLGPF recipe's model from checked data and settings: :func:`build_and_train`.

The one place :func:`mlgp.recipes.train_mlgpf` and :class:`mlgp.recipes.MLGPFClassifier` turn
:class:`~mlgp.recipes.MLGPFSettings` into a model and a training run, with the checks both make
before any work (:func:`check_sizes`, :func:`check_strategy`) and the default compilation of the
step (:func:`default_jit_compile`). The model carries its preprocessing as the outer part of its
input map: the row normalisation (:class:`mlgp.blocks.RowNormalised`) and, with
``preprocessing="columns"`` (:func:`resolved_preprocessing` chooses it for dense or signed
features), the column standardisation before it (:class:`mlgp.blocks.ColumnStandardised`). It is
built from the preprocessed training rows, then trained on raw rows.
"""

from __future__ import annotations

from ..data.preprocessing import column_statistics, normalise_rows, wants_columns
from ..errors import ArgumentError, ShapeError
from .setting_checks import resolved_warmup
from .settings import MLGPFSettings

__all__ = ["auto_jit_compile", "build_and_train", "check_sizes", "check_strategy", "default_jit_compile",
           "resolved_preprocessing"]

#: Training points from which :func:`auto_jit_compile` compiles the step with XLA.
XLA_FROM_POINTS = 2000
#: The smallest budget (seconds) for which :func:`auto_jit_compile` compiles with XLA: on Bibtex
#: (P = 159, M = 400, 2 cores) XLA's compilation is paid back after about 60 s (docs/results.md).
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
    it is taken, bit for bit the preprocessed matrix's rows). ``progress_name`` names the run's
    progress bar and lines (:mod:`mlgp.estimator.progress`)."""
    import contextlib

    from mlgp.blocks import ColumnStandardised, RowNormalised
    from mlgp.training import fit

    s = resolved_preprocessing(s, Xtr)
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
        covariance_warmup=resolved_warmup(s),
        kl_weight=s.kl_weight,
    )
    return model, trace


def resolved_preprocessing(s: MLGPFSettings, Xtr) -> MLGPFSettings:
    """``s`` with ``preprocessing="auto"`` resolved on the training rows ``Xtr`` (N, D), CSR or
    dense: ``"columns"`` for dense or signed features, else ``"rows"``
    (:func:`mlgp.data.preprocessing.wants_columns`)."""
    if s.preprocessing != "auto":
        return s
    import scipy.sparse as sp

    return s.replace(preprocessing="columns" if wants_columns(sp.csr_matrix(Xtr)) else "rows")


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
