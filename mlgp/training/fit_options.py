"""The options and data of :func:`mlgp.training.fit`, checked once at its boundary.

:class:`FitOptions` is the record of ``fit``'s options handed to the training loop;
:func:`checked_options` checks (and converts) the numeric ones where the caller has not;
:func:`checked_run` the combination of model, compilation mode and strategy; :func:`checked_data`
the data, and that they fit the model's sizes (the validation pair is checked by the one check of
every entry, :func:`mlgp.estimator.recorder.checked_validation`).
"""

from __future__ import annotations

from dataclasses import dataclass

import tensorflow as tf

from .. import arguments
from ..errors import ArgumentError, MLGPError, ShapeError
from ..floats import float_policy
from ..validation import check_training_data
from .warmup import check_warmup

__all__ = ["FitOptions", "checked_data", "checked_options", "checked_run"]


def checked_data(model, data, check_input: bool):
    """``data`` as (CSR or dense float64 X, CSR float64 Y), checked once here unless the caller has."""
    X, Y = data
    if check_input:
        X, Y = check_training_data(X, Y, max_magnitude=float_policy(model.float_type).max_feature_magnitude)
    _check_model_fits_data(model, X, Y)
    return X, Y


@dataclass(kw_only=True)
class FitOptions:
    """fit's options, checked once (:func:`checked_options`) and passed as one record (by name:
    twenty-odd options in a row are too easy to shift by one)."""

    epochs: int
    batch_size: int
    negatives: int | None
    learning_rate: float
    optimizer: object
    natgrad_gamma: object
    seed: int
    validation: object
    validation_ks: tuple
    checkpoint_dir: object
    checkpoint_every: int
    batch_growth: tuple | None
    strategy: object
    jit_compile: object
    progress: bool
    callback: object
    check_input: bool
    max_seconds: object
    log_dir: object
    covariance_warmup: int | str = 0
    kl_weight: float = 1.0
    progress_name: str = "MLGPF fit"


def checked_options(o: FitOptions) -> None:
    """The numeric options checked (and made ints) once, here at the boundary, by the checks
    :class:`mlgp.recipes.MLGPFSettings` and the command line use (:mod:`mlgp.arguments`)."""
    o.epochs = arguments.positive_int(o.epochs, "epochs")
    o.batch_size = arguments.positive_int(o.batch_size, "batch_size")
    o.checkpoint_every = arguments.positive_int(o.checkpoint_every, "checkpoint_every")
    o.negatives = arguments.positive_int(o.negatives, "negatives", optional=True)
    if o.batch_growth is not None:
        o.batch_growth = arguments.batch_growth_pair(o.batch_growth)
    arguments.positive_real(o.learning_rate, "learning_rate")
    arguments.natgrad_gamma(o.natgrad_gamma)
    arguments.seed(o.seed)
    arguments.flag(o.progress, "progress")
    if not isinstance(o.progress_name, str) or not o.progress_name:
        raise ArgumentError(f"progress_name must be a non-empty string, got {o.progress_name!r}")
    o.covariance_warmup = arguments.covariance_warmup(o.covariance_warmup)
    o.kl_weight = arguments.kl_weight(o.kl_weight)


def checked_run(model, o: FitOptions, variables) -> None:
    """Checks that hold whether or not the caller checked the options: the log folder's package,
    the compilation mode and the strategy; with ``check_input``, the warm-up against the model's
    q(u) family and the optimizer (:func:`mlgp.training.warmup.check_warmup`; the recipe's settings
    check the same combination when they are built)."""
    if o.log_dir is not None:
        import importlib.util

        if importlib.util.find_spec("tensorboard") is None:
            raise ArgumentError("log_dir needs the tensorboard package, which is not installed (pip install tensorboard)")
    if not variables:
        raise MLGPError("the model has no trainable variables")
    if o.check_input:  # a caller that checked its options checked the warm-up's combination too
        check_warmup(model, o.covariance_warmup, o.optimizer)
    if o.jit_compile not in (False, True, "except-cholesky"):
        raise ArgumentError(f"jit_compile must be False, True or 'except-cholesky', got {o.jit_compile!r}")
    if o.jit_compile and o.strategy is not None:
        raise ArgumentError(f"jit_compile={o.jit_compile!r} cannot be combined with a tf.distribute strategy")
    if o.check_input and o.strategy is not None and not isinstance(o.strategy, tf.distribute.Strategy):
        raise ArgumentError(f"strategy must be a tf.distribute.Strategy, got {type(o.strategy).__name__}")
    if o.strategy is not None:
        outside = [v.name for v in variables if not o.strategy.extended.variable_created_in_scope(v)]
        if outside:
            raise ArgumentError(f"with a strategy, build the model inside `with strategy.scope():` ({len(outside)} "
                                f"variables were not, e.g. {outside[0]})")
        if o.optimizer == "natgrad":
            raise ArgumentError("optimizer='natgrad' cannot be combined with a tf.distribute strategy")


def _check_model_fits_data(model, X, Y) -> None:
    """Raise :class:`ShapeError` (before any tracing) when the data do not fit the model's sizes."""
    N, D = X.shape
    K = Y.shape[1]
    if model.num_data is not None and int(model.num_data) != N:
        raise ShapeError(f"model.num_data = {model.num_data} but the training data has N = {N} points")
    if int(model.num_labels) != K:
        raise ShapeError(f"the labels have K = {K} columns but the model has {model.num_labels} labels")
    if int(model.num_features) != D:
        raise ShapeError(f"the features have D = {D} columns but the model expects {model.num_features}")
