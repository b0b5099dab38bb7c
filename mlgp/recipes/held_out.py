"""What MLGPFClassifier chooses on its held-out rows: the split, early stopping, the bias guard and
the refit.

:func:`split_rows` draws the held-out rows (``validation_fraction`` of the training rows) by the
floor's one split, :func:`mlgp.estimator.held_out_split.held_out_split`, so a seed holds out the
same rows here as in GenEMLCV's grid search; :func:`held_out_rows` says when one row leaves none to
hold out.

MLGPF's ELBO treats Φ (K × P) and b as hyperparameters; with few training rows per label the
bound keeps rising while the held-out predictions get worse (the loadings fit the training
labels). :class:`HeldOutStopping` is the training callback that watches it: after every epoch up to
the 19th, then after about ten epochs per tenfold (:func:`is_scored`), it scores held-out rows (the
estimator's ``validation_fraction``) by their log predictive density (nats per row, E_q[σ(f)]
under the Bernoulli likelihood), keeps the parameters of the best epoch, stops when ``patience``
scored epochs in a row have not improved on it and at least ``min_steps`` optimiser steps have
passed since the best, and :meth:`restore` puts the best epoch's parameters back. Nothing here changes the bound or the step.

:class:`IterateAverage` keeps the running mean of the parameters at the end of every epoch from a
given epoch on (Polyak–Ruppert averaging of the epoch-end iterates; training itself continues from
the iterates). With it, :class:`HeldOutStopping` scores and keeps the averaged parameters (what
it gave on Bibtex: docs/results.md, "Averaging the parameters over epochs").

:func:`bias_predicts_better` is the bias guard: a GP term fitted to uninformative features can only
add noise to the bias's predictions, so the estimator keeps the bias alone (Φ = 0) when it predicts
the held-out rows better, by the same log predictive density (why the density and not P@k:
docs/results.md, "MLGPF: the default recipe on informative sparse features").

:func:`refit_epochs` decides whether the classifier trains again from the start on every row for
the number of epochs early stopping chose (a small data set's held-out tenth is worth a second fit:
docs/results.md, "MLGPF: the default recipe on informative sparse features").
"""

from __future__ import annotations

import contextlib
import math

import numpy as np

from ..errors import ShapeError, warn
from ..estimator.held_out_split import held_out_split

__all__ = ["EVERY_EPOCH_UNTIL", "MIN_PATIENCE_STEPS", "HeldOutStopping", "IterateAverage", "auto_or_flag", "bias_lpd", "bias_predicts_better",
           "held_out_lpd", "held_out_rows", "is_scored", "keep_best_or_bias", "refit_epochs", "split_rows",
           "REFIT_MAX_ROWS"]

#: Most training rows at which ``refit="auto"`` trains again on every row (:func:`refit_epochs`;
#: the measurements behind it: docs/results.md, "MLGPF: the default recipe on informative sparse
#: features" and "Training again on every row").
REFIT_MAX_ROWS = 2000

#: Rows scored per block (bounds the (rows, K) probability block's memory).
_BLOCK_ROWS = 1000


def split_rows(N: int, fraction: float, seed: int):
    """Training and held-out row indices, each sorted: the floor's one split
    (:func:`mlgp.estimator.held_out_split.held_out_split`, the rows every family holds out for this
    seed), ``round(fraction · N)`` rows held out, at least 1 and at most N − 1; ``(None, None)``
    when ``fraction`` is 0 or N < 2."""
    if fraction == 0 or N < 2:
        return None, None
    return held_out_split(N, fraction, seed, clip=True)


def auto_or_flag(value) -> str | bool:
    """An ``"auto"``-or-boolean parameter (``early_stopping``, ``refit``) as ``"auto"``, ``True`` or
    ``False``: NumPy's booleans, which the parameter check accepts, as Python's."""
    return value if isinstance(value, str) else bool(value)


def held_out_rows(N: int, fraction: float, early_stopping, seed: int):
    """:func:`split_rows`, saying when rows were asked for and none can be held out (N = 1):
    :class:`~mlgp.errors.ShapeError` with ``early_stopping=True``, else a ``UserWarning`` that
    early stopping and the bias guard are off."""
    train, held = split_rows(N, fraction, seed)
    if held is None and fraction > 0:
        if early_stopping is True:
            raise ShapeError(f"early_stopping=True holds out training rows: it needs at least 2, got {N}")
        warn(f"{N} training row: none can be held out (validation_fraction={fraction:g}), so early "
             "stopping and the bias guard are off", UserWarning)
    return train, held


