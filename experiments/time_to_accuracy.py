"""Time to accuracy of MLGPF: q(u) family × optimizer × precision × batch schedule × initialisation.

For each data set and each combination (:data:`COMBOS`), one training run of the paper's sizes
(SE+LR kernel unless the combination names another; Bibtex P = 159, M = 400; Delicious P = 300, M = 400) for at most ``--budget``
seconds of training, with the test split scored after every epoch (outside the timed steps). The
tables give, per run, the training seconds until test P@1 first reaches each level (Bibtex 59, 62,
63.5, 64; Delicious 65, 67, 68; blank if never), the best P@1/3/5 and PSP@1/3/5 reached, the final
ELBO, the seconds per epoch and the run's peak resident memory. ``time_to_accuracy_<data>.png``
plots test P@1 and the ELBO against training seconds, one line per combination.

Every run is a child process (so its peak memory is its own, measured by ``wait4``; ``--quick``
runs in this process instead); all run one after another on the same machine, so their times are
comparable. Each run checkpoints every few
epochs and its per-epoch trace is written as it goes: an interrupted invocation resumes where it
stopped, and finished runs are not repeated.

    python experiments/time_to_accuracy.py                          # Bibtex, every combination
    python experiments/time_to_accuracy.py --datasets delicious --combos paper,fast --budget 900
    python experiments/time_to_accuracy.py --quick                  # CI smoke test (tiny subset)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from mlgp.files import atomic_write_text

#: The combinations measured: arguments of :func:`mlgp.recipes.train_mlgpf`.
COMBOS: dict[str, dict] = {
    # the paper's recipe: non-whitened q(u), Adam at the paper's step, the authors' growing batch
    "paper": dict(q_family="cholesky", optimizer="adam", learning_rate=0.005, batch_size=100, batch_growth="paper",
                  dtype="float64", warm_start=False),
    # the whitened form of the same recipe (the README's 100-epoch Bibtex runs)
    "today": dict(q_family="whitened", optimizer="adam", learning_rate=0.005, batch_size=100, batch_growth="paper",
                  dtype="float64", warm_start=False),
    "whitened-lr0.01": dict(q_family="whitened", optimizer="adam", learning_rate=0.01, batch_size=100,
                            dtype="float64", warm_start=False),
    "whitened-lr0.01-f32": dict(q_family="whitened", optimizer="adam", learning_rate=0.01, batch_size=100,
                                dtype="float32", warm_start=False),
    "whitened-lr0.01-f32-warm": dict(q_family="whitened", optimizer="adam", learning_rate=0.01, batch_size=100,
                                     dtype="float32", warm_start=True),
    "whitened-b500-f32-warm": dict(q_family="whitened", optimizer="adam", learning_rate=0.01, batch_size=500,
                                   dtype="float32", warm_start=True),
    "whitened-b500-f32-warm-lr0.005": dict(q_family="whitened", optimizer="adam", learning_rate=0.005, batch_size=500,
                                           dtype="float32", warm_start=True),
    "precond-b500-f32-warm": dict(q_family="preconditioned", optimizer="adam", learning_rate=0.01, batch_size=500,
                                  dtype="float32", warm_start=True),
    "precond-lr0.01-f32": dict(q_family="preconditioned", optimizer="adam", learning_rate=0.01, batch_size=500,
                               dtype="float32", warm_start=False),
    "whitened-natgrad": dict(q_family="whitened", optimizer="natgrad", learning_rate=0.01, batch_size=1000,
                             natgrad_gamma=(0.05, 0.2, 10), dtype="float64", warm_start=False),
}
# natural gradients on q(u) beside the default recipe (whitened, batch 500, float32, warm start):
# both Cholesky families, with the default γ ramp (0.01 → 0.1 over 100 steps) and a faster one (-g0.5)
COMBOS.update({
    f"natgrad-{family}-b500-f32-warm{suffix}": dict(q_family=family, optimizer="natgrad", learning_rate=0.005,
                                                     batch_size=500, natgrad_gamma=gamma, dtype="float32",
                                                     warm_start=True)
    for family in ("whitened", "cholesky")
    for suffix, gamma in (("", (0.01, 0.1, 100)), ("-g0.5", (0.05, 0.5, 20)))
})
# every combination above trains the P factors from the first step (covariance_warmup=0, as before the
# warm-up existed); "tied-…" is the default recipe, the factors tied for the whole run
for _options in COMBOS.values():
    _options["covariance_warmup"] = 0
COMBOS["tied-b500-f32-warm-lr0.005"] = dict(COMBOS["whitened-b500-f32-warm-lr0.005"], covariance_warmup="all")
# the estimator's default kernel: SE + linear with one ARD scale vector shared by both parts
COMBOS["tied-shared-b500-f32-warm-lr0.005"] = dict(COMBOS["tied-b500-f32-warm-lr0.005"], kernel="se+linear-shared")
LEVELS = {"bibtex": (59.0, 62.0, 63.5, 64.0), "delicious": (65.0, 67.0, 68.0)}
KS = (1, 3, 5)


# ----------------------------------------------------------------------------- one run (child process)
def run_one(dataset_name: str, combo: str, budget: float, folder: Path, seed: int, quick: bool) -> None:
    """Train one combination, appending each epoch's test metrics to ``<folder>/<dataset>__<combo>.csv``."""
    import tensorflow as tf

    from mlgp.data import load as load_dataset
    from mlgp.metrics import evaluate
    from mlgp.recipes import MLGPFClassifier, train_mlgpf

    ds = load_dataset(dataset_name)
    options = dict(COMBOS[combo])
    sizes = {}
    if quick:
        sizes = dict(num_latent_gps=min(10, ds.num_labels), num_inducing=20, max_train=300)
    trace_file = folder / f"{dataset_name}__{combo}.csv"
    ckpt = folder / "checkpoints" / f"{dataset_name}__{combo}"
    restored = 0
    latest = tf.train.latest_checkpoint(str(ckpt)) if ckpt.is_dir() else None
    if latest:
        restored = int(latest.rsplit("-", 1)[1])
    rows = pd.read_csv(trace_file).to_dict("records") if trace_file.is_file() else []
    rows = [r for r in rows if r["epoch"] <= restored]
    Xte, Yte = ds.test.X, ds.test.Y  # raw rows: the recipe's model normalises them
    inv_prop = ds.inverse_propensity()
    t_start = time.perf_counter()
    trained = float(sum(r["seconds"] for r in rows))

    def callback(epoch: int, model, row: dict) -> None:
        nonlocal trained
        trained += row["seconds"]
        t0 = time.perf_counter()
        scores = MLGPFClassifier.from_model(model).predict_topk(Xte, 5)
        table = evaluate(Yte, scores, ks=KS, inv_propensity=inv_prop, percent=True)
        out = dict(epoch=epoch, seconds=row["seconds"], train_seconds=trained, elbo=row["elbo"], kl=row["kl"],
                   batch_size=row["batch_size"], eval_seconds=time.perf_counter() - t0,
                   wall_seconds=time.perf_counter() - t_start)
        out.update({f"P@{k}": table.loc["P", k] for k in KS})
        out.update({f"PSP@{k}": table.loc["PSP", k] for k in KS})
        rows.append(out)
        atomic_write_text(trace_file, pd.DataFrame(rows).to_csv(index=False))
        print(f"[{dataset_name} {combo}] epoch {epoch}: {trained:.0f} s, P@1 {out['P@1']:.2f}, ELBO {row['elbo']:.5g}",
              flush=True)

    remaining = max(budget - trained, 1e-3)
    if trained >= budget:
        return
    kernel = options.pop("kernel", "se+linear")
    train_mlgpf(ds, kernel=kernel, epochs=10_000, seed=seed, progress=False, callback=callback,
                checkpoint_dir=str(ckpt), max_seconds=remaining, **sizes, **options)


