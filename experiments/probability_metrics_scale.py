"""Probability metrics at AmazonCat-13K's shape: N = 300,000 test points × K = 13,330 labels (4.0e9
entries), synthetic scores, sparse labels, a block of rows at a time.

Every block's probabilities are drawn (uniform to the fourth power: most near 0, as an extreme
classifier's are) with 5 positive labels per row, drawn uniformly; ``mlgp.metrics.evaluate_proba``
computes LPD, NLL, Brier, ECE/MCE (fine-histogram bins past 2^24 entries) and ECE@1/3/5. The blocks
are generated twice: once alone (the generation's seconds) and once into the metrics; the metrics'
seconds are the difference. Peak resident memory is the process's (ru_maxrss). Writes the table
``scale``.

    python experiments/probability_metrics_scale.py
    python experiments/probability_metrics_scale.py --quick      # N = 3,000
"""

from __future__ import annotations

import argparse
import resource
import time

FULL = dict(num_points=300_000, num_labels=13_330, batch_size=512, n_jobs=2)
QUICK = dict(num_points=3_000, num_labels=13_330, batch_size=512, n_jobs=2)
POSITIVES = 5


def blocks(num_points: int, num_labels: int, batch_size: int, seed: int = 0):
    """``(rows, P, Y)`` blocks of synthetic probabilities and labels (CSR), reproducibly."""
    import numpy as np
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    for start in range(0, num_points, batch_size):
        B = min(batch_size, num_points - start)
        P = rng.random((B, num_labels))
        P *= P
        P *= P
        labels = np.sort(rng.choice(num_labels, size=(B, POSITIVES), replace=True), axis=1)
        Y = sp.csr_matrix((np.ones(B * POSITIVES), labels.ravel(), np.arange(0, B * POSITIVES + 1, POSITIVES)),
                          shape=(B, num_labels))
        Y.sum_duplicates()
        Y.data[:] = 1.0
        yield slice(start, start + B), P, Y


def main(argv: list[str] | None = None) -> None:
    from mlgp.experiment import add_argparse_args

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_argparse_args(parser)
    run(parser.parse_args(argv))


def run(args: argparse.Namespace) -> None:
    import pandas as pd
    import scipy.sparse as sp

    from mlgp.experiment import Experiment
    from mlgp.metrics import evaluate_proba

    s = QUICK if args.quick else FULL
    with Experiment("probability_metrics_scale", quick=args.quick, settings=s, seeds=[0], out=args.out) as exp:
        t0 = time.perf_counter()
        parts = [Y for _, _, Y in blocks(**{k: s[k] for k in ("num_points", "num_labels", "batch_size")})]
        generation = time.perf_counter() - t0
        Y = sp.vstack(parts).tocsr()
        del parts
        t0 = time.perf_counter()
        pairs = ((rows, P) for rows, P, _ in blocks(s["num_points"], s["num_labels"], s["batch_size"]))
        report = evaluate_proba(Y, pairs, batch_size=s["batch_size"], n_jobs=s["n_jobs"])
        total = time.perf_counter() - t0
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        row = {"N": s["num_points"], "K": s["num_labels"], "entries": s["num_points"] * s["num_labels"],
               "threads": s["n_jobs"], "generation s": generation, "metrics s": total - generation,
               "total s": total, "peak MB": peak_mb, "exact bins": report.reliability.exact,
               **{k: v for k, v in report.as_dict().items() if not k.startswith("MCE@")}}
        exp.table("scale", pd.DataFrame([row]), floatfmt=".4f")


if __name__ == "__main__":
    main()
