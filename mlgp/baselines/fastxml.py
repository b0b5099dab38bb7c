"""FastXML (Prabhu & Varma, KDD 2014): an ensemble of trees whose nodes split by optimising an
nDCG ranking loss, as a scikit-learn estimator on NumPy/SciPy.

Contract: ``fit(X, Y)`` takes features ``X`` (N, D), CSR or dense, and 0/1 labels ``Y`` (N, K),
checks them and the parameters before any work (bad input raises a ``ValueError`` naming the
problem), and grows ``n_estimators`` trees in parallel with joblib (processes; joblib's active
backend, e.g. Dask, takes the work when set). Tree t is seeded by the t-th draw of
``random_state``, so a fixed seed gives the same trees for every ``n_jobs``. Each node is split by
:mod:`._fastxml.split` until it holds at most ``max_leaf`` points; a leaf keeps its
``max_leaf_labels`` most frequent labels. Scores are the leaf distributions averaged over trees:
``decision_function`` → dense float64 (N, K) in [0, 1], ``predict_topk`` → :class:`TopK` (labels
no leaf reached score 0, ties to the lower label index), both computed ``batch_size`` rows at a
time on CSR without densifying features. ``save(path)`` / ``FastXML.load(path)`` write and read one
``.npz`` file of arrays (no pickle).
"""

from __future__ import annotations

from numbers import Integral, Real
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, MultiOutputMixin, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..errors import DataFormatError
from ..scores import TopK, topk
from ..validation import check_estimator_features, check_estimator_labels, check_features, check_positive_int
from ._estimator import MultiLabelScoringMixin
from ._fastxml.forest import Forest
from ._fastxml.io import load_arrays, save_arrays
from ._fastxml.loss import SPLIT_LOSSES, split_loss
from ._fastxml.split import SplitOptions
from ._fastxml.tree import grow_tree

__all__ = ["FastXML"]