# ----------------------------------------------------------------------------- summaries
def summarise(trace: pd.DataFrame, dataset: str) -> dict:
    """Seconds to each P@1 level, best metrics, final ELBO and seconds per epoch of one run's trace."""
    out: dict = {}
    for level in LEVELS.get(dataset, ()):
        hit = trace[trace["P@1"] >= level]
        out[f"s to P@1≥{level:g}"] = float(hit["train_seconds"].iloc[0]) if len(hit) else np.nan
    for col in [f"P@{k}" for k in KS] + [f"PSP@{k}" for k in KS]:
        out[f"best {col}"] = float(trace[col].max())
    out["epochs"] = int(trace["epoch"].max())
    out["train s"] = float(trace["train_seconds"].iloc[-1])
    out["s/epoch"] = float(trace["seconds"].median())
    out["final ELBO"] = float(trace["elbo"].iloc[-1])
    return out


def describe(options: dict) -> dict:
    """A combination's settings as text columns (so that tables do not round the step sizes)."""
    text = {
        "kernel": options.get("kernel", "se+linear"),
        "q_family": options["q_family"],
        "optimizer": f"{options['optimizer']}, lr {options['learning_rate']:g}"
        + (f", γ {options['natgrad_gamma']}" if "natgrad_gamma" in options else ""),
        "batch": f"{options['batch_size']}" + (" growing" if options.get("batch_growth") else ""),
        "dtype": options.get("dtype", "float64"),
        "warm start": "yes" if options.get("warm_start") else "no",
        "tied factors": "all steps" if options.get("covariance_warmup") == "all" else "no",
    }
    return text


