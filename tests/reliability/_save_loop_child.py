"""The child process of tests/reliability/test_kill_during_save.py, run as a script:

    python _save_loop_child.py {fastxml,mlgpf} TARGET REFERENCES
    python _save_loop_child.py fastxml-forks REFERENCES

Fits two different small models A and B, saves each once under REFERENCES (``A`` and ``B``: what the
parent compares with), saves A to TARGET, prints ``ready``, waits for a line on stdin (so that many
children can start at once and loop one at a time), then overwrites TARGET with B, A, B, … until it
is killed. ``fastxml-forks`` (no TensorFlow, so forking is safe) starts once for many kills: after
``ready``, for each TARGET line on stdin it saves A there and forks a process that overwrites it so
until killed, prints that process's id, waits for it and prints ``ended STATUS`` (its wait status).
Writing a file takes 10 ms longer than it would, half-way through (a slow disk, :func:`slow_disk`),
so that a kill at a random moment lands mostly in the writing of files, not in the work before it.
The MLGPF pair differ in their structure (P, M, an input map and so a constants file in B only), so
that a folder mixing the files of two saves cannot load as either.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "estimator")]


def fastxml_pair():
    from _small import data

    from mlgp.baselines import FastXML

    X, Y = data()
    return (FastXML(n_estimators=2, max_leaf=6, random_state=0).fit(X, Y),
            FastXML(n_estimators=3, max_leaf=4, random_state=1).fit(X, Y))


def mlgpf_pair():
    from mlgp.blocks import LinearInputMap
    from mlgp.models import mlgpf_from_data

    X, Y, projection = mlgpf_data()
    return (mlgpf_from_data(X, Y, num_latent_gps=2, num_inducing=5, seed=0),
            mlgpf_from_data(X, Y, num_latent_gps=3, num_inducing=6, seed=1, input_map=LinearInputMap(projection)))


def mlgpf_data():
    """Small dense features, 0/1 labels and a (6, 3) projection (the parent scores with the features)."""
    import numpy as np
    import scipy.sparse as sp

    rng = np.random.default_rng(7)
    X = rng.random((24, 6))
    Y = (rng.random((24, 4)) < 0.4).astype(np.int64)
    Y[np.arange(24), rng.integers(0, 4, size=24)] = 1
    projection = sp.csr_matrix((rng.choice([-1.0, 1.0], size=6), (np.arange(6), rng.integers(0, 3, size=6))), shape=(6, 3))
    return X, Y, projection


def slow_disk(seconds: float = 0.01) -> None:
    """Every mlgp saver's ``atomic_write`` writes half of a file's content, sleeps ``seconds``, then
    writes the rest, so that a kill lands mostly in a half-written file (a saver writing in place
    would leave it at the path). Only the savers already imported are patched: importing the MLGPF
    ones here would start TensorFlow in a FastXML child, seconds in which every kill would land
    before the first write."""
    import io

    import mlgp.files

    real = mlgp.files.atomic_write

    def slow(path, write):
        def write_slowly(file):
            buffer = io.BytesIO()
            write(buffer)
            data = buffer.getvalue()
            file.write(data[: len(data) // 2])
            file.flush()
            time.sleep(seconds)
            file.write(data[len(data) // 2:])

        return real(path, write_slowly)

    for name in ("mlgp.estimator.persistence", "mlgp.models.persistence", "mlgp.models.save_folder"):
        module = sys.modules.get(name)
        if module is not None and hasattr(module, "atomic_write"):
            module.atomic_write = slow


def fork_per_target(references: Path) -> None:
    """The ``fastxml-forks`` mode: one fit for every kill (see the module's docstring)."""
    a, b = fastxml_pair()
    a.save(references / "A.npz")
    b.save(references / "B.npz")
    print("ready", flush=True)
    for line in sys.stdin:
        target = Path(line.strip())
        a.save(target)
        pid = os.fork()
        if pid == 0:  # the saver: B, A, B, … until killed
            try:
                slow_disk()
                while True:
                    b.save(target)
                    a.save(target)
            finally:
                os._exit(1)
        print(pid, flush=True)
        print(f"ended {os.waitpid(pid, 0)[1]}", flush=True)


def main() -> None:
    if sys.argv[1] == "fastxml-forks":
        fork_per_target(Path(sys.argv[2]))
        return
    kind, target, references = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    a, b = fastxml_pair() if kind == "fastxml" else mlgpf_pair()
    suffix = ".npz" if kind == "fastxml" else ""
    a.save(references / f"A{suffix}")
    b.save(references / f"B{suffix}")
    a.save(target)
    print("ready", flush=True)
    sys.stdin.readline()
    slow_disk()
    while True:
        b.save(target)
        a.save(target)


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    main()