class FastXML(MultiLabelScoringMixin, MultiOutputMixin, ClassifierMixin, BaseEstimator):
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
        liblinear's outer (Newton) iterations per w-update.
    tol : float, default=0.1
        liblinear's stopping tolerance.
    split_loss : {"ndcg", "dcg", "precision"}, default="ndcg"
        The ranking loss of a split (:mod:`mlgp.baselines._fastxml.loss`); the paper's is nDCG.
    split_loss_k : int or None, default=None
        Truncate the loss at rank k (None: all labels, nDCG@L; the paper's Table 7 uses 5).
    threshold : float, default=0.5
        ``predict`` marks a label present when its score is at least this.
    n_jobs : int or None, default=None
        Trees grown at once (joblib; None means 1 unless a joblib backend context says otherwise,
        -1 all cores).
    random_state : int, RandomState or None, default=None
        Seeds the trees (one seed drawn per tree).
    verbose : int, default=0
        joblib's progress messages.

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
        The most liblinear Newton iterations any separator of each tree took (at most
        ``max_iter`` × ``n_w_updates``; 0 for a tree that is one leaf).
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
        "n_jobs": [Integral, None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(self, n_estimators: int = 50, max_leaf: int = 10, max_leaf_labels: int = 20,
                 c_pos: float = 1.0, c_neg: float = 1.0, c_rank: float = 1.0, bias: float = 1.0,
                 n_w_updates: int = 1, max_iter: int = 10, tol: float = 0.1, split_loss: str = "ndcg",
                 split_loss_k: int | None = None, threshold: float = 0.5, n_jobs: int | None = None,
                 random_state=None, verbose: int = 0) -> None:
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

    # ----------------------------------------------------------------------------------- fit --
    def _label_weights(self, Y: sp.csr_matrix) -> np.ndarray | None:
        """Per-label weights of the split loss (PfastXML: inverse propensities); None: all 1."""
        return None

    def _split_options(self) -> SplitOptions:
        return SplitOptions(c_pos=float(self.c_pos), c_neg=float(self.c_neg), c_rank=float(self.c_rank),
                            bias=float(self.bias), max_iter=int(self.max_iter), tol=float(self.tol),
                            n_w_updates=int(self.n_w_updates))

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, Y) -> "FastXML":
        """Grow the trees; returns ``self``.

        Parameters
        ----------
        X : np.ndarray or scipy sparse matrix of shape (N, D)
            Finite features.
        Y : np.ndarray or scipy sparse matrix of shape (N, K)
            0/1 labels.
        """
        from joblib import Parallel, delayed

        X = check_features(check_estimator_features(X, None, type(self).__name__))
        Y = check_estimator_labels(Y, X.shape[0], type(self).__name__)
        X = sp.csr_matrix(X, dtype=np.float64)
        X.sort_indices()
        Y = sp.csr_matrix(Y, dtype=np.float64)
        N, K = Y.shape
        G, discount = split_loss(Y, self.split_loss, self.split_loss_k, self._label_weights(Y))
        opts = self._split_options()
        seeds = check_random_state(self.random_state).randint(0, 2**31 - 1, size=self.n_estimators)
        trees = Parallel(n_jobs=self.n_jobs, prefer="processes", verbose=self.verbose)(
            delayed(grow_tree)(X, Y, G, discount, opts, int(self.max_leaf), int(self.max_leaf_labels), int(s))
            for s in seeds)
        self.forest_ = Forest.from_trees(trees)
        self.tree_seeds_ = seeds.astype(np.int64)
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

    def select_trees(self, trees) -> "FastXML":
        """A fitted copy made of the given trees only (indices into the ensemble, in that order;
        repeats allowed), with its own statistics: accuracy against the number of trees (the
        paper's Fig. 1). It saves and loads like any fitted model."""
        check_is_fitted(self)
        trees = np.asarray(trees).ravel()
        if trees.size == 0 or not np.issubdtype(trees.dtype, np.integer) or trees.min() < 0 \
                or trees.max() >= self.forest_.n_trees:
            raise ValueError(f"trees must be a non-empty list of integer indices in [0, {self.forest_.n_trees})")
        new = self.__class__(**self.get_params())
        new.__dict__.update({k: v for k, v in self.__dict__.items() if k.endswith("_")})
        new.set_params(n_estimators=int(trees.size))
        new.forest_ = self.forest_.subset(trees)
        new.tree_seeds_ = self.tree_seeds_[trees]
        new._set_tree_statistics()
        return new

    # ------------------------------------------------------------------------------- scoring --
    def _block_scores(self, X: sp.csr_matrix) -> sp.csr_matrix:
        """The sparse scores (n, K) of a CSR block: the leaf distributions averaged over the
        trees; subclasses re-rank here."""
        return self.forest_.scores(X)

    def _blocks(self, X, batch_size: int):
        """Check ``X`` (all of it, before any work) and return ``(N, generator of (rows, scores))``."""
        check_is_fitted(self)
        X = check_features(check_estimator_features(X, self.n_features_in_, type(self).__name__),
                           num_features=self.n_features_in_)
        batch_size = check_positive_int(batch_size, "batch_size")
        X = sp.csr_matrix(X, dtype=np.float64)
        X.sort_indices()
        starts = range(0, X.shape[0], batch_size)
        return X.shape[0], ((slice(s, s + batch_size), self._block_scores(X[s:s + batch_size])) for s in starts)

    def decision_function(self, X, batch_size: int = 1000) -> np.ndarray:
        """Scores of every label for every point: float64 (N, K), the leaf label frequencies
        averaged over trees (0 for labels no reached leaf keeps).

        Parameters
        ----------
        X : np.ndarray or scipy sparse matrix of shape (N, D)
            Features with the D columns seen in ``fit``.
        batch_size : int, default=1000
            Rows scored at a time.
        """
        n, blocks = self._blocks(X, batch_size)
        out = np.zeros((n, self.n_labels_))
        for rows, S in blocks:
            out[rows] = S.toarray()
        return out

    def predict_topk(self, X, k: int, batch_size: int = 1000) -> TopK:
        """Each point's ``k`` best labels (``1 <= k <= K``) as a :class:`~mlgp.scores.TopK` of
        shape (N, k): the same ranking as :meth:`decision_function` (ties and unreached labels,
        scored 0, to the lower label index) without forming the dense (N, K) scores."""
        check_is_fitted(self)
        k = check_positive_int(k, "k")
        if k > self.n_labels_:
            raise ValueError(f"k={k} exceeds the number of labels K={self.n_labels_}")
        n, blocks = self._blocks(X, batch_size)
        idx, val = np.empty((n, k), np.int64), np.empty((n, k))
        for rows, S in blocks:
            t = topk(S, k)
            idx[rows], val[rows] = t.indices, np.where(np.isfinite(t.scores), t.scores, 0.0)
        return TopK(idx, val)

    def predict(self, X, batch_size: int = 1000) -> np.ndarray:
        """0/1 predictions (int64 (N, K)): label present when its score is ``>= threshold``."""
        return (self.decision_function(X, batch_size) >= self.threshold).astype(np.int64)

    # --------------------------------------------------------------------------- persistence --
    def _extra_arrays(self) -> dict[str, np.ndarray]:
        return {}

    def save(self, path) -> Path:
        """Write the fitted model to ``path`` (``.npz``; no pickle); returns the path written."""
        check_is_fitted(self)
        params = self.get_params()
        seed = params["random_state"]
        # a RandomState object cannot be written as JSON: the file records None (the trees are saved)
        params["random_state"] = int(seed) if isinstance(seed, (int, np.integer)) else None
        fitted = {"n_samples_": self.n_samples_, "n_features_in_": self.n_features_in_,
                  "n_labels_": self.n_labels_}
        arrays = {f"forest.{k}": v for k, v in self.forest_.to_arrays().items()}
        arrays["tree_seeds_"] = self.tree_seeds_
        arrays.update(self._extra_arrays())
        return save_arrays(path, type(self).__name__, params, fitted, arrays)

    @classmethod
    def load(cls, path) -> "FastXML":
        """Read a model written by :meth:`save`; the file's class must be ``cls`` or a subclass."""
        from .pfastxml import PfastreXML, PfastXML

        name, params, fitted, arrays = load_arrays(path)
        klass = {c.__name__: c for c in (FastXML, PfastXML, PfastreXML)}.get(name)
        if klass is None or not issubclass(klass, cls):
            raise ValueError(f"{path}: holds a {name}, not a {cls.__name__}")
        est = klass(**params)
        try:
            est.forest_ = Forest.from_arrays({k[len("forest."):]: v for k, v in arrays.items()
                                              if k.startswith("forest.")})
            est.tree_seeds_ = arrays["tree_seeds_"]
            est._set_fitted_shape(fitted["n_samples_"], fitted["n_features_in_"], fitted["n_labels_"])
            est._load_extra(arrays)
        except (KeyError, ValueError, TypeError) as err:
            raise DataFormatError(f"{path}: a {name} file with missing or malformed arrays ({err})") from err
        est._set_tree_statistics()
        return est

    def _load_extra(self, arrays: dict[str, np.ndarray]) -> None:
        """Restore what :meth:`_extra_arrays` saved."""
