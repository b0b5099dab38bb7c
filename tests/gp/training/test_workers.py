"""The cluster checks of :mod:`mlgp.training.workers` that need no cluster: TF_CONFIG refused before
any connection (more in ``test_workers_config.py``), the lost-worker message, the workers' agreement
on data and settings (fit's fingerprint through ``agree_on_run``, with a fake gathering strategy),
and which task is the chief and writes (a fake multi-worker strategy). Two-worker training itself (equality with one worker,
a killed worker, a worker with other data) is ``experiments/multiworker.py --quick``, run by the
experiments' smoke test with ``--check``."""

from __future__ import annotations

import json
import socket

import pytest
import tensorflow as tf

from mlgp.errors import ArgumentError
from mlgp.training.workers import is_chief, is_multi_worker, lost_worker_error, multi_worker_strategy


def _config(monkeypatch, workers, index=0, kind="worker") -> None:
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"worker": workers}, "task": {"type": kind, "index": index}}))


@pytest.mark.parametrize("raw, message", [
    (None, "TF_CONFIG is not set"),
    ("{not json", "TF_CONFIG is not JSON"),
    ('{"task": {}}', "with a 'cluster' object"),
    ('{"cluster": {"worker": []}, "task": {"type": "worker", "index": 0}}', "names no worker"),
    ('{"cluster": {"worker": ["127.0.0.1:1"]}, "task": {"type": "worker", "index": 3}}', "is not one of the cluster"),
])
def test_bad_tf_config_is_refused(monkeypatch, raw, message) -> None:
    if raw is None:
        monkeypatch.delenv("TF_CONFIG", raising=False)
    else:
        monkeypatch.setenv("TF_CONFIG", raw)
    with pytest.raises(ArgumentError, match=message):
        multi_worker_strategy()


def test_an_address_named_twice_is_refused(monkeypatch) -> None:
    _config(monkeypatch, ["127.0.0.1:23001", "127.0.0.1:23001"])
    with pytest.raises(ArgumentError, match=r"TF_CONFIG names 127\.0\.0\.1:23001 more than once"):
        multi_worker_strategy()


def test_a_port_in_use_is_refused_before_any_connection(monkeypatch) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        _config(monkeypatch, [f"127.0.0.1:{port}", "127.0.0.1:1"])
        with pytest.raises(ArgumentError, match=rf"port {port} of this task .* is in use"):
            multi_worker_strategy()


def test_the_lost_worker_is_named_by_its_address(monkeypatch) -> None:
    _config(monkeypatch, ["10.0.0.1:2222", "10.0.0.2:2222"])
    err = tf.errors.UnavailableError(None, None, "Collective ops is aborted by: ... remote target "
                                                 "/job:worker/replica:0/task:1 while calling RecvBuf")
    message = str(lost_worker_error(err, 4, "/ck/ckpt-4"))
    assert "the cluster lost the worker 10.0.0.2:2222 (task 1)" in message
    assert "training stopped in epoch 5" in message and "resume from /ck/ckpt-4" in message
    assert "pass checkpoint_dir=" in str(lost_worker_error(err, 0, None))


def test_without_a_cluster_every_process_is_the_chief() -> None:
    assert is_chief(None) and not is_multi_worker(None)
    assert not is_multi_worker(tf.distribute.get_strategy())


@pytest.mark.parametrize("workers, multi", [(0, False), (1, False), (2, True), (3, True)])
def test_a_multi_worker_strategy_counts_its_tasks(monkeypatch, workers, multi) -> None:
    """Several tasks make a multi-worker run; one task, or a cluster spec with none (a strategy
    built without TF_CONFIG), does not."""
    cls = tf.distribute.MultiWorkerMirroredStrategy
    spec = tf.train.ClusterSpec({"worker": [f"localhost:{2222 + i}" for i in range(workers)]} if workers else {})
    monkeypatch.setattr(cls, "cluster_resolver", property(
        lambda self: tf.distribute.cluster_resolver.SimpleClusterResolver(spec)))
    assert is_multi_worker(cls.__new__(cls)) is multi