def refit_epochs(refit, stopping: "HeldOutStopping | None", bias_only: bool, budget, epochs_run: int, num_rows: int,
                 num_train: int, fit_seconds: float | None = None) -> int:
    """How many epochs :class:`~mlgp.recipes.MLGPFClassifier` trains again, from the start, on all
    ``num_rows`` rows after early stopping chose them on the held-out rows: the best epoch, when
    ``refit`` asks for it (True; ``"auto"``: up to :data:`REFIT_MAX_ROWS` rows), early stopping
    ran, the guard kept the model, and ``budget`` (:class:`~mlgp.estimator.Budget`) has room for
    it at the first fit's pace — its seconds (``fit_seconds``, default the budget's so far) × best
    epoch / ``epochs_run`` × ``num_rows`` / ``num_train`` — else 0."""
    if refit is False or (refit == "auto" and num_rows > REFIT_MAX_ROWS):
        return 0
    if stopping is None or bias_only or stopping.best_epoch < 1:
        return 0
    budget.spent()  # looks at the clock: elapsed is now
    took = budget.elapsed if fit_seconds is None else fit_seconds
    needed = took * stopping.best_epoch / max(epochs_run, 1) * num_rows / num_train
    return stopping.best_epoch if budget.elapsed + needed <= budget.seconds else 0


def bias_lpd(bias, Y) -> float:
    """Log predictive density of labels ``Y`` (N, K) CSR under the bias alone, p = σ(b) for every
    row (Φ = 0 makes f = b certain): nats per row."""
    p = 0.5 * (1.0 + np.tanh(0.5 * np.asarray(bias, dtype=np.float64)))
    return _blockwise_lpd(Y, lambda rows: np.broadcast_to(p, (rows.stop - rows.start, p.size)))


def bias_predicts_better(model_lpd: float, bias, Y_held) -> bool:
    """The bias guard: whether the bias ``b`` (K,) alone predicts the held-out labels ``Y_held``
    better (higher log predictive density, :func:`bias_lpd`) than the model did (``model_lpd``,
    nats per row); a tie keeps the model."""
    return bias_lpd(bias, Y_held) > model_lpd


def keep_best_or_bias(model, stopping: "HeldOutStopping | None", held) -> bool:
    """After training: put the best epoch's parameters back (with ``stopping``), then apply the bias
    guard on the ``held`` = (X, Y) rows (None: no rows held out, the model is kept), setting Φ to
    0 when σ(b) alone predicts them better. Returns whether it did."""
    if stopping is not None:
        stopping.restore(model)
    if held is None:
        return False
    X, Y = held
    scored = stopping is not None and stopping.best_epoch > 0
    bias_only = bias_predicts_better(stopping.best if scored else held_out_lpd(model, X, Y),
                                     model.likelihood.bias.numpy(), Y)
    if bias_only:
        model.likelihood.loadings.assign(np.zeros(model.likelihood.loadings.shape))
    return bias_only


def held_out_lpd(model, X, Y) -> float:
    """Log predictive density of raw rows ``X`` (N, D) with 0/1 labels ``Y`` (N, K) CSR under
    ``model``: mean over the rows of Σ_k log p(y_nk), p from E_q[σ(f)] (nats per row)."""
    from ..blocks import take_rows

    return _blockwise_lpd(Y, lambda rows: model.label_probabilities(take_rows(X, rows, input_map=model.input_map)))


def _blockwise_lpd(Y, proba_of) -> float:
    """Mean over the rows of ``Y`` (N, K) of their log predictive density, ``proba_of(rows)`` giving
    the probabilities of a slice of rows, :data:`_BLOCK_ROWS` rows at a time."""
    from ..metrics import log_predictive_density

    N = Y.shape[0]
    total = 0.0
    for start in range(0, N, _BLOCK_ROWS):
        rows = slice(start, min(N, start + _BLOCK_ROWS))
        total += log_predictive_density(Y[rows], proba_of(rows)) * (rows.stop - rows.start)
    return total / N


#: Epochs scored one after another; after them, the first epoch past each power of
#: :data:`SCORE_RATIO` is scored.
EVERY_EPOCH_UNTIL = 20
#: Ratio between consecutive scored epochs after :data:`EVERY_EPOCH_UNTIL` (about 10 per tenfold).
SCORE_RATIO = 1.25
#: Fewest optimiser steps after the best epoch before the estimator's early stopping may stop.
MIN_PATIENCE_STEPS = 100


def is_scored(epoch: int) -> bool:
    """Whether :class:`HeldOutStopping` scores ``epoch`` (1-based): every epoch before
    :data:`EVERY_EPOCH_UNTIL`, then the first epoch at or past each power of :data:`SCORE_RATIO`
    (23, 29, 36, 45, 56, …), so that scoring stays a small share of the epochs where a data set of
    one optimiser step per epoch runs thousands of them."""
    if epoch < EVERY_EPOCH_UNTIL:
        return True
    return math.floor(math.log(epoch, SCORE_RATIO)) > math.floor(math.log(epoch - 1, SCORE_RATIO))


