"""MLGPF across machines: TensorFlow's ``MultiWorkerMirroredStrategy`` with the checks a cluster
needs before and during training.

Contract: :func:`multi_worker_strategy` reads ``TF_CONFIG`` and refuses, with an
:class:`~mlgp.errors.ArgumentError` naming the problem and before any connection, a configuration
that is not JSON, has no worker list, has a ``cluster.chief`` or ``cluster.worker`` that is not a
list of ``host:port`` addresses with ports in 1..65535, names one address twice, has a task whose
``type`` is not a job of the cluster or whose ``index`` is not an int in ``[0, len(job))``, or gives
this task an address it cannot serve: a host that does not resolve, an address of another machine,
a port another program already holds (each with its own message, naming TF_CONFIG's field and
value); it returns the strategy with a collective timeout. :func:`fit` with such a
strategy trains one model on all workers: every worker draws the same global minibatch from the same
seed and feeds its own rows of it to its replicas (replica r of R takes rows ``[r B / R, (r + 1) B /
R)``), so the union of the workers' rows — label subsamples included — is exactly the one-worker
sample stream, and the all-reduced gradient is the one-worker gradient. Before the first step the
workers compare fingerprints of their data and settings (:func:`agree_on_run`) and refuse to start,
naming the worker and what differs. Only the chief writes checkpoints, the trace and TensorBoard
logs; every worker restores from the chief's checkpoint folder, so a cluster restarted after a
failure resumes where the chief's last checkpoint stands. A worker lost mid-training makes the
others stop with :func:`lost_worker_error`'s :class:`~mlgp.errors.MLGPError` naming it.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import socket

import numpy as np
import tensorflow as tf

from ..errors import ArgumentError, MLGPError

__all__ = ["agree_on_run", "cluster_workers", "is_chief", "is_multi_worker", "lost_worker_error",
           "multi_worker_strategy"]

#: The errors a collective raises when a peer is gone or does not answer in time.
LOST_PEER_ERRORS = (tf.errors.UnavailableError, tf.errors.DeadlineExceededError, tf.errors.CancelledError,
                    tf.errors.AbortedError)

#: Hosts that are always this machine's (loopback and wildcard names): not looked up further.
_ANY_HOST = ("localhost", "127.0.0.1", "0.0.0.0", "::", "::1")


def _tf_config() -> dict:
    raw = os.environ.get("TF_CONFIG")
    if not raw:
        raise ArgumentError("TF_CONFIG is not set: it must name the cluster's workers and this task "
                            '(e.g. {"cluster": {"worker": ["host1:port", "host2:port"]}, "task": {"type": "worker", '
                            '"index": 0}})')
    try:
        config = json.loads(raw)
    except json.JSONDecodeError as err:
        raise ArgumentError(f"TF_CONFIG is not JSON ({err})") from None
    if not isinstance(config, dict) or not isinstance(config.get("cluster"), dict):
        raise ArgumentError("TF_CONFIG must be a JSON object with a 'cluster' object")
    return config


def _short(value) -> str:
    """``repr(value)``, cut to 60 characters for a message."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _host_port(address, field: str) -> tuple[str, int]:
    """The host and port of ``address``, TF_CONFIG's ``field`` (e.g. ``cluster.worker[0]``).

    Raises
    ------
    ArgumentError
        Naming TF_CONFIG, ``field`` and ``address`` when it is not a ``host:port`` string with a
        port in 1..65535 (an IPv6 host in brackets: ``[::1]:2222``).
    """
    if not isinstance(address, str):
        raise ArgumentError(f"TF_CONFIG's {field} must be a host:port string, got {_short(address)}")
    where = f"TF_CONFIG's {field} {_short(address)}"
    host, sep, port = address.rpartition(":")
    if not sep or not port:
        raise ArgumentError(f"{where} has no port: write it as host:port (e.g. localhost:2222)")
    if not host:
        raise ArgumentError(f"{where} has no host: write it as host:port (e.g. localhost:2222)")
    if ":" in host and not (host.startswith("[") and host.endswith("]")):
        raise ArgumentError(f"{where}: an IPv6 host must be in brackets, as in [::1]:2222")
    if not (port.isascii() and port.isdigit()):
        raise ArgumentError(f"{where}: port {_short(port)} is not a number")
    if len(port) > 5 or not 1 <= int(port) <= 65535:
        raise ArgumentError(f"{where}: port {port if len(port) <= 20 else port[:20] + '...'} is outside 1..65535")
    return host.strip("[]"), int(port)


