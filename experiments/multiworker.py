"""MLGPF on TensorFlow's MultiWorkerMirroredStrategy: W worker processes on this machine
(``TF_CONFIG`` with 127.0.0.1 ports) against one process, the same global minibatches.

Each run fits the same :class:`mlgp.recipes.MLGPFClassifier` (the paper's schedule: every training
row, no hold-out; the paper's model form, float64, Adam with step 0.01, every factor of q(u) trained
from the first step): one process without a strategy, then ``--workers`` processes with
:func:`mlgp.training.workers.multi_worker_strategy` (``fit(strategy=...)``), each feeding its rows of
every global minibatch (label subsamples drawn from the same seed). After every epoch each run records all
trainable parameters; the table ``multiworker`` gives, per epoch, the largest relative difference
between the W-worker and the one-process parameters, and the seconds per step of both. ``--check``
makes the exit status 0 only if every epoch agrees to ``rtol`` 1e-5 (float64).

``--kill-at E`` (with ``--check``): worker W−1 exits abruptly after epoch E; the others must stop
with an ``MLGPError`` naming it (the time they took is recorded), and a restart of every worker
from the chief's checkpoint folder must end at the one-process parameters. ``--refusal``: worker
W−1 joins with other data; every worker must refuse to start, naming it.

    python experiments/multiworker.py --workers 2 --check
    python experiments/multiworker.py --workers 2 --check --kill-at 2
    python experiments/multiworker.py --quick            # small problem, 2 workers: --check --kill-at 1
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

FULL = dict(num_train=2000, num_features=20, num_labels=50, latent=8, inducing=30, batch=200, negatives=10, epochs=3)
#: ``--quick``: one step an epoch (batch = N, split between the workers), so every step is compared
QUICK = dict(num_train=30, num_features=4, num_labels=6, latent=2, inducing=4, batch=30, negatives=2, epochs=3)
RTOL = 1e-5


def _problem(o: dict):
    from mlgp.data import mlgpf_prior

    ds = mlgpf_prior(num_train=o["num_train"], num_test=5, num_features=o["num_features"], num_labels=o["num_labels"],
                     num_latent=o["latent"], lengthscale=2.0, seed=3)
    return ds.train.X, ds.train.Y


def worker(o: dict, out: str, checkpoint_dir: str | None, kill_after: int | None) -> None:
    """One training process (a worker when TF_CONFIG is set): saves the per-epoch parameters."""
    from mlgp.files import atomic_write, atomic_write_text
    from mlgp.recipes import MLGPFClassifier
    from mlgp.recipes.wrapped import epoch_rows
    from mlgp.training.workers import multi_worker_strategy

    X, Y = _problem(o)
    if os.environ.get("MLGP_OTHER_DATA"):  # a worker that joins with other data (the refusal check)
        X = X * 1.001
    strategy = multi_worker_strategy(timeout_seconds=30) if os.environ.get("TF_CONFIG") else None
    estimator = MLGPFClassifier(kernel="se+linear", num_latent_gps=o["latent"], num_inducing=o["inducing"],
                                batch_size=o["batch"], negatives=o["negatives"], epochs=o["epochs"], learning_rate=0.01,
                                q_family="cholesky", dtype="float64", warm_start=False, unit_sphere_inducing=False,
                                covariance_warmup=0, preprocessing="rows", seed=2, validation_fraction=0,
                                early_stopping=False, refit=False, jit_compile=False, progress=False, calibration=None,
                                checkpoint_dir=checkpoint_dir)
    snapshots, seconds = [], []

    def record(epoch, model, row):
        snapshots.append(np.concatenate([v.numpy().ravel() for v in model.trainable_variables]))
        seconds.append(row["seconds"])
        if kill_after is not None and epoch == kill_after:
            os._exit(3)  # abruptly, as a lost machine

    steps = int(np.ceil(o["num_train"] / o["batch"]))
    started = time.perf_counter()
    try:
        estimator.fit(X, Y, strategy=strategy, callback=record)
        trace, model = epoch_rows(estimator.trace_), estimator.model_
        atomic_write(out, lambda f: np.savez(f, snapshots=np.array(snapshots), seconds=np.array(seconds), steps=steps,
                                             elbo=trace["elbo"].to_numpy(),
                                             gradient_bytes=sum(v.numpy().nbytes for v in model.trainable_variables)))
    except Exception as err:  # reported to the parent, which decides what was expected
        atomic_write(out, lambda f: np.savez(f, snapshots=np.array(snapshots), seconds=np.array(seconds), steps=steps,
                                             elbo=np.zeros(0)))
        atomic_write_text(out + ".error", json.dumps(dict(kind=type(err).__name__, message=str(err),
                                                          seconds=time.perf_counter() - started)))


def _free_ports(n: int) -> list[int]:
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def _launch(o: dict, folder: Path, tag: str, workers: int, checkpoint_dir: Path | None = None,
            kill: dict | None = None, env_for: dict | None = None) -> list[Path]:
    """Start ``workers`` processes (0: one process, no TF_CONFIG) and wait; their output files."""
    ports = _free_ports(max(workers, 1))
    procs, outs = [], []
    for index in range(max(workers, 1)):
        env = dict(os.environ, CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="3", OMP_NUM_THREADS="1")
        if workers:
            env["TF_CONFIG"] = json.dumps({"cluster": {"worker": [f"127.0.0.1:{p}" for p in ports]},
                                           "task": {"type": "worker", "index": index}})
        env.update((env_for or {}).get(index, {}))
        out = folder / f"{tag}-{index}.npz"
        spec = dict(o=o, out=str(out), checkpoint_dir=str(checkpoint_dir) if checkpoint_dir else None,
                    kill_after=(kill or {}).get(index))
        procs.append(subprocess.Popen([sys.executable, __file__, "--worker", json.dumps(spec)], env=env,
                                      stdout=subprocess.DEVNULL, stderr=open(folder / f"{tag}-{index}.log", "w")))
        outs.append(out)
    for p in procs:
        p.wait(timeout=600)
    return outs


def _result(path: Path) -> dict:
    """A run's per-epoch parameters and seconds, and its ``error`` when it failed."""
    error = Path(str(path) + ".error")
    out = dict(error=json.loads(error.read_text())) if error.is_file() else {}
    if not path.is_file():
        return dict(error=dict(kind="exited", message="no output (the process exited)", seconds=np.nan))
    data = np.load(path)
    return dict(out, snapshots=data["snapshots"], seconds=data["seconds"], steps=int(data["steps"]))


