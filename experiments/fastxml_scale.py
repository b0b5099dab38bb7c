"""FastXML at AmazonCat-13K's scale: resumable tree growth, peak memory, and top-5 prediction for
300,000 and 10⁶ points.

On synthetic data of AmazonCat-13K's shape (:data:`mlgp.data.AMAZONCAT_13K`: N = 1,186,239
training and 306,782 test points, D = 203,882, K = 13,330, about 5 labels and 70 non-zeros per
point; :func:`mlgp.data.extreme_like`, seed ``--seeds``) it runs, in one invocation:

1. generation of the training and test splits;
2. tree growth: :class:`mlgp.baselines.FastXML` with the paper's settings, ``--trees`` trees on
   ``--jobs`` threads sharing one copy of the data (the compiled node solver, ``solver="newglmnet"``,
   which fits each separator on its node's own columns), or with ``--solver liblinear`` on ``--jobs``
   processes with ``separator_features="node"`` (with all 203,882 columns every liblinear call
   would cost O(D)), a progress bar per tree, and
   each tree stored in ``<out>/trees`` as soon as it is grown: a killed run started again with the
   same settings grows only the missing trees (the folder's ``settings.json`` records the run; a
   folder of another run is refused). Each tree file records the seconds its worker took to grow it, so the time for 50
   trees on ``--jobs`` workers, mean tree seconds × 50 / jobs, also covers runs that were killed
   and resumed; it is *extrapolated* whenever fewer than 50 trees were grown;
3. prediction: top-5 of the first ``--test-points`` test points in blocks of ``--block-rows``,
   with P@1/3/5 beside :class:`mlgp.baselines.LabelFrequency`;
4. prediction at scale: top-5 of ``--scale-points`` further points of the same generator (10⁶ by
   default), in the same blocks, timed.

The peak memory of this process and of its worker processes together is sampled every 0.2 s
(psutil) through each phase, as summed resident sets (RSS; pages shared between processes counted
once per process) and as summed proportional sets (PSS; shared pages counted once). Tables ``phases`` and ``accuracy`` go to
``results/fastxml_scale/``.

    python experiments/fastxml_scale.py --trees 50          # the full run (hours: see the README)
    python experiments/fastxml_scale.py --trees 4           # 4 trees, 50 extrapolated
    python experiments/fastxml_scale.py --trees 4 --solver liblinear   # the reference solver, in processes
    python experiments/fastxml_scale.py --quick             # a small shape, for the smoke test
"""

from __future__ import annotations

import argparse
import os
import threading
import time

import numpy as np
import pandas as pd

FULL = dict(trees=50, jobs=2, test_points=300_000, scale_points=1_000_000, block_rows=10_000, nnz_per_row=88)
QUICK = dict(trees=3, jobs=1, test_points=400, scale_points=2_000, block_rows=500, nnz_per_row=30)
QUICK_SHAPE = dict(num_train=3_000, num_test=500, num_features=20_000, num_labels=300, labels_per_point=3.0)


class MemoryWatch:
    """Peak summed memory (bytes) of this process and its descendants, sampled in a thread: ``peak``
    sums their resident sets (RSS: a page shared by processes, such as the training data joblib
    memory-maps into its workers, counts once per process) and ``peak_pss`` their proportional
    shares (PSS: a shared page is split between the processes sharing it, so the sum counts it once)."""

    def __init__(self, interval: float = 0.2) -> None:
        import psutil

        self._me = psutil.Process(os.getpid())
        self._interval = interval
        self.peak = self.peak_pss = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        import psutil

        try:
            procs = [p for p in (self._me, *self._me.children(recursive=True)) if p.is_running()]
            infos = [p.memory_full_info() for p in procs]
            self.peak = max(self.peak, sum(i.rss for i in infos))
            self.peak_pss = max(self.peak_pss, sum(getattr(i, "pss", i.rss) for i in infos))
        except psutil.Error:
            pass

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self._sample()

    def __enter__(self) -> "MemoryWatch":
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()


def main(argv: list[str] | None = None) -> None:
    from mlgp.experiment import add_argparse_args, add_count_options, count_options

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_argparse_args(parser)
    add_count_options(parser, FULL, QUICK)
    parser.add_argument("--solver", choices=("newglmnet", "liblinear"), default="newglmnet",
                        help="FastXML's node solver (default: the compiled one, trees in threads)")
    args = parser.parse_args(argv)
    opts = count_options(args, FULL, QUICK)
    if min(opts.values()) < 1:
        raise SystemExit(f"fastxml_scale: every count must be >= 1, got {opts}")
    run(args, opts)


def _topk_time(est, X, block_rows: int) -> tuple[object, float]:
    t0 = time.perf_counter()
    top = est.predict_topk(X, 5, batch_size=block_rows)
    return top, time.perf_counter() - t0


