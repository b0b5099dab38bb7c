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
