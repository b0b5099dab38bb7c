"""Tests of mlgp.models.warm_start against an independent NumPy computation: the principal
directions and score scales of the centred labels (an SVD), and the latent targets' ridge fit with
a linear kernel whose features contain a constant (a least-squares fit of the centred, standardised
principal scores, so the fitted latent means sum to zero over the training rows)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from _rounding import FLOAT64

from mlgp.models.warm_start import _principal_directions, warm_start

N, D, K, P = 60, 5, 6, 3


def _labels(rng: np.random.Generator) -> sp.csr_matrix:
    """0/1 labels (N, K) with unequal frequencies (so ȳ is far from 0) and correlated columns."""
    base = rng.random((N, 2))
    Y = np.column_stack([base[:, 0] < 0.7, base[:, 0] < 0.4, base[:, 1] < 0.5,
                         (base[:, 0] + base[:, 1]) < 0.6, rng.random(N) < 0.8, rng.random(N) < 0.2])
    return sp.csr_matrix(Y.astype(np.float64))


def _reference_pca(Y: np.ndarray):
    """ȳ, the top-P right singular vectors V (K, P) of Y − ȳ and the score stds s = σ / √N, by SVD."""
    ybar = Y.mean(axis=0)
    _, sv, Vt = np.linalg.svd(Y - ybar, full_matrices=False)
    assert np.all(np.diff(sv[:P + 1]) < -1e-3)  # distinct: each direction is defined up to sign
    return ybar, Vt[:P].T, sv[:P] / np.sqrt(N)


def test_principal_directions_are_those_of_the_centred_labels(rng) -> None:
    """ȳ, V (up to each column's sign) and the score stds equal an SVD of Y − ȳ."""
    Y = _labels(rng)
    ybar, V, std = _principal_directions(Y, P)
    ref_ybar, ref_V, ref_std = _reference_pca(Y.toarray())
    # scipy's sparse mean sums N copies of y/N, numpy's divides the count by N: equal to rounding
    # (up to 8 ulp apart here)
    np.testing.assert_allclose(ybar, ref_ybar, **FLOAT64)
    np.testing.assert_allclose(std, ref_std, rtol=1e-10)
    signs = np.sign(np.sum(V * ref_V, axis=0))
    np.testing.assert_allclose(V, ref_V * signs, atol=1e-10)


def test_warm_start_fits_the_centred_standardised_scores(rng) -> None:
    """With a linear kernel k(x, z) = xᵀz (x holding a constant feature, Z invertible, so K_XZ has
    full column rank and its column space holds the constant vector) and a negligible ridge, the
    fitted latent means K_XZ α are the least-squares fit of the centred, standardised principal
    scores H = (Y − ȳ) V / s; they sum to 0 over the training rows; and Φ = c V diag(s), c > 0."""
    X = rng.normal(size=(N, D))
    X[:, 0] = 1.0
    Z = rng.normal(size=(D, D))
    Y = _labels(rng)
    Yd = Y.toarray()
    ybar, V, s = _reference_pca(Yd)
    bias = np.log(ybar / (1 - ybar))

    alpha, Phi = warm_start(X, Y, lambda xb: xb @ Z.T, Z @ Z.T, bias, P, ridge=1e-10, block=17)
    assert alpha.shape == (D, P) and Phi.shape == (K, P)

    # Φ = c V diag(s) with one c > 0 (which also fixes the sign of each direction)
    signs = np.sign(np.sum(Phi * V, axis=0))
    c = np.linalg.norm(Phi, axis=0) / s
    assert c[0] > 0.1
    np.testing.assert_allclose(c, c[0], rtol=1e-10)
    np.testing.assert_allclose(Phi, c[0] * V * signs * s, atol=1e-10)

    Kxz = X @ Z.T
    H = (Yd - ybar) @ (V * signs) / s                       # centred, standardised scores (N, P)
    np.testing.assert_allclose(H.mean(axis=0), 0.0, atol=1e-14)
    np.testing.assert_allclose(H.std(axis=0), 1.0, rtol=1e-12)
    fitted_ref = Kxz @ np.linalg.lstsq(Kxz, H, rcond=None)[0]
    fitted = Kxz @ alpha
    # the only differences are the ridge (1e-10) and the solver's 1e-8 relative jitter
    np.testing.assert_allclose(fitted, fitted_ref, rtol=0, atol=1e-6)
    np.testing.assert_allclose(fitted.sum(axis=0), 0.0, atol=1e-5)
    # a real fit: the scores are far from zero and not reproduced trivially
    assert np.abs(fitted).max() > 0.5 and np.abs(fitted - H).max() > 0.1


@pytest.mark.parametrize("block", [7, 2000])
def test_warm_start_does_not_depend_on_the_block_size(rng, block) -> None:
    """Accumulating K_XZᵀK_XZ and K_XZᵀH in blocks of rows gives the same α and Φ as one block."""
    X = rng.normal(size=(N, D))
    Z = rng.normal(size=(4, D))
    Y = _labels(rng)
    ybar = Y.toarray().mean(axis=0)
    bias = np.log(ybar / (1 - ybar))
    args = (X, Y, lambda xb: np.exp(-0.5 * ((xb[:, None, :] - Z[None]) ** 2).sum(-1)),
            np.exp(-0.5 * ((Z[:, None, :] - Z[None]) ** 2).sum(-1)), bias, P)
    a1, p1 = warm_start(*args, block=N)
    a2, p2 = warm_start(*args, block=block)
    np.testing.assert_allclose(a2, a1, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(p2, p1, rtol=1e-8, atol=1e-10)
