"""Benchmark: XC parsing and evaluation speed (mlgp.data.read_xc, mlgp.metrics.evaluate, topk).

Prints (and writes as CSV and Markdown) the median, minimum and maximum wall time over repeats of

* parsing the largest training file of the data home (``$MLGP_DATA/*/train.txt.gz`` by size) with
  :func:`mlgp.data.read_xc`, beside plain gzip decompression of the same file for reference;
* :func:`mlgp.metrics.inverse_propensity` and :func:`mlgp.metrics.evaluate` (P, nDCG, PSP and
  PSnDCG at k = 1, 3, 5) on N × K = 100,000 × 10,000: a random sparse label matrix with about
  5 labels per row (label popularity ∝ rank^−0.7, so propensities vary) and a top-5 ranking given
  as a :class:`mlgp.metrics.TopK` (the first slot is one of the row's labels for 60 % of rows,
  the rest drawn by popularity);
* :func:`mlgp.metrics.topk` (k = 5) of a dense 10,000 × 10,000 float64 score block, for reference.

``--quick`` shrinks the sizes to 2,000 × 1,000 (and a 2,000 × 1,000 dense block) with one repeat.
Without a data home the parsing rows are skipped.

    python experiments/bench_data_metrics.py            # full: median of 3
    python experiments/bench_data_metrics.py --quick    # CI smoke test
"""

from __future__ import annotations

import argparse
import gzip
import os
import time
from pathlib import Path
from typing import Callable

import numpy as np
import scipy.sparse as sp

FULL = dict(num_rows=100_000, num_labels=10_000, dense_rows=10_000, dense_labels=10_000, repeats=3)
QUICK = dict(num_rows=2_000, num_labels=1_000, dense_rows=2_000, dense_labels=1_000, repeats=1)
LABELS_PER_ROW = 5
TOP_K = 5


def timed(fn: Callable[[], object], repeats: int) -> tuple[list[float], object]:
    """Wall times of ``repeats`` calls of ``fn`` and the last result."""
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return times, out


def largest_train_file(home: Path) -> Path | None:
    """The biggest ``<home>/*/train.txt.gz`` by size on disk, or None."""
    files = sorted(home.glob("*/train.txt.gz"), key=lambda p: (p.stat().st_size, str(p)))
    return files[-1] if files else None


def random_labels(n: int, k: int, per_row: float, rng: np.random.Generator) -> sp.csr_matrix:
    """(n, k) CSR 0/1 labels, about ``per_row`` per row (1 + Poisson(per_row − 1) draws, duplicates
    merged), label l drawn with probability ∝ (l + 1)^−0.7."""
    popularity = (np.arange(k) + 1.0) ** -0.7
    popularity /= popularity.sum()
    counts = 1 + rng.poisson(per_row - 1.0, size=n)
    cols = rng.choice(k, size=int(counts.sum()), p=popularity)
    rows = np.repeat(np.arange(n), counts)
    Y = sp.csr_matrix((np.ones(cols.size), (rows, cols)), shape=(n, k))
    Y.sum_duplicates()
    Y.data[:] = 1.0
    return Y


def random_topk(Y: sp.csr_matrix, k: int, rng: np.random.Generator):
    """A plausible top-k ranking of each row of ``Y``: distinct labels, scores non-increasing."""
    from mlgp.metrics import TopK

    n, K = Y.shape
    popularity = (np.arange(K) + 1.0) ** -0.7
    popularity /= popularity.sum()
    idx = rng.choice(K, size=(n, k), p=popularity)
    counts = np.diff(Y.indptr)
    hit = (rng.random(n) < 0.6) & (counts > 0)
    pick = Y.indptr[:-1] + (rng.random(n) * np.maximum(counts, 1)).astype(np.int64)
    idx[hit, 0] = Y.indices[pick[hit]]
    while True:  # redraw the non-first slots of rows with repeated labels
        s = np.sort(idx, axis=1)
        bad = np.flatnonzero((s[:, 1:] == s[:, :-1]).any(axis=1))
        if bad.size == 0:
            break
        idx[bad, 1:] = rng.choice(K, size=(bad.size, k - 1), p=popularity)
    scores = -np.sort(-rng.random((n, k)), axis=1)
    return TopK(idx, scores)


def row(task: str, size: str, times: list[float], amount: float | None = None, unit: str = "") -> dict:
    med = float(np.median(times))
    return {
        "task": task,
        "size": size,
        "repeats": len(times),
        "median s": med,
        "min s": float(np.min(times)),
        "max s": float(np.max(times)),
        "throughput": (amount / med) if amount is not None and med > 0 else float("nan"),
        "unit": unit,
    }


