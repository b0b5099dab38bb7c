"""MLGPF across machines: TensorFlow's ``MultiWorkerMirroredStrategy`` with the checks a cluster
needs before and during training.

Contract: :func:`multi_worker_strategy` reads ``TF_CONFIG`` and refuses, with an
:class:`~mlgp.errors.ArgumentError` naming the problem and before any connection, a configuration
that is not JSON, has no worker list, names one address twice, or gives this task a port another
program already holds; it returns the strategy with a collective timeout. :func:`fit` with such a
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


def cluster_workers(config: dict | None = None) -> list[str]:
    """The addresses of TF_CONFIG's chief (if any) and workers, in task order (chief first)."""
    config = _tf_config() if config is None else config
    cluster = config["cluster"]
    return [*cluster.get("chief", []), *cluster.get("worker", [])]


def multi_worker_strategy(timeout_seconds: float = 60.0):
    """``tf.distribute.MultiWorkerMirroredStrategy`` for the cluster in ``TF_CONFIG``, after checking
    it (module docstring); collectives that wait longer than ``timeout_seconds`` for a peer fail."""
    config = _tf_config()
    addresses = cluster_workers(config)
    if not addresses:
        raise ArgumentError("TF_CONFIG's cluster names no worker")
    twice = sorted({a for a in addresses if addresses.count(a) > 1})
    if twice:
        raise ArgumentError(f"TF_CONFIG names {', '.join(twice)} more than once: every task needs its own host:port")
    task = config.get("task", {})
    kind, index = task.get("type"), task.get("index")
    members = config["cluster"].get(kind, []) if isinstance(kind, str) else []
    if not isinstance(index, int) or not 0 <= index < len(members):
        raise ArgumentError(f"TF_CONFIG's task {task!r} is not one of the cluster's tasks")
    host, _, port = members[index].rpartition(":")
    _check_port_free(host, int(port))
    options = tf.distribute.experimental.CommunicationOptions(timeout_seconds=float(timeout_seconds))
    return tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)


def _check_port_free(host: str, port: int) -> None:
    """ArgumentError when this task's port is already taken on this machine."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("" if host in ("localhost", "127.0.0.1", "0.0.0.0") else host, port))
        except OSError as err:
            raise ArgumentError(f"port {port} of this task ({host}:{port} in TF_CONFIG) is in use ({err.strerror}): "
                                "another program or another task holds it") from None


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
