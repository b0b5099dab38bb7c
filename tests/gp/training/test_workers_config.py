"""TF_CONFIG refused by :func:`mlgp.training.workers.multi_worker_strategy` before any connection,
each with an :class:`~mlgp.errors.ArgumentError` naming TF_CONFIG, the field and the bad value: a
worker list that is not a list, an address without a valid port, a task index out of range, and
this task's address not usable here (a host that does not resolve, an address of another machine,
a port in use: three different messages)."""

from __future__ import annotations

import json
import socket

import pytest

from mlgp.errors import ArgumentError
from mlgp.training.workers import cluster_workers, multi_worker_strategy


def _set(monkeypatch, cluster, task=None) -> None:
    task = {"type": "worker", "index": 0} if task is None else task
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": cluster, "task": task}))


@pytest.mark.parametrize("workers, message", [
    ("localhost:12345", r"TF_CONFIG's cluster\.worker must be a list of host:port addresses, got 'localhost:12345'"),
    (None, r"TF_CONFIG's cluster\.worker must be a list of host:port addresses, got None"),
    ({"a": "localhost:1"}, r"TF_CONFIG's cluster\.worker must be a list of host:port addresses, got \{'a'"),
    (["localhost:23001", 23002], r"TF_CONFIG's cluster\.worker\[1\] must be a host:port string, got 23002"),
    (["localhost"], r"TF_CONFIG's cluster\.worker\[0\] 'localhost' has no port"),
    (["localhost:"], r"TF_CONFIG's cluster\.worker\[0\] 'localhost:' has no port"),
    ([":2222"], r"TF_CONFIG's cluster\.worker\[0\] ':2222' has no host"),
    (["localhost:70000"], r"TF_CONFIG's cluster\.worker\[0\] 'localhost:70000': port 70000 is outside 1\.\.65535"),
    (["localhost:0"], r"TF_CONFIG's cluster\.worker\[0\] 'localhost:0': port 0 is outside 1\.\.65535"),
    (["localhost:http"], r"TF_CONFIG's cluster\.worker\[0\] 'localhost:http': port 'http' is not a number"),
    (["localhost:23001", "localhost:9" + "9" * 5000],
     r"cluster\.worker\[1\] 'localhost:9{20}.*\.\.\.: port 9{20}\.\.\. is outside 1\.\.65535"),
    (["::1:2222"], r"TF_CONFIG's cluster\.worker\[0\] '::1:2222': an IPv6 host must be in brackets"),
    (["localhost:" + "9" * 20], r": port 9{20} is outside 1\.\.65535$"),  # 20 characters: shown whole
    (["localhost:" + "9" * 21], r": port 9{20}\.\.\. is outside 1\.\.65535$"),  # 21: cut to 20
])
def test_a_bad_worker_list_is_refused(monkeypatch, workers, message) -> None:
    _set(monkeypatch, {"worker": workers})
    with pytest.raises(ArgumentError, match=message):
        multi_worker_strategy()


def test_a_bad_chief_list_is_refused(monkeypatch) -> None:
    _set(monkeypatch, {"chief": "localhost:23001", "worker": ["localhost:23002"]})
    with pytest.raises(ArgumentError, match=r"TF_CONFIG's cluster\.chief must be a list of host:port addresses"):
        multi_worker_strategy()


