"""Paper Table 7: MLGPF with LR, SE and SE-F (Z fixed at random training points) kernels.

P@1/3/5 (percent), mean ± std over seeds, on the shared datasets (Bibtex and Delicious by
default), with the paper's Table 2 sizes. The paper's Table 7 figures are not stored in this
repository, so the table shows ours only.

    python experiments/table7_kernels.py --seeds 0 1 2 --epochs 30
    python experiments/table7_kernels.py --quick
"""

from __future__ import annotations

import argparse

import pandas as pd

VARIANTS = {"LR": dict(kernel="linear"), "SE": dict(kernel="se"), "SE-F": dict(kernel="se", fixed_inducing=True)}


def main(argv: list[str] | None = None) -> None:
    import mlgp.data
    from mlgp.experiment import Experiment, add_argparse_args
    from mlgp.recipes import train_mlgpf

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_argparse_args(parser)
    parser.add_argument("--datasets", default="bibtex,delicious")
    parser.add_argument("--variants", default="LR,SE,SE-F")
    parser.add_argument("--epochs", type=int, default=None)
    parser.add_argument("--batch-size", type=int, default=None)
    args = parser.parse_args(argv)
    seeds = args.seeds or [0]
    epochs = args.epochs or (1 if args.quick else 30)
    batch = args.batch_size or (200 if args.quick else 500)
    settings = dict(datasets=args.datasets, variants=args.variants, epochs=epochs, batch_size=batch, learning_rate=0.005)
    with Experiment("table7_kernels", quick=args.quick, settings=settings, seeds=seeds, out=args.out) as exp:
        rows = []
        for name in args.datasets.split(","):
            ds = mlgp.data.load(name)
            for variant in args.variants.split(","):
                for seed in seeds:
                    kw = dict(num_latent_gps=8, num_inducing=20, max_train=300) if args.quick else {}
                    run = train_mlgpf(ds, epochs=epochs, batch_size=batch, seed=seed, progress=not args.quick, **VARIANTS[variant], **kw)
                    p = run.metrics.loc["P"]
                    rows.append(dict(dataset=name, variant=variant, seed=seed, **{f"P@{k}": float(v) for k, v in zip((1, 3, 5), p.values)}, train_s=run.seconds["train"]))
                    print(rows[-1], flush=True)
        df = pd.DataFrame(rows)
        agg = df.groupby(["dataset", "variant"]).agg(["mean", "std", "count"])
        agg.columns = [" ".join(c) for c in agg.columns]
        exp.table("table7_runs", df)
        exp.table("table7_kernels", agg.reset_index())


if __name__ == "__main__":
    main()
