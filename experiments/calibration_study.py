"""What the posterior buys, and post-hoc calibration of every family.

Two tables per run, each row written as soon as it is done (``--fresh`` starts over):

- ``posterior``: MLGPF (as ``mlgp compare --budget BUDGET`` builds it, with default label
  subsampling, and with every negative label, ``negatives=K - 1``) — its probabilities E_q[σ(f)] against the plug-in
  σ(f̄) of the mean utility: test NLL per entry, ECE, ECE@5, P@1, and NLL and ECE within three
  buckets of labels by training frequency (the rarest half of the labels, the next 40 %, the most
  frequent 10 %);
- ``posthoc``: every family fitted on the first 80 % of the training rows (a seeded permutation),
  its probabilities recalibrated on the other 20 % (``mlgp.estimator.ProbabilityCalibrator``:
  isotonic regression pooled over labels, or one temperature), scored on the test split: NLL, ECE,
  ECE@5 and P@1 before and after. Families as ``mlgp compare`` builds them, MLGPF and GenEML within
  ``BUDGET`` seconds.

    python experiments/calibration_study.py [--datasets enron,bibtex,delicious,emotions] [--parts posterior,posthoc]
    python experiments/calibration_study.py --quick
"""

from __future__ import annotations

import argparse
import time

BUDGET = 60.0
FAMILIES = ("frequency", "fastxml", "pfastrexml", "lspc", "mllspc", "mlknn", "geneml", "mlgpf")
BUCKETS = (("rarest 50%", 0.0, 0.5), ("middle 40%", 0.5, 0.9), ("top 10%", 0.9, 1.0))
POSTERIOR = ["dataset", "variant", "probabilities", "NLL", "ECE", "ECE@5", "P@1"] + \
    [f"{m} {b}" for b, _, _ in BUCKETS for m in ("NLL", "ECE")] + ["fit s"]
POSTHOC = ["dataset", "family", "calibration", "NLL", "ECE", "ECE@5", "P@1", "fit s"]


def main(argv: list[str] | None = None) -> None:
    from mlgp.experiment import add_argparse_args

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_argparse_args(parser)
    parser.add_argument("--datasets", default="enron,bibtex,delicious,emotions")
    parser.add_argument("--parts", default="posterior,posthoc")
    parser.add_argument("--fresh", action="store_true", help="discard the stored rows and start over")
    run(parser.parse_args(argv))


def _scores(Y, P, top=None) -> dict:
    from mlgp.metrics import evaluate, evaluate_proba

    r = evaluate_proba(Y, P, n_bins=15, ks=[5])
    p1 = evaluate(Y, top if top is not None else P, ks=[1]).loc["P", 1]
    return {"NLL": r.nll_per_entry, "ECE": r.ece, "ECE@5": r.ece_at_k[5], "P@1": float(p1)}


def _buckets(Y_train, Y, P) -> dict:
    """NLL and ECE of the labels in each training-frequency bucket."""
    import numpy as np

    from mlgp.metrics import evaluate_proba

    counts = np.asarray(Y_train.sum(axis=0)).ravel()
    order = np.argsort(counts, kind="stable")
    out = {}
    for name, lo, hi in BUCKETS:
        labels = np.sort(order[int(lo * order.size):int(hi * order.size)])
        r = evaluate_proba(Y[:, labels], P[:, labels], n_bins=min(15, Y.shape[0] * labels.size), ks=[])
        out.update({f"NLL {name}": r.nll_per_entry, f"ECE {name}": r.ece})
    return out


