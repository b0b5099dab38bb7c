"""Checks on user data at the package's boundary, with messages that name the problem.

Contract: each ``check_*`` function takes what a user passed, raises
:class:`~mlgp.errors.ShapeError` (a ``ValueError``) naming the first problem, and returns the value
converted once into the package's own copy: features as *canonical* float64 CSR (duplicate entries
summed, column indices sorted in every row) or a 2-D float64 array, labels as a canonical float64 0/1
CSR matrix. Duplicate (i, j) entries mean their sum, as in scipy, so a matrix given with duplicates,
explicit zeros or unsorted indices gives the same model as its clean form; and since the result
shares no memory with the caller's arrays, nothing below the boundary can change (or see later
changes of) the caller's data. Feature values must be finite and below :data:`MAX_FEATURE_MAGNITUDE`
in magnitude (larger ones overflow squared distances and norms). The code below the boundary trusts
what these return. They run before any TensorFlow tracing.
"""

from __future__ import annotations


import numpy as np
import scipy.sparse as sp

from . import arguments
from .errors import ShapeError
from .floats import FLOAT_POLICIES

__all__ = [
    "MAX_FEATURE_MAGNITUDE",
    "canonical_csr",
    "check_estimator_features",
    "check_estimator_labels",
    "check_features",
    "check_labels",
    "check_num_inducing",
    "check_thresholds",
    "check_training_data",
    "float_matrix",
]


#: features larger than this in magnitude are refused: their squares (norms, distances, kernels)
#: would overflow float64 (1.8e308) once summed over the columns (a float32 model accepts less:
#: :attr:`mlgp.floats.FloatPolicy.max_feature_magnitude`)
MAX_FEATURE_MAGNITUDE = FLOAT_POLICIES["float64"].max_feature_magnitude


def float_matrix(value, name: str, what: str, shape: str = "(N, K)", copy: bool = False) -> np.ndarray:
    """``value`` as a 2-D float64 array (always a copy with ``copy``); :class:`~mlgp.errors.ShapeError`
    ``"NAME must be a numeric SHAPE WHAT: …"`` when it does not convert and ``"NAME must be 2-D
    SHAPE, got shape …"`` when it is not 2-D."""
    try:
        out = np.array(value, dtype=np.float64) if copy else np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ShapeError(f"{name} must be a numeric {shape} {what}: {err}") from None
    if out.ndim != 2:
        raise ShapeError(f"{name} must be 2-D {shape}, got shape {out.shape}")
    return out


def check_features(X, name: str = "X", num_features: int | None = None,
                   max_magnitude: float = MAX_FEATURE_MAGNITUDE) -> sp.csr_matrix | np.ndarray:
    """Return a checked copy of ``X`` (N, D): canonical float64 CSR for sparse input (CSR, CSC, COO
    …; duplicate entries summed, indices sorted), else a 2-D float64 array.

    Raises :class:`~mlgp.errors.ShapeError` for non-2-D input, no rows, a wrong number of columns,
    non-finite values or values beyond ``max_magnitude`` (naming the first offending row).
    """
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64, copy=True)
        X.sum_duplicates()  # also sorts the indices; a copy, so the caller's matrix is untouched
        data = X.data
    else:
        X = data = float_matrix(X, name, "array or sparse matrix", "(N, D)", copy=True)
    if X.shape[0] == 0:
        raise ShapeError(f"{name} has no rows (empty data)")
    if X.shape[1] == 0:
        raise ShapeError(f"{name} has no columns (D = 0)")
    if num_features is not None and X.shape[1] != num_features:
        raise ShapeError(f"{name} has {X.shape[1]} features but the model expects D = {num_features}")
    bad = ~np.isfinite(data)
    if bad.any():
        raise ShapeError(f"{name} contains NaN or inf (first in row {_row_of(X, bad)})")
    big = np.abs(data) > max_magnitude
    if big.any():
        raise ShapeError(f"{name} has values beyond ±{max_magnitude:.3g} (first in row {_row_of(X, big)}: "
                         f"{data[big].flat[0]:.3g}); squared distances and norms would overflow: rescale the "
                         "features (e.g. sklearn.preprocessing.normalize)")
    return X


