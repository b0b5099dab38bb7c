"""FastXML's Fig. 1(a): test P@5 against the number of trees (1 to T), trees added in random order.

One ensemble of T trees (the paper's defaults, seed = the first ``--seeds`` value) per data set;
every point's leaf in every tree is found once (``forest_.leaves``), then for each of ``--orders``
random tree orders the leaf distributions are summed one tree at a time and P@1/3/5 of the
first t trees is recorded (averaging over trees does not change a ranking, so the sums rank as the
means). After the last tree each order's sums / T are checked against the model's own
``decision_function`` (to 1e-12); its P@k can still differ in the second decimal from
``predict_topk``'s, where rounding breaks exact ties between labels differently. The figure
shows the mean over orders with its min–max band; the paper's curves have no readable numbers.

    python experiments/fig1_fastxml_trees.py                  # bibtex, delicious; 50 trees, 5 orders
    python experiments/fig1_fastxml_trees.py --quick          # enron, 4 trees, 2 orders
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

NAME = "fig1_fastxml_trees"


def curves(est, X, Y, orders: int, seed: int) -> pd.DataFrame:
    """P@1/3/5 after each of the first t trees, for ``orders`` random tree orders: a long table
    (order, trees, P@1, P@3, P@5) in percent. After all T trees, each order's sums / T must equal
    the model's ``decision_function`` (to 1e-12): a ``RuntimeError`` otherwise."""
    import scipy.sparse as sp

    from mlgp.metrics import precision_at_k
    from mlgp.scores import topk

    forest = est.forest_
    leaves = forest.leaves(sp.csr_matrix(X, dtype=np.float64))
    n, T = leaves.shape
    rng = np.random.default_rng(seed)
    reference = est.decision_function(X)
    rows = []
    for o in range(orders):
        total = sp.csr_matrix((n, forest.leaf_labels.shape[1]))
        for t, tree in enumerate(rng.permutation(T), start=1):
            A = sp.csr_matrix((np.ones(n), leaves[:, tree], np.arange(n + 1)), shape=(n, forest.leaf_labels.shape[0]))
            total = total + A @ forest.leaf_labels
            top = topk(total, 5)
            rows.append(dict(order=o, trees=t, **{f"P@{k}": 100 * precision_at_k(Y, top, k) for k in (1, 3, 5)}))
        gap = np.abs(total.toarray() / T - reference).max()
        if gap > 1e-12:
            raise RuntimeError(f"order {o}: the summed leaf distributions / T differ from decision_function by {gap}")
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> None:
    from mlgp.experiment import add_argparse_args
    from mlgp.experiment.fastxml import add_ensemble_args, ensemble_options

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_argparse_args(parser)
    add_ensemble_args(parser, "bibtex,delicious", quick_trees=4)
    parser.add_argument("--orders", type=int, default=None, help="random tree orders (default 5; --quick: 2)")
    args = parser.parse_args(argv)
    args.datasets, args.trees, args.n_jobs = ensemble_options(args, parser)
    run(args)


def run(args: argparse.Namespace) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import mlgp.data
    from mlgp.experiment import Experiment
    from mlgp.experiment.fastxml import PAPER_TABLE2, fit_and_score
    from mlgp.metrics import precision_at_k

    datasets, trees = args.datasets, args.trees
    orders = args.orders or (2 if args.quick else 5)
    seed = (args.seeds or [0])[0]
    exp = Experiment(NAME, quick=args.quick, settings=dict(datasets=datasets, trees=trees, orders=orders,
                                                           n_jobs=args.n_jobs, solver=args.solver), seeds=[seed],
                     out=args.out)
    with exp:
        frames = []
        for name in datasets:
            ds = mlgp.data.load(name)
            est, row = fit_and_score("FastXML", ds, seed, trees, args.n_jobs, solver=args.solver)
            c = curves(est, ds.test.X, ds.test.Y, orders, seed)
            own = 100 * precision_at_k(ds.test.Y, est.predict_topk(ds.test.X, 5), 5)
            c.insert(0, "dataset", name)
            frames.append(c)
            print(f"[{NAME}] {name}: P@5 with 1 tree {c[c['trees'] == 1]['P@5'].mean():.2f}, "
                  f"{trees // 2} trees {c[c['trees'] == trees // 2]['P@5'].mean():.2f}, {trees} trees {own:.2f}; "
                  f"fit {row['fit_seconds']:.1f} s", flush=True)
        long = pd.concat(frames, ignore_index=True)
        exp.table("fastxml_trees_runs", long, show=False)
        summary = long.groupby(["dataset", "trees"], sort=False).agg(
            **{"P@5 mean": ("P@5", "mean"), "P@5 min": ("P@5", "min"), "P@5 max": ("P@5", "max"),
               "P@1 mean": ("P@1", "mean"), "P@3 mean": ("P@3", "mean")}).reset_index()
        marks = sorted({1, 2, 5, 10, 25, trees} & set(range(1, trees + 1)))
        exp.table("fig1_fastxml_trees", summary[summary["trees"].isin(marks)])
        fig, axes = plt.subplots(1, len(datasets), figsize=(4.5 * len(datasets), 3.4), squeeze=False)
        for ax, name in zip(axes[0], datasets):
            s = summary[summary["dataset"] == name]
            ax.fill_between(s["trees"], s["P@5 min"], s["P@5 max"], alpha=0.25, label=f"min–max over {orders} orders")
            ax.plot(s["trees"], s["P@5 mean"], marker=".", label="mean")
            if name in PAPER_TABLE2:
                ax.axhline(PAPER_TABLE2[name][0][2], color="gray", ls="--", lw=1, label="paper, 50 trees")
            ax.set(title=name, xlabel="number of trees (random order)", ylabel="test P@5 (%)")
            ax.legend(fontsize=7)
        exp.figure("fig1_fastxml_trees", fig)


if __name__ == "__main__":
    main()
