"""MLGPF with subspace inducing inputs at AmazonCat-13K's scale: one epoch and a top-5 prediction.

On synthetic data of AmazonCat-13K's shape (:data:`mlgp.data.AMAZONCAT_13K`: N = 1,186,239
training and 306,782 test points, D = 203,882, K = 13,330, about 5 labels per point, power-law
label frequencies; :func:`mlgp.data.extreme_like`, generated straight into CSR arrays) it runs and
times each phase in one process, printing the peak resident memory after each:

1. generation;
2. the subspace basis from a row sample (``--sample-rows``; a basis from all 1.19 M rows would
   need an N × R range matrix), by each solver of ``--svd-solvers``;
3. one fit of :class:`mlgp.recipes.MLGPFClassifier` (the paper's schedule: every training row, no
   hold-out, the epochs given): building the model (the basis again, by the model builder's
   randomized solver, k-means of A on the sample's coordinates, the initial values; the set-up row of
   its trace) and one epoch (``--epochs``) of training with ``--negatives`` sampled negative labels
   per point, every factor of q(u) trained (no warm-up: the cost of a full step); the peak memory of
   both is read after the fit;
4. the projection of every training row onto the basis (what one epoch's minibatches cost in it:
   the model normalises and projects each minibatch on the fly, so the N × R matrix is never held);
5. top-5 prediction of the first ``--test-points`` test points in blocks, with P@1/3/5 beside the
   label-frequency baseline (:class:`mlgp.baselines.LabelFrequency`).

The tables ``phases`` (seconds, peak GB) and ``accuracy`` go to ``results/amazoncat_scale/``.

    python experiments/amazoncat_scale.py                   # the full shape (about an hour here)
    python experiments/amazoncat_scale.py --quick           # a small shape, for the smoke test
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np
import pandas as pd

#: Model and run settings: the paper's P, M and batch; R and the row sample chosen for memory.
FULL = dict(rank=500, sample_rows=20_000, num_latent_gps=30, num_inducing=500, batch_size=500, negatives=100,
            test_points=300_000, block_rows=10_000, epochs=1)
QUICK = dict(rank=10, sample_rows=400, num_latent_gps=4, num_inducing=20, batch_size=200, negatives=20,
             test_points=500, block_rows=200, epochs=1)
QUICK_SHAPE = dict(num_train=2_000, num_test=500, num_features=20_000, num_labels=300, nnz_per_row=30,
                   labels_per_point=3.0)


def peak_gb() -> float:
    """Peak resident memory of this process so far (GB; Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9


def main(argv: list[str] | None = None) -> None:
    from mlgp.experiment import add_argparse_args, add_count_options, count_options

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_argparse_args(parser)
    add_count_options(parser, FULL, QUICK)
    parser.add_argument("--svd-solvers", default="randomized,svds", help="solvers to time (the model builder's randomized one builds the model)")
    parser.add_argument("--kernel", default="linear", help="s-LINEAR, the paper's AmazonCat model (default)")
    parser.add_argument("--nnz-per-row", type=int, default=88,
                        help="feature draws per point (88 gives about 70 non-zeros per row after merging)")
    args = parser.parse_args(argv)
    opts = count_options(args, FULL, QUICK)
    run(args, opts)


def run(args: argparse.Namespace, o: dict) -> None:
    import tensorflow as tf
    from tqdm.auto import tqdm

    from mlgp.baselines import LabelFrequency
    from mlgp.blocks import row_blocks
    from mlgp.data import AMAZONCAT_13K, extreme_like
    from mlgp.data.subspace import subspace_basis
    from mlgp.experiment import Experiment
    from mlgp.metrics import precision_at_k

    seed = (args.seeds or [0])[0]
    shape = dict(QUICK_SHAPE) if args.quick else dict(AMAZONCAT_13K, nnz_per_row=args.nnz_per_row)
    settings = dict(shape=shape, **o, kernel=args.kernel, svd_solvers=args.svd_solvers, q_family="whitened",
                    dtype="float32", threads=tf.config.threading.get_inter_op_parallelism_threads())
    with Experiment("amazoncat_scale", quick=args.quick, settings=settings, seeds=[seed], out=args.out) as exp:
        phases = []

        def phase(name: str, seconds: float, **facts) -> None:
            phases.append(dict(phase=name, seconds=seconds, peak_gb=peak_gb(), **facts))
            print(f"[amazoncat_scale] {name}: {seconds:.1f} s, peak {phases[-1]['peak_gb']:.2f} GB {facts or ''}",
                  flush=True)
            exp.table("phases", pd.DataFrame(phases), show=False)

        t = time.perf_counter()
        ds = extreme_like(**shape, seed=seed, progress=tqdm, name="amazoncat-shape")
        Xtr, Ytr = ds.train.X, ds.train.Y
        phase("generate", time.perf_counter() - t, nnz_per_row=round(Xtr.nnz / Xtr.shape[0], 1),
              labels_per_point=round(Ytr.nnz / Ytr.shape[0], 2), X_gb=round((Xtr.data.nbytes + Xtr.indices.nbytes) / 1e9, 2))

        solvers = {}
        for solver in args.svd_solvers.split(","):
            t = time.perf_counter()
            basis = subspace_basis(Xtr, o["rank"], solver=solver, seed=seed, sample_rows=o["sample_rows"])
            solvers[solver] = time.perf_counter() - t
            phase(f"svd ({solver}, {o['sample_rows']} rows, R = {o['rank']})", solvers[solver],
                  top_singular_value=round(float(basis.singular_values[0]), 3))
            del basis

        estimator = _fit(Xtr, Ytr, args.kernel, o, seed, phase)
        exp.table("elbo_trace", estimator.trace_, show=False)

        t = time.perf_counter()
        for _ in tqdm(row_blocks(Xtr, 10 * o["batch_size"], input_map=estimator.model_.input_map),
                      total=-(-Xtr.shape[0] // (10 * o["batch_size"])), desc="projecting"):
            pass
        phase("project every training row (blocks)", time.perf_counter() - t)

        n_test = min(o["test_points"], ds.test.X.shape[0])
        Xte, Yte = ds.test.X[:n_test], ds.test.Y[:n_test]
        t = time.perf_counter()
        parts = [estimator.predict_topk(Xte[s: s + o["block_rows"]], 5, batch_size=1000)
                 for s in tqdm(range(0, n_test, o["block_rows"]), desc="predicting top-5")]
        phase(f"top-5 prediction of {n_test} test points", time.perf_counter() - t)
        indices = np.vstack([p.indices for p in parts])
        scores = np.vstack([p.scores for p in parts])
        from mlgp.scores import TopK

        top = TopK(indices, scores)
        baseline = LabelFrequency().fit(Xtr, Ytr).predict_topk(Xte, 5)
        rows = [dict(method=f"MLGPF s-{args.kernel.upper()} (R = {o['rank']})",
                     **{f"P@{k}": 100 * precision_at_k(Yte, top, k) for k in (1, 3, 5)}),
                dict(method="LabelFrequency", **{f"P@{k}": 100 * precision_at_k(Yte, baseline, k) for k in (1, 3, 5)})]
        exp.table("accuracy", pd.DataFrame(rows))
        exp.table("phases", pd.DataFrame(phases), floatfmt=".2f")
        exp.note("svd_seconds", solvers)


def _fit(Xtr, Ytr, kernel: str, o: dict, seed: int, phase):
    """The fitted MLGPFClassifier, its building and its training timed as two phases. The model and
    the training this experiment has always timed: mlgpf_from_data's start (no warm start, Z free)
    and every factor of q(u) trained from the first step, on the paper's schedule."""
    from mlgp.recipes import MLGPFClassifier
    from mlgp.recipes.wrapped import epoch_rows

    estimator = MLGPFClassifier(
        kernel=kernel, num_latent_gps=o["num_latent_gps"], num_inducing=o["num_inducing"], subspace_rank=o["rank"],
        subspace_sample=o["sample_rows"], batch_size=o["batch_size"], negatives=o["negatives"], epochs=o["epochs"],
        q_family="whitened", dtype="float32", warm_start=False, unit_sphere_inducing=False, covariance_warmup=0,
        preprocessing="rows", seed=seed, validation_fraction=0, early_stopping=False, refit=False,
        jit_compile="except-cholesky", progress=True, calibration=None)
    t = time.perf_counter()
    estimator.fit(Xtr, Ytr)
    seconds = time.perf_counter() - t
    built = float(estimator.trace_["elapsed"].iloc[0])  # the set-up row: until the first optimiser step
    phase("build the model (svd by randomized again, k-means, initial values)", built)
    trace = epoch_rows(estimator.trace_)
    steps = int(trace["step"].iloc[-1])
    phase(f"train {o['epochs']} epoch(s), {steps} steps", seconds - built,
          ms_per_step=round(1000 * (seconds - built) / steps, 1), elbo=float(trace["elbo"].iloc[-1]))
    return estimator


if __name__ == "__main__":
    main()
