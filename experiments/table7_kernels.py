"""Paper Table 7: MLGPF with LR, SE and SE-F (Z fixed at random training points) kernels.

P@1/3/5 (percent), mean ± std over seeds, on the shared datasets (Bibtex and Delicious by
default), with the paper's Table 2 sizes. The paper's Table 7 figures are not stored in this
repository, so the table shows ours only.

The tables are rewritten after every finished run, so an interrupted run keeps what it finished.
Runs made separately (one variant per process, or on several machines) are merged with
``--collect``, which reads their ``table7_runs.csv`` and ``elbo_traces.csv`` and trains nothing.

    python experiments/table7_kernels.py --seeds 0,1,2 --epochs 30
    python experiments/table7_kernels.py --variants LR --out results_lr ...
    python experiments/table7_kernels.py --collect results_lr results_se --out merged
    python experiments/table7_kernels.py --quick
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

VARIANTS = {"LR": dict(kernel="linear"), "SE": dict(kernel="se"), "SE-F": dict(kernel="se", fixed_inducing=True)}
RUN_COLUMNS = ["dataset", "variant", "seed", "epochs", "P@1", "P@3", "P@5", "train_s"]


def aggregate(runs: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, variant): number of runs, epochs, and mean/std of P@1/3/5 and training seconds.

    ``std`` is the sample standard deviation over runs (NaN for a single run). ``epochs`` lists
    the distinct epoch counts of the runs (e.g. ``"50"`` or ``"20/50"`` when they differ); ``train_s``
    is a run's training seconds summed over its epochs (also those of earlier, checkpointed sessions).
    """
    keys = ["dataset", "variant"]
    values = runs[["P@1", "P@3", "P@5", "train_s"]].groupby([runs[k] for k in keys])
    agg = values.agg(["mean", "std"])
    agg.columns = [" ".join(c) for c in agg.columns]
    groups = runs.groupby(keys)
    agg.insert(0, "runs", groups.size())
    agg.insert(1, "epochs", groups["epochs"].agg(lambda e: "/".join(str(int(v)) for v in sorted(set(e)))))
    return agg.reset_index()


def write_results(exp, runs: pd.DataFrame, traces: pd.DataFrame) -> None:
    """Write the per-run table, the aggregate, the traces and one trace figure per dataset."""
    from mlgp.experiment import plot_traces

    exp.table("table7_runs", runs)
    exp.table("table7_kernels", aggregate(runs))
    exp.table("elbo_traces", traces, show=False)
    for name, g in traces.groupby("dataset"):
        # Fig. 1-style: SE (Z optimised) against SE-F (Z fixed), beside LR
        title = f"MLGPF on {name}: LR, SE (Z optimised), SE-F (Z fixed)"
        exp.figure(f"elbo_traces_{name}", plot_traces(g, ["variant", "seed"], title=title))


def read_run_folder(folder: Path) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """``table7_runs.csv``, ``elbo_traces.csv`` and the ``run.json`` record of a finished run folder."""
    folder = Path(folder)
    needed = [folder / "table7_runs.csv", folder / "elbo_traces.csv"]
    missing = [str(p) for p in needed if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"--collect: {folder} is not a table7_kernels results folder (missing {', '.join(missing)})")
    runs = pd.read_csv(needed[0])
    record = json.loads((folder / "run.json").read_text()) if (folder / "run.json").is_file() else {}
    if "epochs" not in runs.columns and "epochs" in record.get("settings", {}):
        # folders written before the per-run epochs column: every run there had the same epochs
        runs.insert(3, "epochs", int(record["settings"]["epochs"]))
    absent = [c for c in RUN_COLUMNS if c not in runs.columns]
    if absent:
        raise ValueError(f"--collect: {needed[0]} lacks the columns {absent}")
    return runs, pd.read_csv(needed[1]), record


def collect(folders: list[Path], out: Path | None) -> None:
    """Merge the results of separate runs into one Table 7 (no training)."""
    from mlgp.experiment import Experiment

    parts = [read_run_folder(f) for f in folders]
    runs = pd.concat([p[0] for p in parts], ignore_index=True)
    dup = runs.duplicated(["dataset", "variant", "seed"], keep=False)
    if dup.any():
        raise ValueError(f"--collect: the same (dataset, variant, seed) appears in more than one run:\n{runs[dup]}")
    traces = pd.concat([p[1] for p in parts], ignore_index=True)
    sources = []
    for f, (_, _, rec) in zip(folders, parts):
        sources.append(dict(folder=str(f), **{k: rec.get(k) for k in ("settings", "command", "wall_seconds", "status")}))
        if rec.get("status") != "ok":
            print(f"[table7_kernels] warning: {f} has no finished run record (status {rec.get('status', 'absent')}); using the runs it finished", flush=True)
    seeds = sorted(int(s) for s in runs["seed"].unique())
    with Experiment("table7_kernels", settings=dict(collected=[str(f) for f in folders]), seeds=seeds, out=out) as exp:
        exp.note("sources", sources)
        write_results(exp, runs, traces)


def main(argv: list[str] | None = None) -> None:
    from mlgp.experiment import add_argparse_args, add_training_args, choice_list

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_argparse_args(parser)
    parser.add_argument("--datasets", default=None, help="comma-separated (default: bibtex,delicious; bibtex with --quick)")
    parser.add_argument("--variants", default="LR,SE,SE-F")
    parser.add_argument("--collect", nargs="+", type=Path, metavar="DIR", help="merge finished run folders instead of training")
    add_training_args(parser)
    args = parser.parse_args(argv)
    args.datasets = args.datasets or ("bibtex" if args.quick else "bibtex,delicious")
    if args.collect:
        collect(args.collect, args.out)
        return
    choice_list(parser, args.variants, sorted(VARIANTS), "variant")
    train_all(args)


def train_all(args: argparse.Namespace) -> None:
    """Train every (dataset, variant, seed) and rewrite the tables after each run."""
    import mlgp.data
    from mlgp.experiment import Experiment, run_checkpoint_dir, training_options
    from mlgp.recipes import train_mlgpf

    seeds = args.seeds or [0]
    train = training_options(args)
    settings = dict(datasets=args.datasets, variants=args.variants, **train, checkpoint_dir=args.checkpoint_dir)
    with Experiment("table7_kernels", quick=args.quick, settings=settings, seeds=seeds, out=args.out) as exp:
        rows, traces = [], []
        for name in args.datasets.split(","):
            ds = mlgp.data.load(name)
            for variant in args.variants.split(","):
                for seed in seeds:
                    ckpt = run_checkpoint_dir(args, name, variant, f"seed{seed}")
                    run = train_mlgpf(ds, seed=seed, progress=not args.quick, checkpoint_dir=ckpt, **train, **VARIANTS[variant])
                    p = run.metrics.loc["P"]
                    tr = run.trace.copy()
                    tr["dataset"], tr["variant"], tr["seed"] = name, variant, seed
                    traces.append(tr)
                    pk = {f"P@{k}": float(v) for k, v in zip((1, 3, 5), p.values)}
                    rows.append(dict(dataset=name, variant=variant, seed=seed, epochs=train["epochs"], **pk, train_s=run.seconds["epochs"]))
                    print(rows[-1], flush=True)
                    write_results(exp, pd.DataFrame(rows, columns=RUN_COLUMNS), pd.concat(traces, ignore_index=True))


if __name__ == "__main__":
    main()
