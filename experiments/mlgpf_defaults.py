"""``MLGPFClassifier()`` as a user constructs it, without a budget: the default schedule
(``epochs="auto"``: a cap of max(20, ⌈200 / steps per epoch⌉) epochs, early stopping on the
held-out tenth deciding within it) against the 20 epochs it had before, on small and mid-sized
data sets; with ``--method "shared-scale kernel"`` also the default with the authors' SE + linear
kernel, one ARD scale vector shared by both parts (``kernel="se+linear-shared"``).

A data set of at most 500 training rows is one minibatch of the default batch, so 20 epochs were
20 optimiser steps (emotions); scene, yeast and Enron had 3 per epoch, Bibtex 9. Per data set
and method one fit (seed 0), then test P@1/3/5, the NLL per entry and the ECE
(:func:`mlgp.metrics.evaluate_proba`), the test log predictive density (nats per row), the fit's
seconds, the epochs and optimiser steps run, the epoch early stopping kept and whether the recipe
trained again on every row (``refit``). Writes ``runs`` (resumable, ``--fresh`` starts over).

    python experiments/mlgpf_defaults.py
    python experiments/mlgpf_defaults.py --datasets emotions,enron --method default
    python experiments/mlgpf_defaults.py --quick
"""

from __future__ import annotations

import argparse

DATASETS = ("emotions", "scene", "yeast", "enron", "bibtex")
METHODS = {
    "default": {},
    "20 epochs": dict(epochs=20),
    "shared-scale kernel": dict(kernel="se+linear-shared"),
}
COLUMNS = ["dataset", "method", "P@1", "P@3", "P@5", "NLL", "ECE", "LPD", "fit s", "epochs", "steps", "best epoch",
           "refit"]


def main(argv: list[str] | None = None) -> None:
    from mlgp.experiment import parse_dataset_method_args

    run(parse_dataset_method_args(__doc__.splitlines()[0], DATASETS, METHODS, argv, default_methods=list(METHODS)[:2]))


def score(Y_test, clf, X_test) -> dict:
    """Test P@1/3/5 (percent), NLL per entry, ECE and LPD (nats per row) of a fitted classifier."""
    from mlgp.metrics import evaluate, evaluate_proba, log_predictive_density

    p = evaluate(Y_test, clf.predict_topk(X_test, 5), ks=[1, 3, 5]).loc["P"]
    proba = clf.predict_proba(X_test)
    report = evaluate_proba(Y_test, proba, ks=[])
    return {"P@1": float(p[1]), "P@3": float(p[3]), "P@5": float(p[5]), "NLL": report.nll_per_entry,
            "ECE": report.ece, "LPD": float(log_predictive_density(Y_test, proba))}


def run(args: argparse.Namespace) -> None:
    from mlgp.experiment import Experiment, RunLog, each_dataset_and_method
    from mlgp.recipes import MLGPFClassifier

    datasets = ["emotions"] if args.quick else args.datasets.split(",")
    chosen = {k: METHODS[k] for k in args.methods}
    # --quick: a small model and a short schedule (the "auto" one is still at least 200 steps)
    quick = dict(num_latent_gps=2, num_inducing=10)
    methods = {k: dict(v, **quick) for k, v in chosen.items()} if args.quick else chosen
    max_train = 100 if args.quick else None
    settings = {"methods": methods, "max_train": max_train}
    with Experiment("mlgpf_defaults", quick=args.quick, settings=settings, seeds=[0], out=args.out) as exp:
        log = RunLog(exp.folder, "runs", COLUMNS, ["dataset", "method"], settings, args.fresh)
        each_dataset_and_method(
            log, datasets, methods, lambda params, X, Y: MLGPFClassifier(seed=0, **params).fit(X, Y),
            lambda clf, ds: {**score(ds.test.Y, clf, ds.test.X), "epochs": clf.n_iter_,
                             "steps": int(clf.trace_["step"].max()), "best epoch": clf.best_epoch_ or 0,
                             "refit": bool(clf.refitted_)},
            max_train)
        exp.table("runs", log.rows, floatfmt=".4g")


if __name__ == "__main__":
    main()
