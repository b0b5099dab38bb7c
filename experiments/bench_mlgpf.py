"""Benchmark: MLGPF training speed and memory against GPflow's stock multi-output route.

For each configuration (P latent GPs, M inducing inputs) on Bibtex this prints

* seconds per epoch of MLGPF's compiled training step (minibatch ELBO + gradient + Adam, the step
  :func:`mlgp.training.fit` builds), for the paper's non-whitened q(u) with a plain ``tf.function``
  step and, with ``--whiten``, for the whitened q(u) with the all-XLA step (``jit_compile=True``)
  and the step that leaves chol(K_ZZ) outside XLA (``"except-cholesky"``, what the experiment
  scripts train with),
* the same for GPflow's stock route — ``SVGP`` with ``LinearCoregionalization``,
  ``SharedIndependentInducingVariables`` and a logistic ``Bernoulli`` likelihood — at equal P, M
  and batch size, and the ratio stock / MLGPF measured in the same run,
* peak resident memory of each (every measurement runs in its own child process, so the peak
  belongs to that model alone),
* achieved GFLOP/s of an MLGPF step (analytic FLOP count of the dominant dense operations, see
  :func:`step_flops`) against a NumPy float64 matrix-multiply rate measured in the same run.

Run ``python experiments/bench_mlgpf.py`` (full) or ``--quick``: the CI smoke test, which times every
step mode and the stock route on a tiny synthetic problem (:data:`QUICK`) with every measurement in
one child process, so that TensorFlow starts once (its peak memory is then cumulative, and none of
its figures mean anything).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve()


def step_flops(B: int, D: int, M: int, P: int, K: int, kernel: str, n_gh: int = 10, whiten: bool = False) -> float:
    """Analytic FLOPs of one MLGPF training step (forward + backward ≈ 3 × forward).

    Counts the dense linear algebra that dominates: K_uf (2BMD per kernel part), K_uu (2M²D per
    part), the Cholesky of K_uu (M³/3), L⁻¹K_uf (M²B, twice when not whitened), the P variances
    (2PM²B), the P KL trace solves (PM³, not whitened only; whitened, the KL is O(PM²)), the mixing
    Φh (4BKP) and the quadrature (≈ 6 B K n_gh).
    """
    parts = 2 if kernel == "se+linear" else 1
    fwd = (
        parts * (2 * B * M * D + 2 * M * M * D)
        + M**3 / 3
        + M * M * B * (1 if whiten else 2)
        + 2 * B * M * P
        + 2 * P * M * M * B
        + (0 if whiten else P * M**3)
        + 4 * B * K * P
        + 6 * B * K * n_gh
    )
    return 3.0 * fwd


def parse_configs(text: str) -> list[tuple[int, int]]:
    """``"159:400,30:100"`` → ``[(159, 400), (30, 100)]``; ``argparse`` reports anything else."""
    try:
        pairs = [tuple(int(v) for v in c.split(":")) for c in text.split(",")]
    except ValueError:
        pairs = []
    if not pairs or any(len(p) != 2 or min(p) < 1 for p in pairs):
        raise argparse.ArgumentTypeError(f"expected P:M pairs of positive integers such as 159:400,30:100, got {text!r}")
    return pairs  # type: ignore[return-value]


def numpy_matmul_rate(n: int = 2000, repeats: int = 5) -> float:
    """Median GFLOP/s of a float64 ``n × n`` NumPy matrix product on this machine."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    a @ b  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - t0)
    return 2 * n**3 / float(np.median(times)) / 1e9


#: ``--quick``: a tiny synthetic problem, one small configuration, two timed steps per measurement.
QUICK = dict(num_train=48, num_features=6, num_labels=7, configs=[(2, 4)], batch_size=16, steps=2)


def _load(quick: bool):
    from sklearn.preprocessing import normalize

    import mlgp.data

    if quick:
        ds = mlgp.data.mlgpf_prior(num_train=QUICK["num_train"], num_test=1, num_features=QUICK["num_features"],
                                   num_labels=QUICK["num_labels"], num_latent=2, seed=0)
        X, Y, name = ds.train.X, ds.train.Y, ds.name
    else:
        try:
            ds = mlgp.data.load("bibtex")
            X, Y = ds.train.X, ds.train.Y
            name = "bibtex"
        except mlgp.DatasetNotFoundError:
            ds = mlgp.data.default_problem(seed=0)
            X, Y = ds.train.X, ds.train.Y
            name = ds.name
    return name, normalize(X).astype(np.float64).tocsr(), Y.tocsr()


STEP_MODES = {"plain": False, "xla": True, "except-cholesky": "except-cholesky"}
STEP_NAMES = {"plain": "tf.function", "xla": "XLA", "except-cholesky": "XLA except chol(K_ZZ)"}


