"""kill -9 during an overwrite: a process saving models A and B in turn over one path, killed at a
random moment, leaves a path that loads and scores exactly as A or as B (FastXML: one ``.npz``;
MLGPF: a folder of three files, committed by ``model.json``). What the kill leaves behind (hidden
``.tmp`` files, unreferenced array files) confuses neither a load nor the next save.

The MLGPF folder's atomicity is also checked deterministically: a save that fails at its first,
second or third file write leaves the earlier model, and a save that commits while a load reads the
folder makes the load read the new model whole.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import random
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

CHILD = Path(__file__).with_name("_save_loop_child.py")
REPO = Path(__file__).resolve().parents[2]
# FastXML: one child fits once and forks a saver per kill; MLGPF: a child (a TensorFlow start) per
# kill, few, as the deterministic fault tests below cover each write of an MLGPF save
KILLS = {"fastxml": 8, "mlgpf": 2}
READY_TIMEOUT_S = 240


def _line(proc, what: str, deadline: float, log: Path) -> str:
    """The child's next line of output, or the test fails naming ``what`` it waited for."""
    ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
    line = proc.stdout.readline().decode().strip() if ready else ""
    if not line:
        proc.kill()
        proc.wait()
        pytest.fail(f"the child printed no {what}:\n{log.read_text()[-3000:]}")
    return line


def _kill_forks_while_saving(tmp_path: Path, seed: int) -> list[Path]:
    """One ``fastxml-forks`` child fits A and B once; for each of ``KILLS["fastxml"]`` targets it
    forks a saver looping over that target, killed at a random moment. Returns the targets; the
    references A and B are under ``tmp_path / "references"``."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    references, log = tmp_path / "references", tmp_path / "stderr.txt"
    references.mkdir()
    with open(log, "wb") as err:
        proc = subprocess.Popen([sys.executable, str(CHILD), "fastxml-forks", str(references)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=env, cwd=REPO)
    rng = random.Random(seed)
    deadline = time.monotonic() + READY_TIMEOUT_S
    targets, saver = [], None
    try:
        assert _line(proc, "ready", deadline, log) == "ready"
        for i in range(KILLS["fastxml"]):
            target = tmp_path / f"run{i}" / "model.npz"
            target.parent.mkdir()
            proc.stdin.write(f"{target}\n".encode())
            proc.stdin.flush()
            saver = int(_line(proc, "saver id", deadline, log))
            time.sleep(rng.uniform(0.0, 0.25))
            os.kill(saver, signal.SIGKILL)
            saver = None
            status = int(_line(proc, "saver status", deadline, log).split()[1])
            assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, \
                f"the saver of {target} ended by itself ({status}): {log.read_text()[-3000:]}"
            targets.append(target)
    finally:
        if saver is not None:  # a failure between the fork and the kill: no saver left looping
            with contextlib.suppress(ProcessLookupError):
                os.kill(saver, signal.SIGKILL)
        proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    return targets


def _kill_while_saving(kind: str, tmp_path: Path, seed: int) -> list[Path]:
    """Start ``KILLS[kind]`` children at once; when all have saved A, let each loop in turn and kill
    it at a random moment. Returns the children's targets; the references A and B are under
    ``tmp_path / "references"`` (every child writes the same ones)."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "OMP_NUM_THREADS": "1", "TF_NUM_INTRAOP_THREADS": "1",
           "TF_NUM_INTEROP_THREADS": "1"}
    children = []
    for i in range(KILLS[kind]):
        target = tmp_path / f"run{i}" / ("model.npz" if kind == "fastxml" else "model")
        references = tmp_path / ("references" if i == 0 else f"references{i}")
        target.parent.mkdir(exist_ok=True)
        references.mkdir(exist_ok=True)
        with open(tmp_path / f"stderr{i}.txt", "wb") as log:  # TensorFlow's start-up chatter, tracebacks
            proc = subprocess.Popen([sys.executable, str(CHILD), kind, str(target), str(references)],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env, cwd=REPO)
        children.append((proc, target, tmp_path / f"stderr{i}.txt"))
    rng = random.Random(seed)
    deadline = time.monotonic() + READY_TIMEOUT_S
    try:
        for proc, target, log in children:
            ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
            line = proc.stdout.readline() if ready else b""
            if line.strip() != b"ready":
                proc.kill()
                proc.wait()
                pytest.fail(f"the child saving to {target} did not get ready: {line!r}\n{log.read_text()[-3000:]}")
        for proc, target, log in children:
            proc.stdin.write(b"go\n")
            proc.stdin.flush()
            time.sleep(rng.uniform(0.0, 0.25))
            os.kill(proc.pid, signal.SIGKILL)
            code = proc.wait(timeout=30)
            assert code == -signal.SIGKILL, f"the child saving to {target} ended by itself ({code}): {log.read_text()[-3000:]}"
    finally:
        for proc, _, _ in children:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdin.close()
            proc.stdout.close()
    return [target for _, target, _ in children]