def plot(traces: dict[str, pd.DataFrame], dataset: str):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    for combo, t in traces.items():
        ax1.plot(t["train_seconds"], t["P@1"], marker=".", label=combo)
        ax2.plot(t["train_seconds"], t["elbo"], marker=".", label=combo)
    for level in LEVELS.get(dataset, ()):
        ax1.axhline(level, color="grey", lw=0.5, ls=":")
    ax1.set(xlabel="training seconds (2 cores)", ylabel="test P@1 (%)", title=f"MLGPF on {dataset}: test P@1")
    ax2.set(xlabel="training seconds (2 cores)", ylabel="ELBO (epoch mean)", title="ELBO", yscale="symlog")
    lows = [t["P@1"].max() for t in traces.values()]
    if lows:
        ax1.set_ylim(max(0.0, min(lows) - 15), max(lows) + 1)
    ax1.legend(fontsize=8)
    fig.tight_layout()
    return fig


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", default="bibtex", help="comma-separated (bibtex, delicious)")
    parser.add_argument("--combos", default=",".join(COMBOS), help=f"comma-separated from {', '.join(COMBOS)}")
    parser.add_argument("--budget", type=float, default=None, help="training seconds per run (default 300; quick 2)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="CI smoke test: tiny sizes, the default recipe only, one epoch")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--one", nargs=2, metavar=("DATASET", "COMBO"), help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    budget = args.budget if args.budget is not None else (2.0 if args.quick else 300.0)
    if args.one:
        run_one(args.one[0], args.one[1], budget, args.folder, args.seed, args.quick)
        return 0

    from mlgp.experiment import Experiment, choice_list

    datasets = [d.strip() for d in args.datasets.split(",") if d.strip()]
    combos = choice_list(parser, args.combos, COMBOS, "combination")
    if args.quick and args.combos == parser.get_default("combos"):
        combos = ["whitened-b500-f32-warm-lr0.005"]
    settings = dict(datasets=datasets, combos={c: COMBOS[c] for c in combos}, budget=budget, seed=args.seed)
    with Experiment("time_to_accuracy", quick=args.quick, settings=settings, seeds=[args.seed], out=args.out) as exp:
        folder = exp.folder
        memory_file = folder / "peak_memory.json"
        memory = json.loads(memory_file.read_text()) if memory_file.is_file() else {}
        for dataset in datasets:
            for combo in combos:
                key = f"{dataset}__{combo}"
                if key in memory:  # finished in an earlier invocation
                    continue
                if args.quick:  # in this process: the smoke test skips a TensorFlow start per run
                    run_one(dataset, combo, budget, folder, args.seed, True)
                    memory[key] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
                else:
                    cmd = [sys.executable, __file__, "--one", dataset, combo, "--budget", str(budget), "--seed",
                           str(args.seed), "--folder", str(folder)]
                    proc = subprocess.Popen(cmd)
                    _, status, usage = os.wait4(proc.pid, 0)
                    if os.waitstatus_to_exitcode(status) != 0:
                        raise SystemExit(f"run {key} failed (exit {os.waitstatus_to_exitcode(status)}); rerun to resume it")
                    memory[key] = usage.ru_maxrss / 1024.0  # MB (Linux reports kB)
                atomic_write_text(memory_file, json.dumps(memory, indent=2) + "\n")
                shutil.rmtree(folder / "checkpoints" / key, ignore_errors=True)
        for dataset in datasets:
            traces = {c: pd.read_csv(folder / f"{dataset}__{c}.csv") for c in combos if (folder / f"{dataset}__{c}.csv").is_file()}
            rows = [dict(combo=c, **describe(COMBOS[c]), **summarise(t, dataset), **{"peak MB": memory.get(f"{dataset}__{c}")})
                    for c, t in traces.items()]
            exp.table(f"time_to_accuracy_{dataset}", pd.DataFrame(rows))
            exp.figure(f"time_to_accuracy_{dataset}", plot(traces, dataset))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