@pytest.mark.parametrize("task, message", [
    ({"type": "worker", "index": 2}, r"TF_CONFIG's task\.index 2 is not one of the cluster's tasks: cluster\.worker "
                                     r"has 2 addresses, so it must be 0 to 1"),
    ({"type": "worker", "index": -1}, r"TF_CONFIG's task\.index -1 is not one of the cluster's tasks"),
    ({"type": "worker", "index": True}, r"TF_CONFIG's task\.index must be an int, got True"),
    ({"type": "worker", "index": "0"}, r"TF_CONFIG's task\.index must be an int, got '0'"),
    ({"type": "worker", "index": 0.0}, r"TF_CONFIG's task\.index must be an int, got 0\.0"),
    ({"type": "worker"}, r"TF_CONFIG's task\.index must be an int, got None"),
    ({"type": "ps", "index": 0}, r"TF_CONFIG's task\.type 'ps' is not one of the cluster's jobs \(worker\)"),
    ({"type": "chief", "index": 0}, r"TF_CONFIG's task\.type 'chief' is not one of the cluster's jobs"),
    ("worker", r"TF_CONFIG's task must be an object with 'type' and 'index', got 'worker'"),
])
def test_a_task_outside_the_cluster_is_refused(monkeypatch, task, message) -> None:
    _set(monkeypatch, {"worker": ["127.0.0.1:23001", "127.0.0.1:23002"]}, task)
    with pytest.raises(ArgumentError, match=message):
        multi_worker_strategy()


def test_the_last_task_index_is_in_the_cluster(monkeypatch) -> None:
    """index = number of workers - 1 passes the index check (and stops at the port, held here), so
    an off-by-one bound in either direction is caught by this test and the one above."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        _set(monkeypatch, {"worker": ["127.0.0.1:23001", f"127.0.0.1:{port}"]}, {"type": "worker", "index": 1})
        with pytest.raises(ArgumentError, match=rf"port {port} of this task \(127\.0\.0\.1:{port} in TF_CONFIG\) is in use"):
            multi_worker_strategy()


def test_a_host_that_does_not_resolve_is_not_a_port_in_use(monkeypatch) -> None:
    _set(monkeypatch, {"worker": ["no-such-host.invalid:23001", "127.0.0.1:23002"]})
    with pytest.raises(ArgumentError, match=r"TF_CONFIG's cluster\.worker\[0\] 'no-such-host\.invalid:23001' of this "
                                            r"task: cannot resolve host no-such-host\.invalid"):
        multi_worker_strategy()


def test_an_address_of_another_machine_is_not_a_port_in_use(monkeypatch) -> None:
    # 192.0.2.1 is TEST-NET-1 (RFC 5737): never an address of this machine, and binding sends nothing
    _set(monkeypatch, {"worker": ["192.0.2.1:23001", "127.0.0.1:23002"]})
    with pytest.raises(ArgumentError, match=r"TF_CONFIG's cluster\.worker\[0\] '192\.0\.2\.1:23001' of this task: "
                                            r"192\.0\.2\.1 is not an address of this machine"):
        multi_worker_strategy()


@pytest.mark.parametrize("bound, named", [("127.0.0.1", "localhost"), ("", "host name")])
def test_a_port_held_on_any_interface_is_in_use(monkeypatch, bound, named) -> None:
    """TensorFlow's server listens on every interface, so a port held on 127.0.0.1 is in use for a
    task named ``localhost``; and a task named by this machine's host name resolves and is local:
    only the held port stops it."""
    host = socket.gethostname() if named == "host name" else named
    try:
        socket.getaddrinfo(host, None)
    except socket.gaierror:
        pytest.skip(f"this machine's host name {host} does not resolve here")
    with socket.socket() as holder:
        holder.bind((bound, 0))
        holder.listen()
        port = holder.getsockname()[1]
        _set(monkeypatch, {"worker": [f"{host}:{port}", "127.0.0.1:23002"]})
        with pytest.raises(ArgumentError, match=rf"port {port} of this task \({host}:{port} in TF_CONFIG\) is in use"):
            multi_worker_strategy()


def test_cluster_workers_lists_the_chief_first(monkeypatch) -> None:
    config = {"cluster": {"chief": ["h0:1"], "worker": ["h1:2", "[::1]:3"]}}
    assert cluster_workers(config) == ["h0:1", "h1:2", "[::1]:3"]
    assert cluster_workers({"cluster": {"worker": ["h1:2"]}}) == ["h1:2"]


