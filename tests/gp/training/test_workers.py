"""The cluster checks of :mod:`mlgp.training.workers` that need no cluster: TF_CONFIG refused before
any connection, the lost-worker message. Two-worker training itself (equality with one worker,
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
    assert np.isfinite(est.trace_["elbo"]).all()
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
