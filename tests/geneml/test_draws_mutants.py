"""Gaps found by mutation testing of :mod:`mlgp.geneml.draws`: the vectorised slice sampler's
shrinkage (Neal 2003), step by step on a scripted random stream. A rejected proposal below the
start becomes the interval's lower end, one above it the upper end, so each next proposal is
drawn from the shrunk interval."""

from __future__ import annotations

import numpy as np

from mlgp.geneml.draws import slice_sample_each


class _ScriptedRng:
    """``random`` and ``uniform`` from fixed lists; records the bounds ``uniform`` was given."""

    def __init__(self, randoms, proposals) -> None:
        self.randoms, self.proposals, self.bounds = list(randoms), list(proposals), []

    def random(self, shape):
        return np.full(shape, self.randoms.pop(0))

    def uniform(self, lo, hi):
        self.bounds.append((float(lo[0]), float(hi[0])))
        return np.full(np.shape(lo), self.proposals.pop(0))


def test_each_rejected_proposal_shrinks_its_side_of_the_interval() -> None:
    """log N(0, 1) from x0 = 0 with width 1: the level log φ(0) + log ½ puts the slice at
    |x| < √(2 log 2) ≈ 1.18; the interval starts at [−½, ½] and steps out to [−1.5, 1.5]. The
    proposals 1.4 (above, rejected), −1.3 (below, rejected), 0.3 (inside) are drawn from
    [−1.5, 1.5], [−1.5, 1.4] and [−1.3, 1.4]."""
    rng = _ScriptedRng(randoms=[0.5, 0.5], proposals=[1.4, -1.3, 0.3])
    x = slice_sample_each(lambda x: -0.5 * x ** 2, np.array([0.0]), rng)
    assert x.tolist() == [0.3]
    np.testing.assert_allclose(rng.bounds, [(-1.5, 1.5), (-1.5, 1.4), (-1.3, 1.4)], rtol=0, atol=1e-12)


def test_the_lower_side_shrinks_first_when_the_first_miss_is_below() -> None:
    """The mirror order: −1.4 (below), 1.3 (above), then −0.2 inside."""
    rng = _ScriptedRng(randoms=[0.5, 0.5], proposals=[-1.4, 1.3, -0.2])
    x = slice_sample_each(lambda x: -0.5 * x ** 2, np.array([0.0]), rng)
    assert x.tolist() == [-0.2]
    np.testing.assert_allclose(rng.bounds, [(-1.5, 1.5), (-1.4, 1.5), (-1.4, 1.3)], rtol=0, atol=1e-12)