def _scores(model, X) -> tuple[np.ndarray, ...]:
    """Every score of an estimator, or of an MLGPF model through the estimator around it."""
    if not hasattr(model, "predict_topk"):
        from mlgp.recipes import MLGPFClassifier

        model = MLGPFClassifier.from_model(model)
    top = model.predict_topk(X, 2)
    extra = (model.predict_proba(X),) if hasattr(model, "predict_proba") else ()
    return (model.decision_function(X), top.indices, top.scores, *extra)


def _which(scores: tuple, a: tuple, b: tuple) -> str | None:
    for name, ref in (("A", a), ("B", b)):
        if len(scores) == len(ref) and all(s.shape == r.shape and np.array_equal(s, r) for s, r in zip(scores, ref)):
            return name
    return None


def _visible(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir() if not p.name.startswith(".")}


@pytest.mark.slow
def test_fastxml_killed_while_overwriting_loads_as_a_or_b(tmp_path):
    from _small import data

    from mlgp.baselines import FastXML

    X = data(seed=1, N=9)[0]
    targets = _kill_forks_while_saving(tmp_path, seed=1)
    references = tmp_path / "references"
    a, b = (_scores(FastXML.load(references / f"{n}.npz"), X) for n in "AB")
    for target in targets:
        loaded = FastXML.load(target)
        assert _which(_scores(loaded, X), a, b), f"{target} scores as neither A nor B"
        assert _visible(target.parent) == {"model.npz"}  # at most a hidden .tmp besides
        assert all(p.suffix == ".tmp" for p in target.parent.iterdir() if p.name.startswith("."))
        FastXML.load(references / "B.npz").save(target)  # a later save over the leftovers
        assert _which(_scores(FastXML.load(target), X), a, b) == "B"


@pytest.mark.slow
def test_mlgpf_killed_while_overwriting_loads_as_a_or_b(tmp_path):
    from _save_loop_child import mlgpf_data

    from mlgp.models import MLGPF

    X = mlgpf_data()[0][:7]
    targets = _kill_while_saving("mlgpf", tmp_path, seed=2)
    references = tmp_path / "references"
    a, b = (_scores(MLGPF.load(references / n), X) for n in "AB")
    for target in targets:
        loaded = MLGPF.load(target)
        assert _which(_scores(loaded, X), a, b), f"{target} scores as neither A nor B: {sorted(os.listdir(target))}"
        MLGPF.load(references / "B").save(target)  # a later save: replaces or deletes what the kill left
        assert _which(_scores(MLGPF.load(target), X), a, b) == "B"
        assert _visible(target) == {"model.json", "parameters.npz", "constants.npz"} \
            or _visible(target) == {"model.json", "parameters-1.npz", "constants-1.npz"}, sorted(os.listdir(target))


