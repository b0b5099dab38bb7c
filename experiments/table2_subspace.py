"""Subspace-inducing-inputs paper, Tables 2, 4 and 5 and appendix Fig. 1 on Bibtex, Delicious and Enron.

Trains MLGPF with the paper's sizes (P = 30, M = 500, batch 500; R = 1000 on Bibtex, 250 on
Delicious, ⌊D/2⌋ on Enron, which the paper does not use) in eight variants:

* Table 2: s-LINEAR, LINEAR, s-SE, SE — subspace (``s-``, Z = A X̃ with
  :func:`mlgp.models.mlgpf_from_data`'s ``subspace_rank``) or full inducing inputs, optimised;
* Table 4: sf-LINEAR, f-LINEAR, sf-SE, f-SE — the same with the inducing inputs fixed where they
  start (random training points, or their coordinates in the subspace: the paper does not say how
  it chose them).

For each run it records test P@1/3/5, minutes per epoch (Table 5) and, after training, the median
seconds of one evaluation of the bound with its gradient and of the P KL terms with their gradient
on a minibatch (the paper's Table 2 times, whose unit it does not state), and the ELBO trace
(Fig. 1: subspace against full, per dataset). Each table sets the paper's numbers beside ours with
the difference. Without ``--epochs`` each dataset trains the paper's epochs (Bibtex 400, Delicious
200; Enron 200). The tables are rewritten after every run, so an interrupted run keeps what it
finished; ``--checkpoint-dir`` resumes runs part-way.

    python experiments/table2_subspace.py --q-family whitened --dtype float32 --epochs 100
    python experiments/table2_subspace.py --variants s-LINEAR --q-families cholesky,whitened,preconditioned
    python experiments/table2_subspace.py --quick
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

#: variant → (kernel, subspace, fixed inducing inputs)
VARIANTS = {
    "s-LINEAR": ("linear", True, False), "LINEAR": ("linear", False, False),
    "s-SE": ("se", True, False), "SE": ("se", False, False),
    "sf-LINEAR": ("linear", True, True), "f-LINEAR": ("linear", False, True),
    "sf-SE": ("se", True, True), "f-SE": ("se", False, True),
}
TABLE2, TABLE4 = list(VARIANTS)[:4], list(VARIANTS)[4:]
QUICK_VARIANTS = ("s-LINEAR", "f-SE")

#: The paper's sizes (Table 1 settings); Enron is not in the paper: R = ⌊D/2⌋ as for its small sets.
SIZES = dict(num_latent_gps=30, num_inducing=500, batch_size=500)
RANKS = {"bibtex": 1000, "delicious": 250}
PAPER_EPOCHS = {"bibtex": 400, "delicious": 200}
OTHER_EPOCHS = 200

#: Paper Tables 2 and 4 (P@1/3/5, percent), Table 5 (minutes per epoch) and Table 2's seconds
#: (bound with gradient, KL terms with gradient).
PAPER_P = {
    ("bibtex", "s-LINEAR"): (59.31, 36.73, 27.40), ("bibtex", "LINEAR"): (60.20, 37.02, 27.34),
    ("bibtex", "s-SE"): (41.89, 24.30, 18.57), ("bibtex", "SE"): (38.68, 21.71, 16.55),
    ("delicious", "s-LINEAR"): (66.13, 60.38, 55.69), ("delicious", "LINEAR"): (67.08, 61.50, 56.88),
    ("delicious", "s-SE"): (59.89, 53.80, 49.21), ("delicious", "SE"): (61.94, 55.91, 50.88),
    ("bibtex", "sf-LINEAR"): (45.12, 26.79, 20.40), ("bibtex", "f-LINEAR"): (40.31, 23.16, 17.67),
    ("bibtex", "sf-SE"): (37.25, 20.07, 15.37), ("bibtex", "f-SE"): (36.43, 19.42, 14.74),
    ("delicious", "sf-LINEAR"): (63.13, 57.04, 52.26), ("delicious", "f-LINEAR"): (63.04, 57.03, 52.40),
    ("delicious", "sf-SE"): (55.65, 49.87, 45.62), ("delicious", "f-SE"): (54.44, 48.56, 44.77),
}
PAPER_MINUTES = {
    ("bibtex", "s-LINEAR"): 0.94, ("bibtex", "LINEAR"): 0.97, ("bibtex", "s-SE"): 1.27, ("bibtex", "SE"): 0.99,
    ("delicious", "s-LINEAR"): 2.47, ("delicious", "LINEAR"): 2.56, ("delicious", "s-SE"): 2.52,
    ("delicious", "SE"): 2.55,
}
PAPER_SECONDS = {
    ("bibtex", "s-LINEAR"): (6.7, 3.8), ("bibtex", "LINEAR"): (6.2, 4.1), ("bibtex", "s-SE"): (6.2, 4.4),
    ("bibtex", "SE"): (5.7, 4.6), ("delicious", "s-LINEAR"): (6.2, 4.0), ("delicious", "LINEAR"): (7.3, 3.9),
    ("delicious", "s-SE"): (5.8, 4.8), ("delicious", "SE"): (6.3, 4.5),
}
RUN_COLUMNS = ["dataset", "variant", "q_family", "seed", "R", "epochs", "P@1", "P@3", "P@5", "min/epoch",
               "bound+grad s", "KL+grad s", "train s"]


def time_terms(model, X, Y, batch_size: int, seed: int, repeats: int = 5) -> tuple[float, float]:
    """Median seconds of the bound with its gradient, and of Σ_p KL with its gradient, on one
    minibatch of ``batch_size`` rows (mapped through the model's input map beforehand; compiled
    once, then timed ``repeats`` times)."""
    import tensorflow as tf

    rows = np.sort(np.random.default_rng(seed).choice(X.shape[0], min(batch_size, X.shape[0]), replace=False))
    with model.float_context():
        xb = model.model_inputs(X[rows])
        yb = tf.constant(Y[rows].toarray(), dtype=model.float_type)
        variables = model.trainable_variables

        @tf.function
        def bound_grad():
            with tf.GradientTape() as tape:
                value = model.elbo((xb, yb))
            return value, tape.gradient(value, variables)

        @tf.function
        def kl_grad():
            with tf.GradientTape() as tape:
                value = model.prior_kl()
            return value, [g for g in tape.gradient(value, variables) if g is not None]

        out = []
        for fn in (bound_grad, kl_grad):
            fn()  # trace and compile
            times = []
            for _ in range(repeats):
                t = time.perf_counter()
                tf.nest.map_structure(lambda v: v.numpy() if tf.is_tensor(v) else v, fn())
                times.append(time.perf_counter() - t)
            out.append(float(np.median(times)))
    return out[0], out[1]


def beside_paper(runs: pd.DataFrame, variants: list[str]) -> pd.DataFrame:
    """Mean P@1/3/5 per (dataset, variant, q family) over seeds, with the paper's and the difference."""
    part = runs[runs["variant"].isin(variants)]
    if part.empty:
        return pd.DataFrame()
    keys = ["dataset", "variant", "q_family"]
    agg = part.groupby(keys, sort=False).agg(runs=("seed", "size"), epochs=("epochs", "max"),
                                             **{f"P@{k}": (f"P@{k}", "mean") for k in (1, 3, 5)}).reset_index()
    for i, k in enumerate((1, 3, 5)):
        agg[f"paper P@{k}"] = [PAPER_P.get((d, v), (np.nan,) * 3)[i] for d, v in zip(agg["dataset"], agg["variant"])]
    for k in (1, 3, 5):
        agg[f"diff P@{k}"] = agg[f"P@{k}"] - agg[f"paper P@{k}"]
    return agg


