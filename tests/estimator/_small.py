"""Small instances of every estimator of mlgp.baselines and the data they are fitted on, for the
floor's tests (imported by the test modules; ``conftest`` caches the fitted ones)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from mlgp.baselines import LSPC, MLLSPC, MLLSPCCV, FastXML, LabelFrequency, MLkNN, PfastreXML, PfastXML

#: name → a small unfitted instance (few trees, a tiny grid: each fits in well under a second)
SMALL = {
    "LabelFrequency": lambda: LabelFrequency(smoothing=0.5, threshold=0.3),
    "LSPC": lambda: LSPC(n_basis=15, random_state=0),
    "LSPC-classes": lambda: LSPC(n_basis=15, random_state=0),
    "MLLSPC": lambda: MLLSPC(n_basis=15, coupling=0.2, threshold=np.array([0.4, 0.5, 0.6, 0.5]), random_state=0),
    "MLLSPCCV": lambda: MLLSPCCV(alphas=(0.1, 1.0), couplings=(0.0, 0.1), n_basis=15, cv=2, random_state=0),
    "MLkNN": lambda: MLkNN(n_neighbors=3, metric="cosine"),
    "FastXML": lambda: FastXML(n_estimators=2, max_leaf=6, random_state=0),
    "PfastXML": lambda: PfastXML(n_estimators=2, max_leaf=6, random_state=np.random.RandomState(1)),
    "PfastreXML": lambda: PfastreXML(n_estimators=2, max_leaf=6, gamma=5.0, alpha=0.6, random_state=2),
}


def data(seed: int = 0, N: int = 40, D: int = 6, K: int = 4):
    """Non-negative features with empty entries (no empty rows) and 0/1 labels that depend on them."""
    rng = np.random.default_rng(seed)
    X = rng.random((N, D)) * (rng.random((N, D)) < 0.6)
    X[np.arange(N), rng.integers(0, D, size=N)] += 1.0
    Y = (X[:, :K] + 0.3 * rng.random((N, K)) > 0.6).astype(np.int64)
    Y[np.arange(N), np.argmax(X[:, :K], axis=1)] = 1
    return X, Y


def fit_small(name: str, sparse: bool):
    """``SMALL[name]`` fitted on :func:`data` (CSR features when ``sparse``); LSPC-classes on 1-D
    class labels, every other one on the label matrix."""
    X, Y = data()
    y = np.array(["a", "b", "c"])[Y[:, :3].argmax(axis=1)] if name == "LSPC-classes" else Y
    return SMALL[name]().fit(sp.csr_matrix(X) if sparse else X, y)
