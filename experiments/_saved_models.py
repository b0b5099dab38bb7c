"""Do models saved by another version of mlgp load, score and refit to the same numbers?

What it is: a developer's tool for a refactoring (hence the leading underscore: the experiments
smoke test skips it). With one version of the package it fits every family of
:data:`mlgp.families.FAMILIES` (GenEML by each inference) and an MLGPF save folder on one small
seeded problem, saves each model beside its decision values and probabilities on test rows; with
another version it loads each saved model and compares (``check``) or fits again from the same
seed and compares (``refit``). It prints one line per model, ``max|Δ| decision … proba …``, and
``WORST`` (the largest of them). Choose the version with ``PYTHONPATH``::

    git worktree add /tmp/old REV
    PYTHONPATH=/tmp/old python experiments/_saved_models.py save /tmp/saved
    python experiments/_saved_models.py check /tmp/saved
    python experiments/_saved_models.py refit /tmp/saved

Exit status 1 when ``check`` or ``refit`` finds a difference above ``--tolerance`` (default 0:
the same computation runs, so the same bits are expected) or a model is missing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

#: name → (family, parameters): small fits of every family
CASES = {
    "frequency": ("frequency", {}),
    "fastxml": ("fastxml", {"n_estimators": 3, "n_jobs": 1}),
    "pfastxml": ("pfastxml", {"n_estimators": 3, "n_jobs": 1}),
    "pfastrexml": ("pfastrexml", {"n_estimators": 3, "n_jobs": 1}),
    "lspc": ("lspc", {}),
    "mllspc": ("mllspc", {}),
    "mllspccv": ("mllspccv", {"cv": 2}),
    "mlknn": ("mlknn", {}),
    "geneml": ("geneml", {"n_components": 4, "max_iter": 5}),
    "geneml_online": ("geneml", {"n_components": 4, "max_iter": 2, "inference": "online-em"}),
    "geneml_gibbs": ("geneml", {"n_components": 4, "max_iter": 3, "inference": "gibbs"}),
    "mlgpf": ("mlgpf", {"epochs": 2, "num_inducing": 10, "num_latent_gps": 3}),
}


def problem():
    """``(X, Y, X_test)``: 120 training rows, D = 30 sparse features, K = 12 labels; 40 test rows."""
    rng = np.random.default_rng(0)
    X = sp.random(120, 30, density=0.2, random_state=1, format="csr")
    Y = ((X @ rng.normal(size=(30, 12))) > 0.3).astype(np.float64)
    Y[Y.sum(axis=1) == 0, 0] = 1.0
    return X, sp.csr_matrix(Y), sp.random(40, 30, density=0.2, random_state=2, format="csr")


def _make_estimator():
    try:
        from mlgp.families import make_estimator
    except ImportError:  # versions before mlgp.families
        from mlgp.comparison.families import make_estimator
    return make_estimator


def _fit(name: str, X, Y):
    family, changes = CASES[name]
    est = _make_estimator()(family, dict(changes), seed=0)
    if "n_jobs" in changes:
        est.set_params(n_jobs=changes["n_jobs"])  # over the command line's default
    return est.fit(X, Y)


def _folder_scores(model, X_test) -> np.ndarray:
    """The decision values of an MLGPF folder's model on the normalised test rows, through the
    estimator (versions before ``MLGPFClassifier.from_model`` scored through the model itself)."""
    from mlgp.data.preprocessing import normalise_rows
    from mlgp.recipes import MLGPFClassifier

    if not hasattr(MLGPFClassifier, "from_model"):
        return model.decision_function(normalise_rows(X_test))
    return MLGPFClassifier.from_model(model).decision_function(normalise_rows(X_test))


def save(folder: Path) -> int:
    X, Y, X_test = problem()
    folder.mkdir(parents=True, exist_ok=True)
    for name in CASES:
        est = _fit(name, X, Y)
        est.save(folder / f"{name}.npz")
        np.savez(folder / f"{name}.pred.npz", dec=est.decision_function(X_test), proba=est.predict_proba(X_test))
        print("saved", name, flush=True)
        if name == "mlgpf":
            est.model_.save(folder / "mlgpf_folder")
            np.savez(folder / "mlgpf_folder.pred.npz", dec=_folder_scores(est.model_, X_test))
            print("saved mlgpf_folder", flush=True)
    return 0


def compare(folder: Path, refit: bool, tolerance: float) -> int:
    from mlgp.families import load_model
    from mlgp.models import MLGPF

    X, Y, X_test = problem()
    worst, missing = 0.0, 0
    for name in CASES:
        ref_file = folder / f"{name}.pred.npz"
        if not ref_file.exists():
            print(f"{name:15s} missing")
            missing += 1
            continue
        ref = np.load(ref_file)
        est = _fit(name, X, Y) if refit else load_model(folder / f"{name}.npz")
        d = float(np.max(np.abs(est.decision_function(X_test) - ref["dec"])))
        p = float(np.max(np.abs(est.predict_proba(X_test) - ref["proba"])))
        worst = max(worst, d, p)
        print(f"{name:15s} {type(est).__name__:16s} max|Δ| decision {d:.3g} proba {p:.3g}", flush=True)
    if not refit:
        d = float(np.max(np.abs(_folder_scores(MLGPF.load(folder / "mlgpf_folder"), X_test)
                                - np.load(folder / "mlgpf_folder.pred.npz")["dec"])))
        worst = max(worst, d)
        print(f"{'mlgpf_folder':15s} {'MLGPF':16s} max|Δ| decision {d:.3g}")
    print(f"WORST {worst:.3g}")
    return int(worst > tolerance or missing > 0)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("save", "check", "refit"))
    parser.add_argument("folder", type=Path)
    parser.add_argument("--tolerance", type=float, default=0.0, help="largest |Δ| allowed (default 0)")
    args = parser.parse_args(argv)
    if args.mode == "save":
        return save(args.folder)
    return compare(args.folder, args.mode == "refit", args.tolerance)


if __name__ == "__main__":
    sys.exit(main())
