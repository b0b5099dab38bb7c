"""The solvers of ML-LSPC's Sylvester equation G Θ + Θ C = R, the coupling matrix and the Pearson
label similarity, each against an independent computation."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from mlgp.baselines import pearson_similarity
from mlgp.baselines._kernel_basis import choose_centres, gaussian_design, median_heuristic
from mlgp.baselines._sylvester import (DENSE_MAX_UNKNOWNS, SOLVERS, coupling_matrix, solve_coupled,
                                       sylvester_residual)
from mlgp.errors import ArgumentError, MLGPError


def _problem(rng: np.random.Generator, B: int = 30, T: int = 7, N: int = 50, rank: int | None = None):
    """G = ΦᵀΦ from a Gaussian design (rank-deficient when ``rank`` < B), C from a random
    similarity, two right-hand sides."""
    X = rng.normal(size=(N, 3))
    Phi = gaussian_design(X, X[:B], 1.5)
    if rank is not None:
        Phi = Phi[:rank]
    G = Phi.T @ Phi
    W = rng.random((T, T))
    W = np.triu(W, 1)
    W = W + W.T
    C = coupling_matrix(0.05, 2.0 * W)
    return G, C, [rng.normal(size=(B, T)), rng.normal(size=(B, T))]


def _kron_reference(G, C, R):
    """The naive solve written independently: vec(GΘ + ΘC) = (I ⊗ G + Cᵀ ⊗ I) vec(Θ), column-major."""
    B, T = R.shape
    H = np.zeros((B * T, B * T))
    for t in range(T):
        for s in range(T):
            block = C[s, t] * np.eye(B)
            if s == t:
                block = block + G
            H[t * B:(t + 1) * B, s * B:(s + 1) * B] = block
    return np.linalg.solve(H, R.T.reshape(-1)).reshape(T, B).T


@pytest.mark.parametrize("rank", [None, 12])
def test_all_solvers_agree_and_satisfy_the_equation(rng, rank) -> None:
    G, C, rhs = _problem(rng, rank=rank)
    reference = [_kron_reference(G, C, R) for R in rhs]
    for solver in SOLVERS:
        thetas, info = solve_coupled(G, C, rhs, solver, tol=1e-13, max_iter=100_000)
        assert info.solver == solver and len(thetas) == 2
        for theta, ref, R in zip(thetas, reference, rhs):
            assert theta.shape == R.shape
            rel = np.linalg.norm(theta - ref) / np.linalg.norm(ref)
            assert rel < 1e-8, (solver, rel)
            residual = sylvester_residual(G, C, theta, R)
            assert residual <= (1e-13 if solver == "cg" else 1e-10), (solver, residual)
        if solver == "cg":
            assert len(info.iterations) == 2 and all(i >= 1 for i in info.iterations)
            assert all(r <= 1e-13 for r in info.residuals)
        else:
            assert info.iterations == [] and info.residuals == []


def test_cg_stops_at_its_tolerance_and_reports_failure(rng) -> None:
    G, C, rhs = _problem(rng, B=40, T=5)
    loose, info_loose = solve_coupled(G, C, rhs[:1], "cg", tol=1e-3, max_iter=10_000)
    tight, info_tight = solve_coupled(G, C, rhs[:1], "cg", tol=1e-12, max_iter=10_000)
    assert info_loose.residuals[0] <= 1e-3 and info_tight.residuals[0] <= 1e-12
    assert info_loose.iterations[0] < info_tight.iterations[0]
    with pytest.raises(MLGPError, match=r"conjugate gradients did not reach the relative residual 1e-12 in 2 iterations"):
        solve_coupled(G, C, rhs[:1], "cg", tol=1e-12, max_iter=2)


def test_cg_checks_the_true_residual_of_what_scipy_returns(rng, monkeypatch) -> None:
    """A ``cg`` that reports success (info 0) but returns a wrong answer is caught by the solver's
    own residual check ‖GΘ + ΘC − R‖ / ‖R‖: it restarts, then raises instead of returning it."""
    import mlgp.baselines._sylvester as sylvester_module

    G, C, rhs = _problem(rng, B=10, T=3)
    calls = []

    def lying_cg(A, b, x0=None, **kwargs):
        calls.append(kwargs)
        return np.zeros_like(b), 0  # Θ = 0: relative residual exactly 1, "converged"

    monkeypatch.setattr(sylvester_module, "cg", lying_cg)
    with pytest.raises(MLGPError, match=r"conjugate gradients did not reach the relative residual 1e-08 in "
                                        r"0 iterations \(reached 1\); raise max_iter or tol"):
        solve_coupled(G, C, rhs[:1], "cg", tol=1e-8, max_iter=1000)
    assert calls  # the stub was the solver used


def test_dense_solver_refuses_problems_too_large_to_form(rng) -> None:
    B = 200
    T = DENSE_MAX_UNKNOWNS // B + 1
    G = np.eye(B)
    C = np.eye(T)
    with pytest.raises(ArgumentError, match=r"solver='dense' forms the \(B·T\)² = 20200² matrix H"):
        solve_coupled(G, C, [np.zeros((B, T))], "dense")
    with pytest.raises(ArgumentError, match=r"solver must be one of \('eig', 'sylvester', 'cg', 'dense'\), got 'lu'"):
        solve_coupled(G, C, [np.zeros((B, T))], "lu")


def test_coupling_matrix_follows_the_papers_definition(rng) -> None:
    T = 5
    gamma = rng.random((T, T))
    gamma = (gamma + gamma.T) / 2
    lam = rng.random(T) + 0.1
    C = coupling_matrix(lam, gamma)
    for t in range(T):
        for u in range(T):
            expected = (lam[t] + sum(gamma[t, v] for v in range(T)) if t == u else 0.0) - gamma[t, u]
            assert C[t, u] == pytest.approx(expected, abs=1e-14)
    # the penalty ½ tr(Θ C Θᵀ) equals ½ Σ λ_t ||θ_t||² + ¼ Σ γ_tt' ||θ_t − θ_t'||²
    theta = rng.normal(size=(4, T))
    direct = 0.5 * sum(lam[t] * theta[:, t] @ theta[:, t] for t in range(T)) + 0.25 * sum(
        gamma[t, u] * np.sum((theta[:, t] - theta[:, u]) ** 2) for t in range(T) for u in range(T))
    assert 0.5 * np.trace(theta @ C @ theta.T) == pytest.approx(direct, rel=1e-12)


def test_pearson_similarity_is_the_positive_part_of_numpys_correlation(rng) -> None:
    Y = (rng.random((80, 6)) < [0.1, 0.3, 0.5, 0.5, 0.9, 0.2]).astype(int)
    Y[:, 3] = Y[:, 2]                 # perfectly correlated
    Y[:, 5] = 1 - Y[:, 1]             # perfectly anti-correlated
    Y = np.column_stack([Y, np.ones(80, dtype=int), np.zeros(80, dtype=int)])  # two constant labels
    W = pearson_similarity(sp.csr_matrix(Y))
    expected = np.zeros((8, 8))
    corr = np.corrcoef(Y[:, :6].T)
    expected[:6, :6] = np.maximum(corr, 0.0)
    np.fill_diagonal(expected, 0.0)
    np.testing.assert_allclose(W, expected, atol=1e-12)
    assert W[2, 3] == pytest.approx(1.0) and W[1, 5] == 0.0
    np.testing.assert_array_equal(W, W.T)
    np.testing.assert_array_equal(pearson_similarity(Y), W)


def test_gaussian_design_and_median_heuristic(rng) -> None:
    X = rng.normal(size=(25, 4))
    centres = X[[3, 7, 11]]
    Phi = gaussian_design(sp.csr_matrix(X), centres, 0.7)
    for n in range(25):
        for b in range(3):
            assert Phi[n, b] == pytest.approx(np.exp(-np.sum((X[n] - centres[b]) ** 2) / (2 * 0.49)), rel=1e-12)
    dists = [np.linalg.norm(X[i] - X[j]) for i in range(25) for j in range(i + 1, 25)]
    assert median_heuristic(X) == pytest.approx(np.median(dists), rel=1e-12)
    assert median_heuristic(np.ones((5, 2))) == 1.0  # no scale in the data
    # a sample of max_points rows only
    big = rng.normal(size=(300, 2))
    assert median_heuristic(big, max_points=50, random_state=1) == median_heuristic(big, max_points=50, random_state=1)
    np.testing.assert_array_equal(choose_centres(10, None), np.arange(10))
    np.testing.assert_array_equal(choose_centres(10, 20), np.arange(10))
    rows = choose_centres(100, 7, random_state=3)
    assert rows.size == 7 and np.unique(rows).size == 7 and np.all(np.diff(rows) > 0)
    np.testing.assert_array_equal(rows, choose_centres(100, 7, random_state=3))
