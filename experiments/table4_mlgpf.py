"""Paper Tables 4–6, MLGPF columns: SE+LR (and SE) on Bibtex and Delicious.

Trains MLGPF with the paper's Table 2 settings (Bibtex P=159, M=400; Delicious P=300, M=400) and
prints P@k, PSP@k, nDCG@k and PSnDCG@k (k = 1, 3, 5, in percent) beside the paper's numbers with
the difference. Test rows without labels are KEPT in every mean (pyxclib convention; Delicious has
such rows, and the authors' script drops them, which raises their figures slightly).

    python experiments/table4_mlgpf.py                  # full run (long: see --epochs)
    python experiments/table4_mlgpf.py --quick          # CI smoke test on a subset
"""

from __future__ import annotations

import argparse

import pandas as pd

#: Paper Table 4 (P@k) — the figures the issue quotes; other tables' numbers are not stored here.
PUBLISHED_P = {
    ("bibtex", "se+linear"): (66.51, 41.12, 30.34),
    ("bibtex", "se"): (66.46, 41.05, 30.26),
    ("delicious", "se+linear"): (69.09, 63.27, 58.61),
}
# the authors' own form of SE+LR (one ARD vector shared by both parts) is the paper's SE+LR
PUBLISHED_P.update({(d, "se+linear-shared"): v for (d, k), v in list(PUBLISHED_P.items()) if k == "se+linear"})


def tidy(run, dataset: str, kernel: str, seed: int) -> pd.DataFrame:
    """Long-form rows (dataset, kernel, seed, metric, k, ours %) from a run's metric table."""
    rows = []
    for metric, row in run.metrics.iterrows():
        for k, v in row.items():
            rows.append(dict(dataset=dataset, kernel=kernel, seed=seed, metric=str(metric), k=int(str(k).lstrip("k=@")), ours=float(v)))
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> None:
    import mlgp.data
    from mlgp.experiment import Experiment, add_argparse_args, add_training_args, plot_traces, run_checkpoint_dir, training_options
    from mlgp.recipes import train_mlgpf

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_argparse_args(parser)
    parser.add_argument("--datasets", default=None, help="comma-separated (default: bibtex,delicious; bibtex with --quick)")
    parser.add_argument("--kernels", default="se+linear,se")
    add_training_args(parser)
    args = parser.parse_args(argv)
    args.datasets = args.datasets or ("bibtex" if args.quick else "bibtex,delicious")
    seeds = args.seeds or [0]
    train = training_options(args)
    settings = dict(datasets=args.datasets, kernels=args.kernels, **train, negatives=None, checkpoint_dir=args.checkpoint_dir)
    with Experiment("table4_mlgpf", quick=args.quick, settings=settings, seeds=seeds, out=args.out) as exp:
        frames, traces, empty_rows = [], [], {}
        for name in args.datasets.split(","):
            ds = mlgp.data.load(name)
            empty_rows[name] = int((ds.test.Y.getnnz(axis=1) == 0).sum())
            for kernel in args.kernels.split(","):
                for seed in seeds:
                    ckpt = run_checkpoint_dir(args, name, kernel, f"seed{seed}")
                    run = train_mlgpf(ds, kernel=kernel, seed=seed, progress=not args.quick, checkpoint_dir=ckpt, **train)
                    frames.append(tidy(run, name, kernel, seed))
                    tr = run.trace.copy()
                    tr["dataset"], tr["kernel"], tr["seed"] = name, kernel, seed
                    traces.append(tr)
                    print(f"{name} {kernel} seed={seed}: train {run.seconds['epochs']:.0f}s over {len(run.trace)} epochs\n{run.metrics.round(2).to_string()}", flush=True)
        long = pd.concat(frames, ignore_index=True)
        summary = long.groupby(["dataset", "kernel", "metric", "k"])["ours"].agg(["mean", "std", "count"]).reset_index()
        pub = []
        for (d, kern), vals in PUBLISHED_P.items():
            for k, v in zip((1, 3, 5), vals):
                pub.append(dict(dataset=d, kernel=kern, metric="P", k=k, paper=v))
        summary = summary.merge(pd.DataFrame(pub), how="left", on=["dataset", "kernel", "metric", "k"])
        summary["difference"] = summary["mean"] - summary["paper"]
        summary["test rows without labels (kept)"] = summary["dataset"].map(empty_rows)
        exp.note("test rows without labels", "kept in every mean (pyxclib convention); the authors' script drops them")
        exp.table("table4_mlgpf", summary)
        traces = pd.concat(traces, ignore_index=True)
        exp.table("elbo_traces", traces)
        exp.figure("elbo_traces", plot_traces(traces, ["dataset", "kernel", "seed"], title="MLGPF training traces"))


if __name__ == "__main__":
    main()