def _job_addresses(cluster: dict, job: str) -> list[str]:
    """TF_CONFIG's ``cluster.<job>`` (none when absent), each address checked by :func:`_host_port`."""
    addresses = cluster.get(job, [])
    if not isinstance(addresses, list):
        raise ArgumentError(f"TF_CONFIG's cluster.{job} must be a list of host:port addresses, got {_short(addresses)}")
    for i, address in enumerate(addresses):
        _host_port(address, f"cluster.{job}[{i}]")
    return addresses


def cluster_workers(config: dict | None = None) -> list[str]:
    """The addresses of TF_CONFIG's chief (if any) and workers, in task order (chief first).

    Parameters
    ----------
    config
        The parsed TF_CONFIG; None reads the environment variable.

    Raises
    ------
    ArgumentError
        When TF_CONFIG is missing or not JSON, or ``cluster.chief`` / ``cluster.worker`` is not a
        list of ``host:port`` addresses (naming the field and the bad value).
    """
    config = _tf_config() if config is None else config
    cluster = config["cluster"]
    return [*_job_addresses(cluster, "chief"), *_job_addresses(cluster, "worker")]


def _this_task(config: dict) -> tuple[str, str]:
    """This task's ``(field, address)`` in TF_CONFIG, e.g. ``("cluster.worker[1]", "host:2222")``.

    Raises
    ------
    ArgumentError
        When ``task`` is not an object, its ``type`` is not a job of the cluster, or its ``index``
        is not an int (bools refused) with ``0 <= index <`` the job's number of addresses.
    """
    task = config.get("task", {})
    if not isinstance(task, dict):
        raise ArgumentError(f"TF_CONFIG's task must be an object with 'type' and 'index', got {_short(task)}")
    cluster = config["cluster"]
    jobs = [job for job in ("chief", "worker") if _job_addresses(cluster, job)]
    kind, index = task.get("type"), task.get("index")
    if kind not in jobs:
        raise ArgumentError(f"TF_CONFIG's task.type {_short(kind)} is not one of the cluster's jobs ({', '.join(jobs)})")
    if isinstance(index, bool) or not isinstance(index, int):
        raise ArgumentError(f"TF_CONFIG's task.index must be an int, got {_short(index)}")
    members = cluster[kind]
    if not 0 <= index < len(members):
        n = len(members)
        raise ArgumentError(f"TF_CONFIG's task.index {index} is not one of the cluster's tasks: cluster.{kind} has "
                            f"{n} address{'es' if n > 1 else ''}, so it must be 0 to {n - 1}")
    return f"cluster.{kind}[{index}]", members[index]


def multi_worker_strategy(timeout_seconds: float = 60.0):
    """``tf.distribute.MultiWorkerMirroredStrategy`` for the cluster in ``TF_CONFIG``, after checking
    it (module docstring); collectives that wait longer than ``timeout_seconds`` for a peer fail.

    Raises
    ------
    ArgumentError
        For a TF_CONFIG refused by the checks of the module docstring, before any connection.
    """
    config = _tf_config()
    addresses = cluster_workers(config)
    if not addresses:
        raise ArgumentError("TF_CONFIG's cluster names no worker")
    twice = sorted({a for a in addresses if addresses.count(a) > 1})
    if twice:
        raise ArgumentError(f"TF_CONFIG names {', '.join(twice)} more than once: every task needs its own host:port")
    field, address = _this_task(config)
    _check_port_free(field, address)
    options = tf.distribute.experimental.CommunicationOptions(timeout_seconds=float(timeout_seconds))
    return tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)


