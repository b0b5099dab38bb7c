"""GenEML's conjugate-gradient M-step: :func:`mlgp.geneml.cg.batched_cg` takes SciPy's CG steps
(with the Jacobi preconditioner), lowers every system's quadratic at each step and reaches the
exact solve; the row and label steps solve GenEML's systems; batch EM with CG M-steps never lowers
the log posterior and, run to convergence, takes the exact M-step; ``m_step="auto"`` follows its
stated rule; where no batch EM runs, ``m_step="cg"`` is refused."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.linalg import cg as scipy_cg

from mlgp.errors import ArgumentError
from mlgp.geneml import GenEML
from mlgp.geneml.cg import batched_cg, label_residual, label_step, refined_cg, row_step
from mlgp.geneml.em import CG_MAX_ENTRIES, CG_MIN_COMPONENTS, EMState, Priors, batch_em, choose_m_step, log_posterior
from mlgp.geneml.updates import label_statistics, row_updates, solve_spd

S, k = 6, 5


def _systems(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A stack of S SPD matrices (S, k, k) with spread-out diagonals, right-hand sides and starts."""
    rng = np.random.default_rng(seed)
    G = rng.standard_normal((S, k, k)) * rng.uniform(0.2, 3.0, size=(S, 1, k))
    A = G @ np.swapaxes(G, 1, 2) + 0.5 * np.eye(k)
    return A, rng.standard_normal((S, k)), rng.standard_normal((S, k))


def _matvec(A: np.ndarray):
    return lambda P: np.einsum("sij,sj->si", A, P)


def _diagonal(A: np.ndarray) -> np.ndarray:
    return np.einsum("sii->si", A)


