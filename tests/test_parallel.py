"""The NumPy families on a Dask cluster (:mod:`mlgp.parallel`): the training data are scattered once
per fit, not with every task; the fits equal ``n_jobs=1``; workers without mlgp are named before any
task; a worker killed mid-fit is replaced and the forest is still the one-process forest."""

from __future__ import annotations

import os
import threading
import time

import joblib
import numpy as np
import pytest
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

distributed = pytest.importorskip("distributed")

from mlgp.baselines import FastXML  # noqa: E402
from mlgp.errors import MLGPError  # noqa: E402
from mlgp.geneml.em import EMState, Priors, batch_em  # noqa: E402
from mlgp.parallel import scatter_once, worker_peak_memory  # noqa: E402


def _data(N: int = 240, D: int = 30, K: int = 8, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = sp.random(N, D, density=0.3, format="csr", random_state=seed) + sp.eye(N, D, format="csr")
    Y = sp.csr_matrix((np.asarray(X[:, :K].todense()) + 0.3 * rng.random((N, K)) > 0.5).astype(np.int64))
    return sp.csr_matrix(X), Y


@pytest.fixture
def scatters(monkeypatch):
    """The ids of the objects each ``Client.scatter`` call sends, one list per call."""
    calls: list[list[int]] = []
    original = distributed.Client.scatter

    def spy(self, data, *args, **kwargs):
        calls.append([id(x) for x in data] if isinstance(data, (list, tuple)) else [id(data)])
        return original(self, data, *args, **kwargs)

    monkeypatch.setattr(distributed.Client, "scatter", spy)
    return calls


def _cluster(**kwargs):
    options = dict(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None)
    return distributed.LocalCluster(**{**options, **kwargs})


def _assert_same_forest(a: FastXML, b: FastXML) -> None:
    A, B = a.forest_.to_arrays(), b.forest_.to_arrays()
    for key in A:
        np.testing.assert_array_equal(A[key], B[key], err_msg=key)


def test_fastxml_sends_its_data_once_and_grows_the_same_forest(scatters) -> None:
    X, Y = _data()
    ref = FastXML(n_estimators=10, max_leaf=5, random_state=3, n_jobs=1, calibration=None).fit(X, Y)
    with _cluster() as cluster, distributed.Client(cluster), joblib.parallel_backend("dask"):
        est = FastXML(n_estimators=10, max_leaf=5, random_state=3, calibration=None).fit(X, Y)
    _assert_same_forest(ref, est)
    # one scatter of the four data objects (X, Y, the weighted labels, the discounts), none per tree
    assert len(scatters) == 1 and len(scatters[0]) == 4, scatters


def test_geneml_batch_em_sends_its_blocks_once_and_fits_the_same(scatters) -> None:
    X, Y = _data(N=300)
    rng = np.random.default_rng(1)
    start = EMState(np.zeros((X.shape[1], 3)), 0.1 * rng.standard_normal((300, 3)),
                    0.1 * rng.standard_normal((Y.shape[1], 3)), np.full(Y.shape[1], 0.9))
    priors = Priors(lambda_v=3.0)
    with threadpool_limits(limits=1):
        one, trace_one = batch_em(X, Y, start, priors, 3, block_rows=100, n_jobs=1)
        with _cluster() as cluster, distributed.Client(cluster), joblib.parallel_backend("dask"):
            dask, trace_dask = batch_em(X, Y, start, priors, 3, block_rows=100, n_jobs=-1)
    for name in ("W", "U", "V", "mu"):
        np.testing.assert_array_equal(getattr(one, name), getattr(dask, name))
    np.testing.assert_array_equal(trace_one["objective"], trace_dask["objective"])
    # the first call sends the 3 blocks' X and Y once; later calls send only the iteration's state
    data_ids = scatters[0]
    assert len(data_ids) == 6
    assert not any(set(call) & set(data_ids) for call in scatters[1:]), scatters


def test_workers_that_cannot_import_mlgp_are_named(monkeypatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mlgp" else real(name, *a))
    X, Y = _data(N=60)
    with _cluster(n_workers=1) as cluster, distributed.Client(cluster), joblib.parallel_backend("dask"):
        with pytest.raises(MLGPError, match=r"the Dask workers .* cannot import mlgp"):
            FastXML(n_estimators=2, random_state=0).fit(X, Y)


def test_outside_dask_nothing_is_scattered(scatters) -> None:
    data = [np.zeros(10), sp.eye(3, format="csr")]
    with scatter_once(data) as sent:
        assert all(a is b for a, b in zip(sent, data, strict=True))
    assert scatters == []


def test_equal_data_scattered_twice_get_keys_of_their_own() -> None:
    """Content keys made two fits in a row share their discounts' key, and the first fit's release
    could reach the scheduler after the second's scatter: "lost dependencies" (CI, dask_fits)."""
    with _cluster(n_workers=1) as cluster, distributed.Client(cluster) as client, joblib.parallel_backend("dask"):
        with scatter_once([np.ones(2000)]) as first, scatter_once([np.ones(2000)]) as second:
            assert first[0].key != second[0].key
            assert client.gather(second[0]).sum() == 2000


def test_fastxml_with_its_cross_fitted_map_fits_the_same_on_dask() -> None:
    """The default calibration fits copies one after the other, each scattering equal discounts."""
    X, Y = _data()
    ref = FastXML(n_estimators=4, max_leaf=5, random_state=3, n_jobs=1).fit(X, Y)
    with _cluster() as cluster, distributed.Client(cluster), joblib.parallel_backend("dask"):
        est = FastXML(n_estimators=4, max_leaf=5, random_state=3).fit(X, Y)
    _assert_same_forest(ref, est)
    np.testing.assert_allclose(est.predict_proba(X[:20]), ref.predict_proba(X[:20]), rtol=1e-12, atol=0)


@pytest.mark.slow
def test_a_worker_killed_mid_fit_is_replaced_and_the_forest_is_the_same() -> None:
    """Two worker processes (with nannies); one is killed while the trees grow. Dask reruns its
    trees elsewhere and on the restarted worker, and the forest is the one-process forest."""
    X, Y = _data(N=1500, D=60, K=12)
    ref = FastXML(n_estimators=24, max_leaf=5, random_state=9, n_jobs=1, calibration=None).fit(X, Y)
    with _cluster(processes=True, memory_limit="2GB") as cluster, distributed.Client(cluster) as client:
        pids = client.run(os.getpid)
        victim = max(pids.values())
        fitted, killed_while_fitting = threading.Event(), []

        def kill_when_busy():
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not any(client.processing().values()):
                time.sleep(0.05)
            time.sleep(0.3)
            os.kill(victim, 9)
            killed_while_fitting.append(not fitted.is_set())

        killer = threading.Thread(target=kill_when_busy, daemon=True)
        killer.start()
        with joblib.parallel_backend("dask"):
            est = FastXML(n_estimators=24, max_leaf=5, random_state=9, calibration=None).fit(X, Y)
        fitted.set()
        killer.join()
        assert killed_while_fitting == [True]
        assert victim not in client.run(os.getpid).values()  # it was killed and replaced
        peaks = worker_peak_memory(client)
    _assert_same_forest(ref, est)
    assert len(peaks) == 2 and all(v > 10 * 2**20 for v in peaks.values())