def main(argv: list[str] | None = None) -> None:
    import pandas as pd

    from mlgp.data import data_home, read_xc
    from mlgp.errors import DatasetNotFoundError
    from mlgp.experiment import Experiment, add_argparse_args
    from mlgp.metrics import evaluate, inverse_propensity, topk

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_argparse_args(parser)
    parser.add_argument("--repeats", type=int, default=None, help="timed repeats (default 3; 1 with --quick)")
    args = parser.parse_args(argv)
    sizes = dict(QUICK if args.quick else FULL)
    if args.repeats:
        sizes["repeats"] = args.repeats
    seed = (args.seeds or [0])[0]
    reps = sizes["repeats"]
    try:
        home = data_home(required=False)
    except DatasetNotFoundError:  # a data home named but missing: time the synthetic parts only
        home = None
    settings = dict(sizes, labels_per_row=LABELS_PER_ROW, top_k=TOP_K, ks=[1, 3, 5],
                    data_home=str(home) if home else None)

    with Experiment("bench_data_metrics", quick=args.quick, settings=settings, seeds=[seed], out=args.out) as exp:
        rows = []

        # ---- parsing
        path = largest_train_file(home) if home is not None else None
        if path is None:
            print("no data home with */train.txt.gz (set MLGP_DATA): parsing rows skipped", flush=True)
            exp.note("parse", "skipped: no data home")
        else:
            gz_mb = path.stat().st_size / 1e6
            t_gz, raw = timed(lambda: gzip.open(path, "rb").read(), reps)
            raw_mb = len(raw) / 1e6
            t_xc, (X, Y) = timed(lambda: read_xc(path), reps)
            what = f"{path.parent.name}/{path.name}: N={X.shape[0]}, D={X.shape[1]}, K={Y.shape[1]}, nnz(X)={X.nnz}"
            print(f"largest training file: {path} ({gz_mb:.2f} MB gzip, {raw_mb:.2f} MB text); {what}", flush=True)
            rows.append(row("gzip decompress only", f"{path.parent.name} ({raw_mb:.1f} MB text)", t_gz, raw_mb, "MB/s"))
            rows.append(row("read_xc (parse + validate)", f"{path.parent.name} ({raw_mb:.1f} MB text)", t_xc, raw_mb, "MB/s"))
            rows.append(row("read_xc (parse + validate)", f"{path.parent.name} (N={X.shape[0]})", t_xc, X.shape[0], "rows/s"))
            exp.note("parse_file", dict(path=str(path), gzip_mb=gz_mb, text_mb=raw_mb, N=X.shape[0], D=X.shape[1], K=Y.shape[1], nnz=int(X.nnz)))
            del raw, X, Y

        # ---- evaluation on synthetic top-k scores
        rng = np.random.default_rng(seed)
        n, K = sizes["num_rows"], sizes["num_labels"]
        t0 = time.perf_counter()
        Y = random_labels(n, K, LABELS_PER_ROW, rng)
        ranking = random_topk(Y, TOP_K, rng)
        print(f"synthetic labels {n}×{K}: {Y.nnz / n:.2f} labels per row; top-{TOP_K} ranking built in "
              f"{time.perf_counter() - t0:.1f} s", flush=True)
        size = f"{n:,}×{K:,}, top-{TOP_K}"
        t_w, w = timed(lambda: inverse_propensity(Y), reps)
        rows.append(row("inverse_propensity", f"{n:,}×{K:,}", t_w, n, "rows/s"))
        t_ev, table = timed(lambda: evaluate(Y, ranking, ks=(1, 3, 5), inv_propensity=w), reps)
        rows.append(row("evaluate P/nDCG/PSP/PSnDCG @1,3,5", size, t_ev, n, "rows/s"))
        print(f"metrics of the random ranking (sanity check, percent):\n{table.round(2).to_string()}", flush=True)
        exp.note("random_ranking_metrics", table.round(4).to_dict())
        del Y, ranking

        # ---- topk of a dense block
        nd, Kd = sizes["dense_rows"], sizes["dense_labels"]
        S = rng.standard_normal((nd, Kd))
        t_tk, _ = timed(lambda: topk(S, TOP_K), reps)
        rows.append(row(f"topk (k={TOP_K}) of dense float64 scores", f"{nd:,}×{Kd:,}", t_tk, nd, "rows/s"))
        del S

        exp.table("bench_data_metrics", pd.DataFrame(rows), floatfmt=".4g")
        exp.note("cpus", os.cpu_count())


if __name__ == "__main__":
    main()
