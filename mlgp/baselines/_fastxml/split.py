"""FastXML's node split: the alternating minimisation of Prabhu & Varma (2014), Algorithm 2.

Contract. A node holds ``n`` training points with features ``X`` (n, D) CSR and *weighted* labels
``G`` (n, m) CSR over the node's m active labels, ``G[i, j] = ω_i a_j y_ij`` (ω_i the point's
weight: I_L(y_i) for nDCG, 1 for DCG, 1/k for precision@k; a_j a label weight: 1, or the inverse
propensity for PfastXML). ``discount`` (m,) is the gain of ranking position p (0-based):
1/log2(2 + p) for (n)DCG, 1 for precision, zero from position k on. The node objective (paper's
eq. 5) is

    ‖w‖₁ + Σ_i C_δ(δ_i) log(1 + exp(−δ_i wᵀx_i)) − C_r Σ_i gain_i(r_{δ_i}),
    gain_i(r) = Σ_j G[i, j] · discount[position of label j in r].

:func:`split_node` minimises it over the side δ ∈ {−1, +1}ⁿ, the two rankings r± and the
separator w (with a bias feature whose weight b / bias is penalised by ‖·‖₁ with w, as liblinear does): random ±1 start,
then rankings r± (closed form: labels sorted by Σ_{i: δ_i = ±1} G[i, :], ties to the lower
label), δ (each point to the side with the lower cost; a tie keeps its side), and, only when δ
stops changing, w by L1-regularised logistic regression with class-dependent C through
scikit-learn's liblinear solver. It stops after ``n_w_updates`` w-updates or when δ does not move
after a w-update. No step increases the objective, except the w-step, whose liblinear solution
is approximate (bounded iterations). The split sends ``wᵀx > 0`` to the positive child.
Everything is vectorised over points and labels; only the alternation is a Python loop. This is
the node-by-node definition; trees are grown a level at a time by :mod:`.level`, which gives the
same result for every node.
"""

from __future__ import annotations

import threading
import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .kernels import compact_columns

__all__ = ["SplitOptions", "SplitResult", "Separator", "rankings", "side_costs", "update_sides", "node_objective",
           "fit_separator", "fit_separator_arrays", "split_node"]


@dataclass(frozen=True)
class SplitOptions:
    """The split's constants: C_δ(+1), C_δ(−1), C_r, liblinear's bias feature value, its (outer)
    iteration limit and tolerance, how many w-updates, and a safety cap on r/δ alternations."""

    c_pos: float = 1.0
    c_neg: float = 1.0
    c_rank: float = 1.0
    bias: float = 1.0
    max_iter: int = 10
    tol: float = 0.1
    n_w_updates: int = 1
    max_alternations: int = 200
    solver: str = "liblinear"


@dataclass
class SplitResult:
    """A node split: ``positive`` (n,) bool (``wᵀx + b > 0``), the separator ``w`` (D,) sparse
    CSR row and bias ``b``; ``alternations`` and ``w_updates`` done, liblinear's Newton
    iterations summed over the w-updates (``n_iter``); the objective after each step in
    ``trace`` when asked for (``(step name, value)`` pairs)."""

    positive: np.ndarray
    w: sp.csr_matrix | None
    b: float
    alternations: int
    w_updates: int
    n_iter: int = 0
    trace: list = field(default_factory=list)


def _l1_argument() -> dict:
    """scikit-learn >= 1.8 spells the L1 penalty ``l1_ratio=1`` (``penalty`` is deprecated)."""
    import sklearn

    major, minor = (int(v) for v in sklearn.__version__.split(".")[:2])
    return {"l1_ratio": 1.0} if (major, minor) >= (1, 8) else {"penalty": "l1"}


def _liblinear_train():
    """scikit-learn's compiled liblinear entry point and its L1 logistic solver number, when they
    have the form used here (checked on import); ``None`` otherwise."""
    try:
        from sklearn.svm import _liblinear
        from sklearn.svm._base import _get_liblinear_solver_type

        solver = _get_liblinear_solver_type("ovr", "l1", "logistic_regression", False)
        return _liblinear.train_wrap, solver, _liblinear.set_verbosity_wrap
    except (ImportError, AttributeError, ValueError):  # pragma: no cover
        return None


