"""Bootstrap intervals of ECE and ECE@k over the test rows (:mod:`mlgp.metrics._probabilistic`).

ECE is a binned mean of ``|frequency − mean probability|``: the binning noise only adds to it, so it is
biased upward, the more so the fewer entries per bin, and an ECE recomputed on a resample of the rows
is biased more. :func:`calibration_error_interval` gives the percentile interval of the resampled
ECEs, which on small test sets can lie wholly above ECE itself. :func:`calibration_error_bootstrap`
gives the bias-corrected statement: ECE less the bootstrap's estimate of its bias, and the basic
bootstrap interval ``[2 ECE − q_high, 2 ECE − q_low]`` around it (Davison and Hinkley, *Bootstrap
Methods and their Application*, 1997, §5.2), both clipped at 0. Rows are resampled, not entries: a
point's labels stay together. NumPy and SciPy only.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..arguments import positive_int
from ..errors import ArgumentError
from ._labels import as_binary_csr
from ._probabilistic import check_proba_block, evaluate_proba

__all__ = ["BootstrapECE", "calibration_error_bootstrap", "calibration_error_interval"]


class BootstrapECE(NamedTuple):
    """What :func:`calibration_error_bootstrap` returns.

    Attributes
    ----------
    ece : float
        ECE (or ECE@k) of the test rows: biased upward, the more so the fewer entries per bin.
    debiased : float
        ``max(0, 2 ECE − mean of the bootstrap ECEs)``: ECE less the bias the bootstrap estimates.
    low, high : float
        The basic bootstrap interval ``[2 ECE − q_high, 2 ECE − q_low]`` (q: the bootstrap ECEs'
        quantiles), clipped at 0: an interval of the debiased ECE, which it contains (unless the
        bootstrap distribution is extremely skewed).
    """

    ece: float
    debiased: float
    low: float
    high: float


def _bootstrap_eces(Y_true: Any, proba: Any, n_bins: int, k: int | None, n_boot: int, level: float,
                    random_state: int) -> tuple[float, np.ndarray]:
    """ECE of the rows and ECE of ``n_boot`` resamples of the rows (with replacement)."""
    Y = as_binary_csr(Y_true, "Y_true")
    N, K = Y.shape
    P = check_proba_block(proba, (N, K))
    n_boot = positive_int(n_boot, "n_boot")
    if not 0.0 < float(level) < 1.0:
        raise ArgumentError(f"level must lie in (0, 1), got {level!r}")
    ks = () if k is None else (positive_int(k, "k"),)

    def ece(rows) -> float:
        r = evaluate_proba(Y[rows], P[rows], n_bins=n_bins, ks=ks, uniform_bins=None)
        return r.ece if k is None else r.ece_at_k[ks[0]]

    rng = np.random.default_rng(random_state)
    return ece(slice(None)), np.array([ece(np.sort(rng.integers(0, N, N))) for _ in range(n_boot)])


def calibration_error_interval(Y_true: Any, proba: Any, n_bins: int = 15, k: int | None = None, *,
                               n_boot: int = 200, level: float = 0.95, random_state: int = 0) -> tuple[float, float]:
    """The percentile bootstrap interval of ECE (or ECE@k): the ``level`` central interval of ECE
    over ``n_boot`` resamples of the test rows (a point's labels stay together). ECE is biased
    upward and its resamples more so, so on small test sets this interval can lie above ECE
    itself; :func:`calibration_error_bootstrap` gives the bias-corrected one. ``proba``: (N, K)."""
    _, values = _bootstrap_eces(Y_true, proba, n_bins, k, n_boot, level, random_state)
    tail = (1.0 - float(level)) / 2.0
    low, high = np.quantile(values, [tail, 1.0 - tail])
    return float(low), float(high)


def calibration_error_bootstrap(Y_true: Any, proba: Any, n_bins: int = 15, k: int | None = None, *,
                                n_boot: int = 200, level: float = 0.95, random_state: int = 0) -> BootstrapECE:
    """ECE (or ECE@k), its bootstrap bias correction and the basic bootstrap interval of the
    debiased value (:class:`BootstrapECE`), from ``n_boot`` resamples of the test rows.

    The basic interval subtracts the bootstrap's bias along with its spread; the percentile interval
    (:func:`calibration_error_interval`) carries the bias twice and can miss ECE itself (a binned
    ``|frequency − probability|`` grows with the binning noise). ``proba`` is a dense (N, K) array.
    """
    estimate, values = _bootstrap_eces(Y_true, proba, n_bins, k, n_boot, level, random_state)
    tail = (1.0 - float(level)) / 2.0
    q_low, q_high = np.quantile(values, [tail, 1.0 - tail])
    return BootstrapECE(estimate, max(0.0, 2.0 * estimate - float(values.mean())),
                        max(0.0, 2.0 * estimate - float(q_high)), max(0.0, 2.0 * estimate - float(q_low)))
