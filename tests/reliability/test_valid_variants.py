"""Valid variants of the same data give the same model, and the caller's arrays are never changed.

Duplicate (i, j) entries of a sparse matrix mean their sum (scipy's rule), explicit zeros mean
nothing, the order of a row's indices does not matter, and float32, CSC, COO, lists, integer and
boolean labels are the same numbers: every estimator (and MLGPF) fitted on a variant must score
exactly like the one fitted on the clean CSR matrix, and must leave the variant as it was given.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from _small import SMALL, data  # tests/estimator, on sys.path by conftest

ESTIMATORS = [name for name in SMALL if name != "LSPC-classes"]


def duplicated(A, values=None) -> sp.csr_matrix:
    """``A`` (CSR, sorted) with every entry stored twice, as two halves (or ``values``): built from
    (data, indices, indptr), since scipy's COO → CSR conversion would sum them."""
    A = sp.csr_matrix(A, dtype=np.float64)
    A.sort_indices()
    stored = np.repeat(A.data / 2, 2) if values is None else values(A)
    return sp.csr_matrix((stored, np.repeat(A.indices, 2), 2 * A.indptr), A.shape)


def with_explicit_zeros(A) -> sp.csr_matrix:
    """``A`` (CSR) with an explicit 0 stored in every row that has a free column."""
    dense = sp.csr_matrix(A, dtype=np.float64).toarray()
    rows, cols, vals = [], [], []
    for i, row in enumerate(dense):
        free = np.flatnonzero(row == 0)
        for j in np.flatnonzero(row):
            rows.append(i), cols.append(j), vals.append(row[j])
        if free.size:
            rows.append(i), cols.append(free[0]), vals.append(0.0)
    indptr = np.searchsorted(rows, np.arange(dense.shape[0] + 1))
    return sp.csr_matrix((np.array(vals), np.array(cols), indptr), dense.shape)


def unsorted(A) -> sp.csr_matrix:
    """``A`` (CSR) with every row's entries stored in reverse column order."""
    A = sp.csr_matrix(A, dtype=np.float64, copy=True)
    A.sort_indices()
    for r in range(A.shape[0]):
        s, e = A.indptr[r], A.indptr[r + 1]
        A.indices[s:e], A.data[s:e] = A.indices[s:e][::-1].copy(), A.data[s:e][::-1].copy()
    A.has_sorted_indices = False
    return A


X_VARIANTS = {
    "duplicate entries": duplicated,
    "explicit zeros": with_explicit_zeros,
    "unsorted indices": unsorted,
    "float32 CSR": lambda X: sp.csr_matrix(X, dtype=np.float32),
    "CSC": sp.csc_matrix,
    "COO": sp.coo_matrix,
    "dense float32": lambda X: X.toarray().astype(np.float32),
    "nested lists": lambda X: X.toarray().tolist(),
}
Y_VARIANTS = {
    "duplicate halves": duplicated,
    "explicit zeros": with_explicit_zeros,
    "unsorted indices": unsorted,
    "int8 CSR": lambda Y: sp.csr_matrix(Y, dtype=np.int8),
    "bool dense": lambda Y: Y.toarray().astype(bool),
    "CSC": sp.csc_matrix,
    "nested lists": lambda Y: Y.toarray().astype(int).tolist(),
}


def _snapshot(A):
    """What ``A`` holds, to check afterwards that nothing changed it."""
    if sp.issparse(A):
        A = A.tocsr() if A.format in ("csr",) else A
        parts = [getattr(A, name) for name in ("data", "indices", "indptr", "row", "col") if hasattr(A, name)]
        return A.format, [np.array(p, copy=True) for p in parts], getattr(A, "has_sorted_indices", None)
    return "dense", [np.array(A, dtype=object, copy=True)], None


def _unchanged(A, snap) -> bool:
    fmt, parts, sorted_flag = _snapshot(A)
    return fmt == snap[0] and sorted_flag == snap[2] and all(
        a.shape == b.shape and np.array_equal(a, b) for a, b in zip(parts, snap[1]))


