"""Fixtures of the model tests."""

from __future__ import annotations

import pytest
import scipy.sparse as sp


@pytest.fixture
def forbid_dense_blocks(monkeypatch):
    """``forbid_dense_blocks(width)``: from then on, densifying a CSR block at least ``width``
    columns wide fails the test (a model with an input map must never form one)."""

    def install(width: int) -> None:
        real = sp.csr_matrix.toarray

        def guarded(self, *args, **kwargs):
            if self.shape[1] >= width:
                raise AssertionError(f"a dense block of shape {self.shape} was formed")
            return real(self, *args, **kwargs)

        monkeypatch.setattr(sp.csr_matrix, "toarray", guarded)

    return install
