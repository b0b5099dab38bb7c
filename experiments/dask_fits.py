"""FastXML's trees and GenEML's batch EM on a ``dask.distributed`` cluster of worker processes,
against the same fits in one process: equal models, fit times, per-worker peak memory, and how
often the training data were sent.

One invocation: a ``LocalCluster`` of ``--workers`` worker processes (one thread each, nannies,
``--memory-limit`` each) on this machine; for each data set, ``FastXML(n_estimators=--trees)``
and ``GenEML(n_components=--components, inference="em", max_iter=--iterations)`` are fitted with
``n_jobs=1`` and then inside ``joblib.parallel_backend("dask")``. The table ``dask_fits`` gives
per (data set, model): the fit seconds of both, whether the fitted arrays are identical, the
number of ``Client.scatter`` calls during the Dask fit that broadcast the training data (once per
fit: one call) and of the others (joblib sending a task's changing arguments, e.g. EM's current
parameters, once per call), and each worker's peak resident memory after the fits (``mlgp.parallel.worker_peak_memory``,
which includes the worker's interpreter, NumPy, SciPy, scikit-learn and numba), beside the size of
the training data. BLAS runs with one thread everywhere, so that the fits are the same computation.

    python experiments/dask_fits.py                       # bibtex, delicious: 50 trees, 10 EM iterations
    python experiments/dask_fits.py --quick               # enron: 4 trees, 2 EM iterations, in-process workers
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

FULL = dict(trees=50, iterations=10, components=50, workers=2)
QUICK = dict(trees=4, iterations=2, components=10, workers=2)


def _arrays(model) -> dict:
    if hasattr(model, "forest_"):
        return model.forest_.to_arrays()
    return {name: np.asarray(getattr(model, name)) for name in ("W_", "V_", "coef_", "exposure_")
            if getattr(model, name, None) is not None}


def _same(a, b) -> bool:
    A, B = _arrays(a), _arrays(b)
    return A.keys() == B.keys() and all(np.array_equal(A[k], B[k]) for k in A)


def run(args: argparse.Namespace, o: dict) -> None:
    import distributed
    import joblib
    import pandas as pd
    from threadpoolctl import threadpool_limits

    import mlgp.data
    from mlgp.baselines import FastXML
    from mlgp.experiment import Experiment
    from mlgp.geneml import GenEML
    from mlgp.parallel import worker_peak_memory

    datasets = [d for d in (args.datasets or ("enron" if args.quick else "bibtex,delicious")).split(",") if d]
    exp = Experiment("dask_fits", quick=args.quick, settings=dict(o, datasets=datasets, memory_limit=args.memory_limit),
                     out=args.out)
    models = {"FastXML": lambda: FastXML(n_estimators=o["trees"], random_state=0),
              "GenEML batch EM": lambda: GenEML(n_components=o["components"], inference="em", max_iter=o["iterations"],
                                                random_state=0)}
    rows = []
    calls: list[bool] = []  # one entry per scatter call: whether it broadcast to every worker
    original = distributed.Client.scatter

    def counting(self, data, *a, **k):
        calls.append(bool(k.get("broadcast", False)))
        return original(self, data, *a, **k)

    distributed.Client.scatter = counting
    env = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    os.environ.update(env)
    try:
        with exp, threadpool_limits(1), distributed.LocalCluster(
                n_workers=o["workers"], threads_per_worker=1, processes=not args.quick, memory_limit=args.memory_limit,
                dashboard_address=None) as cluster, distributed.Client(cluster) as client:
            for name in datasets:
                ds = mlgp.data.load(name)
                X, Y = ds.train.X, ds.train.Y
                data_mb = (X.data.nbytes + X.indices.nbytes + X.indptr.nbytes + Y.data.nbytes + Y.indices.nbytes) / 2**20
                for label, make in models.items():
                    t0 = time.perf_counter()
                    one = make().set_params(n_jobs=1).fit(X, Y)
                    local_s = time.perf_counter() - t0
                    calls.clear()
                    t0 = time.perf_counter()
                    with joblib.parallel_backend("dask"):
                        on_dask = make().set_params(n_jobs=-1).fit(X, Y)
                    dask_s = time.perf_counter() - t0
                    peaks = worker_peak_memory(client)
                    row = {"dataset": name, "model": label, "fit s (1 process)": local_s, "fit s (Dask)": dask_s,
                           "identical": _same(one, on_dask), "data scatter calls": sum(calls),
                           "other scatter calls": len(calls) - sum(calls), "data MB": data_mb,
                           **{f"worker {i} peak MB": v / 2**20 for i, v in enumerate(sorted(peaks.values()))}}
                    rows.append(row)
                    print(f"[dask_fits] {name} {label}: 1 process {local_s:.2f} s, Dask {dask_s:.2f} s, identical "
                          f"{row['identical']}, {sum(calls)} data scatter call(s) ({len(calls) - sum(calls)} others), "
                          "worker peaks "
                          f"{', '.join(f'{v / 2**20:.0f} MB' for v in sorted(peaks.values()))} "
                          f"(data {data_mb:.1f} MB)", flush=True)
            exp.table("dask_fits", pd.DataFrame(rows))
    finally:
        distributed.Client.scatter = original
    if not all(r["identical"] for r in rows):
        raise SystemExit("dask_fits: a Dask fit differs from its one-process fit")


def main(argv: list[str] | None = None) -> None:
    from mlgp.experiment import add_argparse_args, add_count_options, count_options

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_argparse_args(parser)
    add_count_options(parser, FULL, QUICK)
    parser.add_argument("--datasets", default=None, help="comma-separated (default bibtex,delicious; --quick: enron)")
    parser.add_argument("--memory-limit", default="4GB", help="each worker's Dask memory limit (default 4GB)")
    args = parser.parse_args(argv)
    run(args, count_options(args, FULL, QUICK))


if __name__ == "__main__":
    main()
