"""Does the default MLGPFClassifier read sparse one-hot features that carry the labels? Synthetic
users × items data (:func:`mlgp.data.synthetic.informative_zipf`) at two sizes and three data seeds.

Each label depends on 2 of 8 one-hot feature groups (4 values each, D = 32) with Zipf popularity on
top (top label 0.6, exponent 0.5): "small" is 500 training rows and 400 labels (the suite's test),
"users-items" 750 training rows and 1,700 labels (about 65 positives per row, the shape of the
users × items set where the default recipe used to learn nothing beyond the frequency ranking);
600 test rows each. Per data seed: LabelFrequency, MLLSPC and the generating logits (the oracle)
beside MLGPF at its defaults, without its refit on every row, with a cap of 100 epochs (the
default ``epochs="auto"`` allows 200 of one step each), with early stopping off for the same 100
epochs, and with the linear, the SE or the authors' shared-scale SE + linear kernel in place of the
default SE + linear (``--method`` chooses; the four above by default). Per run: P@1, P@5, the test log predictive density
(nats per row), the epochs run and the epoch kept, the fit's seconds. Writes ``runs`` (resumable,
``--fresh`` starts over) and ``summary`` (mean and sd over the seeds, and each method's P@1 minus
MLLSPC's and minus LabelFrequency's).

    python experiments/mlgpf_informative.py
    python experiments/mlgpf_informative.py --method "MLGPF linear kernel" --method "MLGPF SE kernel"
    python experiments/mlgpf_informative.py --quick
"""

from __future__ import annotations

import argparse
import time

SIZES = {"small": dict(num_train=500, num_labels=400), "users-items": dict(num_train=750, num_labels=1700)}
DATA = dict(num_test=600, strength=0.7)
METHODS = {
    "MLGPF default": {},
    "MLGPF without the refit": dict(refit=False),
    "MLGPF 100 epochs": dict(epochs=100),
    "MLGPF 100 epochs, no early stopping": dict(epochs=100, early_stopping=False),
    "MLGPF linear kernel": dict(kernel="linear"),
    "MLGPF SE kernel": dict(kernel="se"),
    "MLGPF shared-scale SE + linear": dict(kernel="se+linear-shared"),
}
DEFAULT_METHODS = list(METHODS)[:4]
COLUMNS = ["size", "seed", "method", "P@1", "P@5", "LPD", "epochs", "best epoch", "fit s"]


def main(argv: list[str] | None = None) -> None:
    from mlgp.experiment import add_argparse_args

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_argparse_args(parser)
    parser.add_argument("--fresh", action="store_true", help="discard the stored runs and start over")
    parser.add_argument("--method", dest="methods", action="append", choices=list(METHODS), metavar="NAME",
                        help=f"an MLGPF method to run, repeatable (default: {'; '.join(DEFAULT_METHODS)}; "
                             f"the others: {'; '.join(m for m in METHODS if m not in DEFAULT_METHODS)})")
    args = parser.parse_args(argv)
    args.methods = args.methods or DEFAULT_METHODS
    run(args)


def _score(Y_test, top, proba=None) -> dict:
    """P@1, P@5 of the top-5 ``top`` and the log predictive density of ``proba`` (NaN without)."""
    from mlgp.metrics import evaluate, log_predictive_density

    p = evaluate(Y_test, top, ks=[1, 5]).loc["P"]
    return {"P@1": float(p[1]), "P@5": float(p[5]),
            "LPD": float("nan") if proba is None else float(log_predictive_density(Y_test, proba))}


def summary(runs):
    """Mean and sd over the seeds per size and method; P@1 differences to MLLSPC and frequency."""
    grouped = runs.groupby(["size", "method"], sort=False)
    out = grouped[["P@1", "P@5", "LPD", "fit s"]].agg(["mean", "std"])
    out.columns = [f"{a} {b}" for a, b in out.columns]
    out = out.reset_index()
    ref = runs.pivot_table(index=["size", "seed"], columns="method", values="P@1")
    for other in ("MLLSPC", "LabelFrequency"):
        gaps = ref.sub(ref[other], axis=0).groupby(level="size").mean()
        out[f"P@1 − {other}"] = [gaps.loc[s, m] for s, m in zip(out["size"], out["method"])]
    out["seeds"] = grouped.size().to_numpy()
    return out


def run(args: argparse.Namespace) -> None:
    from mlgp.baselines import LabelFrequency, MLLSPC
    from mlgp.data.synthetic import informative_zipf
    from mlgp.experiment import Experiment, RunLog
    from mlgp.recipes import MLGPFClassifier
    from mlgp.scores import topk

    sizes = {"small": dict(num_train=120, num_labels=60)} if args.quick else SIZES
    data = dict(DATA, num_test=80) if args.quick else DATA
    chosen = {name: METHODS[name] for name in getattr(args, "methods", DEFAULT_METHODS)}
    methods = {k: dict(v, epochs=min(v.get("epochs", 20), 6)) for k, v in chosen.items()} if args.quick else chosen
    seeds = [0] if args.quick else (args.seeds or [0, 1, 2])  # data seeds, each also seeding the fits
    settings = {"sizes": sizes, "data": data, "methods": methods}
    with Experiment("mlgpf_informative", quick=args.quick, settings=settings, seeds=seeds, out=args.out) as exp:
        log = RunLog(exp.folder, "runs", COLUMNS, ["size", "seed", "method"], settings, args.fresh)
        for size, shape in sizes.items():
            for seed in seeds:
                ds = informative_zipf(**shape, **data, seed=seed)
                X, Y, Xt, Yt = ds.train.X, ds.train.Y, ds.test.X, ds.test.Y
                if not log.done(size, seed, "oracle"):
                    logits = ds.extras["logits"][shape["num_train"]:]
                    log.append({"size": size, "seed": seed, "method": "oracle", **_score(Yt, topk(logits, 5)),
                                "epochs": 0, "best epoch": 0, "fit s": 0.0})
                baselines = {"LabelFrequency": LabelFrequency(), "MLLSPC": MLLSPC(random_state=seed)}
                fits = {**baselines, **{m: MLGPFClassifier(seed=seed, **p) for m, p in methods.items()}}
                for method, est in fits.items():
                    if log.done(size, seed, method):
                        continue
                    t0 = time.perf_counter()
                    est.fit(X, Y)
                    seconds = time.perf_counter() - t0
                    mlgpf = isinstance(est, MLGPFClassifier)
                    log.append({"size": size, "seed": seed, "method": method,
                                **_score(Yt, est.predict_topk(Xt, 5), est.predict_proba(Xt)),
                                "epochs": est.n_iter_ if mlgpf else 0,
                                "best epoch": (est.best_epoch_ or 0) if mlgpf else 0, "fit s": seconds})
        runs = log.rows
        exp.table("runs", runs, floatfmt=".2f")
        exp.table("summary", summary(runs), floatfmt=".2f")


if __name__ == "__main__":
    main()
