"""FastXML (Prabhu & Varma, KDD 2014): an ensemble of trees whose nodes split by optimising an
nDCG ranking loss, as a scikit-learn estimator on NumPy/SciPy.

Contract: ``fit(X, Y)`` takes features ``X`` (N, D), CSR or dense, and 0/1 labels ``Y`` (N, K),
checks them and the parameters before any work (bad input raises a ``ValueError`` naming the
problem), and grows ``n_estimators`` trees in parallel with joblib (threads sharing one copy of the
data with the compiled node solver, processes with liblinear; joblib's active backend, e.g. Dask,
takes the work when set). Tree t is seeded by the t-th draw of ``random_state``, so a fixed seed
gives the same trees for every ``n_jobs``. Each node is split by :mod:`._fastxml.split` (its
separator by :mod:`._fastxml.l1_logistic` or scikit-learn's liblinear, ``solver``) until it holds
at most ``max_leaf`` points; a leaf keeps its
``max_leaf_labels`` most frequent labels. Scores are the leaf distributions averaged over trees:
``decision_function`` → dense float64 (N, K) in [0, 1], ``predict_topk`` → :class:`TopK` (labels
no leaf reached score 0, ties to the lower label index). ``predict_proba`` smooths each reached
leaf's distribution toward the label prior before averaging (:meth:`FastXML._proba_block`), so that
a label no reached leaf kept is improbable rather than impossible; ``predict`` thresholds it. All are
computed ``batch_size`` rows at a
time on canonical CSR blocks without densifying features (the scoring methods are
:class:`~mlgp.estimator.MultiLabelEstimator`'s; the hook :meth:`FastXML._decision_block` returns a
block's sparse scores). ``save(path)`` / ``FastXML.load(path)`` write and read the forest as plain
arrays (:mod:`mlgp.estimator.persistence`); the loaded trees are checked before use (shapes, index
ranges, finite values, and that each tree is a tree: :meth:`Forest.check`).
"""

from __future__ import annotations

from dataclasses import fields
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import _fit_context
from sklearn.utils import metadata_routing
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..arguments import flag
from ..errors import ArgumentError
from ..estimator import N_JOBS, MultiLabelEstimator, SavedState
from ..estimator.prior_map import CALIBRATION
from ..estimator.progress import Progress
from ..estimator.budget import MAX_SECONDS, Budget
from ..parallel import scatter_once
from ._fastxml.forest import CSR_FIELDS, Forest
from ._fastxml.loss import SPLIT_LOSSES, split_loss
from ._fastxml.split import SplitOptions
from ._fastxml.store import TreeStore, tree_settings
from ._fastxml.growing import grow_trees

__all__ = ["FastXML"]


def _int32_indices(X: sp.csr_matrix) -> sp.csr_matrix:
    """``X`` with int32 ``indices`` and ``indptr`` (a new matrix sharing ``data``) when they are
    wider; ``ArgumentError`` when X has too many non-zeros or columns for int32."""
    if X.indices.dtype == np.int32 and X.indptr.dtype == np.int32:
        return X
    limit = np.iinfo(np.int32).max
    if X.nnz > limit or X.shape[1] > limit:
        raise ArgumentError(f"FastXML's liblinear takes at most {limit} non-zeros and columns; X has {X.nnz} and "
                            f"{X.shape[1]} (solver='newglmnet' takes more)")
    return sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), shape=X.shape, copy=False)