_LIBLINEAR = _liblinear_train()
_INT_MAX = np.iinfo(np.int32).max
# scikit-learn's liblinear seeds one process-wide random generator per call and trains without the
# GIL (scikit-learn issue #8410): two threads fitting at once would mix their draws, and trees grown
# in threads (joblib's threading backend, a multi-threaded Dask worker) would depend on timing.
_LIBLINEAR_LOCK = threading.Lock()


def _logloss(z: np.ndarray) -> np.ndarray:
    """log(1 + exp(−z)), stable."""
    return np.logaddexp(0.0, -z)


def rankings(GT: sp.csr_matrix, delta: np.ndarray, discount: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The optimal rankings of both sides as per-label discounts.

    ``GT`` is Gᵀ (m, n). Returns ``(d_pos, d_neg)``, each (m,): the discount label j receives in
    r+ (r−), i.e. ``discount[position of j]``, with labels sorted by their summed weight on that
    side (ties to the lower label index, so the result is deterministic).
    """
    sides = np.stack([delta == 1, delta == -1], axis=1).astype(np.float64)
    S = GT @ sides
    out = []
    for c in range(2):
        order = np.argsort(-S[:, c], kind="stable")
        d = np.empty_like(discount)
        d[order] = discount
        out.append(d)
    return out[0], out[1]


def side_costs(G: sp.csr_matrix, wx: np.ndarray, d_pos: np.ndarray, d_neg: np.ndarray,
               opts: SplitOptions) -> tuple[np.ndarray, np.ndarray]:
    """(v+, v−), each (n,): each point's cost on the positive and negative side (paper's eq. 13)."""
    v_pos = opts.c_pos * _logloss(wx) - opts.c_rank * (G @ d_pos)
    v_neg = opts.c_neg * _logloss(-wx) - opts.c_rank * (G @ d_neg)
    return v_pos, v_neg


def update_sides(delta: np.ndarray, v_pos: np.ndarray, v_neg: np.ndarray) -> np.ndarray:
    """The δ step: +1 where v+ < v−, −1 where v− < v+, unchanged on ties; int8 (n,)."""
    return np.where(v_pos < v_neg, 1, np.where(v_neg < v_pos, -1, delta)).astype(np.int8)


def node_objective(G: sp.csr_matrix, wx: np.ndarray, w_l1: float, delta: np.ndarray,
                   d_pos: np.ndarray, d_neg: np.ndarray, opts: SplitOptions) -> float:
    """The node objective (eq. 5) at (w, δ, r±); ``wx`` (n,) are wᵀx_i + b, ``w_l1`` the L1 norm of
    (w, b / bias), what liblinear penalises."""
    v_pos, v_neg = side_costs(G, wx, d_pos, d_neg, opts)
    return float(w_l1 + np.where(delta > 0, v_pos, v_neg).sum())


class _CSRView:
    """The attributes scikit-learn's liblinear entry point reads from a CSR matrix (``data``,
    ``indices``, ``indptr`` (int32), ``shape``, ``nnz``, ``dtype``), over slices of another
    matrix's arrays: no ``csr_matrix`` (and its format checks) per node."""

    __slots__ = ("data", "indices", "indptr", "shape", "nnz", "dtype")

    def __init__(self, data: np.ndarray, indices: np.ndarray, indptr: np.ndarray, num_cols: int) -> None:
        self.data, self.indices, self.indptr = data, indices, indptr
        self.shape, self.nnz, self.dtype = (indptr.size - 1, int(num_cols)), int(data.size), data.dtype


