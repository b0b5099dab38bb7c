"""``mlgp demo``: train MLGPF with the paper's recipe and print its test metrics.

On Bibtex when a data home is set (``$MLGP_DATA`` or ``--data-home``); on the synthetic
:func:`mlgp.data.default_problem` only when none is set at all, which the first line says. A data
home that is set but does not exist is an error. The training options, their defaults and their
help texts come from :class:`mlgp.recipes.MLGPFSettings` with the demo's layer for the dataset
(:func:`mlgp.recipes.demo_settings`), so ``--help`` shows the values a run really uses. Every
option is checked, against the dataset's sizes too, before any training; errors print as
``mlgp: error: …`` with exit status 2. Progress is a bar when both output streams are terminals,
else one line per epoch on standard output.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from ..errors import DatasetNotFoundError, ShapeError
from ..recipes.options import add_settings_options, describe_cases, given_settings
from ..recipes.settings import MLGPFSettings, QUICK_SETTINGS, demo_settings, demo_values
from .common import format_metrics, no_home_message, resolve_home

__all__ = ["DEMO_OPTIONS", "add_parser", "run"]

#: The settings ``mlgp demo`` takes as options, in the order ``--help`` lists them.
DEMO_OPTIONS: tuple[str, ...] = ("kernel", "num_latent_gps", "num_inducing", "epochs", "batch_size", "negatives",
                                 "q_family", "optimizer", "learning_rate", "dtype", "warm_start", "covariance_warmup",
                                 "max_train",
                                 "unit_sphere_inducing", "subspace_rank", "subspace_sample",
                                 "seed")

#: The cases ``--help`` describes: (where, dataset name in :data:`mlgp.recipes.DEMO_SETTINGS`).
_CASES = (("bibtex", "bibtex"), ("synthetic", "synthetic"), ("other datasets", "*"))


def default_text(name: str) -> str:
    """What ``--help`` says a setting's default is: its value on each dataset the demo knows."""
    return describe_cases(name, [(where, demo_values(key)) for where, key in _CASES])


def _describe(values: dict) -> str:
    """A run's headline settings, e.g. ``P=60, M=200, whitened q(u), float32, 20 epochs, batch 500``."""
    return (f"kernel {values['kernel']}, P={values['num_latent_gps']}, M={values['num_inducing']}, "
            f"{values['q_family']} q(u), {values['dtype']}" + (", a linear warm start" if values["warm_start"] else "")
            + f", {values['epochs']} epochs, batch {values['batch_size']}")


def add_parser(sub, home_kw: dict) -> argparse.ArgumentParser:
    """Register the subcommand on ``sub`` (from ``add_subparsers``)."""
    bibtex, synthetic, quick = demo_values("bibtex"), demo_values("synthetic"), QUICK_SETTINGS
    p = sub.add_parser(
        "demo", help="train MLGPF and print its test metrics",
        description="Train MLGPF with the paper's recipe (L2-normalised rows, k-means inducing inputs kept on the "
                    f"unit sphere, Adam at {bibtex['learning_rate']:g}) on Bibtex when a data home is set, else on a "
                    "synthetic problem, and print the test metrics and the ELBO trace. Defaults for Bibtex: "
                    f"{_describe(bibtex)}; for the synthetic problem: {_describe(synthetic)}.")
    p.add_argument("--dataset", default=None, metavar="NAME",
                   help="dataset in the data home, or 'synthetic' (default: bibtex when a data "
                        "home is set, else synthetic)")
    add_settings_options(p, DEMO_OPTIONS, default_text,
                         notes={"seed": "also of the synthetic problem",
                                "num_latent_gps": "a default above K is lowered to K",
                                "num_inducing": "a default above N is lowered to N"})
    p.add_argument("--quick", action="store_true",
                   help=f"tiny run for tests: P={quick['num_latent_gps']}, M={quick['num_inducing']}, "
                        f"{quick['epochs']} epoch(s), {quick['max_train']} training points")
    p.add_argument("--save-scores", type=Path, default=None, metavar="OUT.npz",
                   help="write the test top-5 ranking (arrays indices, scores) for mlgp evaluate")
    p.add_argument("--verbose", action="store_true", default=argparse.SUPPRESS,
                   help="also show TensorFlow's start-up and log lines (as mlgp --verbose)")
    p.add_argument("--data-home", **home_kw)
    p.set_defaults(func=run)
    return p