def _row_of(X, mask: np.ndarray) -> int:
    """The row of the first True entry of ``mask`` over ``X``'s stored values (CSR) or cells."""
    if sp.issparse(X):
        return int(np.searchsorted(X.indptr, np.flatnonzero(mask)[0], side="right") - 1)
    return int(np.argwhere(mask)[0, 0])


def check_labels(Y, name: str = "Y", num_points: int | None = None, num_labels: int | None = None) -> sp.csr_matrix:
    """Return ``Y`` as a canonical CSR 0/1 float64 matrix (N, K), a copy of the caller's, after
    checking shape and values (duplicate entries are summed first, so a repeated 1 is a 2)."""
    if not sp.issparse(Y):
        Y = float_matrix(Y, name, "0/1 array or sparse matrix")
    Y = sp.csr_matrix(Y, dtype=np.float64, copy=True)  # eliminate_zeros below must not touch the caller's
    if Y.ndim != 2 or Y.shape[1] == 0:
        raise ShapeError(f"{name} must be (N, K) with K ≥ 1, got shape {Y.shape}")
    if num_points is not None and Y.shape[0] != num_points:
        raise ShapeError(f"{name} has {Y.shape[0]} rows but the features have {num_points}: labels/features shape mismatch")
    if num_labels is not None and Y.shape[1] != num_labels:
        raise ShapeError(f"{name} has {Y.shape[1]} labels but the model expects K = {num_labels}")
    had_duplicates = not Y.has_canonical_format
    Y.sum_duplicates()
    Y.eliminate_zeros()
    if Y.nnz and not np.all(Y.data == 1):
        hint = " (duplicate entries of a sparse matrix are summed: a 1 stored twice is a 2)" if had_duplicates else ""
        raise ShapeError(f"{name} must hold 0/1 labels; found values {np.unique(Y.data[Y.data != 1])[:5]}{hint}")
    return Y


def canonical_csr(X) -> sp.csr_matrix:
    """``X`` (N, D), CSR or dense, as float64 CSR with sorted, duplicate-free column indices in every
    row (for arrays that are not already :func:`check_features`' output). The caller's matrix is
    never modified: a CSR that is not canonical is copied first.

    Returns
    -------
    scipy.sparse.csr_matrix of shape (N, D), float64
    """
    X = sp.csr_matrix(X, dtype=np.float64)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    return X