def _liblinear_fit(X, delta: np.ndarray, opts: SplitOptions, seed: int) -> tuple[np.ndarray, float, int]:
    """(coef (D,), intercept, Newton iterations) of the w step on CSR-like ``X`` (see
    :func:`fit_separator`)."""
    fit_bias = opts.bias > 0
    if _LIBLINEAR is not None:
        train, solver, verbosity = _LIBLINEAR
        verbosity(0)  # liblinear prints its progress unless told not to (a per-process setting)
        y = (delta > 0).astype(np.float64)  # liblinear's class 0 is δ = −1, class 1 is δ = +1
        with _LIBLINEAR_LOCK:
            raw, n_iter = train(X, y, True, solver, opts.tol, opts.bias if fit_bias else -1.0, 1.0,
                                np.array([opts.c_neg, opts.c_pos], dtype=np.float64), opts.max_iter, int(seed), 0.1, np.ones(X.shape[0]))
        raw = np.asarray(raw).ravel()
        coef, intercept = (raw[:-1], raw[-1] * opts.bias) if fit_bias else (raw, 0.0)
    else:  # pragma: no cover - only when scikit-learn's compiled entry point changes
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.linear_model import LogisticRegression

        if not sp.issparse(X):
            X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=X.shape)
        with warnings.catch_warnings(), _LIBLINEAR_LOCK:
            warnings.simplefilter("ignore", ConvergenceWarning)
            clf = LogisticRegression(**_l1_argument(), solver="liblinear", C=1.0, tol=opts.tol,
                                     max_iter=opts.max_iter, class_weight={1: opts.c_pos, -1: opts.c_neg},
                                     fit_intercept=fit_bias, intercept_scaling=opts.bias if fit_bias else 1.0,
                                     random_state=seed).fit(X, delta)
        coef, intercept, n_iter = clf.coef_.ravel(), float(clf.intercept_[0]) if fit_bias else 0.0, clf.n_iter_
    return np.asarray(coef), float(intercept), int(np.max(n_iter))


def fit_separator(X: sp.csr_matrix, delta: np.ndarray, opts: SplitOptions, seed: int
                  ) -> tuple[sp.csr_matrix, float, int]:
    """The w step: L1-regularised logistic regression of δ on ``X`` with C = C_δ(δ_i), by
    newGLMNET, bias feature ``opts.bias`` (penalised like w), at most ``opts.max_iter`` Newton
    iterations; ``seed`` (< 2³¹ − 1) seeds the coordinate order. ``opts.solver`` picks the compiled
    solver of :mod:`.l1_logistic` (``"newglmnet"``) or scikit-learn's liblinear (``"liblinear"``).

    A node split is a small problem, and ``LogisticRegression.fit``'s checks cost more than the
    solve, so scikit-learn's compiled liblinear entry point is called directly (with the
    arguments ``LogisticRegression`` would pass); where it is missing, ``LogisticRegression``.
    ``delta`` must hold both classes. Returns the separator as a (1, D) CSR row, the bias and
    liblinear's number of Newton iterations.
    """
    if opts.solver == "newglmnet":
        from .l1_logistic import fit_level

        X = sp.csr_matrix(X)
        n = X.shape[0]
        b, iters = np.zeros(1), np.zeros(1, np.int64)
        w_ptr, w_idx, w_val = fit_level(np.zeros(1, np.int64), np.array([0, n], np.int64), X.indptr.astype(np.int64), X.indices,
                                        np.asarray(X.data, dtype=np.float64), 0, int(X.shape[1]), delta,
                                        np.array([seed], np.int64), float(opts.c_pos), float(opts.c_neg),
                                        float(opts.bias), float(opts.tol), int(opts.max_iter), np.zeros(n), b, iters)
        return sp.csr_matrix((w_val, w_idx, w_ptr), shape=(1, X.shape[1])), float(b[0]), int(iters[0])
    coef, intercept, n_iter = _liblinear_fit(X, delta, opts, seed)
    w = sp.csr_matrix(coef.reshape(1, -1))
    w.eliminate_zeros()
    return w, intercept, n_iter


@dataclass
class Separator:
    """A node's fitted separator: its non-zero columns ``indices`` (int64, increasing) and
    ``values``, the bias ``b``, liblinear's iterations, and the weights as liblinear returned them:
    ``coef`` over ``columns`` (the node's rows' non-zeros' column numbers in liblinear's numbering,
    starting at non-zero ``offset`` of X), for wᵀx."""

    indices: np.ndarray
    values: np.ndarray
    b: float
    n_iter: int
    coef: np.ndarray
    columns: np.ndarray
    offset: int