def exact_data(**kw):
    """:func:`_small.data` with features rounded to float32, so that the float32 variants hold
    exactly the same numbers."""
    X, Y = data(**kw)
    return X.astype(np.float32).astype(np.float64), Y


@pytest.fixture(scope="module")
def clean():
    X, Y = exact_data()
    Xc, Yc = sp.csr_matrix(X), sp.csr_matrix(Y.astype(np.float64))
    scores = {name: SMALL[name]().fit(Xc, Yc).decision_function(Xc) for name in ESTIMATORS}
    return Xc, Yc, scores


@pytest.mark.parametrize("variant", X_VARIANTS)
@pytest.mark.parametrize("name", ESTIMATORS)
def test_a_feature_variant_fits_and_scores_like_the_clean_matrix(clean, name, variant):
    Xc, Yc, reference = clean
    Xv = X_VARIANTS[variant](Xc)
    before = _snapshot(Xv)
    est = SMALL[name]().fit(Xv, Yc)
    np.testing.assert_allclose(est.decision_function(Xv), reference[name], rtol=1e-6, atol=1e-9)
    top = est.predict_topk(Xv, 2)
    assert top.indices.shape == (Xc.shape[0], 2)
    assert _unchanged(Xv, before), f"{name} changed the caller's X ({variant})"


@pytest.mark.parametrize("variant", Y_VARIANTS)
@pytest.mark.parametrize("name", ESTIMATORS)
def test_a_label_variant_fits_like_the_clean_matrix(clean, name, variant):
    Xc, Yc, reference = clean
    Yv = Y_VARIANTS[variant](Yc)
    before = _snapshot(Yv)
    est = SMALL[name]().fit(Xc, Yv)
    np.testing.assert_allclose(est.decision_function(Xc), reference[name], rtol=1e-6, atol=1e-9)
    assert _unchanged(Yv, before), f"{name} changed the caller's Y ({variant})"


@pytest.mark.parametrize("name", ESTIMATORS)
def test_a_one_stored_twice_is_a_two_and_refused_like_the_dense_two(clean, name):
    Xc, Yc, _ = clean
    twice = duplicated(Yc, values=lambda A: np.repeat(A.data, 2))
    np.testing.assert_array_equal(twice.toarray(), 2 * Yc.toarray())  # scipy's own reading
    with pytest.raises(ValueError, match=r"0/1 labels; found values \[2\.\] \(duplicate entries .* summed"):
        SMALL[name]().fit(Xc, twice)
    with pytest.raises(ValueError, match=r"0/1 labels; found values \[2\.\]"):
        SMALL[name]().fit(Xc, twice.toarray())


@pytest.mark.parametrize("variant", ["duplicate entries", "unsorted indices", "CSC", "dense float32"])
def test_mlgpf_from_data_and_scores_ignore_the_form_of_x(variant):
    from mlgp.models import mlgpf_from_data

    X, Y = exact_data(N=30)
    Xc, Yc = sp.csr_matrix(X), sp.csr_matrix(Y)
    ref = mlgpf_from_data(Xc, Yc, num_latent_gps=2, num_inducing=4, seed=1)
    Xv = X_VARIANTS[variant](Xc)
    before = _snapshot(Xv)
    model = mlgpf_from_data(Xv, Yc, num_latent_gps=2, num_inducing=4, seed=1)
    for a, b in zip(model.trainable_variables, ref.trainable_variables):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-9, atol=1e-12)
    from mlgp.recipes import MLGPFClassifier

    P, P_ref = (MLGPFClassifier.from_model(m).predict_proba(x) for m, x in ((model, Xv), (ref, Xc)))
    np.testing.assert_allclose(P, P_ref, rtol=1e-9, atol=1e-12)
    assert _unchanged(Xv, before)


def test_mlgpf_from_data_keeps_the_callers_explicit_zeros():
    from mlgp.models import mlgpf_from_data

    X, Y = data(N=30)
    Yz = with_explicit_zeros(sp.csr_matrix(Y))
    nnz = Yz.nnz
    mlgpf_from_data(X, Yz, num_latent_gps=2, num_inducing=4)
    assert Yz.nnz == nnz and (Yz.data == 0).any()