def worker(route: str, P: int, M: int, batch_size: int, epochs: int, quick: bool, steps: int = 0, whiten: bool = False, step_mode: str = "plain") -> dict:
    """Time ``epochs`` epochs of one route in this process (or, with ``steps`` > 0, ``steps`` single
    full-size steps, scaled to an epoch as median step time × steps per epoch); return the figures.

    ``whiten`` selects the whitened q(u) for both routes; ``step_mode`` (a key of
    :data:`STEP_MODES`) how MLGPF's step is compiled (GPflow's stock step is a plain
    ``tf.function``)."""
    import gpflow
    import tensorflow as tf
    from gpflow.keras import tf_keras

    from mlgp.models import mlgpf_from_data
    from mlgp.training import MinibatchSampler
    from mlgp.training import make_step

    name, X, Y = _load(quick)
    N, D = X.shape
    K = Y.shape[1]
    tf.random.set_seed(0)
    model = mlgpf_from_data(X, Y, kernel="se+linear", num_latent_gps=P, num_inducing=M,
                            q_family="whitened" if whiten else "cholesky", seed=0)
    opt = tf_keras.optimizers.Adam(0.005)
    sampler = MinibatchSampler(X, Y, batch_size=batch_size, negatives=None, seed=0)

    if route == "mlgpf":
        # the step that fit() trains with
        fit_step = make_step(model, opt, None, N, STEP_MODES[step_mode])

        def step(batch):
            return fit_step(*batch)[0]

        def batches():
            yield from sampler.epoch()

    else:
        kernels = [gpflow.kernels.SquaredExponential(lengthscales=np.full(D, 0.7)) + gpflow.kernels.Linear(variance=np.ones(D)) for _ in range(P)]
        W = model.likelihood.loadings.numpy()
        kern = gpflow.kernels.LinearCoregionalization(kernels, W=W)
        Z = model.inducing_variable.inducing_variable.Z.numpy()
        iv = gpflow.inducing_variables.SharedIndependentInducingVariables(gpflow.inducing_variables.InducingPoints(Z))
        stock = gpflow.models.SVGP(
            kern,
            gpflow.likelihoods.Bernoulli(invlink=tf.sigmoid),
            iv,
            num_latent_gps=P,
            q_mu=np.zeros((M, P)),
            q_sqrt=np.tile(0.2 * np.eye(M)[None], (P, 1, 1)),
            whiten=whiten,
            num_data=N,
        )
        stock.likelihood.quadrature = gpflow.quadrature.NDiagGHQuadrature(1, 10)
        loss_fn = stock.training_loss
        variables = stock.trainable_variables
        Yd = Y.toarray().astype(np.float64)
        rng = np.random.default_rng(0)

        def batches():
            order = rng.permutation(N)
            for s in range(0, N, batch_size):
                rows = order[s : s + batch_size]
                yield (tf.constant(X[rows].toarray()), tf.constant(Yd[rows]))

        @tf.function
        def step(batch):
            with tf.GradientTape() as tape:
                loss = loss_fn(batch)
            grads = tape.gradient(loss, variables)
            opt.apply_gradients(zip(grads, variables))
            return loss

    # Warm-up: trace and run one step so that compilation is not timed.
    step(next(iter(batches())))
    steps_per_epoch = -(-N // batch_size)
    if steps > 0:
        step_seconds = []
        for batch in batches():
            if len(step_seconds) == steps:
                break
            t0 = time.perf_counter()
            step(batch).numpy()
            step_seconds.append(time.perf_counter() - t0)
        sec = float(np.median(step_seconds)) * steps_per_epoch
        method = f"median of {len(step_seconds)} steps x {steps_per_epoch} steps/epoch"
    else:
        epoch_seconds = []
        for _ in range(epochs):
            t0 = time.perf_counter()
            for batch in batches():
                step(batch).numpy()
            epoch_seconds.append(time.perf_counter() - t0)
        sec = float(np.median(epoch_seconds))
        method = f"median of {epochs} epochs"
    flops = step_flops(batch_size, D, M, P, K, "se+linear", whiten=whiten) * (N / batch_size)
    return {
        "route": route,
        "whiten": whiten,
        "step": STEP_NAMES[step_mode] if route == "mlgpf" else "tf.function",
        "dataset": name,
        "N": N,
        "D": D,
        "K": K,
        "P": P,
        "M": M,
        "batch_size": batch_size,
        "steps_per_epoch": steps_per_epoch,
        "timing": method,
        "seconds_per_epoch": sec,
        "gflops_per_s": flops / sec / 1e9,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
    }


def run_children(jobs: list[dict], quick: bool) -> list[dict]:
    """Run the :func:`worker` measurements ``jobs`` (each a dict of its arguments other than
    ``quick``) in one child process, in order, and return their figures in the same order."""
    cmd = [sys.executable, str(HERE), "--worker-jobs", json.dumps(jobs)]
    if quick:
        cmd.append("--quick")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    what = ", ".join(f"{j['route']} P={j['P']} M={j['M']}" for j in jobs)
    if proc.returncode != 0:
        raise RuntimeError(f"benchmark worker ({what}) failed:\n{proc.stderr[-3000:]}")
    lines = proc.stdout.strip().splitlines()[-len(jobs):]
    figures = [json.loads(line) for line in lines]
    if [(f["route"], f["P"], f["M"], f["whiten"]) for f in figures] != [(j["route"], j["P"], j["M"], j["whiten"]) for j in jobs]:
        raise RuntimeError(f"benchmark worker ({what}) printed figures for other jobs:\n{proc.stdout[-3000:]}")
    return figures


def main(argv: list[str] | None = None) -> None:
    from mlgp.experiment import Experiment, add_argparse_args

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_argparse_args(parser)
    parser.add_argument("--worker-jobs", default=None, help=argparse.SUPPRESS)  # JSON list of worker() arguments
    parser.add_argument("--batch-size", type=int, default=None)
    parser.add_argument("--epochs", type=int, default=None, help="timed epochs per measurement")
    parser.add_argument("--steps", type=int, default=0, help="time this many single steps instead of whole epochs (seconds/epoch = median step x steps/epoch); GPflow's stock route at P=159, M=400 needs about 20 GB and minutes per step")
    parser.add_argument("--no-stock", action="store_true", help="skip GPflow's stock route")
    parser.add_argument("--whiten", action="store_true", help="also time the whitened q(u) (MLGPF's all-XLA step and the one with chol(K_ZZ) outside XLA, which the experiment scripts train with)")
    parser.add_argument("--configs", type=parse_configs, default=None, help="P:M pairs to time, e.g. 159:400,30:100 (default: those two)")
    args = parser.parse_args(argv)

    if args.worker_jobs:
        for job in json.loads(args.worker_jobs):
            print(json.dumps(worker(quick=args.quick, **job)), flush=True)
        return

    import pandas as pd

    configs = args.configs or (QUICK["configs"] if args.quick else [(159, 400), (30, 100)])
    forms = [False, True] if (args.whiten or args.quick) else [False]
    batch_size = args.batch_size or (QUICK["batch_size"] if args.quick else 500)
    epochs = args.epochs or (1 if args.quick else 2)
    steps = args.steps or (QUICK["steps"] if args.quick and not args.epochs else 0)
    settings = dict(configs=configs, whiten=forms, batch_size=batch_size, timed_epochs=epochs, timed_steps=steps, kernel="se+linear", dtype="float64")
    if args.quick:
        settings.update(problem={k: QUICK[k] for k in ("num_train", "num_features", "num_labels")},
                        peak_memory="cumulative: --quick runs every measurement in one child process")
    # Per (P, M) and q(u) form: GPflow's stock route (unless --no-stock), then each of MLGPF's step modes.
    plan = []
    for (P, M), whiten in ((c, w) for c in configs for w in forms):
        common = dict(P=P, M=M, batch_size=batch_size, epochs=epochs, steps=steps, whiten=whiten)
        modes = ("xla", "except-cholesky") if whiten else ("plain",)
        plan.append((None if args.no_stock else dict(common, route="stock"),
                     [dict(common, route="mlgpf", step_mode=mode) for mode in modes]))
    jobs = [job for stock_job, our_jobs in plan for job in ([stock_job] if stock_job else []) + our_jobs]
    with Experiment("bench_mlgpf", quick=args.quick, settings=settings, out=args.out) as exp:
        rate = numpy_matmul_rate(500 if args.quick else 2000)
        if args.quick:  # one child process, so that TensorFlow starts once
            figures = iter(run_children(jobs, quick=True))
        else:  # each measurement in its own child process, so that the peak memory is that model's alone
            figures = (run_children([job], quick=False)[0] for job in jobs)
        rows = []
        for stock_job, our_jobs in plan:
            stock = None if stock_job is None else next(figures)
            for job in our_jobs:
                ours = next(figures)
                row = {
                    "P": job["P"],
                    "M": job["M"],
                    "batch": batch_size,
                    "q(u)": "whitened" if job["whiten"] else "non-whitened",
                    "mlgpf step": STEP_NAMES[job["step_mode"]],
                    "timing": ours["timing"],
                    "mlgpf s/epoch": ours["seconds_per_epoch"],
                    "mlgpf peak MB": ours["peak_rss_mb"],
                    "mlgpf GFLOP/s": ours["gflops_per_s"],
                    "numpy matmul GFLOP/s": rate,
                    "fraction of matmul rate": ours["gflops_per_s"] / rate,
                }
                if stock is not None:
                    row.update({
                        "stock s/epoch": stock["seconds_per_epoch"],
                        "stock peak MB": stock["peak_rss_mb"],
                        "speed-up (stock/mlgpf)": stock["seconds_per_epoch"] / ours["seconds_per_epoch"],
                    })
                row["dataset"] = ours["dataset"]
                row["N"] = ours["N"]
                rows.append(row)
                print(pd.DataFrame([row]).to_string(index=False), flush=True)
        exp.table("bench_mlgpf", pd.DataFrame(rows))


if __name__ == "__main__":
    main()