def _max_rel(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-12), axis=1)


def run(args: argparse.Namespace) -> int:
    import pandas as pd

    from mlgp.experiment import Experiment

    o = dict(QUICK if args.quick else FULL)
    workers = args.workers
    exp = Experiment("multiworker", quick=args.quick, settings=dict(o, workers=workers, kill_at=args.kill_at),
                     out=args.out)
    ok = True
    with exp, tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        worker(o, str(folder / "single.npz"), None, None)  # the one-process run, here
        single = _result(folder / "single.npz")
        if args.kill_at is None:
            multi = [_result(p) for p in _launch(o, folder, "multi", workers)]
        else:  # the epochs up to the kill from the killed run, the rest from the resumed one
            resumed_ok, multi = _kill_and_resume(o, folder, workers, args.kill_at, exp)
            ok &= resumed_ok
        if "error" in single or any("error" in m for m in multi):
            print(f"[multiworker] a run failed: {single.get('error')}, {[m.get('error') for m in multi]}", flush=True)
            return 1
        diffs = _max_rel(multi[0]["snapshots"], single["snapshots"])
        spread = max(float(np.max(np.abs(m["snapshots"] - multi[0]["snapshots"]))) for m in multi)
        table = pd.DataFrame(dict(epoch=np.arange(1, len(diffs) + 1), max_rel_diff=diffs,
                                  s_per_step_1=single["seconds"] / single["steps"],
                                  s_per_step_W=multi[0]["seconds"] / multi[0]["steps"]))
        exp.table("multiworker", table, floatfmt=".3g")
        exp.note("workers agree with each other (max abs difference)", spread)
        # what MultiWorkerMirroredStrategy all-reduces each step: one gradient per trainable variable
        exp.note("all-reduced bytes per step (the trainable variables' size)", int(np.load(folder / "single.npz")["gradient_bytes"]))
        ok &= bool(len(diffs) == o["epochs"] and np.all(diffs <= RTOL)) and spread == 0.0
        print(f"[multiworker] largest relative difference over {len(diffs)} epochs {diffs.max():.3g} (rtol {RTOL:g}); "
              f"seconds per step 1 worker {table['s_per_step_1'].median():.4f}, {workers} workers "
              f"{table['s_per_step_W'].median():.4f}", flush=True)
        if args.refusal:
            ok &= _refusal(o, folder, workers, exp)
    if args.check and not ok:
        print("[multiworker] CHECK FAILED", flush=True)
        return 1
    return 0