# ----------------------------------------------------------------------------- deterministic faults
def _writer_module():
    """The module whose ``atomic_write`` writes the files of an MLGPF save."""
    try:
        return importlib.import_module("mlgp.models.save_folder")
    except ImportError:  # before format 5, persistence wrote the three files itself
        return importlib.import_module("mlgp.models.persistence")


@pytest.fixture(scope="module")
def mlgpf_pair():
    from _save_loop_child import mlgpf_data, mlgpf_pair

    return (*mlgpf_pair(), mlgpf_data()[0][:7])


@pytest.mark.slow
@pytest.mark.parametrize("order", ["A then B", "B then A"])
@pytest.mark.parametrize("fail_at", [1, 2, 3])
def test_an_mlgpf_save_failing_at_any_file_leaves_the_earlier_model(tmp_path, monkeypatch, mlgpf_pair, order, fail_at):
    """B has a constants file, A none: either way the second save fails at its n-th file write (a full
    disk), and the folder still loads as the first model, whole."""
    from mlgp.errors import MLGPError
    from mlgp.models import MLGPF

    a, b, X = mlgpf_pair
    first, second = (a, b) if order == "A then B" else (b, a)
    path = first.save(tmp_path / "m")
    before = _visible(path)
    module = _writer_module()
    real, calls = module.atomic_write, []

    def failing(file, write):
        calls.append(Path(file).name)
        if len(calls) == fail_at:
            raise OSError(28, "No space left on device")
        return real(file, write)

    monkeypatch.setattr(module, "atomic_write", failing)
    if fail_at > (3 if second is b else 2):  # A's save writes two files: nothing fails
        second.save(path)
        expected = second
    else:
        with pytest.raises(MLGPError, match="No space left on device"):
            second.save(path)
        expected = first
        assert _visible(path) == before, "a failed save left files behind"
    monkeypatch.undo()
    assert _which(_scores(MLGPF.load(path), X), _scores(expected, X), _scores(expected, X))


def test_an_mlgpf_save_committed_during_a_load_is_read_whole(tmp_path, monkeypatch, mlgpf_pair):
    """model.json, then the files it names, then model.json again: a save that commits between the
    first two reads (deleting the files the load was about to read) makes the load read the new save."""
    from mlgp.models import MLGPF, save_folder

    a, b, X = mlgpf_pair
    path = a.save(tmp_path / "m")
    real, saves = save_folder.read_arrays, []

    def read_arrays_during_a_save(file, what):
        if not saves:
            saves.append(b.save(path))
        return real(file, what)

    monkeypatch.setattr(save_folder, "read_arrays", read_arrays_during_a_save)
    loaded = MLGPF.load(path)
    assert saves and _which(_scores(loaded, X), _scores(b, X), _scores(b, X))


def test_leftovers_of_a_killed_save_are_never_read(tmp_path, mlgpf_pair):
    """The other name set's files and hidden temporary files, as a kill leaves them (here garbage),
    change neither what loads nor the next save, which deletes the unreferenced array files."""
    from mlgp.models import MLGPF

    a, b, X = mlgpf_pair
    path = a.save(tmp_path / "m")
    for name in ("parameters-1.npz", "constants-1.npz", ".parameters-1.npz.0123456789ab.tmp", ".model.json.ba9876543210.tmp"):
        (path / name).write_bytes(b"PK\x03\x04 half a file")
    assert _which(_scores(MLGPF.load(path), X), _scores(a, X), _scores(a, X))
    b.save(path)
    assert _which(_scores(MLGPF.load(path), X), _scores(b, X), _scores(b, X))
    assert _visible(path) == {"model.json", "parameters-1.npz", "constants-1.npz"}
    a.save(path)
    assert _visible(path) == {"model.json", "parameters.npz"}
    assert _which(_scores(MLGPF.load(path), X), _scores(a, X), _scores(a, X))