def timings(runs: pd.DataFrame) -> pd.DataFrame:
    """Table 5 (minutes per epoch) and Table 2's times, ours (median over seeds) beside the paper's."""
    keys = ["dataset", "variant", "q_family"]
    agg = runs.groupby(keys, sort=False)[["min/epoch", "bound+grad s", "KL+grad s"]].median().reset_index()
    agg["paper min/epoch"] = [PAPER_MINUTES.get((d, v), np.nan) for d, v in zip(agg["dataset"], agg["variant"])]
    agg["paper bound+grad s"] = [PAPER_SECONDS.get((d, v), (np.nan, np.nan))[0] for d, v in zip(agg["dataset"], agg["variant"])]
    agg["paper KL+grad s"] = [PAPER_SECONDS.get((d, v), (np.nan, np.nan))[1] for d, v in zip(agg["dataset"], agg["variant"])]
    return agg


def write_results(exp, runs: pd.DataFrame, traces: pd.DataFrame) -> None:
    """Every table and one Fig. 1-style trace figure per dataset."""
    from mlgp.experiment import plot_traces

    exp.table("table2_runs", runs, show=False)
    for name, variants in (("table2_subspace", TABLE2), ("table4_fixed", TABLE4)):
        table = beside_paper(runs, variants)
        if not table.empty:
            exp.table(name, table)
    exp.table("table5_times", timings(runs), floatfmt=".4g")
    exp.table("elbo_traces", traces, show=False)
    for name, g in traces.groupby("dataset"):
        title = f"{name}: lower bound, subspace (s-) against full inducing inputs"
        exp.figure(f"fig1_traces_{name}", plot_traces(g, ["variant", "q_family", "seed"], title=title))


