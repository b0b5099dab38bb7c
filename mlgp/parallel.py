"""The NumPy families' joblib work on a Dask cluster: training data scattered once, workers checked,
their peak memory.

Contract: FastXML's trees and GenEML's batch EM run their parallel work through joblib, so any
joblib backend takes it — a ``dask.distributed`` cluster through
``joblib.parallel_backend("dask")``. Inside such a context :func:`scatter_once` (a context manager
the estimators enter around their joblib calls) first checks that every worker can import mlgp
(:class:`~mlgp.errors.MLGPError` naming the workers that cannot, before any task is sent: otherwise
each task would fail with a pickling traceback), then sends each of the given objects (the training
data) to every worker once and gives back their futures: tasks that take a future instead of the
object receive the object from the worker's memory instead of with the task. Each scatter has keys
of its own (not a hash of the content): two fits in a row send equal arrays (FastXML's discounts
are the same for every fit with K labels), and with content keys the release of the first fit's
copy could reach the scheduler after the second fit's scatter and take the data from under its
tasks ("lost dependencies"). With any other backend it gives back the objects themselves. Results do not depend on the backend: the work
is split and combined in the same order. :func:`worker_peak_memory` reads each worker process's
peak resident memory.
"""

from __future__ import annotations

import importlib.util
from contextlib import contextmanager
from typing import Any, Iterator

from .errors import MLGPError

__all__ = ["active_dask_client", "scatter_once", "worker_peak_memory"]


def active_dask_client() -> Any | None:
    """The ``distributed.Client`` of joblib's active backend when it is Dask's, else None."""
    from joblib.parallel import get_active_backend

    backend, _ = get_active_backend()
    if type(backend).__name__ != "DaskDistributedBackend":
        return None
    return backend.client


def _workers_without_mlgp(client) -> list[str]:
    """The addresses of the workers on which ``import mlgp`` would fail."""
    found = client.run(importlib.util.find_spec, "mlgp")
    return sorted(address for address, spec in found.items() if spec is None)


@contextmanager
def scatter_once(objects: list) -> Iterator[list]:
    """Within joblib's Dask backend: check the workers, scatter ``objects`` to every worker once and
    give their futures, in order, for the joblib tasks inside to take (module docstring);
    elsewhere, ``objects`` as they are."""
    client = active_dask_client()
    if client is None:
        yield list(objects)
        return
    missing = _workers_without_mlgp(client)
    if missing:
        raise MLGPError(f"the Dask workers {', '.join(missing)} cannot import mlgp: install it where they run "
                        "(the same version as here), or leave them out of the cluster")
    yield client.scatter(list(objects), broadcast=True, hash=False)


def worker_peak_memory(client) -> dict[str, int]:
    """Each worker process's peak resident memory in bytes, ``{address: bytes}`` (Linux's
    ``ru_maxrss``, since the worker started)."""
    import resource

    usage = client.run(resource.getrusage, resource.RUSAGE_SELF)
    return {address: int(u.ru_maxrss) * 1024 for address, u in usage.items()}
