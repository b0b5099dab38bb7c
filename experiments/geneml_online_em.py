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

SETTINGS = dict(n_components=100, max_iter=20, batch_size=1000, normalize_rows=True)
QUICK = dict(n_components=3, max_iter=2, batch_size=100, max_train=300)
COLUMNS = ["dataset", "method", "P@1", "P@3", "P@5", "P@1 epochs only", "fit s", "median s per epoch",
           "final pass s"]


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
    with Experiment("geneml_online_em", quick=args.quick, settings=s, seeds=[0], out=args.out) as exp:
        log = RunLog(exp.folder, "runs", COLUMNS, ["dataset", "method"], dict(s, max_train=max_train), args.fresh)
        for name in datasets.split(","):
            ds = mlgp.data.load(name)
            Xtr, Ytr, Xte, Yte = ds.train.X[:max_train], ds.train.Y[:max_train], ds.test.X, ds.test.Y
            for method in ("em", "online-em"):
                if log.done(name, method):
                    continue
                est = GenEML(inference=method, n_jobs=1, random_state=0, **s)
                t = time.perf_counter()
                est.fit(Xtr, Ytr, validation=(Xte, Yte))
                seconds = time.perf_counter() - t
                p = evaluate(Yte, est.predict_topk(Xte, 5), ks=[1, 3, 5])
                trace = est.trace_
                regular = trace[~trace["final"]] if "final" in trace else trace
                log.append({"dataset": name, "method": method, "P@1": float(p.loc["P", 1]), "P@3": float(p.loc["P", 3]),
                            "P@5": float(p.loc["P", 5]),
                            "P@1 epochs only": float(regular["P@1"].iloc[-1]) if method == "online-em" else np.nan,
                            "fit s": seconds, "median s per epoch": float(regular["seconds"].median()),
                            "final pass s": float(trace.loc[trace["final"], "seconds"].sum()) if method == "online-em"
                            else np.nan})
        exp.table("online_em", log.rows)


if __name__ == "__main__":
    main()