class IterateAverage:
    """The running mean of a model's parameters at the ends of epochs ``start``, ``start + 1``, … (a
    callback of :func:`mlgp.training.fit` on its own, or through :class:`HeldOutStopping`).

    Parameters
    ----------
    start
        The first epoch (1-based) whose parameters enter the mean.

    Attributes
    ----------
    count : int
        Epochs averaged so far.
    """

    def __init__(self, start: int) -> None:
        self.start, self.count, self._mean = int(start), 0, None

    def update(self, epoch: int, model) -> None:
        """Add the parameters at the end of ``epoch`` to the mean (from epoch ``start`` on)."""
        import tensorflow as tf

        if epoch < self.start:
            return
        variables = _stored_variables(model)
        self.count += 1
        if self._mean is None:
            self._mean = [tf.Variable(v, trainable=False) for v in variables]
            return
        for mean, v in zip(self._mean, variables):
            mean.assign_add((v - mean) / tf.cast(self.count, mean.dtype))

    def __call__(self, epoch: int, model, row: dict) -> bool:
        self.update(epoch, model)
        return False

    def assign(self, model) -> None:
        """Put the mean into ``model``'s parameters (nothing before epoch ``start``)."""
        for variable, mean in zip(_stored_variables(model), self._mean or ()):
            variable.assign(mean)

    @contextlib.contextmanager
    def swapped(self, model):
        """``model`` holds the mean inside the block and its own parameters again after it."""
        import tensorflow as tf

        own = [(v, tf.identity(v)) for v in _stored_variables(model)] if self._mean is not None else []
        self.assign(model)
        try:
            yield
        finally:
            for variable, value in own:
                variable.assign(value)


class HeldOutStopping:
    """A callback of :func:`mlgp.training.fit`: held-out log predictive density after the scored
    epochs (:func:`is_scored`).

    Parameters
    ----------
    X, Y
        Held-out raw rows (N_h, D) (CSR or dense, checked) and their 0/1 labels (N_h, K) CSR.
    patience
        Scored epochs without a better held-out density after which training may stop.
    steps_per_epoch, min_steps
        Training also runs at least ``min_steps`` optimiser steps (``steps_per_epoch`` per epoch)
        past the best epoch before it stops: on a small data set an epoch is one step.
    average
        An :class:`IterateAverage` updated after every epoch: the held-out rows score the averaged
        parameters (once there are any), and those are what the best epoch keeps.

    Attributes
    ----------
    best_epoch : int
        The epoch whose parameters are kept (0: none scored yet).
    best : float
        Its held-out log predictive density (nats per row).
    stopped : bool
        Whether the callback stopped training.

    Each scored epoch's trace row gets ``"held-out lpd"``.
    """

    def __init__(self, X, Y, patience: int, steps_per_epoch: int = 1, min_steps: int = 0,
                 average: IterateAverage | None = None) -> None:
        self.X, self.Y, self.patience, self.average = X, Y, int(patience), average
        self.steps_per_epoch, self.min_steps = int(steps_per_epoch), int(min_steps)
        self.best, self.best_epoch, self.stopped = -np.inf, 0, False
        self._values, self._since = None, 0

    def __call__(self, epoch: int, model, row: dict) -> bool:
        import tensorflow as tf

        if self.average is not None:
            self.average.update(epoch, model)
        if not is_scored(epoch):
            return False
        with self.average.swapped(model) if self.average is not None else contextlib.nullcontext():
            lpd = held_out_lpd(model, self.X, self.Y)
            if lpd > self.best:
                self.best, self.best_epoch, self._since = lpd, epoch, 0
                self._values = [(v, tf.identity(v)) for v in _stored_variables(model)]  # copy-on-write: no copy now
            else:
                self._since += 1
        row["held-out lpd"] = lpd
        self.stopped = self._since >= self.patience \
            and (epoch - self.best_epoch) * self.steps_per_epoch >= self.min_steps
        return self.stopped

    def restore(self, model) -> None:
        """Put the best epoch's parameters back into ``model`` (nothing if no epoch was scored)."""
        for variable, value in self._values or ():
            variable.assign(value)


def _stored_variables(model) -> list:
    """Every variable that holds a parameter of ``model`` (a Parameter's unconstrained one)."""
    import gpflow

    return [getattr(p, "unconstrained_variable", p) for p in gpflow.utilities.parameter_dict(model).values()]