@pytest.mark.slow
def test_the_estimator_and_the_recipe_take_a_strategy() -> None:
    """MLGPFClassifier.fit(strategy=) builds the model in the strategy's scope and trains on it;
    a strategy with XLA, or an object that is not a strategy, is refused at the call."""
    import numpy as np

    from mlgp.data import mlgpf_prior
    from mlgp.recipes import MLGPFClassifier, train_mlgpf

    ds = mlgpf_prior(num_train=40, num_test=10, num_features=4, num_labels=5, num_latent=2, seed=0)
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    est = MLGPFClassifier(num_latent_gps=2, num_inducing=5, epochs=1, batch_size=20, progress=False,
                          validation_fraction=0.0, jit_compile="auto").fit(ds.train.X, ds.train.Y, strategy=strategy)
    assert all(strategy.extended.variable_created_in_scope(v) for v in est.model_.trainable_variables)
    assert np.isfinite(est.trace_["elbo"].iloc[1:]).all()  # row 0: the set-up, no bound
    with pytest.raises(ArgumentError, match="strategy= cannot be combined with jit_compile=True"):
        MLGPFClassifier(epochs=1, jit_compile=True, progress=False).fit(ds.train.X, ds.train.Y, strategy=strategy)
    with pytest.raises(ArgumentError, match="strategy must be a tf.distribute.Strategy"):
        train_mlgpf(ds, epochs=1, progress=False, strategy="two machines")
    from mlgp.training import fit

    with pytest.raises(ArgumentError, match="strategy must be a tf.distribute.Strategy, got str"):
        fit(est.model_, (ds.train.X, ds.train.Y), epochs=1, progress=False, strategy="two machines")


class _GatheringStrategy:
    """Stands in for a two-worker strategy: ``gather`` returns the local row and a second worker's
    row, whose parts can be made to differ (the collective itself runs in ``multiworker --quick``)."""

    num_replicas_in_sync = 2

    def __init__(self, other):
        self.other = other

    def experimental_distribute_values_from_function(self, fn):
        return fn(None)

    def gather(self, value, axis):
        return tf.concat([value, tf.constant(self.other[None, :])], axis=axis)


def test_workers_with_other_data_or_settings_are_refused(monkeypatch) -> None:
    import numpy as np

    from mlgp.errors import MLGPError
    from mlgp.training.workers import _digest, agree_on_run

    _config(monkeypatch, ["10.0.0.1:2222", "10.0.0.2:2222"])
    parts = {"data": "abc", "settings": {"batch_size": 500}}
    same = np.concatenate([_digest(parts["data"]), _digest(parts["settings"])])
    agree_on_run(_GatheringStrategy(same), parts)  # agreeing workers start
    other_data = np.concatenate([_digest("abd"), _digest(parts["settings"])])
    with pytest.raises(MLGPError, match=r"the worker 10\.0\.0\.2:2222 has other data than the chief \(10\.0\.0\.1:2222\)"):
        agree_on_run(_GatheringStrategy(other_data), parts)
    other_settings = np.concatenate([_digest(parts["data"]), _digest({"batch_size": 400})])
    with pytest.raises(MLGPError, match="has other settings"):
        agree_on_run(_GatheringStrategy(other_settings), parts)


class _RecordingStrategy(_GatheringStrategy):
    """A one-worker stand-in whose ``gather`` keeps the local row: what this worker would send."""

    def __init__(self):
        super().__init__(None)

    def gather(self, value, axis):
        self.row = value.numpy()[0]
        return tf.concat([value, value], axis=axis)


