"""Shared pytest fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]

if os.environ.get("PYTEST_XDIST_WORKER"):
    # Under pytest-xdist the workers share the machine's cores: one BLAS thread each, so that tiny
    # linear algebra does not wait on the other worker's threads (results do not depend on it).
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)


def _find_data_home() -> Path | None:
    env = os.environ.get("MLGP_DATA")
    if env:
        return Path(env)
    # Developer convenience: the shared data folder beside the checkout.
    for candidate in (REPO.parent / "shared" / "data", REPO.parent.parent / "shared" / "data"):
        if (candidate / "README.md").exists():
            return candidate
    return None


@pytest.fixture(scope="session")
def data_home() -> Path:
    """The benchmark data home; skips locally when absent, fails under CI."""
    home = _find_data_home()
    if home is None or not home.is_dir():
        msg = "no data home: set MLGP_DATA to the folder holding the benchmark datasets"
        if os.environ.get("CI"):
            pytest.fail(msg + " (CI must provide it)")
        pytest.skip(msg)
    return home


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261123)


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    """Say when the slow tier was left out (README: the suite and its slow tier)."""
    if config.getoption("markexpr", "") == "not slow":
        terminalreporter.write_line("the tests marked slow were left out (pyproject.toml's addopts): "
                                    "`pytest -m slow` runs them, `pytest -m \"\"` runs every test")