def run(args: argparse.Namespace, o: dict) -> None:
    from tqdm.auto import tqdm

    from mlgp.baselines import FastXML, LabelFrequency
    from mlgp.data import AMAZONCAT_13K, extreme_like
    from mlgp.experiment import Experiment
    from mlgp.metrics import precision_at_k

    seed = (args.seeds or [0])[0]
    shape = dict(QUICK_SHAPE) if args.quick else {k: v for k, v in AMAZONCAT_13K.items() if k != "nnz_per_row"}
    shape["nnz_per_row"] = o["nnz_per_row"]
    exp = Experiment("fastxml_scale", quick=args.quick, seeds=[seed], out=args.out,
                     settings=dict(shape=shape, **o, solver=args.solver, separator_features="node", max_leaf=10,
                                   max_leaf_labels=20))
    phases: list[dict] = []

    def phase(name: str, seconds: float, watch: MemoryWatch, **extra) -> None:
        detail = ", ".join(f"{k} {v}" for k, v in extra.items())
        phases.append(dict(phase=name, seconds=round(seconds, 2), peak_GB=round(watch.peak / 1e9, 3),
                           peak_PSS_GB=round(watch.peak_pss / 1e9, 3), detail=detail))
        print(f"[fastxml_scale] {name}: {seconds:.1f} s, peak {watch.peak / 1e9:.2f} GB (RSS), "
              f"{watch.peak_pss / 1e9:.2f} GB (PSS); {detail}", flush=True)

    with exp:
        with MemoryWatch() as watch:
            t0 = time.perf_counter()
            ds = extreme_like(**shape, seed=seed, progress=tqdm)
            Xtr, Ytr = ds.train.X, ds.train.Y
        phase("generate", time.perf_counter() - t0, watch, train_nnz=int(Xtr.nnz), labels=int(Ytr.nnz))

        tree_dir = exp.folder / "trees"
        est = FastXML(n_estimators=o["trees"], n_jobs=o["jobs"], solver=args.solver,
                      separator_features="node" if args.solver == "liblinear" else None, random_state=seed)
        before = len(list(tree_dir.glob("tree_*.npz"))) if tree_dir.exists() else 0
        with MemoryWatch() as watch:
            t0 = time.perf_counter()
            est.fit(Xtr, Ytr, tree_dir=tree_dir, progress=True)
            seconds = time.perf_counter() - t0
        grown = o["trees"] - before
        # each tree file records the seconds its worker took to grow it (runs killed and resumed included)
        tree_s = np.array([float(np.load(tree_dir / f"tree_{t:04d}.npz")["seconds"]) for t in range(o["trees"])])
        hours_50 = tree_s.mean() * 50 / o["jobs"] / 3600
        phase("fit", seconds, watch, trees=o["trees"], grown_now=grown, resumed_from=before,
              median_tree_s=round(float(np.median(tree_s)), 1), sum_tree_s=round(float(tree_s.sum()), 1),
              hours_for_50_on_jobs=round(hours_50, 2), fifty_is="measured" if o["trees"] >= 50 else "extrapolated")
        exp.note("tree statistics", dict(leaves_per_tree=float(est.n_leaves_.mean()),
                                         balance=float(est.tree_balance_.mean()),
                                         labels_per_leaf=float(est.labels_per_leaf_.mean())))

        Xte, Yte = ds.test.X[:o["test_points"]], ds.test.Y[:o["test_points"]]
        with MemoryWatch() as watch:
            top, seconds = _topk_time(est, Xte, o["block_rows"])
        phase("predict test", seconds, watch, points=int(Xte.shape[0]),
              ms_per_point=round(1000 * seconds / Xte.shape[0], 3))
        freq = LabelFrequency().fit(Xtr, Ytr)
        rows = [dict(method=f"FastXML ({o['trees']} trees)", **{f"P@{k}": 100 * precision_at_k(Yte, top, k)
                                                               for k in (1, 3, 5)}),
                dict(method="LabelFrequency", **{f"P@{k}": 100 * precision_at_k(Yte, freq.predict_topk(Xte, 5), k)
                                                for k in (1, 3, 5)})]
        exp.table("accuracy", pd.DataFrame(rows))
        print(pd.DataFrame(rows).to_string(index=False), flush=True)
        del ds, Xtr, Ytr, Xte, Yte, top

        with MemoryWatch() as watch:
            more = extreme_like(**dict(shape, num_train=1, num_test=o["scale_points"]), seed=seed).test.X
        with MemoryWatch() as watch:
            top, seconds = _topk_time(est, more, o["block_rows"])
        phase("predict at scale", seconds, watch, points=int(more.shape[0]),
              ms_per_point=round(1000 * seconds / more.shape[0], 3), topk_shape=str(top.indices.shape))
        exp.table("phases", pd.DataFrame(phases))


if __name__ == "__main__":
    main()