def check_thresholds(threshold, num_labels: int) -> np.ndarray:
    """``threshold`` as a float64 (K,) array: a number or one value per label, each in [0, 1].

    Raises :class:`~mlgp.errors.ShapeError` for another shape or a value outside [0, 1].
    """
    try:
        t = np.asarray(threshold, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ShapeError(f"threshold must be a number or an array of numbers: {err}") from None
    if t.ndim == 0:
        t = np.full(num_labels, float(t))
    if t.shape != (num_labels,):
        raise ShapeError(f"threshold must be a number or an array of one value per label, shape "
                         f"({num_labels},); got shape {t.shape}")
    if not np.all((t >= 0) & (t <= 1)):
        raise ShapeError("threshold values must lie in [0, 1]")
    return t


def check_training_data(X, Y, num_latent_gps: int | None = None, num_inducing: int | None = None,
                        max_magnitude: float = MAX_FEATURE_MAGNITUDE):
    """Check features (N, D), labels (N, K) and the sizes P, M together; returns (X, Y).

    P and M, when given, must be positive integers (:func:`mlgp.arguments.positive_int`, an
    :class:`~mlgp.errors.ArgumentError`) with P ≤ K and M ≤ N (a :class:`ShapeError`);
    ``max_magnitude`` bounds the features (:func:`check_features`).
    """
    if num_latent_gps is not None:
        num_latent_gps = arguments.positive_int(num_latent_gps, "num_latent_gps P")
    if num_inducing is not None:
        num_inducing = arguments.positive_int(num_inducing, "num_inducing M")
    X = check_features(X, max_magnitude=max_magnitude)
    Y = check_labels(Y, num_points=X.shape[0])
    K = Y.shape[1]
    if num_latent_gps is not None and num_latent_gps > K:
        raise ShapeError(f"num_latent_gps P must be in [1, K={K}], got {num_latent_gps}")
    if num_inducing is not None:
        check_num_inducing(num_inducing, X.shape[0])
    return X, Y


def check_num_inducing(num_inducing: int, num_points: int, why: str = "", *, given: bool = True) -> int:
    """M for N training points, the one place the number of inducing points meets the training
    points (``num_inducing`` is a positive int already): a given M must be at most N (a
    :class:`ShapeError` whose message ends with ``why``); one chosen by default (``given=False``: a
    dataset's or the data's M) is lowered to N. Returns M."""
    if not given:
        return min(num_inducing, num_points)
    if num_inducing > num_points:
        raise ShapeError(f"num_inducing M must be in [1, N={num_points}] (the training points used), "
                         f"got {num_inducing}{why}")
    return num_inducing


def check_estimator_features(X, n_features: int | None, name: str):
    """First checks of ``X`` in scikit-learn's wording: real, 2-D, D >= 1 (``n_features=None``,
    in ``fit``) or the D that estimator ``name`` saw in ``fit``. Returns ``X`` (dense input as an
    array) for :func:`check_features`, which does the rest. For scikit-learn estimators, whose
    common checks (``parametrize_with_checks``) expect these messages."""
    if not sp.issparse(X):
        try:
            X = np.asarray(X)
        except (TypeError, ValueError):
            return X  # ragged or not numeric: check_features says why
    if np.dtype(X.dtype).kind == "c":
        raise ShapeError(f"Complex data not supported: X has dtype {X.dtype}; give real features")
    if X.ndim == 1:
        raise ShapeError(f"X must be 2-D (N, D), got a 1-D array of shape {X.shape}. Reshape your data: "
                         "X.reshape(-1, 1) for a single feature, X.reshape(1, -1) for a single point.")
    if X.ndim == 2 and n_features is None and X.shape[0] > 0 and X.shape[1] == 0:
        raise ShapeError(f"X has 0 feature(s) (shape={X.shape}) while a minimum of 1 is required.")
    if X.ndim == 2 and n_features is not None and X.shape[1] != n_features:
        raise ShapeError(f"X has {X.shape[1]} features, but {name} is expecting "
                         f"{n_features} features as input.")
    return X


def check_estimator_labels(Y, num_points: int, name: str):
    """``Y`` as CSR 0/1 (N, K) for a scikit-learn estimator's ``fit``; a missing or 1-D target gets a
    message saying what is expected."""
    if Y is None:
        raise ShapeError(f"{name} requires y to be passed, but the target y is None "
                         "(give Y, the (N, K) 0/1 label matrix)")
    if not sp.issparse(Y):
        try:
            Y = np.asarray(Y)
        except (TypeError, ValueError):
            return check_labels(Y, num_points=num_points)  # ragged or not numeric: it says why
        if Y.ndim == 1:  # type_of_target names it: 'binary', 'multiclass', 'continuous', ...
            raise ShapeError(f"Y must be a 2-D (N, K) 0/1 label matrix; got a 1-D target of type "
                             f"{_type_of_target(Y, input_name='Y')!r} with shape {Y.shape}. "
                             "Turn 1-D class labels into an indicator matrix first (sklearn.preprocessing."
                             "LabelBinarizer).")
    if np.dtype(Y.dtype).kind == "c":
        raise ShapeError("Complex data not supported: Y must hold 0/1 labels")
    return check_labels(Y, num_points=num_points)


def _type_of_target(Y, input_name: str) -> str:
    from sklearn.utils.multiclass import type_of_target

    return type_of_target(Y, input_name=input_name)
