"""Benchmark: MLGPF training steps with full against subspace inducing inputs as D grows.

On synthetic sparse data with fixed N, non-zeros per row and K, for each input dimension D this
measures, in one run:

* the one-off subspace basis: seconds of the rank-R truncated SVD by scikit-learn's
  ``randomized_svd`` and by SciPy's ``svds`` (:func:`mlgp.data.subspace.subspace_basis`), and of
  projecting the whole training set (:class:`mlgp.data.subspace.SubspaceProjection`);
* seconds per training step (the median over the steps of the second epoch of
  :func:`mlgp.training.fit`: ELBO, gradient and Adam on a minibatch) and the peak resident memory of
  the process, for an MLGPF with full inducing inputs (Z of M × D; skipped above ``--full-max-d``)
  and one with subspace inducing inputs (``subspace_rank=R``) at equal P, M and batch. Each model
  runs in its own child process, so each peak belongs to that model alone.

It writes the table ``bench_subspace`` and the figure ``step_time_vs_d`` (seconds per step against D,
log–log). ``--quick``: D = 2,000 on a tiny problem, every model in this process (TensorFlow
starts once; the memory figures then mean nothing), the CI smoke test.

    python experiments/bench_subspace.py            # D = 10³ … 10⁶
    python experiments/bench_subspace.py --quick
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

HERE = Path(__file__).resolve()
FULL = dict(num_points=5000, nnz_per_row=50, num_labels=200, dims=[1_000, 10_000, 100_000, 1_000_000], rank=100,
            num_latent_gps=20, num_inducing=100, batch_size=500, full_max_d=100_000)
QUICK = dict(num_points=300, nnz_per_row=10, num_labels=10, dims=[2_000], rank=8, num_latent_gps=3,
             num_inducing=10, batch_size=100, full_max_d=2_000)


def synthetic(num_points: int, num_features: int, nnz_per_row: int, num_labels: int, seed: int):
    """Sparse (N, D) features with about ``nnz_per_row`` entries per row (column j drawn with
    probability ∝ 1/(j + 1), unit-norm rows) and (N, K) labels that depend on them (each label: the
    top 10 % of X w_k for a sparse random w_k), built from index arrays (nothing of size N × D or
    D × K is allocated)."""
    rng = np.random.default_rng(seed)
    n = num_points * nnz_per_row
    cols = np.minimum((num_features ** rng.random(n)).astype(np.int64) - 1, num_features - 1)  # ≈ Zipf over columns
    rows = np.repeat(np.arange(num_points), nnz_per_row)
    X = sp.csr_matrix((rng.random(n), (rows, cols)), shape=(num_points, num_features))  # duplicates summed
    X = sp.csr_matrix(X.multiply(1.0 / np.sqrt(np.asarray(X.multiply(X).sum(axis=1)))))
    w_nnz = max(num_labels, num_features * num_labels // 100)
    W = sp.csr_matrix((rng.standard_normal(w_nnz), (rng.integers(0, num_features, w_nnz),
                                                     rng.integers(0, num_labels, w_nnz))), shape=(num_features, num_labels))
    scores = np.asarray((X @ W).todense())
    Y = sp.csr_matrix((scores > np.quantile(scores, 0.9, axis=0)).astype(np.float64))
    return X, Y


def one(spec: dict) -> dict:
    """Train one model (in this process) and return its figures: the build and step seconds, and
    the process's peak resident memory so far (MB; only a child running one model makes it that
    model's)."""
    import tensorflow as tf  # noqa: F401  (imported before timing)

    from mlgp.models import mlgpf_from_data
    from mlgp.training import fit

    X, Y = synthetic(spec["num_points"], spec["D"], spec["nnz_per_row"], spec["num_labels"], spec["seed"])
    t0 = time.perf_counter()
    model = mlgpf_from_data(X, Y, kernel="se", num_latent_gps=spec["num_latent_gps"], num_inducing=spec["num_inducing"],
                            q_family="whitened", seed=spec["seed"],
                            subspace_rank=spec["rank"] if spec["method"] == "subspace" else None)
    build = time.perf_counter() - t0
    steps: list[float] = []

    def timed_epoch(epoch, model_, row):
        steps.append(row["seconds"] / max(1, -(-spec["num_points"] // spec["batch_size"])))

    fit(model, (X, Y), epochs=2, batch_size=spec["batch_size"], progress=False, callback=timed_epoch)
    import resource

    return {"build s": build, "s per step": steps[-1],
            "peak MB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}  # Linux reports kB


def measure(spec: dict) -> dict:
    """:func:`one` in a child process, so that the peak resident memory is that model's alone."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.run([sys.executable, str(HERE), "--one", json.dumps(spec)], stdout=subprocess.PIPE, text=True,
                          env=env)
    if proc.returncode != 0:
        raise SystemExit(f"the child measuring {spec} failed (exit {proc.returncode})")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def basis_times(X, rank: int, seed: int) -> dict:
    """Seconds of the rank-R basis by each solver, and of projecting X."""
    from mlgp.data.subspace import SubspaceProjection, subspace_basis

    out = {}
    for solver in ("randomized", "svds"):
        t0 = time.perf_counter()
        basis = subspace_basis(X, rank, solver=solver, seed=seed)
        out[f"svd {solver} s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    SubspaceProjection(basis.basis)(X)
    out["projection s"] = time.perf_counter() - t0
    return out


def main(argv: list[str] | None = None) -> None:
    import pandas as pd

    from mlgp.experiment import Experiment, add_argparse_args

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_argparse_args(parser)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--full-max-d", type=int, default=None, help="largest D for full inducing inputs")
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(one(json.loads(args.one))), flush=True)
        return
    sizes = dict(QUICK if args.quick else FULL)
    if args.full_max_d is not None:
        sizes["full_max_d"] = args.full_max_d
    seed = (args.seeds or [0])[0]
    with Experiment("bench_subspace", quick=args.quick, settings=dict(sizes, seed=seed), seeds=[seed], out=args.out) as exp:
        rows = []
        for D in sizes["dims"]:
            X, _ = synthetic(sizes["num_points"], D, sizes["nnz_per_row"], sizes["num_labels"], seed)
            svd = basis_times(X, sizes["rank"], seed)
            print(f"D={D:,}: " + ", ".join(f"{k} {v:.2f}" for k, v in svd.items()), flush=True)
            for method in ("full", "subspace"):
                if method == "full" and D > sizes["full_max_d"]:
                    print(f"D={D:,}: full inducing inputs skipped (above --full-max-d {sizes['full_max_d']:,})", flush=True)
                    continue
                spec = {k: sizes[k] for k in ("num_points", "nnz_per_row", "num_labels", "rank", "num_latent_gps",
                                              "num_inducing", "batch_size")}
                spec.update(D=D, method=method, seed=seed)
                result = one(spec) if args.quick else measure(spec)  # quick: one process, TensorFlow started once
                rows.append(dict(D=D, method=method, **svd, **result))
                print(f"D={D:,} {method}: {result['s per step'] * 1e3:.1f} ms per step, peak {result['peak MB']:.0f} MB",
                      flush=True)
        frame = pd.DataFrame(rows)
        exp.table("bench_subspace", frame, floatfmt=".4g")

        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(5, 3.5))
        for method, part in frame.groupby("method"):
            ax.loglog(part["D"], part["s per step"] * 1e3, "o-", label=method)
        ax.set_xlabel("input dimension D")
        ax.set_ylabel("ms per training step")
        ax.legend()
        exp.figure("step_time_vs_d", fig)


if __name__ == "__main__":
    main()
