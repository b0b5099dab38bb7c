"""GenEML's online EM against batch EM on Bibtex, Delicious and Enron: test P@1/3/5, and what the
final streamed batch pass (``final_passes=1``) adds to the blended epochs.

Settings as ``geneml_benchmarks.py`` (rows L2-normalised, k = 100, λ = 1, 20 iterations or epochs,
minibatches of 1,000 rows). Online EM records test P@k after every epoch and after its final pass
(``validation=``, outside the timed steps), so one fit gives both "epochs only" and "with the final
pass". Writes ``runs.csv`` (resumable; ``--fresh`` starts over) and the table ``online_em``.

    python experiments/geneml_online_em.py
    python experiments/geneml_online_em.py --datasets enron --quick
"""

from __future__ import annotations

import argparse
import time

SETTINGS = dict(n_components=100, max_iter=20, batch_size=1000, normalize_rows=True, carry_local=True, tol=None)
QUICK = dict(n_components=3, max_iter=2, batch_size=100, max_train=300)
COLUMNS = ["dataset", "method", "seed", "P@1", "P@3", "P@5", "P@1 epochs only", "fit s", "median s per epoch",
           "final pass s"]
CURVE_COLUMNS = ["dataset", "method", "seed", "epoch", "final", "P@1"]


def main(argv: list[str] | None = None) -> None:
    from mlgp.experiment import add_argparse_args

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_argparse_args(parser)
    parser.add_argument("--datasets", default=None, help="default bibtex,enron,delicious (enron with --quick)")
    parser.add_argument("--fresh", action="store_true", help="discard the stored fits and start over")
    args = parser.parse_args(argv)
    run(args, args.datasets or ("enron" if args.quick else "bibtex,enron,delicious"))


def run(args: argparse.Namespace, datasets: str) -> None:
    import numpy as np

    import mlgp.data
    from mlgp.experiment import Experiment, RunLog
    from mlgp.geneml import GenEML
    from mlgp.metrics import evaluate

    s = dict(SETTINGS, **(QUICK if args.quick else {}))
    max_train = s.pop("max_train", None)
    seeds = list(args.seeds) if args.seeds else [0]
    with Experiment("geneml_online_em", quick=args.quick, settings=s, seeds=seeds, out=args.out) as exp:
        log = RunLog(exp.folder, "runs", COLUMNS, ["dataset", "method", "seed"], dict(s, max_train=max_train), args.fresh)
        curves = RunLog(exp.folder, "curves", CURVE_COLUMNS, ["dataset", "method", "seed", "epoch"],
                        dict(s, max_train=max_train), args.fresh)
        for name in datasets.split(","):
            ds = mlgp.data.load(name)
            Xtr, Ytr, Xte, Yte = ds.train.X[:max_train], ds.train.Y[:max_train], ds.test.X, ds.test.Y
            for seed in seeds:
                for method in ("em", "online-em"):
                    if log.done(name, method, seed):
                        continue
                    est = GenEML(inference=method, n_jobs=1, random_state=seed, **s)
                    t = time.perf_counter()
                    est.fit(Xtr, Ytr, validation=(Xte, Yte))
                    seconds = time.perf_counter() - t
                    p = evaluate(Yte, est.predict_topk(Xte, 5), ks=[1, 3, 5])
                    trace = est.trace_
                    final = trace["final"] if "final" in trace else np.zeros(len(trace), dtype=bool)
                    for _, row in trace.iterrows():
                        curves.append(dict(dataset=name, method=method, seed=seed, epoch=int(row["epoch" if "epoch" in trace else "iteration"]),
                                           final=bool(final[_]), **{"P@1": float(row["P@1"])}))
                    regular = trace[~final]
                    log.append({"dataset": name, "method": method, "seed": seed, "P@1": float(p.loc["P", 1]),
                                "P@3": float(p.loc["P", 3]), "P@5": float(p.loc["P", 5]),
                                "P@1 epochs only": float(regular["P@1"].iloc[-1]) if method == "online-em" else np.nan,
                                "fit s": seconds, "median s per epoch": float(regular["seconds"].median()),
                                "final pass s": float(trace.loc[final, "seconds"].sum()) if method == "online-em"
                                else np.nan})
        table = log.rows.drop(columns="seed").groupby(["dataset", "method"], sort=False).mean().reset_index()
        table.insert(2, "seeds", log.rows.groupby(["dataset", "method"], sort=False).size().to_numpy())
        exp.table("online_em", table)
        _plot(exp, curves.rows)


def _plot(exp, curves) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(curves["dataset"]))
    fig, axes = plt.subplots(1, max(len(names), 1), figsize=(4.2 * max(len(names), 1), 3.6), squeeze=False)
    for ax, name in zip(axes[0], names):
        for (method, seed), rows in curves[curves["dataset"] == name].groupby(["method", "seed"], sort=False):
            ax.plot(rows["epoch"], rows["P@1"], marker="." if method == "em" else "x", lw=1,
                    label=f"{method} (seed {seed})")
        ax.set(title=name, xlabel="iteration / epoch (the final pass last)", ylabel="test P@1")
    axes[0][0].legend(fontsize=7)
    exp.figure("curves", fig)


if __name__ == "__main__":
    main()
