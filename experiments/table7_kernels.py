"""Paper Table 7: MLGPF with LR, SE and SE-F (Z fixed at random training points) kernels.

P@1/3/5 (percent), mean ± std over seeds, on the shared datasets (Bibtex and Delicious by
default), with the paper's Table 2 sizes. The paper's Table 7 figures are not stored in this
repository, so the table shows ours only.

    python experiments/table7_kernels.py --seeds 0,1,2 --epochs 30
    python experiments/table7_kernels.py --quick
"""

from __future__ import annotations

import argparse

import pandas as pd

VARIANTS = {"LR": dict(kernel="linear"), "SE": dict(kernel="se"), "SE-F": dict(kernel="se", fixed_inducing=True)}


def main(argv: list[str] | None = None) -> None:
    import mlgp.data
    from mlgp.experiment import QUICK_SIZES, Experiment, add_argparse_args, add_training_args, plot_traces, training_options
    from mlgp.recipes import train_mlgpf

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_argparse_args(parser)
    parser.add_argument("--datasets", default="bibtex,delicious")
    parser.add_argument("--variants", default="LR,SE,SE-F")
    add_training_args(parser)
    args = parser.parse_args(argv)
    seeds = args.seeds or [0]
    train = training_options(args)
    settings = dict(datasets=args.datasets, variants=args.variants, **train)
    with Experiment("table7_kernels", quick=args.quick, settings=settings, seeds=seeds, out=args.out) as exp:
        rows, traces = [], []
        for name in args.datasets.split(","):
            ds = mlgp.data.load(name)
            for variant in args.variants.split(","):
                for seed in seeds:
                    kw = QUICK_SIZES if args.quick else {}
                    run = train_mlgpf(ds, seed=seed, progress=not args.quick, **train, **VARIANTS[variant], **kw)
                    p = run.metrics.loc["P"]
                    tr = run.trace.copy()
                    tr["dataset"], tr["variant"], tr["seed"] = name, variant, seed
                    traces.append(tr)
                    rows.append(dict(dataset=name, variant=variant, seed=seed, **{f"P@{k}": float(v) for k, v in zip((1, 3, 5), p.values)}, train_s=run.seconds["train"]))
                    print(rows[-1], flush=True)
        df = pd.DataFrame(rows)
        agg = df.drop(columns="seed").groupby(["dataset", "variant"]).agg(["mean", "std"])
        agg.columns = [" ".join(c) for c in agg.columns]
        agg.insert(0, "runs", df.groupby(["dataset", "variant"]).size())
        agg.insert(1, "epochs", train["epochs"])
        exp.table("table7_runs", df)
        exp.table("table7_kernels", agg.reset_index())
        tr = pd.concat(traces, ignore_index=True)
        exp.table("elbo_traces", tr, show=False)
        for name, g in tr.groupby("dataset"):
            # Fig. 1-style: SE (Z optimised) against SE-F (Z fixed), beside LR
            title = f"MLGPF on {name}: LR, SE (Z optimised), SE-F (Z fixed)"
            exp.figure(f"elbo_traces_{name}", plot_traces(g, ["variant", "seed"], title=title))


if __name__ == "__main__":
    main()