def _check_port_free(field: str, address: str) -> None:
    """ArgumentError unless this task's ``address`` (TF_CONFIG's ``field``) can be served here: its
    host resolves, is an address of this machine, and its port is free on every interface (where
    TensorFlow's server listens); each failure has its own message."""
    host, port = _host_port(address, field)
    where = f"TF_CONFIG's {field} {address!r} of this task"
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as err:
        raise ArgumentError(f"{where}: cannot resolve host {host} ({getattr(err, 'strerror', None) or err})") from None
    if host not in _ANY_HOST and not any(_bindable(family, sockaddr) for family, _, _, _, sockaddr in infos):
        raise ArgumentError(f"{where}: {host} is not an address of this machine: each task must run on the "
                            "machine its address names")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("", port))
        except OSError as err:
            if err.errno == errno.EADDRINUSE:
                raise ArgumentError(f"port {port} of this task ({address} in TF_CONFIG) is in use ({err.strerror}): "
                                    "another program or another task holds it") from None
            raise ArgumentError(f"{where}: port {port} cannot be opened ({err.strerror})") from None


def _bindable(family: int, sockaddr: tuple) -> bool:
    """Whether ``sockaddr``'s IP is an address of this machine (a socket binds to it on a free port)."""
    with socket.socket(family, socket.SOCK_STREAM) as s:
        try:
            s.bind((sockaddr[0], 0, *sockaddr[2:]))
        except OSError:
            return False
    return True


def is_multi_worker(strategy) -> bool:
    """Whether ``strategy`` is a ``MultiWorkerMirroredStrategy`` over several tasks."""
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return False
    spec = strategy.cluster_resolver.cluster_spec()
    return sum(spec.num_tasks(job) for job in spec.jobs) > 1


def is_chief(strategy) -> bool:
    """Whether this process writes the run's files: always without a strategy or with one machine;
    the chief task, or worker 0 of a cluster without one, otherwise."""
    if not is_multi_worker(strategy):
        return True
    resolver = strategy.cluster_resolver
    if resolver.task_type == "chief":
        return True
    return resolver.task_type == "worker" and resolver.task_id == 0 and "chief" not in resolver.cluster_spec().jobs


def _digest(value) -> np.ndarray:
    """Two int64 words of a blake2b hash of ``value``'s JSON form."""
    raw = hashlib.blake2b(json.dumps(value, sort_keys=True, default=str).encode(), digest_size=16).digest()
    return np.frombuffer(raw, dtype=np.int64).copy()


def agree_on_run(strategy, parts: dict) -> None:
    """All workers gather a hash of each of ``parts`` (e.g. ``{"data": fingerprint, "settings": {...}}``)
    and raise :class:`~mlgp.errors.MLGPError` naming the first worker whose part differs from the
    chief's, before any training step."""
    names = sorted(parts)
    local = np.concatenate([_digest(parts[n]) for n in names])
    replicas = strategy.num_replicas_in_sync
    value = strategy.experimental_distribute_values_from_function(lambda ctx: tf.constant(local[None, :]))
    gathered = strategy.gather(value, axis=0).numpy()  # one row per replica, workers in task order
    addresses = cluster_workers()
    rows = gathered[::max(replicas // max(len(addresses), 1), 1)]
    for w, row in enumerate(rows[1:], start=1):
        for i, n in enumerate(names):
            if not np.array_equal(row[2 * i:2 * i + 2], rows[0][2 * i:2 * i + 2]):
                who = addresses[w] if w < len(addresses) else f"task {w}"
                raise MLGPError(f"the worker {who} has other {n} than the chief ({addresses[0] if addresses else 'task 0'}):"
                                " every worker must train on the same data with the same settings; none started")


def lost_worker_error(err: Exception, epoch: int, checkpoint: str | None) -> MLGPError:
    """The MLGPError for a collective that failed because a peer is gone: names the worker TF names
    (``/job:worker/replica:0/task:N``, mapped to its TF_CONFIG address) and where a restart resumes."""
    match = re.search(r"/job:(\w+)/replica:\d+/task:(\d+)", str(err))
    who = "a worker"
    if match:
        kind, index = match.group(1), int(match.group(2))
        try:
            members = _tf_config()["cluster"].get(kind, [])
            who = f"the {kind} {members[index]} (task {index})" if index < len(members) else f"{kind} task {index}"
        except (ArgumentError, KeyError, IndexError):
            who = f"{kind} task {index}"
    where = f"; restart every worker to resume from {checkpoint}" if checkpoint else \
        "; no checkpoint was written (pass checkpoint_dir= to resume after a failure)"
    return MLGPError(f"training stopped in epoch {epoch + 1}: the cluster lost {who} "
                     f"({type(err).__name__}: {str(err).splitlines()[0][:200]}){where}")
