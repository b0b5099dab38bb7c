"""The balance move of GenEML's Gibbs sweep (:func:`mlgp.geneml.draws.balance_columns`): ψ = U Vᵀ
exactly unchanged, and the prior p(W) p(U | W) p(V) kept — so, with the likelihood unchanged, the
posterior too — checked against independent prior draws."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import ks_2samp

from mlgp.geneml.draws import balance_columns

N, D, K, k = 5, 3, 4, 2
LAMBDA_U, LAMBDA_W = 2.0, 3.0
LAMBDA_V = np.array([1.5, 0.5])


def _prior_draw(X: np.ndarray, rng: np.random.Generator):
    W = rng.standard_normal((D, k)) / np.sqrt(LAMBDA_W)
    U = X @ W + rng.standard_normal((N, k)) / np.sqrt(LAMBDA_U)
    V = rng.standard_normal((K, k)) / np.sqrt(LAMBDA_V)
    return U, W, V


def _balance(U, V) -> np.ndarray:
    """log(‖U_j‖ / ‖V_j‖) per column: what the move changes."""
    return 0.5 * np.log(np.sum(U ** 2, axis=0) / np.sum(V ** 2, axis=0))


def test_psi_is_unchanged_and_the_residual_follows() -> None:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((N, D))
    U, W, V = _prior_draw(X, rng)
    U2, W2, V2, R2, c = balance_columns(U, W, V, U - X @ W, LAMBDA_U, LAMBDA_W, LAMBDA_V, rng)
    np.testing.assert_allclose(U2 @ V2.T, U @ V.T, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(R2, U2 - X @ W2, rtol=1e-12, atol=1e-14)
    assert c.shape == (k,) and np.all(c > 0) and np.all(np.abs(np.log(c)) > 1e-6)  # it moves


def test_the_move_keeps_the_prior() -> None:
    """θ ~ prior, then one move: θ' must again be a prior draw. The balance log(‖U_j‖/‖V_j‖), ‖W_j‖
    and ‖V_j‖ after the move against fresh prior draws (two-sample KS; 3,000 each). A wrong
    Jacobian (the exponent's sign of K, or c for c²) shifts them far beyond the test's reach."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((N, D))
    moved, fresh = [], []
    for _ in range(3000):
        U, W, V = _prior_draw(X, rng)
        U2, W2, V2, _, _ = balance_columns(U, W, V, U - X @ W, LAMBDA_U, LAMBDA_W, LAMBDA_V, rng)
        moved.append(np.concatenate([_balance(U2, V2), np.linalg.norm(W2, axis=0), np.linalg.norm(V2, axis=0)]))
        U, W, V = _prior_draw(X, rng)
        fresh.append(np.concatenate([_balance(U, V), np.linalg.norm(W, axis=0), np.linalg.norm(V, axis=0)]))
    moved, fresh = np.array(moved), np.array(fresh)
    for j in range(moved.shape[1]):
        assert ks_2samp(moved[:, j], fresh[:, j]).pvalue > 1e-3, j


@pytest.mark.parametrize("column", [0, 1])
def test_a_zero_column_stays(column: int) -> None:
    rng = np.random.default_rng(2)
    X = rng.standard_normal((N, D))
    U, W, V = _prior_draw(X, rng)
    V[:, column] = 0.0
    U2, W2, V2, _, c = balance_columns(U, W, V, U - X @ W, LAMBDA_U, LAMBDA_W, LAMBDA_V, rng)
    assert c[column] == 1.0 and np.all(np.isfinite(V2)) and c[1 - column] != 1.0
