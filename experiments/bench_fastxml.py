"""Train and predict time and peak memory of mlgp's FastXML against omikuji (Parabel) and napkinXC
(PLT), measured in the same run on the same data, with 1 and 2 threads or processes.

Every (dataset, tool, threads) run is a child process that loads the data, fits on the train split
(timed), predicts each test point's top 5 (timed) and reports P@1/3/5 (hits among the predictions
returned, divided by k). The parent samples the resident memory of the child and all its
descendants (joblib's worker processes) every 20 ms with psutil and reports the peak of their sum,
and the child's own resident memory after loading the data. Tools:

- ``mlgp FastXML``: :class:`mlgp.baselines.FastXML`, the paper's defaults (50 trees), its compiled
  node solver (``solver="newglmnet"``, trees in ``n_jobs`` threads), ``random_state`` each of
  ``--seeds``;
- ``mlgp FastXML liblinear``: the same with ``solver="liblinear"`` (scikit-learn's liblinear on all
  D columns, trees in ``n_jobs`` processes: the trees of earlier releases);
- ``mlgp FastXML liblinear node`` (not run unless named in ``--tools``): liblinear with
  ``separator_features="node"``;
- ``omikuji``: ``omikuji.Model.train_on_data`` with its default hyper-parameters (Parabel-like:
  3 trees of balanced 2-means label clusters, liblinear node classifiers), ``n_threads``; it reads
  the uncompressed XC text file (written to a temporary folder before timing); prediction is its
  Python API's one point at a time;
- ``napkinXC``: ``napkinxc.models.PLT`` with its defaults (hierarchical k-means label tree),
  ``threads``, fit on CSR features and label lists, ``predict(X, top_k=5)``.

Data sets are registry names, or ``tmc2007-like``: a synthetic set of Mulan tmc2007-500's shape
(21,519 training and 7,077 test points, D = 500, K = 22, about 2.2 labels per point; 50 feature draws
per point, a guess: tmc2007's own sparsity is not used) drawn by :func:`mlgp.data.extreme_like`
with seed 0 in every child (omikuji reads it from an XC text file written before timing).

Runs are one after another on one machine, so ratios within one invocation are comparable;
nothing else should run meanwhile. Install the peers with ``pip install -e ".[bench]"``; a missing
peer is reported as a row without numbers and named in the output.

    python experiments/bench_fastxml.py                         # bibtex, delicious, tmc2007-like; 1 and 2 threads
    python experiments/bench_fastxml.py --threads 2 --tools "mlgp FastXML,mlgp FastXML node" --seeds 0,1,2,3,4
    python experiments/bench_fastxml.py --datasets bibtex --threads 2
    python experiments/bench_fastxml.py --quick                 # enron, 3 trees, 1 thread
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

NAME = "bench_fastxml"
TOOLS = ("mlgp FastXML", "mlgp FastXML liblinear", "omikuji", "napkinXC")
OPTIONAL_TOOLS = ("mlgp FastXML liblinear node",)
SYNTHETIC = {"tmc2007-like": dict(num_train=21_519, num_test=7_077, num_features=500, num_labels=22, nnz_per_row=50,
                                  labels_per_point=2.2, seed=0)}
COLUMNS = ["dataset", "tool", "threads", "seed", "fit s", "predict s", "predict ms/point", "peak MB", "data MB",
           "P@1", "P@3", "P@5", "fit s / FastXML", "peak MB / FastXML", "FastXML fit s / omikuji", "status"]


# ------------------------------------------------------------------------- one run (child) --
def _precision(Y, predictions: list[list[int]], k: int) -> float:
    """100 · mean over points of |first k predictions ∩ labels| / k (missing predictions miss)."""
    Y = Y.tocsr()
    hits = 0
    for i, pred in enumerate(predictions):
        row = set(Y.indices[Y.indptr[i]:Y.indptr[i + 1]].tolist())
        hits += sum(1 for p in pred[:k] if p in row)
    return 100.0 * hits / (k * len(predictions))


def _load(name: str):
    import mlgp.data

    return mlgp.data.extreme_like(**SYNTHETIC[name], name=name) if name in SYNTHETIC else mlgp.data.load(name)


def _write_xc(path: Path, X, Y) -> None:
    """``X``, ``Y`` as an XC repository text file (header ``N D K``; ``labels feature:value ...``)."""
    with open(path, "w") as f:
        f.write(f"{X.shape[0]} {X.shape[1]} {Y.shape[1]}\n")
        for i in range(X.shape[0]):
            labels = ",".join(map(str, Y.indices[Y.indptr[i]:Y.indptr[i + 1]]))
            a, b = X.indptr[i], X.indptr[i + 1]
            feats = " ".join(f"{j}:{v:.6g}" for j, v in zip(X.indices[a:b], X.data[a:b]))
            f.write(f"{labels} {feats}\n")


def _child(spec: dict) -> dict:
    import psutil

    ds = _load(spec["dataset"])
    Xtr, Ytr, Xte, Yte = ds.train.X.tocsr(), ds.train.Y.tocsr(), ds.test.X.tocsr(), ds.test.Y.tocsr()
    data_mb = psutil.Process().memory_info().rss / 2**20
    tool, threads = spec["tool"], spec["threads"]
    if tool.startswith("mlgp FastXML"):
        from mlgp.baselines import FastXML

        liblinear = "liblinear" in tool
        est = FastXML(n_estimators=spec["trees"], n_jobs=threads, random_state=spec["seed"],
                      solver="liblinear" if liblinear else "newglmnet",
                      separator_features=("node" if tool.endswith("node") else "all") if liblinear else None)
        t0 = time.perf_counter()
        est.fit(Xtr, Ytr)
        fit = time.perf_counter() - t0
        t0 = time.perf_counter()
        preds = est.predict_topk(Xte, 5).indices.tolist()
        predict = time.perf_counter() - t0
    elif tool == "omikuji":
        import omikuji

        path = Path(spec["tmp"]) / "train.txt"
        if spec["dataset"] in SYNTHETIC:
            _write_xc(path, Xtr, Ytr)
        else:
            with gzip.open(Path(ds_path(spec["dataset"])) / "train.txt.gz", "rb") as src, open(path, "wb") as dst:
                shutil.copyfileobj(src, dst)
        t0 = time.perf_counter()
        model = omikuji.Model.train_on_data(str(path), omikuji.Model.default_hyper_param(), n_threads=threads)
        fit = time.perf_counter() - t0
        t0 = time.perf_counter()
        preds = []
        for i in range(Xte.shape[0]):
            a, b = Xte.indptr[i], Xte.indptr[i + 1]
            pairs = list(zip(Xte.indices[a:b].tolist(), Xte.data[a:b].tolist()))
            preds.append([label for label, _ in model.predict(pairs, top_k=5)])
        predict = time.perf_counter() - t0
    elif tool == "napkinXC":
        from napkinxc.models import PLT

        labels = [Ytr.indices[Ytr.indptr[i]:Ytr.indptr[i + 1]].tolist() for i in range(Ytr.shape[0])]
        model = PLT(str(Path(spec["tmp"]) / "plt"), threads=threads, seed=0)
        t0 = time.perf_counter()
        model.fit(Xtr, labels)
        fit = time.perf_counter() - t0
        t0 = time.perf_counter()
        preds = [list(p) for p in model.predict(Xte, top_k=5)]
        predict = time.perf_counter() - t0
    else:
        raise ValueError(f"unknown tool {tool!r}")
    return {"fit s": fit, "predict s": predict, "predict ms/point": 1000 * predict / Xte.shape[0], "data MB": data_mb,
            **{f"P@{k}": _precision(Yte, preds, k) for k in (1, 3, 5)}}


def ds_path(name: str) -> Path:
    """The folder of a registry dataset (where its XC text files are)."""
    from mlgp.data import data_home

    return data_home() / name


# --------------------------------------------------------------------------------- parent --
def _measure(spec: dict) -> dict:
    """Run one child, sampling the memory of its process tree; its result dict plus ``peak MB``."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(spec)]
    # stderr to a file: omikuji draws progress bars there, and a pipe nobody reads could fill up
    err_path = Path(spec["tmp"]) / "stderr.txt"
    with open(err_path, "w") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True)
        peak = _watch(proc)
    out = proc.stdout.read()
    result = next((json.loads(line[len("RESULT "):]) for line in out.splitlines() if line.startswith("RESULT ")), None)
    if proc.returncode != 0 or result is None:
        tail = err_path.read_text()[-2000:]
        print(f"[{NAME}] child failed (exit {proc.returncode}); its stderr ends with:\n{tail}", flush=True)
        return {"status": f"failed (exit {proc.returncode})"}
    return dict(result, **{"peak MB": peak / 2**20, "status": "ok"})