@pytest.mark.parametrize("preconditioned", [True, False])
@pytest.mark.parametrize("steps", [1, 2, 3])
def test_each_step_is_scipys_cg_step(preconditioned, steps):
    A, h, x0 = _systems()
    x = batched_cg(_matvec(A), h, x0, _diagonal(A) if preconditioned else None, steps)
    for i in range(S):
        M = np.diag(1.0 / _diagonal(A)[i]) if preconditioned else None
        expected, _ = scipy_cg(A[i], h[i], x0=x0[i], M=M, rtol=1e-300, atol=0.0, maxiter=steps)
        np.testing.assert_allclose(x[i], expected, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("preconditioned", [True, False])
def test_every_step_lowers_every_quadratic_and_k_steps_solve(preconditioned):
    A, h, x0 = _systems(1)
    diagonal = _diagonal(A) if preconditioned else None

    def quadratic(x):
        return 0.5 * np.einsum("si,sij,sj->s", x, A, x) - np.einsum("si,si->s", h, x)

    values = [quadratic(batched_cg(_matvec(A), h, x0, diagonal, steps)) for steps in range(0, k + 1)]
    assert np.all(np.diff(values, axis=0) < 1e-12), np.diff(values, axis=0).max()
    assert np.all(values[1] < values[0] - 1e-6)  # the first step moves every system
    exact = np.linalg.solve(A, h[..., None])[..., 0]
    np.testing.assert_allclose(batched_cg(_matvec(A), h, x0, diagonal, 3 * k), exact, rtol=1e-8, atol=1e-10)


def test_the_start_is_copied_and_a_solved_system_stays():
    A, h, x0 = _systems(2)
    exact = np.linalg.solve(A, h[..., None])[..., 0]
    start = x0.copy()
    start[2] = exact[2]  # its residual is (all but) 0
    before = start.copy()
    x = batched_cg(_matvec(A), h, start, _diagonal(A), 0)
    np.testing.assert_array_equal(x, before)
    x[:] = 0.0
    np.testing.assert_array_equal(start, before)  # the caller's start is not the result's buffer
    np.testing.assert_allclose(batched_cg(_matvec(A), h, start, _diagonal(A), 2)[2], exact[2], rtol=1e-10)


def test_rtol_ends_the_steps_once_every_residual_is_small():
    A, h, x0 = _systems(3)
    calls = []

    def counted(P):
        calls.append(1)
        return _matvec(A)(P)

    x = batched_cg(counted, h, x0, None, 1000, rtol=1e-10)
    residual = np.linalg.norm(h - _matvec(A)(x), axis=1)
    assert np.all(residual <= 1e-10 * np.linalg.norm(h, axis=1))
    assert len(calls) < 100  # it stopped long before the 1,000 steps


@pytest.fixture(scope="module")
def block():
    rng = np.random.default_rng(4)
    B, K = 12, 9
    psi_weights = rng.uniform(0.02, 0.25, size=(B, K))
    b = np.where(rng.random((B, K)) < 0.3, 0.5, -0.5)
    return rng.standard_normal((B, k)), rng.standard_normal((K, k)), psi_weights, b, rng.standard_normal((B, k))


def _float32_solves(start: np.ndarray, solved: np.ndarray, exact: np.ndarray) -> None:
    """Steps to convergence in float32 on a float64 residual: the error of the start shrinks by
    float32's precision (a factor 1e4 allows for the systems' condition numbers), not to 0 — also
    from a start within 1e-6, where steps on x itself in float32 could not get closer."""
    before = np.linalg.norm(start - exact, axis=1)
    after = np.linalg.norm(solved - exact, axis=1)
    assert np.all(after <= 1e-4 * before), (after / before).max()
    assert solved.dtype == np.float64


def test_the_row_step_solves_the_rows_systems(block):
    U, V, a, b, prior_mean = block
    exact = solve_spd(*row_updates(V, a, b, prior_mean, 0.7))
    _float32_solves(U, row_step(U, V, a, b, prior_mean, 0.7, 4 * k), exact)
    near = exact + 1e-6 * np.random.default_rng(9).standard_normal(exact.shape)  # below float32's resolution of u
    _float32_solves(near, row_step(near, V, a, b, prior_mean, 0.7, 4 * k), exact)
    np.testing.assert_array_equal(row_step(U, V, a, b, prior_mean, 0.7, 2, psi=U @ V.T),
                                  row_step(U, V, a, b, prior_mean, 0.7, 2))  # ψ given is ψ computed
    one = row_step(U, V, a, b, prior_mean, 0.7, 1)
    assert np.all(np.linalg.norm(one - exact, axis=1) < np.linalg.norm(U - exact, axis=1))


def test_the_label_step_sums_its_systems_over_the_blocks(block):
    U, V, a, b, _ = block
    precisions = np.linspace(0.5, 2.0, k)
    halves = [(U[:5], a[:5]), (U[5:], a[5:])]
    stat_a, stat_b = label_statistics(U, a, b)
    exact = solve_spd(stat_a + np.diag(precisions), stat_b)

    def residual(start):  # Σ_n (b_nl − a_nl u_nᵀ v_l) u_n, summed over the two blocks
        return label_residual(U[:5], start, a[:5], b[:5]) + label_residual(U[5:], start, a[5:], b[5:])

    np.testing.assert_allclose(residual(V), stat_b - np.einsum("lij,lj->li", stat_a, V), rtol=1e-12, atol=1e-12)
    _float32_solves(V, label_step(V, halves, residual(V), precisions, 4 * k), exact)
    near = exact + 1e-6 * np.random.default_rng(9).standard_normal(exact.shape)
    _float32_solves(near, label_step(near, halves, residual(near), precisions, 4 * k), exact)


def test_the_row_and_label_steps_are_jacobi_preconditioned(block):
    """One step of each is SciPy's first CG step on the exact systems with M = diag(Λ)⁻¹ (up to
    float32): a wrong diagonal still converges, but takes other steps."""
    U, V, a, b, prior_mean = block
    precision, shift = row_updates(V, a, b, prior_mean, 0.7)
    expected = np.stack([scipy_cg(precision[n], shift[n], x0=U[n], M=np.diag(1 / np.diag(precision[n])),
                                  rtol=1e-300, atol=0.0, maxiter=1)[0] for n in range(len(U))])
    np.testing.assert_allclose(row_step(U, V, a, b, prior_mean, 0.7, 1), expected, rtol=1e-5, atol=1e-6)
    precisions = np.linspace(0.5, 2.0, k)
    stat_a, stat_b = label_statistics(U, a, b)
    systems = stat_a + np.diag(precisions)
    expected = np.stack([scipy_cg(systems[l], stat_b[l], x0=V[l], M=np.diag(1 / np.diag(systems[l])),
                                  rtol=1e-300, atol=0.0, maxiter=1)[0] for l in range(len(V))])
    step = label_step(V, [(U, a)], label_residual(U, V, a, b), precisions, 1)
    np.testing.assert_allclose(step, expected, rtol=1e-5, atol=1e-6)


def test_a_refined_step_in_float32_lowers_the_float64_quadratic_near_its_minimum():
    """Started within 1e-6 of the solution, where a float32 residual would be noise, the float64
    residual still leads every system downhill."""
    A, h, _ = _systems(6)
    exact = np.linalg.solve(A, h[..., None])[..., 0]
    start = exact + 1e-6 * np.random.default_rng(7).standard_normal(exact.shape)

    def quadratic(x):
        return 0.5 * np.einsum("si,sij,sj->s", x, A, x) - np.einsum("si,si->s", h, x)

    low = lambda P: np.einsum("sij,sj->si", A.astype(np.float32), P)  # noqa: E731
    x = refined_cg(h - _matvec(A)(start), start, low, _diagonal(A), 3)
    assert np.all(quadratic(x) < quadratic(start))
    x = refined_cg(h - _matvec(A)(start), start, low, _diagonal(A), 3 * k)
    assert np.all(np.linalg.norm(x - exact, axis=1) <= 1e-4 * np.linalg.norm(start - exact, axis=1))


N, D, K = 300, 25, 40


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(5)
    X = sp.random(N, D, density=0.3, random_state=5, format="csr")
    psi = np.asarray(X @ rng.standard_normal((D, 4))) @ rng.standard_normal((4, K)) - 1.0
    Y = sp.csr_matrix((rng.random((N, K)) < 1 / (1 + np.exp(-psi))).astype(np.float64))
    return X, Y


def _start(components: int = 6, exposure: bool = True) -> EMState:
    rng = np.random.default_rng(0)
    return EMState(np.zeros((D, components)), 0.1 * rng.standard_normal((N, components)),
                   0.1 * rng.standard_normal((K, components)), np.full(K, 0.9) if exposure else None)


@pytest.mark.parametrize("exposure", [True, False])
def test_em_with_cg_steps_never_lowers_the_log_posterior(data, exposure):
    X, Y = data
    priors = Priors(lambda_u=1.0, lambda_v=0.5, lambda_w=0.3, relevance=(1.0, 1.0))
    start = _start(exposure=exposure)
    start.relevance = np.ones(6)
    _, trace = batch_em(X, Y, start, priors, 15, cg_iterations=2, block_rows=70, m_step="cg")
    objective = np.concatenate([[log_posterior(X, Y, start, priors)], trace["objective"]])
    assert np.all(np.diff(objective) >= -1e-8 * np.abs(objective[1:])), np.diff(objective).min()
    assert objective[-1] > objective[0] + 100


def test_em_with_cg_steps_to_convergence_takes_the_exact_m_step(data):
    """60 steps on systems of 6 unknowns: float32 converges, and its steps past convergence must
    stop (rounding noise otherwise moves V by 5e-4 within 3 iterations)."""
    X, Y = data
    priors = Priors(lambda_u=1.0, lambda_v=0.5, lambda_w=0.3)
    exact, _ = batch_em(X, Y, _start(), priors, 3, cg_iterations=60, block_rows=70, m_step="exact")
    solved, _ = batch_em(X, Y, _start(), priors, 3, cg_iterations=60, block_rows=70, m_step="cg")
    few, _ = batch_em(X, Y, _start(), priors, 3, cg_iterations=1, block_rows=70, m_step="cg")
    for name in ("U", "V", "W", "mu"):  # the steps end at float32's precision (refined_cg), hence 1e-5
        np.testing.assert_allclose(getattr(solved, name), getattr(exact, name), rtol=1e-5, atol=1e-6, err_msg=name)
    assert np.abs(few.V - exact.V).max() > 1e-3  # one step is not the exact update


def test_batch_em_refuses_an_unknown_m_step(data):
    X, Y = data
    with pytest.raises(ArgumentError, match="m_step must be one of"):
        batch_em(X, Y, _start(), Priors(), 1, m_step="auto")


@pytest.mark.parametrize("requested, components, entries, expected", [
    ("auto", CG_MIN_COMPONENTS, CG_MAX_ENTRIES, "cg"),
    ("auto", CG_MIN_COMPONENTS - 1, 1000, "exact"),
    ("auto", 100, CG_MAX_ENTRIES + 1, "exact"),
    ("exact", 100, 1000, "exact"),
    ("cg", 2, 1000, "cg"),
])
def test_auto_follows_its_rule(requested, components, entries, expected):
    assert choose_m_step(requested, components, entries, 1) == expected
    assert choose_m_step(requested, components, 1, entries) == expected


def test_the_estimators_auto_takes_cg_steps_from_32_components(data):
    X, Y = data
    fits = {m: GenEML(n_components=32, m_step=m, max_iter=2, random_state=0).fit(X, Y) for m in ("auto", "cg", "exact")}
    np.testing.assert_array_equal(fits["auto"].V_, fits["cg"].V_)
    assert np.abs(fits["auto"].V_ - fits["exact"].V_).max() > 1e-6
    small = {m: GenEML(n_components=31, m_step=m, max_iter=2, random_state=0).fit(X, Y) for m in ("auto", "exact")}
    np.testing.assert_array_equal(small["auto"].V_, small["exact"].V_)


@pytest.mark.parametrize("params, match", [
    (dict(inference="online-em"), "inference='online-em' runs no batch EM"),
    (dict(inference="gibbs"), "gibbs_start='random' runs no batch EM"),
])
def test_cg_is_refused_where_no_batch_em_runs(data, params, match):
    X, Y = data
    with pytest.raises(ArgumentError, match=match):
        GenEML(m_step="cg", max_iter=1, **params).fit(X, Y)
