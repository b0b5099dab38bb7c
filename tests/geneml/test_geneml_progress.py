"""GenEML's progress: named for the inference ("GenEML EM", "GenEML online EM", "GenEML Gibbs",
each chain of several its own), lines off a terminal, nothing with ``progress=False``."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from mlgp.geneml import GenEML


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = sp.random(60, 8, density=0.4, random_state=1, format="csr")
    Y = sp.csr_matrix((rng.random((60, 5)) < 0.3).astype(np.float64))
    return X, Y


def _started(err: str) -> list[str]:
    return [line for line in err.splitlines() if ": started" in line]


@pytest.mark.parametrize("inference, expected", [
    ("em", ["GenEML EM: started, 3 iterations"]),
    ("online-em", ["GenEML online EM: started, 3 epochs"]),
])
def test_the_loop_is_named_for_the_inference(data, capsys, inference, expected):
    GenEML(n_components=2, max_iter=3, inference=inference, batch_size=20, progress=True).fit(*data)
    err = capsys.readouterr().err
    assert _started(err) == expected
    assert err.splitlines()[-1].startswith(expected[0].split(":")[0] + ": ") and "3/3" in err.splitlines()[-1]


def test_each_gibbs_chain_is_named(data, capsys):
    GenEML(n_components=2, inference="gibbs", num_results=2, num_burnin_steps=1, num_chains=2, n_jobs=1,
           progress=True).fit(*data)
    assert _started(capsys.readouterr().err) == ["GenEML Gibbs (chain 1 of 2): started, 3 sweeps",
                                                "GenEML Gibbs (chain 2 of 2): started, 3 sweeps"]


def test_progress_off_prints_nothing(data, capsys):
    GenEML(n_components=2, max_iter=3, progress=False).fit(*data)
    assert capsys.readouterr().err == ""