def _posterior(ds, name, log, quick) -> None:
    from scipy.special import expit

    from mlgp.families import make_estimator

    K = ds.train.Y.shape[1]
    variants = {"default": {}} if quick else {"default": {}, "all negatives": {"negatives": K - 1}}
    for variant, extra in variants.items():
        if log.done(name, variant, "E_q[σ(f)]"):
            continue
        if quick:
            extra = dict(extra, num_latent_gps=5, num_inducing=20, epochs=2)
        # as mlgp compare builds it: trained until the budget is spent
        model = make_estimator("mlgpf", extra, seed=0, budget=None if quick else BUDGET)
        t0 = time.perf_counter()
        model.fit(ds.train.X, ds.train.Y)
        seconds = time.perf_counter() - t0
        f_mean = model.decision_function(ds.test.X)
        for label, P in (("E_q[σ(f)]", model.predict_proba(ds.test.X)), ("σ(f̄)", expit(f_mean))):
            log.append({"dataset": name, "variant": variant, "probabilities": label, **_scores(ds.test.Y, P, f_mean),
                        **_buckets(ds.train.Y, ds.test.Y, P), "fit s": seconds})


def _posthoc(ds, name, log, quick) -> None:
    import numpy as np

    from mlgp.families import make_estimator
    from mlgp.estimator import ProbabilityCalibrator

    N = ds.train.X.shape[0]
    rows = np.random.default_rng(0).permutation(N)
    fit_rows, held_rows = np.sort(rows[: int(0.8 * N)]), np.sort(rows[int(0.8 * N):])
    X, Y = ds.train.X, ds.train.Y
    for family in ("frequency", "fastxml", "mlgpf") if quick else FAMILIES:
        if log.done(name, family, "none"):
            continue
        settings = {"mlgpf": {"num_latent_gps": 5, "num_inducing": 20, "epochs": 2}} if quick else {}
        est = make_estimator(family, settings.get(family), seed=0, budget=None if quick else BUDGET)
        if hasattr(est, "n_estimators") and quick:
            est.set_params(n_estimators=5)
        t0 = time.perf_counter()
        est.fit(X[fit_rows], Y[fit_rows])
        seconds = time.perf_counter() - t0
        top = est.predict_topk(ds.test.X, 5)
        P_held, P_test = est.predict_proba(X[held_rows]), est.predict_proba(ds.test.X)
        results = [("none", P_test)]
        for method in ("isotonic", "temperature"):
            calibrator = ProbabilityCalibrator(method=method).fit(P_held, Y[held_rows])
            results.append((method, calibrator.transform(P_test)))
        for how, P in reversed(results):  # "none" last: its row marks the family done
            log.append({"dataset": name, "family": family, "calibration": how, **_scores(ds.test.Y, P, top),
                        "fit s": seconds})


def run(args: argparse.Namespace) -> None:
    import mlgp.data
    from mlgp.data.registry import Dataset, Split
    from mlgp.experiment import Experiment, RunLog

    datasets = ["emotions"] if args.quick else args.datasets.split(",")
    parts = args.parts.split(",")
    settings = {"budget": BUDGET, "families": FAMILIES, "buckets": BUCKETS}
    with Experiment("calibration_study", quick=args.quick, settings=settings, seeds=[0], out=args.out) as exp:
        posterior = RunLog(exp.folder, "posterior", POSTERIOR, ["dataset", "variant", "probabilities"], settings, args.fresh)
        posthoc = RunLog(exp.folder, "posthoc", POSTHOC, ["dataset", "family", "calibration"], settings, args.fresh)
        for name in datasets:
            ds = mlgp.data.load(name)
            if args.quick:  # a slice of emotions: seconds, not minutes
                ds = Dataset(name, Split("train", ds.train.X[:200], ds.train.Y[:200], None),
                             Split("test", ds.test.X[:100], ds.test.Y[:100], None))
            if "posterior" in parts:
                _posterior(ds, name, posterior, args.quick)
            if "posthoc" in parts:
                _posthoc(ds, name, posthoc, args.quick)
        # a run killed between a family's rows repeats them on resume: the last of each key counts
        exp.table("posterior", posterior.rows.drop_duplicates(posterior.key, keep="last"), floatfmt=".4f")
        exp.table("posthoc", posthoc.rows.drop_duplicates(posthoc.key, keep="last"), floatfmt=".4f")


if __name__ == "__main__":
    main()