def _seed(args: argparse.Namespace) -> int:
    """The run's seed (the same on every dataset, so known before the dataset is)."""
    return args.seed if args.seed is not None else MLGPFSettings.seed


def _dataset(args: argparse.Namespace):
    """(dataset, a line saying where it came from)."""
    from ..data import default_problem, load
    from ..data.registry import ENV_VAR

    name, seed = args.dataset, _seed(args)
    synthetic = (f"synthetic MLGPF-prior problem, mlgp.data.default_problem(seed={seed})")
    if name == "synthetic":
        return default_problem(seed=seed), synthetic
    home = resolve_home(args.data_home)  # raises when a named folder does not exist
    if home is None:
        if name is not None:
            raise DatasetNotFoundError(f"dataset {name!r} needs a data home. {no_home_message()}")
        return default_problem(seed=seed), (f"{synthetic}: no data home is set "
                                                 f"(set {ENV_VAR} or pass --data-home to train on Bibtex)")
    ds = load(name or "bibtex", home)
    return ds, f"{ds.name} from {ds.train.path} and {ds.test.path}"


def _settings(args: argparse.Namespace, ds) -> MLGPFSettings:
    """The run's settings: the demo's for the dataset, the options given over them; raises for
    option values the dataset's sizes rule out, and lowers P and M defaults to K and N."""
    given = given_settings(args, DEMO_OPTIONS)
    s = demo_settings(ds.name, quick=args.quick).replace(**given)
    K = ds.num_labels
    n_train = ds.train.num_points if s.max_train is None else min(ds.train.num_points, s.max_train)
    if s.num_latent_gps > K:
        if "num_latent_gps" in given:
            raise ShapeError(f"--latent {s.num_latent_gps} exceeds the number of labels K={K}")
        s = s.replace(num_latent_gps=K)
    if s.num_inducing > n_train:
        if "num_inducing" in given:
            raise ShapeError(f"--inducing {s.num_inducing} exceeds the number of training points N={n_train}")
        s = s.replace(num_inducing=n_train)
    if s.negatives is not None and s.negatives >= K:
        raise ShapeError(f"--negatives {s.negatives}: {ds.name} has only K={K} labels; sample fewer "
                         "than K, or leave the option out to use every label (the exact bound)")
    return s


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
    n_train = ds.train.num_points if s.max_train is None else min(ds.train.num_points, s.max_train)
    print(f"data: {origin}")
    print(f"      N_train={ds.train.num_points}"
          + (f" (using the first {n_train})" if n_train < ds.train.num_points else "")
          + f", N_test={ds.test.num_points}, D={ds.num_features}, K={K}")
    print(f"model: MLGPF, kernel {s.kernel}, P={s.num_latent_gps} latent GPs, M={s.num_inducing} inducing inputs"
          + (f" in the top-{s.subspace_rank} singular subspace" if s.subspace_rank else "")
          + (" on the unit sphere" if s.unit_sphere_inducing else " (free)")
          + f", {s.q_family} q(u), {s.dtype}"
          + (", warm start" if s.warm_start else "")
          + ("; Adam" if s.optimizer == "adam" else "; natural gradients on q(u), Adam")
          + f" (lr {s.learning_rate:g}), {s.epochs} epoch(s), batch {s.batch_size}, "
          + ("all labels per point" if s.negatives is None
             else f"positives + {s.negatives} sampled negatives per point")
          + f", seed {s.seed}", flush=True)

    from ..recipes import train_mlgpf

    bar = sys.stdout.isatty() and sys.stderr.isatty()
    t0 = time.perf_counter()
    # at the demo's sizes XLA does not pay for its compilations (docs/results.md, bench_mlgpf)
    run = train_mlgpf(ds, s, progress=bar, callback=None if bar else _epoch_printer(s.epochs), jit_compile=False)
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
        t = run.estimator.predict_topk(ds.test.X, min(K, 5))  # raw rows: the model normalises them
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
        print(f"ELBO trace ({len(trace)} epoch(s); each value that epoch's minibatch estimates of the "
              f"full-data bound, averaged with each minibatch weighted by its rows):")
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
