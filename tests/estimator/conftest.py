"""Fixtures of the floor's tests: fitted small estimators, cached for the session."""

from __future__ import annotations

import pytest
from _small import fit_small


@pytest.fixture(scope="session")
def fitted():
    """``fitted(name, sparse)``: a cached fitted estimator (do not modify it)."""
    cache: dict = {}

    def get(name: str, sparse: bool = False):
        if (name, sparse) not in cache:
            cache[name, sparse] = fit_small(name, sparse)
        return cache[name, sparse]

    return get