class FastXML(MultiLabelEstimator):
    """FastXML tree ensemble for extreme multi-label ranking.

    Parameters
    ----------
    n_estimators : int, default=50
        Number of trees T.
    max_leaf : int, default=10
        A node with at most this many training points is a leaf.
    max_leaf_labels : int, default=20
        Labels kept per leaf (its top-k distribution).
    c_pos, c_neg : float, default=1.0
        C_δ(+1), C_δ(−1): weights of the logistic loss of points on the positive / negative side.
    c_rank : float, default=1.0
        C_r, weight of the ranking loss.
    bias : float, default=1.0
        Value of liblinear's bias feature (0 fits no bias).
    n_w_updates : int, default=1
        Separator (w) updates per node; the paper stops after one.
    max_iter : int, default=10
        The solver's outer (Newton) iterations per w-update.
    tol : float, default=0.1
        The solver's stopping tolerance (liblinear's rule: the minimum-norm subgradient's 1-norm
        at ``tol`` · max(min(n₊, n₋), 1) / n of its value at w = 0).
    split_loss : {"ndcg", "dcg", "precision"}, default="ndcg"
        The ranking loss of a split (:mod:`mlgp.baselines._fastxml.loss`); the paper's is nDCG.
    split_loss_k : int or None, default=None
        Truncate the loss at rank k (None: all labels, nDCG@L; the paper's Table 7 uses 5).
    threshold : float, default=0.5
        ``predict`` marks a label present when its probability (``predict_proba``) is at least this.
    prior_strength : float, default=1.0
        Pseudo-count ``a >= 0`` of ``predict_proba``: a leaf holding n training points with label
        frequency q_l gives ``(n q_l + a π_l) / (n + a)``, π the label prior (:attr:`label_prior_`);
        0 gives the bare leaf frequencies (a label the leaf did not keep has probability 0).
    n_jobs : int or None, default=None
        Trees grown at once (joblib threads with ``solver="newglmnet"``, processes with
        ``"liblinear"``; None means 1 unless a joblib backend context says otherwise, -1 all
        cores).
    random_state : int, RandomState or None, default=None
        Seeds the trees (one seed drawn per tree).
    verbose : int, default=0
        joblib's progress messages.
    separator_features : {"all", "node"} or None, default=None
        With ``solver="liblinear"``, the columns liblinear sees when it fits a node's separator:
        all D (None or ``"all"``: the trees of earlier releases, bit for bit), or only those the
        node's points use, renumbered (``"node"``: the same objective, much faster when D is far
        above a node's non-zeros, different trees of the same accuracy). The compiled solver always
        works on the node's columns: None or ``"node"`` (``"all"`` raises ``ArgumentError``).
    solver : {"newglmnet", "liblinear"}, default="newglmnet"
        The separators' L1-logistic solver: mlgp's compiled newGLMNET
        (:mod:`mlgp.baselines._fastxml.l1_logistic`: a level's nodes in one call, no GIL, trees in
        threads sharing X), or scikit-learn's liblinear (the reference: the trees of earlier
        releases). Both minimise the same objective with the same stopping rule; their random
        coordinate orders differ, so their trees differ (with the same accuracy over seeds:
        ``experiments/bench_fastxml.py``).
    max_seconds : float or None, default=None
        Wall seconds of ``fit`` from its start (:class:`mlgp.estimator.budget.Budget`), looked
        at after every tree: no tree is added once it is spent (trees growing then are abandoned),
        so the forest may hold fewer than ``n_estimators`` trees (at least one; ``tree_seeds_``
        names them).
    calibration : {"prior"} or None, default="prior"
        ``"prior"``: ``predict_proba`` through the map toward the label prior fitted on held-out rows
        (:mod:`mlgp.estimator.prior_map`, ``proba_map_``; docs/probabilities.md); None: its own.

    Attributes
    ----------
    forest_ : Forest
        The trees as flat arrays (sparse separators, top-k leaves).
    tree_seeds_ : np.ndarray (T,), int64
        Each tree's seed.
    tree_balance_ : np.ndarray (T,), float64
        Mean leaf depth / log2(N / max_leaf) per tree (the paper's Table 6; 1 = balanced).
    labels_per_leaf_ : np.ndarray (T,), float64
        Mean number of distinct labels in a tree's leaves (before the top-k cut).
    n_leaves_ : np.ndarray (T,), int64
        Leaves per tree.
    n_iter_ : np.ndarray (T,), int64
        The most Newton iterations any separator of each tree took (at most
        ``max_iter`` × ``n_w_updates``; 0 for a tree that is one leaf).
    label_prior_ : np.ndarray (K,), float64
        The prior of ``predict_proba``: ``(c_l + 0.5) / (N + 1)`` with c_l the number of training
        points the leaves of a tree keep label l for, averaged over the trees (the training count
        of l, less what the top-``max_leaf_labels`` cut dropped).
    n_features_in_, n_labels_, n_samples_, classes_
        As in :class:`~mlgp.baselines.LabelFrequency`.

    Examples
    --------
    >>> import numpy as np
    >>> from mlgp.baselines import FastXML
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((60, 5))
    >>> Y = (X[:, :3] > 0.5).astype(int)
    >>> est = FastXML(n_estimators=5, max_leaf=5, random_state=0).fit(X, Y)
    >>> est.predict_topk(X[:2], k=2).indices.shape
    (2, 2)
    """

    _parameter_constraints: dict = {
        "n_estimators": [Interval(Integral, 1, None, closed="left")],
        "max_leaf": [Interval(Integral, 1, None, closed="left")],
        "max_leaf_labels": [Interval(Integral, 1, None, closed="left")],
        "c_pos": [Interval(Real, 0, None, closed="neither")],
        "c_neg": [Interval(Real, 0, None, closed="neither")],
        "c_rank": [Interval(Real, 0, None, closed="left")],
        "bias": [Interval(Real, 0, None, closed="left")],
        "n_w_updates": [Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "split_loss": [StrOptions(set(SPLIT_LOSSES))],
        "split_loss_k": [Interval(Integral, 1, None, closed="left"), None],
        "threshold": [Interval(Real, 0, 1, closed="both")],
        "prior_strength": [Interval(Real, 0, None, closed="left")],
        "n_jobs": N_JOBS,
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "separator_features": [StrOptions({"all", "node"}), None],
        "solver": [StrOptions({"newglmnet", "liblinear"})],
        "max_seconds": MAX_SECONDS,
        "calibration": CALIBRATION,
    }

    _block_format = "csr"

    def __init__(self, *, n_estimators: int = 50, max_leaf: int = 10, max_leaf_labels: int = 20,
                 c_pos: float = 1.0, c_neg: float = 1.0, c_rank: float = 1.0, bias: float = 1.0,
                 n_w_updates: int = 1, max_iter: int = 10, tol: float = 0.1, split_loss: str = "ndcg",
                 split_loss_k: int | None = None, threshold: float = 0.5, n_jobs: int | None = None,
                 random_state=None, verbose: int = 0, separator_features: str | None = None,
                 solver: str = "newglmnet", prior_strength: float = 1.0, max_seconds: float | None = None,
                 calibration: str | None = "prior") -> None:
        self.n_estimators = n_estimators
        self.max_leaf = max_leaf
        self.max_leaf_labels = max_leaf_labels
        self.c_pos = c_pos
        self.c_neg = c_neg
        self.c_rank = c_rank
        self.bias = bias
        self.n_w_updates = n_w_updates
        self.max_iter = max_iter
        self.tol = tol
        self.split_loss = split_loss
        self.split_loss_k = split_loss_k
        self.threshold = threshold
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.separator_features = separator_features
        self.solver = solver
        self.prior_strength = prior_strength
        self.max_seconds = max_seconds
        self.calibration = calibration

    # ----------------------------------------------------------------------------------- fit --
    def _label_weights(self, Y: sp.csr_matrix) -> np.ndarray | None:
        """Per-label weights of the split loss (PfastXML: inverse propensities); None: all 1."""
        return None

    def _split_options(self) -> SplitOptions:
        return SplitOptions(c_pos=float(self.c_pos), c_neg=float(self.c_neg), c_rank=float(self.c_rank),
                            bias=float(self.bias), max_iter=int(self.max_iter), tol=float(self.tol),
                            n_w_updates=int(self.n_w_updates), solver=self.solver)

    def _node_features(self) -> bool:
        """Whether separators are fitted on their node's columns only; ``ArgumentError`` for
        ``separator_features="all"`` with the compiled solver, which always uses the node's columns."""
        if self.solver == "liblinear":
            return self.separator_features == "node"
        if self.separator_features == "all":
            raise ArgumentError('separator_features="all" needs solver="liblinear": the compiled solver fits each '
                                "separator on its node's own columns (its result does not depend on D); leave "
                                "separator_features=None")
        return True

    # tree_dir and progress only say where trees are kept and whether to show a bar: not metadata
    __metadata_request__fit = {"tree_dir": metadata_routing.UNUSED, "progress": metadata_routing.UNUSED}
    #: Parameters that do not change the trees (not recorded beside stored trees).
    _NOT_TREE_PARAMETERS = frozenset({"n_jobs", "verbose", "threshold", "random_state", "gamma", "alpha",
                                      "prior_strength", "max_seconds", "calibration"})

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, Y, *, tree_dir=None, progress: bool = False) -> "FastXML":
        """Grow the trees; returns ``self``.

        Parameters
        ----------
        X : np.ndarray or scipy sparse matrix of shape (N, D)
            Finite features.
        Y : np.ndarray or scipy sparse matrix of shape (N, K)
            0/1 labels.
        tree_dir : str or os.PathLike, optional
            Keep each tree in this folder as soon as it is grown, beside the settings it belongs to
            (:class:`~mlgp.baselines._fastxml.store.TreeStore`): a fit that is killed and run again
            with the same folder, data, tree parameters and (integer) ``random_state`` grows only
            the missing trees, and a fit with more trees grows only the new ones. A folder of
            another run raises :class:`~mlgp.errors.CheckpointMismatchError`, and a ``random_state``
            that is not an integer :class:`~mlgp.errors.ArgumentError`, before any work.
        progress : bool, default=False
            Show the trees' progress (:class:`mlgp.estimator.progress.Progress`, named
            ``"<class> trees"``): a bar on a terminal, else a line every few seconds on standard error.
        """
        budget = Budget.trusted(self.max_seconds)
        progress = flag(progress, "progress")
        node_features = self._node_features()
        X, Y = self._validate_fit_data(X, Y)  # canonical float64 CSR (the caller's is never sorted) and 0/1 CSR
        if self.solver == "liblinear" or max(X.nnz, X.shape[1]) <= np.iinfo(np.int32).max:
            # liblinear reads int32 column indices and row pointers; the compiled solver reads any,
            # and int32 ones where they fit keep one compiled version and half the index memory
            X = _int32_indices(X)
        N, K = Y.shape
        G, discount = split_loss(Y, self.split_loss, self.split_loss_k, self._label_weights(Y))
        opts = self._split_options()
        seeds = check_random_state(self.random_state).randint(0, 2**31 - 1, size=self.n_estimators)
        store = None if tree_dir is None else TreeStore(tree_dir, tree_settings(self, X, Y, self._NOT_TREE_PARAMETERS))
        self._fit_proba_map(X, Y, budget)  # after every check: bad input is refused before any work
        trees: dict = {t: store.load(t, seeds[t]) for t in store.grown(self.n_estimators)} if store else {}
        todo = [t for t in range(self.n_estimators) if t not in trees]
        # the compiled solver runs without the GIL: trees in threads share X (a joblib backend set by
        # the caller, e.g. Dask, still takes the work); liblinear's calls are serialised, so processes
        prefer = "threads" if self.solver == "newglmnet" else "processes"
        # on a Dask cluster the data go to each worker once, not with every tree (mlgp.parallel)
        bar = Progress(f"{type(self).__name__} trees", self.n_estimators, unit="tree", enabled=progress,
                       elapsed=lambda: budget.elapsed, initial=len(trees))
        try:
            with scatter_once([X, Y, G, discount]) as data:  # X, Y, G, discount or their futures
                grow_trees(todo, trees, lambda t: (*data, opts, int(self.max_leaf),
                                                   int(self.max_leaf_labels), int(seeds[t]), node_features),
                           n_jobs=self.n_jobs, prefer=prefer, verbose=self.verbose, budget=budget, store=store,
                           seeds=seeds, bar=bar)
        finally:
            bar.close()
        kept = sorted(trees)
        self.forest_ = Forest.from_trees([trees[t] for t in kept])
        self.tree_seeds_ = seeds[kept].astype(np.int64)
        self._set_fitted_shape(N, X.shape[1], K)
        self._set_tree_statistics()
        self._fit_extra(X, Y)
        return self

    def _fit_extra(self, X: sp.csr_matrix, Y: sp.csr_matrix) -> None:
        """Anything a subclass learns besides the trees (PfastreXML: its tail classifier)."""

    def _set_tree_statistics(self) -> None:
        f = self.forest_
        T = f.n_trees
        self.n_leaves_ = np.bincount(f.leaf_tree, minlength=T).astype(np.int64)
        self.labels_per_leaf_ = np.bincount(f.leaf_tree, weights=f.leaf_label_count, minlength=T) / self.n_leaves_
        self.tree_balance_ = f.balance(self.n_samples_, int(self.max_leaf))
        self.n_iter_ = np.zeros(T, dtype=np.int64)
        np.maximum.at(self.n_iter_, f.node_tree, f.n_iter)
        kept = np.asarray(f.leaf_labels.T @ f.leaf_size.astype(np.float64)).ravel() / T  # n q summed over leaves
        self.label_prior_ = (kept + 0.5) / (self.n_samples_ + 1.0)

    def select_trees(self, trees) -> "FastXML":
        """A fitted copy made of the given trees only (indices into the ensemble, in that order;
        repeats allowed), with its own statistics: accuracy against the number of trees (the
        paper's Fig. 1). It saves and loads like any fitted model. Indices that are not integers in
        [0, T) raise :class:`~mlgp.errors.ArgumentError` (a ``ValueError``)."""
        check_is_fitted(self)
        T = self.forest_.n_trees
        try:
            trees = np.asarray(trees).ravel()
        except (TypeError, ValueError) as err:  # ragged or otherwise not an array
            raise ArgumentError(f"trees must be a non-empty list of integer indices in [0, {T}) ({err})") from None
        if trees.size == 0 or not np.issubdtype(trees.dtype, np.integer) or trees.min() < 0 or trees.max() >= T:
            raise ArgumentError(f"trees must be a non-empty list of integer indices in [0, {T}), got {trees.tolist()!r:.80}")
        new = self.__class__(**self.get_params())
        new.__dict__.update({k: v for k, v in self.__dict__.items() if k.endswith("_")})
        new.set_params(n_estimators=int(trees.size))
        new.forest_ = self.forest_.subset(trees)
        new.tree_seeds_ = self.tree_seeds_[trees]
        new._set_tree_statistics()
        return new

    # ------------------------------------------------------------------------------- scoring --
    def _decision_block(self, xb: sp.csr_matrix) -> sp.csr_matrix:
        """The sparse scores (B, K) of a canonical CSR block (B, D): the leaf distributions averaged
        over the trees; subclasses re-rank here."""
        return self.forest_.scores(xb)

    _predict_from = "proba"

    def _proba_block(self, xb: sp.csr_matrix) -> np.ndarray:
        """The probability of each label (B, K) for a canonical CSR block (B, D): over the trees, the
        mean of ``(n q_l + a π_l) / (n + a)`` for the leaf reached (n points, label frequencies q),
        a = ``prior_strength``, π = :attr:`label_prior_`. The same for PfastXML and PfastreXML, whose
        re-ranking changes the ranking only."""
        f = self.forest_
        leaves = f.leaves(xb)
        B, T = leaves.shape
        n = f.leaf_size[leaves].astype(np.float64)
        a = float(self.prior_strength)
        weight = n / (n + a) / T  # a leaf holds at least one point: n + a > 0
        A = sp.csr_matrix((weight.ravel(), leaves.ravel(), np.arange(0, B * T + 1, T)), shape=(B, f.leaf_labels.shape[0]))
        P = np.asarray((A @ f.leaf_labels).todense())
        P += ((a / (n + a)).sum(axis=1) / T)[:, None] * self.label_prior_[None, :]
        return np.minimum(P, 1.0, out=P)

    # --------------------------------------------------------------------------- persistence --
    def _fitted_arrays(self) -> dict:
        arrays = {**super()._fitted_arrays(), **{f"forest_.{f.name}": getattr(self.forest_, f.name) for f in fields(Forest)}}
        arrays["tree_seeds_"] = self.tree_seeds_
        return arrays

    def _restore_fitted(self, state: SavedState) -> None:
        super()._restore_fitted(state)
        parts = {}
        for f in fields(Forest):
            name = f"forest_.{f.name}"
            parts[f.name] = state.csr(name, (None, None)) if f.name in CSR_FIELDS \
                else state.array(name, None, "f" if f.name == "bias" else "iu")
        forest = Forest(**parts)
        forest.check(self.n_features_in_, self.n_labels_)
        if forest.n_trees > self.n_estimators or (forest.n_trees < self.n_estimators and self.max_seconds is None):
            raise state.error(f"the forest has {forest.n_trees} trees but n_estimators is {self.n_estimators}"
                              + (" (and no max_seconds cut it short)" if forest.n_trees < self.n_estimators else ""))
        if np.any(np.bincount(forest.leaf_tree, weights=forest.leaf_size, minlength=forest.n_trees) != self.n_samples_):
            raise state.error(f"the leaves of some tree do not hold the n_samples_ = {self.n_samples_} training points")
        self.forest_ = forest
        self.tree_seeds_ = state.array("tree_seeds_", (forest.n_trees,), "iu")
        self._set_tree_statistics()
