"""Paper Fig. 1-style ELBO traces: inducing inputs fixed vs optimised (SE kernel, Bibtex).

Trains MLGPF twice with identical seeds — once with Z fixed at random training points (SE-F),
once with Z optimised after k-means initialisation (SE) — and saves the per-epoch ELBO traces as
CSV and a PNG plot.

    python experiments/fig1_elbo_traces.py --epochs 30
    python experiments/fig1_elbo_traces.py --quick
"""

from __future__ import annotations

import argparse

import pandas as pd


def main(argv: list[str] | None = None) -> None:
    import mlgp.data
    from mlgp.experiment import Experiment, add_argparse_args, add_training_args, plot_traces, run_checkpoint_dir, training_options
    from mlgp.recipes import train_mlgpf

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_argparse_args(parser)
    parser.add_argument("--dataset", default="bibtex")
    add_training_args(parser, quick_epochs=2)
    args = parser.parse_args(argv)
    seed = (args.seeds or [0])[0]
    train = training_options(args)
    settings = dict(dataset=args.dataset, kernel="se", **train, checkpoint_dir=args.checkpoint_dir)
    with Experiment("fig1_elbo_traces", quick=args.quick, settings=settings, seeds=[seed], out=args.out) as exp:
        ds = mlgp.data.load(args.dataset)
        traces = []
        for label, fixed in (("Z optimised", False), ("Z fixed", True)):
            ckpt = run_checkpoint_dir(args, args.dataset, "se", "fixed" if fixed else "optimised", f"seed{seed}")
            run = train_mlgpf(ds, kernel="se", fixed_inducing=fixed, seed=seed, progress=not args.quick, checkpoint_dir=ckpt, **train)
            cols = ["epoch", "elbo"] + (["P@1"] if "P@1" in run.trace else [])
            tr = run.trace[cols].copy()
            tr["inducing"] = label
            tr["final test P@1"] = float(run.metrics.loc["P"].iloc[0])
            traces.append(tr)
        df = pd.concat(traces, ignore_index=True)
        exp.table("elbo_traces", df)
        fig = plot_traces(df, ["inducing"], title=f"MLGPF (SE) on {args.dataset}: inducing inputs fixed vs optimised")
        exp.figure("elbo_traces", fig)


if __name__ == "__main__":
    main()