def main(argv: list[str] | None = None) -> None:
    from mlgp.experiment import add_argparse_args, add_training_args, choice_list

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_argparse_args(parser)
    parser.add_argument("--datasets", default=None, help="comma-separated (default: bibtex,delicious,enron; bibtex "
                        "with --quick)")
    parser.add_argument("--variants", default=None, help=f"comma-separated, of {', '.join(VARIANTS)} (default: all; "
                        f"{','.join(QUICK_VARIANTS)} with --quick)")
    parser.add_argument("--q-families", default=None, metavar="LIST",
                        help="train each variant with each of these q(u) families (default: --q-family's)")
    parser.add_argument("--dataset-epochs", default=None, metavar="NAME=E,…",
                        help="epochs per dataset, over --epochs and the paper's (e.g. bibtex=50,delicious=20)")
    parser.add_argument("--resume", action="store_true",
                        help="keep the runs already in the results folder (table2_runs.csv, elbo_traces.csv) and "
                        "train only the others")
    parser.add_argument("--latent", type=int, default=SIZES["num_latent_gps"], metavar="P")
    parser.add_argument("--inducing", type=int, default=SIZES["num_inducing"], metavar="M")
    add_training_args(parser, epochs=OTHER_EPOCHS)  # without --epochs: the paper's per dataset (PAPER_EPOCHS)
    args = parser.parse_args(argv)
    try:
        args.dataset_epochs = {k: int(v) for k, v in (p.split("=") for p in args.dataset_epochs.split(","))} \
            if args.dataset_epochs else {}
    except ValueError:
        parser.error(f"--dataset-epochs takes NAME=E,…; got {args.dataset_epochs!r}")
    if any(e < 1 for e in args.dataset_epochs.values()):
        parser.error("--dataset-epochs: each E must be at least 1")
    args.datasets = args.datasets or ("bibtex" if args.quick else "bibtex,delicious,enron")
    args.variants = args.variants or ",".join(QUICK_VARIANTS if args.quick else VARIANTS)
    choice_list(parser, args.variants, VARIANTS, "variant")
    train_all(args)