def fit_separator_arrays(X: sp.csr_matrix, lo: int, hi: int, delta: np.ndarray, opts: SplitOptions, seed: int,
                         node_features: np.ndarray | None = None) -> Separator:
    """:func:`fit_separator` on rows ``lo:hi`` of ``X`` (CSR, int32 indices), read in place. With
    ``node_features`` (a (D,) int64 scratch array holding −1) liblinear sees only the columns those
    rows use, renumbered: its cost then does not grow with D, but its random coordinate order, so
    its solution, differs from the all-column call's."""
    a, z = int(X.indptr[lo]), int(X.indptr[hi])
    indptr = (X.indptr[lo:hi + 1] - X.indptr[lo]).astype(np.int32)
    data, cols = X.data[a:z], X.indices[a:z]
    if node_features is not None:
        used, local = compact_columns(cols, node_features)
        coef, b, n_iter = _liblinear_fit(_CSRView(data, local, indptr, used.size), delta, opts, seed)
        nz = np.flatnonzero(coef)
        return Separator(used[nz], coef[nz], b, n_iter, coef, local, a)
    coef, b, n_iter = _liblinear_fit(_CSRView(data, cols, indptr, X.shape[1]), delta, opts, seed)
    nz = np.flatnonzero(coef)
    return Separator(nz, coef[nz], b, n_iter, coef, X.indices, 0)


def split_node(X: sp.csr_matrix, G: sp.csr_matrix, discount: np.ndarray, opts: SplitOptions,
               rng: np.random.RandomState, trace: bool = False) -> SplitResult | None:
    """Split a node by alternating minimisation; ``None`` when δ collapses to one side (no
    separator can be fitted) or the separator leaves one child empty: the node is a leaf.

    Parameters
    ----------
    X : CSR (n, D)
        The node's features.
    G : CSR (n, m)
        The node's weighted labels over its m active labels (see the module docstring).
    discount : np.ndarray (m,)
        Gain of each ranking position, non-increasing.
    rng : np.random.RandomState
        Draws the random start of δ and liblinear's seed.
    trace : bool
        Record the objective after every r, δ and w step (costs one evaluation per step).
    """
    n = X.shape[0]
    delta = np.where(rng.randint(0, 2, size=n) == 1, 1, -1).astype(np.int8)
    seed = int(rng.randint(0, _INT_MAX))
    wx = np.zeros(n)
    w, b, w_l1 = None, 0.0, 0.0
    w_updates = alternations = n_iter = 0
    just_updated = False
    steps: list = []
    GT = G.T.tocsr()
    while True:
        alternations += 1
        d_pos, d_neg = rankings(GT, delta, discount)
        if trace:
            steps.append(("r", node_objective(G, wx, w_l1, delta, d_pos, d_neg, opts)))
        v_pos, v_neg = side_costs(G, wx, d_pos, d_neg, opts)
        new = update_sides(delta, v_pos, v_neg)
        changed = bool(np.any(new != delta))
        delta = new
        if trace:
            steps.append(("delta", node_objective(G, wx, w_l1, delta, d_pos, d_neg, opts)))
        if changed and alternations < opts.max_alternations:
            just_updated = False
            continue
        if just_updated or w_updates >= opts.n_w_updates:
            break
        if np.all(delta == delta[0]):
            return None
        w, b, iters = fit_separator(X, delta, opts, seed)
        w_updates += 1
        n_iter += iters
        just_updated = True
        wx = np.asarray(X @ w.T.toarray()).ravel() + b
        # liblinear penalises the weight of the bias feature, b / bias
        w_l1 = float(np.abs(w.data).sum() + (abs(b) / opts.bias if opts.bias > 0 else 0.0))
        if trace:
            steps.append(("w", node_objective(G, wx, w_l1, delta, d_pos, d_neg, opts)))
        if w_updates >= opts.n_w_updates:
            break
    positive = wx > 0
    if w is None or positive.all() or not positive.any():
        return None
    return SplitResult(positive, w, b, alternations, w_updates, n_iter, steps)