def _kill_and_resume(o: dict, folder: Path, workers: int, kill_at: int, exp) -> tuple[bool, list[dict]]:
    """The last worker exits after epoch ``kill_at``; the others must name it; every worker restarts
    from the chief's checkpoints. Returns whether they named it, and each worker's epochs (those
    before the kill from the killed run, the rest from the resumed one)."""
    ckpt = folder / "checkpoints"
    killed = [_result(p) for p in _launch(o, folder, "killed", workers, ckpt, kill={workers - 1: kill_at})]
    survivors = [r.get("error", {}) for r in killed[:-1]]
    named = all(e.get("kind") == "MLGPError" and "lost" in e.get("message", "") for e in survivors)
    resumed = [_result(p) for p in _launch(o, folder, "resumed", workers, ckpt)]
    runs = []
    for k, r in zip(killed[:-1], resumed[:-1]):
        if "snapshots" not in r or "error" in r:
            runs.append(dict(error=r.get("error", {"kind": "missing"})))
            continue
        runs.append(dict(snapshots=np.concatenate([k["snapshots"][:kill_at], r["snapshots"]]),
                         seconds=np.concatenate([k["seconds"][:kill_at], r["seconds"]]), steps=r["steps"]))
    waited = max(float(e.get("seconds", np.nan)) for e in survivors)
    exp.note("kill", dict(killed_after_epoch=kill_at, survivors_errors=survivors, survivors_seconds=waited))
    print(f"[multiworker] worker {workers - 1} killed after epoch {kill_at}: the others stopped with "
          f"{[e.get('kind') for e in survivors]} ({survivors[0].get('message', '')[:160]}); every worker restarted "
          "from the chief's checkpoints", flush=True)
    return named, runs


def _refusal(o: dict, folder: Path, workers: int, exp) -> bool:
    """Worker W−1 has other data: every worker refuses before training, naming it."""
    runs = [_result(p) for p in _launch(o, folder, "other", workers, env_for={workers - 1: {"MLGP_OTHER_DATA": "1"}})]
    errors = [r.get("error", {}) for r in runs]
    refused = all(e.get("kind") == "MLGPError" and "has other data" in e.get("message", "") for e in errors)
    exp.note("refusal", errors)
    print(f"[multiworker] a worker with other data: {'refused by every worker' if refused else 'NOT refused'} "
          f"({errors[0].get('message', '')[:120]})", flush=True)
    return refused


def main(argv: list[str] | None = None) -> None:
    from mlgp.experiment import add_argparse_args

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_argparse_args(parser)
    parser.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--check", action="store_true", help="exit 1 unless the runs agree (rtol 1e-5)")
    parser.add_argument("--kill-at", type=int, default=None, help="kill the last worker after this epoch")
    parser.add_argument("--refusal", action="store_true", help="check that a worker with other data is refused")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        spec = json.loads(args.worker)
        worker(spec["o"], spec["out"], spec["checkpoint_dir"], spec["kill_after"])
        return
    if args.workers < 2:
        parser.error("--workers must be at least 2")
    if args.quick:  # the refusal's comparison is unit-tested; --refusal runs it across processes
        args.check = True
        args.kill_at = 1 if args.kill_at is None else args.kill_at
    code = run(args)
    if code:
        raise SystemExit(code)


if __name__ == "__main__":
    main()