def train_all(args: argparse.Namespace) -> None:
    """Train every (dataset, variant, q family, seed); rewrite the tables after each run."""
    import mlgp.data
    from mlgp.experiment import Experiment, run_checkpoint_dir, training_options
    from mlgp.recipes import train_mlgpf
    from mlgp.recipes.options import given_settings
    from mlgp.recipes.settings import QUICK_SETTINGS

    seeds = args.seeds or [0]
    train = training_options(args)
    given = given_settings(args, ["epochs", "batch_size", "subspace_rank"])
    if not args.quick:
        train.update(num_latent_gps=args.latent, num_inducing=args.inducing)
        train["batch_size"] = given.get("batch_size", SIZES["batch_size"])
    families = args.q_families.split(",") if args.q_families else [train["q_family"]]
    settings = dict(datasets=args.datasets, variants=args.variants, q_families=families, **train,
                    epochs_per_dataset=args.dataset_epochs or ("paper's" if "epochs" not in given else given["epochs"]),
                    checkpoint_dir=args.checkpoint_dir)
    with Experiment("table2_subspace", quick=args.quick, settings=settings, seeds=seeds, out=args.out) as exp:
        rows, traces = [], []
        if args.resume and (exp.folder / "table2_runs.csv").is_file():
            rows = pd.read_csv(exp.folder / "table2_runs.csv").to_dict("records")
            traces = [pd.read_csv(exp.folder / "elbo_traces.csv")]
            print(f"[table2_subspace] resuming: {len(rows)} finished runs kept", flush=True)
        done = {(r["dataset"], r["variant"], r["q_family"], int(r["seed"])) for r in rows}
        for name in args.datasets.split(","):
            ds = mlgp.data.load(name)
            rank = given.get("subspace_rank") or RANKS.get(name, ds.train.X.shape[1] // 2)
            epochs = args.dataset_epochs.get(name, given.get("epochs", PAPER_EPOCHS.get(name, OTHER_EPOCHS)))
            epochs = QUICK_SETTINGS["epochs"] if args.quick else epochs
            if args.quick:
                rank = min(rank, 20)
            for variant in args.variants.split(","):
                kernel, subspace, fixed = VARIANTS[variant]
                for family in families:
                    for seed in seeds:
                        if (name, variant, family, seed) in done:
                            continue
                        options = dict(train, kernel=kernel, fixed_inducing=fixed, q_family=family, epochs=epochs,
                                       subspace_rank=rank if subspace else None)
                        if not subspace:
                            options["subspace_sample"] = None
                        ckpt = run_checkpoint_dir(args, name, variant, family, f"seed{seed}")
                        run = train_mlgpf(ds, seed=seed, progress=not args.quick, checkpoint_dir=ckpt,
                                                       **options)
                        X, Y = ds.train.X, ds.train.Y
                        if options.get("max_train"):
                            X, Y = X[: options["max_train"]], Y[: options["max_train"]]
                        bound_s, kl_s = time_terms(run.model, X, Y, options["batch_size"], seed, 2 if args.quick else 5)
                        tr = run.trace.copy()
                        tr["dataset"], tr["variant"], tr["q_family"], tr["seed"] = name, variant, family, seed
                        traces.append(tr)
                        p = run.metrics.loc["P"].to_numpy()
                        rows.append(dict(dataset=name, variant=variant, q_family=family, seed=seed,
                                         R=rank if subspace else np.nan, epochs=len(run.trace),
                                         **{f"P@{k}": float(v) for k, v in zip((1, 3, 5), p)},
                                         **{"min/epoch": float(run.trace["seconds"].median()) / 60,
                                            "bound+grad s": bound_s, "KL+grad s": kl_s,
                                            "train s": run.seconds["epochs"]}))
                        print(rows[-1], flush=True)
                        write_results(exp, pd.DataFrame(rows, columns=RUN_COLUMNS), pd.concat(traces, ignore_index=True))


if __name__ == "__main__":
    main()