def _watch(proc: subprocess.Popen) -> int:
    """Peak of the summed resident memory (bytes) of ``proc`` and its descendants until it exits."""
    import psutil

    parent = psutil.Process(proc.pid)
    peak = 0
    while proc.poll() is None:
        try:
            procs = [parent, *parent.children(recursive=True)]
            peak = max(peak, sum(p.memory_info().rss for p in procs if p.is_running()))
        except psutil.Error:
            pass
        time.sleep(0.02)
    return peak


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    from mlgp.experiment import add_argparse_args

    add_argparse_args(parser)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--datasets", default=None,
                        help="comma-separated (default bibtex,delicious,tmc2007-like; --quick: enron)")
    parser.add_argument("--tools", default=",".join(TOOLS), help="comma-separated subset of " + ",".join(TOOLS + OPTIONAL_TOOLS))
    parser.add_argument("--threads", default=None, help="comma-separated thread/process counts (default 1,2; --quick: 1)")
    parser.add_argument("--trees", type=int, default=None, help="FastXML trees (default 50; --quick: 3)")
    args = parser.parse_args(argv)
    if args.child is not None:
        print("RESULT " + json.dumps(_child(json.loads(args.child))), flush=True)
        return
    run(args)


def run(args: argparse.Namespace) -> None:
    import importlib.util

    from mlgp.experiment import Experiment

    datasets = [d for d in (args.datasets or ("enron" if args.quick else "bibtex,delicious,tmc2007-like")).split(",") if d]
    tools = [t for t in args.tools.split(",") if t]
    unknown = [t for t in tools if t not in TOOLS + OPTIONAL_TOOLS]
    if unknown:
        raise SystemExit(f"{NAME}: unknown tools {unknown}; choose from {', '.join(TOOLS + OPTIONAL_TOOLS)}")
    seeds = args.seeds or [0]  # random_state of the mlgp runs
    threads = [int(t) for t in (args.threads or ("1" if args.quick else "1,2")).split(",") if t]
    trees = args.trees or (3 if args.quick else 50)
    missing = {"omikuji": "omikuji", "napkinXC": "napkinxc"}
    absent = [t for t in tools if t in missing and importlib.util.find_spec(missing[t]) is None]
    exp = Experiment(NAME, quick=args.quick, seeds=seeds, settings=dict(datasets=datasets, tools=tools, threads=threads, trees=trees),
                     out=args.out)
    rows = []
    with exp, tempfile.TemporaryDirectory() as tmp:
        if absent:
            print(f"[{NAME}] not installed (pip install -e '.[bench]'): {', '.join(absent)}", flush=True)
            exp.note("not installed", absent)
        for name in datasets:
            for tool in tools:
                for n, seed in ((n, s) for n in threads for s in (seeds if tool.startswith("mlgp") else [None])):
                    if tool in absent:
                        rows.append(dict(dataset=name, tool=tool, threads=n, status="not installed"))
                        continue
                    spec = dict(dataset=name, tool=tool, threads=n, trees=trees, tmp=tmp, seed=seed)
                    r = dict(dataset=name, tool=tool, threads=n, seed=seed, **_measure(spec))
                    rows.append(r)
                    if r["status"] == "ok":
                        print(f"[{NAME}] {name} {tool} ×{n} seed {seed}: fit {r['fit s']:.2f} s, predict {r['predict s']:.2f} s, "
                              f"peak {r['peak MB']:.0f} MB, P@1/3/5 {r['P@1']:.2f} / {r['P@3']:.2f} / {r['P@5']:.2f}",
                              flush=True)
                    else:
                        print(f"[{NAME}] {name} {tool} ×{n}: {r['status']}", flush=True)
        table = pd.DataFrame(rows).reindex(columns=COLUMNS)
        for i, r in table.iterrows():
            ref = table[(table["dataset"] == r["dataset"]) & (table["tool"] == "mlgp FastXML")
                        & (table["threads"] == r["threads"]) & (table["status"] == "ok")]
            if len(ref) and r["status"] == "ok":
                table.loc[i, "fit s / FastXML"] = r["fit s"] / float(ref["fit s"].median())
                table.loc[i, "peak MB / FastXML"] = r["peak MB"] / float(ref["peak MB"].median())
            peer = table[(table["dataset"] == r["dataset"]) & (table["tool"] == "omikuji")
                         & (table["threads"] == r["threads"]) & (table["status"] == "ok")]
            if len(peer) and r["status"] == "ok" and str(r["tool"]).startswith("mlgp"):
                table.loc[i, "FastXML fit s / omikuji"] = r["fit s"] / float(peer["fit s"].iloc[0])
        exp.table(NAME, table)
        ok = table[table["status"] == "ok"]
        if not ok.empty:
            summary = ok.groupby(["dataset", "tool", "threads"])[["fit s", "P@1", "P@3", "P@5"]].agg(["mean", "std"])
            summary.columns = [f"{a} {b}" for a, b in summary.columns]
            exp.table(NAME + "_summary", summary.reset_index())
            print(summary.round(3).to_string(), flush=True)
        exp.note("FastXML targets", "50 trees on 2 cores: Bibtex and tmc2007-like <= 3x omikuji's fit time, "
                                    "Delicious <= 1.5x; P@k of the two solvers within each other's seed-to-seed spread")
        ok = table[table["status"] == "ok"]
        if not ok.empty:
            exp.note("fastest fit", {d: ok[ok["dataset"] == d].nsmallest(1, "fit s")["tool"].tolist() for d in datasets})



if __name__ == "__main__":
    main()