def test_fit_has_workers_with_the_same_settings_but_other_data_refused(monkeypatch) -> None:
    """fit hands agree_on_run the data's fingerprint next to the settings, so two workers whose
    settings agree but whose labels differ in one entry are refused before any step."""
    import importlib

    import numpy as np
    from _training_problem import build, small_problem

    from mlgp.errors import MLGPError
    from mlgp.training import fit
    from mlgp.training.workers import agree_on_run

    fit_module = importlib.import_module("mlgp.training.fit")
    seen = []

    class _Stop(Exception):
        pass

    def record(strategy, parts):
        seen.append(parts)
        raise _Stop("agree_on_run reached")

    monkeypatch.setattr(fit_module, "agree_on_run", record)
    monkeypatch.setattr(fit_module, "is_multi_worker", lambda strategy: True)
    _config(monkeypatch, ["10.0.0.1:2222", "10.0.0.2:2222"])
    ds = small_problem()
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    with strategy.scope():
        model = build(ds)
    Y_other = ds.train.Y.tolil()
    Y_other[0, 0] = 1 - Y_other[0, 0]
    for Y in (ds.train.Y, Y_other.tocsr()):  # the chief's data, then worker 1's
        with pytest.raises(_Stop, match="agree_on_run reached"):
            fit(model, (ds.train.X, Y), epochs=1, batch_size=20, progress=False, strategy=strategy)
    chief, worker = seen
    assert chief["settings"] == worker["settings"] and chief["data"] != worker["data"]
    sent = _RecordingStrategy()
    agree_on_run(sent, worker)  # the row worker 1 sends
    agree_on_run(_GatheringStrategy(np.array(sent.row)), worker)  # itself twice: agrees
    with pytest.raises(MLGPError, match=r"the worker 10\.0\.0\.2:2222 has other data than the chief"):
        agree_on_run(_GatheringStrategy(sent.row), chief)


class _FakeMultiWorker(tf.distribute.MultiWorkerMirroredStrategy):
    """A MultiWorkerMirroredStrategy in type only: a cluster resolver and no server, no connection."""

    def __init__(self, cluster: dict, task_type: str, task_id: int):  # no super().__init__: no server
        self._resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
            tf.train.ClusterSpec(cluster), task_type=task_type, task_id=task_id)

    @property
    def cluster_resolver(self):
        return self._resolver


@pytest.mark.parametrize("cluster, task_type, task_id, chief", [
    ({"worker": ["h0:1", "h1:1"]}, "worker", 0, True),     # worker 0 of a cluster without a chief
    ({"worker": ["h0:1", "h1:1"]}, "worker", 1, False),
    ({"chief": ["c:1"], "worker": ["h0:1"]}, "chief", 0, True),
    ({"chief": ["c:1"], "worker": ["h0:1"]}, "worker", 0, False),  # the chief writes, not worker 0
    ({"worker": ["h0:1"]}, "worker", 0, True),             # one task: not multi-worker
])
def test_only_the_chief_is_the_chief(cluster, task_type, task_id, chief) -> None:
    strategy = _FakeMultiWorker(cluster, task_type, task_id)
    assert is_multi_worker(strategy) == (sum(map(len, cluster.values())) > 1)
    assert is_chief(strategy) is chief


@pytest.mark.slow
@pytest.mark.parametrize("task_id", [0, 1])
def test_only_the_chief_writes_checkpoints_and_logs(monkeypatch, tmp_path, task_id) -> None:
    """fit, in the fake cluster's worker ``task_id`` (as is_chief sees it), writes checkpoints, the
    trace and TensorBoard logs in worker 0 (the chief) and nothing in worker 1."""
    import importlib

    from _training_problem import build, small_problem

    fit_module = importlib.import_module("mlgp.training.fit")
    fake = _FakeMultiWorker({"worker": ["h0:1", "h1:1"]}, "worker", task_id)
    monkeypatch.setattr(fit_module, "is_chief", lambda strategy: is_chief(fake))
    ds = small_problem()
    ck, logs = tmp_path / "ck", tmp_path / "logs"
    trace = fit_module.fit(build(ds), (ds.train.X, ds.train.Y), epochs=1, batch_size=60, progress=False,
                           checkpoint_dir=ck, log_dir=logs)
    assert len(trace) == 1
    written = sorted(p.name for folder in (ck, logs) if folder.exists() for p in folder.rglob("*") if p.is_file())
    if task_id == 0:
        assert {"ckpt-1.index", "trace.csv", "checkpoint"} <= set(written)
        assert any(name.startswith("events.out.tfevents") for name in written)
    else:
        assert written == []
