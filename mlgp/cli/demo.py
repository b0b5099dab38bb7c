"""``mlgp demo``: train MLGPF with the paper's recipe and print its test metrics.

On Bibtex when a data home is set (``$MLGP_DATA`` or ``--data-home``); on the synthetic
:func:`mlgp.data.default_problem` only when none is set at all, which the first line says. A data
home that is set but does not exist is an error. Every option is checked, against the dataset's
sizes too, before any training; errors print as ``mlgp: error: …`` with exit status 2. Progress is
a bar when both output streams are terminals, else one line per epoch on standard output.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from ..errors import DatasetNotFoundError, ShapeError
from .common import format_metrics, no_home_message, non_negative_int, positive_int, resolve_home

__all__ = ["DEMO_SETTINGS", "DEMO_FALLBACK", "DEMO_QUICK", "add_parser", "run"]

#: Settings of ``mlgp demo`` (P, M, epochs, batch size, kernel) per dataset; flags override them.
DEMO_SETTINGS: dict[str, dict] = {
    "bibtex": dict(kernel="se+linear", latent=60, inducing=200, epochs=20, batch_size=500, q_family="whitened"),
    "synthetic": dict(kernel="se+linear", latent=10, inducing=50, epochs=100, batch_size=200, q_family="cholesky"),
}
#: Settings for any other dataset named with ``--dataset``.
DEMO_FALLBACK = dict(kernel="se+linear", latent=60, inducing=200, epochs=10, batch_size=500, q_family="whitened")
#: Training options shared by every dataset (flags override them): the recipe's measured defaults.
DEMO_TRAINING = dict(optimizer="adam", learning_rate=0.005, dtype="float32", warm_start=True)
#: ``--quick``: tiny sizes for smoke tests.
DEMO_QUICK = dict(latent=8, inducing=20, epochs=1, max_train=300)

_KERNELS = ("linear", "se", "se+linear", "se+linear-shared")


def add_parser(sub, home_kw: dict) -> argparse.ArgumentParser:
    """Register the subcommand on ``sub`` (from ``add_subparsers``)."""
    p = sub.add_parser(
        "demo", help="train MLGPF and print its test metrics",
        description="Train MLGPF with the paper's recipe (L2-normalised rows, k-means inducing "
                    "inputs kept on the unit sphere, Adam at 0.005) on Bibtex when a data home is "
                    "set, else on a synthetic problem, and print the test metrics and the ELBO "
                    "trace. Defaults for Bibtex: kernel se+linear, P=60, M=200, whitened q(u), float32, "
                    "a linear warm start, "
                    "20 epochs, batch 500; for the synthetic problem: P=10, M=50, 100 epochs, "
                    "batch 200.")
    p.add_argument("--dataset", default=None, metavar="NAME",
                   help="dataset in the data home, or 'synthetic' (default: bibtex when a data "
                        "home is set, else synthetic)")
    p.add_argument("--kernel", default=None, choices=_KERNELS,
                   help="kernel of the latent GPs (default: se+linear)")
    p.add_argument("--latent", type=positive_int, default=None, metavar="P",
                   help="latent GPs P, at most K (default: 60 on Bibtex, 10 synthetic)")
    p.add_argument("--inducing", type=positive_int, default=None, metavar="M",
                   help="inducing inputs M, at most N (default: 200 on Bibtex, 50 synthetic)")
    p.add_argument("--epochs", type=positive_int, default=None, metavar="N",
                   help="passes over the training data (default: 30 on Bibtex, 100 synthetic, "
                        "10 other datasets)")
    p.add_argument("--batch-size", type=positive_int, default=None, metavar="B",
                   help="points per minibatch (default: 100; 200 synthetic)")
    p.add_argument("--negatives", type=positive_int, default=None, metavar="L",
                   help="negative labels sampled per point, fewer than K (default: all labels, "
                        "the exact bound)")
    p.add_argument("--q-family", default=None, choices=("cholesky", "whitened", "preconditioned"),
                   help="the q(u) family (default: whitened on Bibtex, cholesky synthetic)")
    p.add_argument("--optimizer", default=None, choices=("adam", "natgrad"),
                   help="adam, or natural gradients on q(u) with Adam on the rest (Cholesky families only)")
    p.add_argument("--learning-rate", type=float, default=None, metavar="LR", help="Adam's step size (default 0.005)")
    p.add_argument("--dtype", default=None, choices=("float64", "float32"), help="training precision (default float32)")
    p.add_argument("--warm-start", action=argparse.BooleanOptionalAction, default=None,
                   help="start Φ and q(u)'s means at a linear solution (default: on)")
    p.add_argument("--max-train", type=positive_int, default=None, metavar="N",
                   help="use only the first N training points (default: all)")
    p.add_argument("--unit-sphere-z", action=argparse.BooleanOptionalAction, default=True,
                   help="keep the inducing inputs on the unit sphere like the inputs (default: on)")
    p.add_argument("--seed", type=non_negative_int, default=0,
                   help="seed of k-means, initial values, minibatches and the synthetic problem "
                        "(default: 0)")
    p.add_argument("--quick", action="store_true",
                   help="tiny run for tests: P=8, M=20, 1 epoch, 300 training points")
    p.add_argument("--save-scores", type=Path, default=None, metavar="OUT.npz",
                   help="write the test top-5 ranking (arrays indices, scores) for mlgp evaluate")
    p.add_argument("--verbose", action="store_true", default=argparse.SUPPRESS,
                   help="also show TensorFlow's start-up and log lines (as mlgp --verbose)")
    p.add_argument("--data-home", **home_kw)
    p.set_defaults(func=run)
    return p


def _dataset(args: argparse.Namespace):
    """(dataset, a line saying where it came from)."""
    from ..data import default_problem, load
    from ..data.registry import ENV_VAR

    name = args.dataset
    synthetic = (f"synthetic MLGPF-prior problem, mlgp.data.default_problem(seed={args.seed})")
    if name == "synthetic":
        return default_problem(seed=args.seed), synthetic
    home = resolve_home(args.data_home)  # raises when a named folder does not exist
    if home is None:
        if name is not None:
            raise DatasetNotFoundError(f"dataset {name!r} needs a data home. {no_home_message()}")
        return default_problem(seed=args.seed), (f"{synthetic}: no data home is set "
                                                 f"(set {ENV_VAR} or pass --data-home to train on Bibtex)")
    ds = load(name or "bibtex", home)
    return ds, f"{ds.name} from {ds.train.path} and {ds.test.path}"


def _settings(args: argparse.Namespace, ds) -> dict:
    """The run's settings; raises for option values the dataset's sizes rule out."""
    settings = {**DEMO_TRAINING, **DEMO_SETTINGS.get(ds.name, DEMO_FALLBACK)}
    settings["max_train"] = None
    if args.quick:
        settings.update(DEMO_QUICK)
    for key in ("kernel", "latent", "inducing", "epochs", "batch_size", "max_train", "q_family", "optimizer",
                "learning_rate", "dtype", "warm_start"):
        value = getattr(args, key)
        if value is not None:
            settings[key] = value
    K = ds.num_labels
    n_train = ds.train.num_points if settings["max_train"] is None else min(ds.train.num_points, settings["max_train"])
    settings["n_train"] = n_train
    if settings["latent"] > K:
        if args.latent is not None:
            raise ShapeError(f"--latent {settings['latent']} exceeds the number of labels K={K}")
        settings["latent"] = K
    if settings["inducing"] > n_train:
        if args.inducing is not None:
            raise ShapeError(f"--inducing {settings['inducing']} exceeds the number of training points N={n_train}")
        settings["inducing"] = n_train
    if not settings["learning_rate"] > 0:
        raise ShapeError(f"--learning-rate must be positive, got {settings['learning_rate']}")
    if settings["optimizer"] == "natgrad" and settings["q_family"] == "preconditioned":
        raise ShapeError("--optimizer natgrad needs --q-family cholesky or whitened")
    if args.negatives is not None and args.negatives >= K:
        raise ShapeError(f"--negatives {args.negatives}: {ds.name} has only K={K} labels; sample fewer "
                         "than K, or leave the option out to use every label (the exact bound)")
    return settings


def _epoch_printer(epochs: int):
    """A ``fit`` callback printing one line per epoch (when a progress bar cannot draw)."""
    def callback(epoch: int, model, row: dict) -> None:
        print(f"epoch {epoch}/{epochs}: ELBO {row['elbo']:.6g} ({row['seconds']:.1f} s)", flush=True)

    return callback


def run(args: argparse.Namespace) -> int:
    """Train, then print the ELBO trace summary, the test metrics and two reference rankings."""
    from ..scores import check_score_file_path, save_scores

    if args.save_scores is not None:
        check_score_file_path(args.save_scores, what="--save-scores")
    ds, origin = _dataset(args)
    s = _settings(args, ds)
    K = ds.num_labels
    print(f"data: {origin}")
    print(f"      N_train={ds.train.num_points}"
          + (f" (using the first {s['n_train']})" if s["n_train"] < ds.train.num_points else "")
          + f", N_test={ds.test.num_points}, D={ds.num_features}, K={K}")
    print(f"model: MLGPF, kernel {s['kernel']}, P={s['latent']} latent GPs, M={s['inducing']} inducing inputs"
          + (" on the unit sphere" if args.unit_sphere_z else " (free)")
          + f", {s['q_family']} q(u), {s['dtype']}"
          + (", warm start" if s["warm_start"] else "")
          + ("; Adam" if s["optimizer"] == "adam" else "; natural gradients on q(u), Adam")
          + f" (lr {s['learning_rate']:g}), {s['epochs']} epoch(s), batch {s['batch_size']}, "
          + ("all labels per point" if args.negatives is None
             else f"positives + {args.negatives} sampled negatives per point")
          + f", seed {args.seed}", flush=True)

    from ..recipes import train_mlgpf

    bar = sys.stdout.isatty() and sys.stderr.isatty()
    t0 = time.perf_counter()
    run = train_mlgpf(
        ds, kernel=s["kernel"], num_latent_gps=s["latent"], num_inducing=s["inducing"],
        epochs=s["epochs"], batch_size=s["batch_size"], q_family=s["q_family"], negatives=args.negatives,
        optimizer=s["optimizer"], learning_rate=s["learning_rate"], dtype=s["dtype"], warm_start=s["warm_start"],
        unit_sphere_inducing=args.unit_sphere_z, seed=args.seed, progress=bar,
        callback=None if bar else _epoch_printer(s["epochs"]), max_train=s["max_train"],
        # at the demo's sizes XLA does not pay for its compilations (README.md, bench_mlgpf)
        jit_compile=False,
    )
    total = time.perf_counter() - t0
    _print_trace(run, total)
    print()
    print(f"test metrics ({ds.name}, N_test={ds.test.num_points}; labels ranked by mean utility):")
    print(format_metrics(run.metrics))
    baseline = _frequency_baseline(ds)
    print("for reference, P@1/3/5 = " + ", ".join(f"{v:.2f}" for v in baseline.loc["P"])
          + " from ranking every test point's labels by their training frequency")
    oracle = _oracle_metrics(ds)
    if oracle is not None:
        p = ", ".join(f"{v:.2f}" for v in oracle.loc["P"])
        print(f"and P@1/3/5 = {p} from the true utilities Φh + b that generated this synthetic problem")
    if args.save_scores is not None:
        from ..data.preprocessing import normalise_rows

        t = run.model.predict_topk(normalise_rows(ds.test.X), min(K, 5))
        save_scores(args.save_scores, t)
        print(f"test top-{t.k} scores written to {args.save_scores} "
              f"(mlgp evaluate {args.save_scores} --dataset {ds.name})")
    return 0


def _print_trace(run, total: float) -> None:
    trace = run.trace
    print()
    if len(trace):
        first, last = float(trace["elbo"].iloc[0]), float(trace["elbo"].iloc[-1])
        sec = trace["seconds"].to_numpy(dtype=float)
        print(f"ELBO trace ({len(trace)} epoch(s); each value the mean of that epoch's minibatch "
              f"estimates of the full-data bound):")
        print(f"  first epoch {first:.6g}, last epoch {last:.6g} (change {last - first:+.6g})")
        if len(sec) > 1:
            print(f"  {np.mean(sec):.2f} s per epoch (first epoch {sec[0]:.2f} s, includes tracing; "
                  f"later epochs {np.mean(sec[1:]):.2f} s)")
        else:
            print(f"  {sec[0]:.2f} s per epoch (includes tracing the compiled step)")
        if len(trace) > 1:
            prev = float(trace["elbo"].iloc[-2])
            rise = (last - prev) / abs(prev) if prev else 0.0
            if rise > 0.005:
                print(f"  the ELBO still rose by {100 * rise:.1f}% in the last epoch: the model is not "
                      f"converged; train longer with --epochs")
    seconds = run.seconds or {}
    if seconds:
        print(f"  training {seconds.get('train', float('nan')):.1f} s, prediction "
              f"{seconds.get('predict', float('nan')):.1f} s, total {total:.1f} s")


def _frequency_baseline(ds):
    """Test metrics of :class:`mlgp.baselines.LabelFrequency` fitted on the training split."""
    from ..baselines import LabelFrequency
    from ..metrics import evaluate

    ks = [k for k in (1, 3, 5) if k <= ds.num_labels]
    model = LabelFrequency().fit(ds.train.X, ds.train.Y)
    return evaluate(ds.test.Y, model.predict_topk(ds.test.X, max(ks)), ks=ks, percent=True)


def _oracle_metrics(ds):
    """Test metrics of the true utilities of a synthetic MLGPF-prior problem, else None."""
    from ..metrics import evaluate

    e = ds.extras or {}
    if not {"H", "Phi", "b"} <= set(e):
        return None
    n = ds.train.num_points
    H = np.asarray(e["H"])
    if H.shape[0] != n + ds.test.num_points:
        return None
    F = H[n:] @ np.asarray(e["Phi"]).T + np.asarray(e["b"])
    return evaluate(ds.test.Y, F, ks=[k for k in (1, 3, 5) if k <= ds.num_labels], percent=True)
