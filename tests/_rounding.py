"""Comparisons of results that two *different* computations of the same numbers give: another block or
batch size (BLAS takes another kernel for 5 rows than for 13), another thread count or process, XLA
against eager. Such results are equal to rounding, not bit for bit, and a ranking or a threshold
decision taken on them is equal only where no near-tie can flip. Bit-identity is asserted with
``np.testing.assert_array_equal`` only where the very same computation runs (the same block size,
save → load → the same call, the same seed on the same code path).

(``tests/`` is on ``sys.path``: pytest puts the folder of the top ``conftest.py`` there.)
"""

from __future__ import annotations

import numpy as np

__all__ = ["FLOAT32", "FLOAT64", "assert_decisions_agree", "assert_topk_close"]

#: float64 results of another summation order: a few ulp of the result, plus a little for the
#: cancellation in a difference such as q(present) − q(absent) (seen: up to 7.8e-16 on unit scores)
FLOAT64 = dict(rtol=1e-12, atol=1e-14)
#: float32 results of another summation order (eps 1.2e-7)
FLOAT32 = dict(rtol=1e-5, atol=1e-6)


def _near(values: np.ndarray, to: np.ndarray, rtol: float, atol: float) -> np.ndarray:
    """Where ``values`` lie within twice the tolerance of ``to`` (each may have moved by one)."""
    return np.abs(values - to) <= 2.0 * (atol + rtol * np.maximum(np.abs(values), np.abs(to)))


def assert_topk_close(top, scores: np.ndarray, *, rtol: float = FLOAT64["rtol"], atol: float = FLOAT64["atol"],
                      min_checked: float = 0.5) -> int:
    """``top`` (a :class:`~mlgp.scores.TopK` of k labels per row) ranks the dense reference
    ``scores`` (N, K), which another computation gave: its scores are the k best of ``scores`` to
    rounding; its indices are the reference ranking's (−score, then the lower label) exactly at every
    position whose label no other label comes within the tolerance of (a near-tie, which rounding
    could flip, is left out). At least ``min_checked`` of the positions must be checked that way,
    so that the comparison cannot pass by checking nothing. Returns the number checked."""
    scores = np.asarray(scores, dtype=np.float64)
    k = top.indices.shape[1]
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    best = np.take_along_axis(scores, order, axis=1)
    np.testing.assert_allclose(top.scores, best, rtol=rtol, atol=atol, err_msg="top-k scores")
    # a position is clear when only its own label is near its score
    clear = _near(scores[:, None, :], best[:, :, None], rtol, atol).sum(axis=2) == 1
    np.testing.assert_array_equal(np.where(clear, top.indices, -1), np.where(clear, order, -1),
                                  err_msg="top-k labels away from near-ties")
    assert clear.mean() >= min_checked, f"only {clear.sum()} of {clear.size} top-k positions are clear of near-ties"
    return int(clear.sum())


def assert_decisions_agree(decisions: np.ndarray, expected: np.ndarray, decided_on: np.ndarray, threshold, *,
                           rtol: float = FLOAT64["rtol"], atol: float = FLOAT64["atol"]) -> None:
    """0/1 ``decisions`` taken on scores equal to ``decided_on`` to rounding (another computation) are
    ``expected`` exactly: valid because no score of ``decided_on`` lies within the tolerance of its
    ``threshold`` (asserted first; a score on the threshold could go either way)."""
    decided_on = np.asarray(decided_on, dtype=np.float64)
    threshold = np.broadcast_to(np.asarray(threshold, dtype=np.float64), decided_on.shape)
    assert not np.any(_near(decided_on, threshold, rtol, atol)), "a score lies on its threshold, up to rounding"
    np.testing.assert_array_equal(decisions, expected)
