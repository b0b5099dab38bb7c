"""GenEML's parameters: each one's constraint (:data:`PARAMETER_CONSTRAINTS`, scikit-learn's
``_parameter_constraints``, checked once when ``fit`` begins) and the checks that span several of
them or need the data's sizes: the precision hyperprior (:func:`check_precision_prior`), the M-step
against the inference (:func:`check_m_step`) and the latent dimension k used (:func:`components`)."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from ..errors import ArgumentError, warn
from ..estimator import N_JOBS
from ..estimator.prior_map import CALIBRATION
from ..estimator.budget import MAX_SECONDS
from .em import M_STEPS

__all__ = ["DEFAULT_COMPONENTS", "PARAMETER_CONSTRAINTS", "check_gibbs_moves", "check_m_step", "check_precision_prior",
           "components"]

#: Every parameter's constraint (:class:`~mlgp.geneml.GenEML`'s ``_parameter_constraints``).
PARAMETER_CONSTRAINTS: dict = {
    "n_components": [Interval(Integral, 1, None, closed="left")],
    "exposure": [StrOptions({"global", "covariates"}), None],
    "inference": [StrOptions({"em", "online-em", "gibbs"})],
    "max_iter": [Interval(Integral, 1, None, closed="left")],
    "tol": [Interval(Real, 0, None, closed="left"), None],
    "max_seconds": MAX_SECONDS,
    "calibration": CALIBRATION,
    **{name: [Interval(Real, 0, None, closed="neither")]
       for name in ("lambda_u", "lambda_v", "lambda_w", "lambda_coef")},
    **{name: [Interval(Real, 1, None, closed="left")] for name in ("alpha", "beta")},
    "exposure_init": [Interval(Real, 0, 1, closed="neither")],
    "cg_iterations": [Interval(Integral, 1, None, closed="left")],
    "m_step": [StrOptions({"auto", *M_STEPS})],
    "block_rows": [Interval(Integral, 1, None, closed="left")],
    "batch_size": [Interval(Integral, 1, None, closed="left")],
    "kappa": [Interval(Real, 0.5, 1, closed="right")],
    "tau": [Interval(Real, 0, None, closed="left")],
    "final_passes": [Interval(Integral, 0, None, closed="left")],
    "carry_local": ["boolean"],
    "num_results": [Interval(Integral, 1, None, closed="left")],
    "num_burnin_steps": [Interval(Integral, 0, None, closed="left")],
    "num_chains": [Interval(Integral, 1, None, closed="left")],
    "gibbs_start": [StrOptions({"random", "em"})],
    "scale_move": ["boolean"],
    "balance_move": ["boolean"],
    "collapse_exposure": ["boolean"],
    "precision_prior": [tuple, list, None],
    "relevance_prior": [tuple, list, None],
    "n_jobs": N_JOBS,
    "progress": ["boolean"],
    "normalize_rows": ["boolean", None],
    "preprocessing": [StrOptions({"auto", "rows", "columns"}), None],
    "random_state": [Interval(Integral, 0, 2**31 - 1, closed="both")],
    "threshold": [Interval(Real, 0, 1, closed="both")],
}


def check_precision_prior(precision_prior, inference: str) -> tuple[float, float] | None:
    """``precision_prior`` checked: None, or a pair (shape a, rate b) of finite numbers > 0 with
    ``inference="gibbs"``."""
    if precision_prior is None:
        return None
    if inference != "gibbs":
        raise ArgumentError(f"precision_prior is a hyperprior of the Gibbs sampler: it needs inference='gibbs', "
                            f"not {inference!r}")
    try:
        a, b = (float(v) for v in precision_prior)
    except (TypeError, ValueError):
        raise ArgumentError(f"precision_prior must be None or a pair (shape a, rate b); got {precision_prior!r}")
    if not (np.isfinite(a) and np.isfinite(b) and a > 0 and b > 0):
        raise ArgumentError(f"precision_prior's shape and rate must be finite and > 0; got ({a}, {b})")
    return a, b


def check_m_step(m_step: str, inference: str, gibbs_start: str) -> None:
    """Refuse ``m_step="cg"`` where no batch EM runs: online EM, or Gibbs from a random start."""
    if m_step == "cg" and (inference == "online-em" or (inference == "gibbs" and gibbs_start != "em")):
        raise ArgumentError(f"m_step='cg' sets batch EM's update of U and V, and inference={inference!r}"
                            + (" with gibbs_start='random'" if inference == "gibbs" else "")
                            + " runs no batch EM: use m_step='auto' or 'exact'")


def check_gibbs_moves(balance_move: bool, collapse_exposure: bool, inference: str, exposure) -> None:
    """Refuse a Gibbs move where it cannot run: either move without ``inference="gibbs"``, the
    collapsed exposure without global exposure (covariate exposure has no μ to collapse)."""
    for name, on in (("balance_move", balance_move), ("collapse_exposure", collapse_exposure)):
        if on and inference != "gibbs":
            raise ArgumentError(f"{name} is a move of the Gibbs sampler: it needs inference='gibbs', not {inference!r}")
    if collapse_exposure and exposure != "global":
        raise ArgumentError(f"collapse_exposure draws the global exposure μ with ξ summed out: it needs "
                            f"exposure='global', not {exposure!r}")


#: GenEML's default ``n_components``: cut to min(N, K) without a warning (the documented default).
DEFAULT_COMPONENTS = 100


def components(k: int, N: int, K: int) -> int:
    """k, or min(N, K) where that is smaller (a warning says what is used, unless k is the default
    :data:`DEFAULT_COMPONENTS`, whose cut is the documented rule and nothing the caller asked for)."""
    if k <= min(N, K):
        return k
    if k != DEFAULT_COMPONENTS:
        warn(f"GenEML: n_components={k} is more than min(N, K) = min({N}, {K}); using {min(N, K)}")
    return min(N, K)
