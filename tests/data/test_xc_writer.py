"""write_xc: the XC text it writes, what it refuses, and read_xc reading it back unchanged; the
caller's matrices are never changed."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from mlgp.data import read_xc, write_xc
from mlgp.errors import ArgumentError, ShapeError


def _assert_same(A: sp.spmatrix, B: sp.spmatrix) -> None:
    assert A.shape == B.shape
    assert (sp.csr_matrix(A) != sp.csr_matrix(B)).nnz == 0


@pytest.mark.parametrize("suffix", [".txt", ".txt.gz"])
def test_round_trip(tmp_path, rng, suffix):
    X = sp.random(50, 30, density=0.2, random_state=1, format="csr")
    X.data = np.round(X.data * 20 - 10, 6)
    X.eliminate_zeros()
    Y = sp.random(50, 7, density=0.3, random_state=2, format="csr")
    Y.data[:] = 1
    Y = Y.astype(np.int8)
    p = tmp_path / f"rt{suffix}"
    write_xc(p, X, Y)
    if suffix.endswith(".gz"):
        assert p.read_bytes()[:2] == b"\x1f\x8b"
    X2, Y2 = read_xc(p)
    _assert_same(X, X2)
    _assert_same(Y, Y2)


def test_writer_format(tmp_path):
    X = sp.csr_matrix(np.array([[0, 1.5, 0], [0, 0, 0], [2, 0, 3]]))
    Y = sp.csr_matrix(np.array([[1, 0], [0, 0], [1, 1]]))
    p = tmp_path / "w.txt"
    write_xc(p, X, Y, decimals=2)
    assert p.read_text() == "3 3 2\n0 1:1.50\n \n0,1 0:2.00 2:3.00\n"


def test_writer_leaves_the_callers_matrices_alone(tmp_path):
    # unsorted indices, a duplicate (two stored 0.5 labels summing to 1) and an explicit zero
    X = sp.csr_matrix((np.array([3.0, 0.0, 1.0]), np.array([2, 1, 0]), np.array([0, 3])), shape=(1, 3))
    Y = sp.csr_matrix((np.array([0.5, 1.0, 0.5, 0.0]), np.array([1, 0, 1, 2]), np.array([0, 4])), shape=(1, 3))
    before = [(m.data.copy(), m.indices.copy(), m.indptr.copy()) for m in (X, Y)]
    write_xc(tmp_path / "w.txt", X, Y, decimals=1)
    assert (tmp_path / "w.txt").read_text() == "1 3 3\n0,1 0:1.0 2:3.0\n"
    for m, (data, indices, indptr) in zip((X, Y), before):
        np.testing.assert_array_equal(m.data, data)
        np.testing.assert_array_equal(m.indices, indices)
        np.testing.assert_array_equal(m.indptr, indptr)


def test_writer_rejects_bad_input(tmp_path):
    with pytest.raises(ShapeError, match=r"X has 2 rows but Y has 3"):
        write_xc(tmp_path / "a.txt", np.ones((2, 2)), np.ones((3, 2)))
    with pytest.raises(ShapeError, match=r"Y must contain only 0 and 1"):
        write_xc(tmp_path / "a.txt", np.ones((2, 2)), 2 * np.ones((2, 2)))
    with pytest.raises(ShapeError, match=r"X has non-finite values"):
        write_xc(tmp_path / "a.txt", np.array([[np.nan, 1.0]]), np.ones((1, 2)))
    with pytest.raises(ArgumentError, match=r"decimals must be a non-negative integer, got -1"):
        write_xc(tmp_path / "a.txt", np.ones((2, 2)), np.ones((2, 2)), decimals=-1)
