"""What ``GenEML.fit`` checks and builds from its arguments before any inference: the precision
hyperprior, the latent dimension k used, the exposure covariates, and the validation callback that
adds P@1/3/5 to a trace, and the progress over its iterations (:func:`progress_bar`)."""

from __future__ import annotations

import numpy as np

from ..errors import ArgumentError, ShapeError, warn
from .exposure import CovariateExposure, default_covariates

__all__ = ["check_m_step", "check_precision_prior", "checked_validation", "components", "exposure_covariates",
           "progress_bar", "validation_callback"]


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


def exposure_covariates(exposure: str | None, Y, label_features, init: float,
                        lambda_coef: float) -> CovariateExposure | None:
    """The exposure covariates of checked 0/1 labels ``Y`` (N, K) CSR (``exposure="covariates"``),
    β starting at logit(``init``) for the intercept; ``label_features`` (K, C) refused otherwise."""
    if exposure != "covariates":
        if label_features is not None:
            raise ArgumentError(f"label_features are exposure covariates: they need exposure='covariates', "
                                f"not {exposure!r}")
        return None
    if label_features is not None:
        label_features = np.asarray(label_features, dtype=np.float64)
        if label_features.ndim != 2 or label_features.shape[0] != Y.shape[1] or not np.all(np.isfinite(label_features)):
            raise ShapeError(f"label_features must be a finite (K, C) array with K = {Y.shape[1]}; got shape "
                             f"{label_features.shape}")
    F, G = default_covariates(Y, label_features)
    coef = np.zeros(F.shape[1] + G.shape[1])
    coef[0] = np.log(init / (1.0 - init))  # the intercept: μ = exposure_init
    return CovariateExposure(F, G, coef, lambda_coef)


def checked_validation(validation, D: int, K: int, preprocess):
    """``validation`` = (X_val, Y_val) checked against D and K, X_val through ``preprocess`` (the
    training rows' :class:`~mlgp.geneml.features.FeatureMap`), or None."""
    if validation is None:
        return None
    from ..validation import check_features, check_labels

    X_val, Y_val = validation
    X_val = preprocess(check_features(X_val, "validation X", num_features=D))
    return X_val, check_labels(Y_val, "validation Y", num_points=X_val.shape[0], num_labels=K)


def validation_callback(validation):
    """A trace callback adding P@1/3/5 of checked ``validation`` = (X_val, Y_val) at the current
    W, V (None without data)."""
    if validation is None:
        return None
    from ..metrics import evaluate
    from ..scores import topk

    X_val, Y_val = validation
    K = Y_val.shape[1]

    def record(step, state, row):
        scores = np.asarray(X_val @ state.W) @ state.V.T
        p = evaluate(Y_val, topk(scores, min(5, K)), ks=[k for k in (1, 3, 5) if k <= K])
        row.update({f"P@{k}": float(p.loc["P", k]) for k in p.columns})

    return record


#: The progress's name of each inference (:func:`progress_bar`).
PROGRESS_NAMES = {"em": "GenEML EM", "online-em": "GenEML online EM", "gibbs": "GenEML Gibbs"}
#: What one unit of each inference's loop is.
PROGRESS_UNITS = {"em": "iteration", "online-em": "epoch", "gibbs": "sweep"}


def progress_bar(inference: str, budget, parts: int = 1):
    """A wrapper of the fit's loop (``progress(loop)``) that shows its progress
    (:class:`mlgp.estimator.progress.Progress`): a bar named for the ``inference``
    (:data:`PROGRESS_NAMES`) on a terminal, a line every few seconds off it, the seconds from the
    fit's ``budget`` (looked at after every unit). ``parts``: loops run one after another (Gibbs
    chains), each named ``"(chain c of parts)"``."""
    from ..estimator.progress import Progress

    calls = []

    def elapsed() -> float:
        budget.spent()  # a look: the Gibbs sampler without max_seconds does not look itself
        return budget.elapsed

    def wrap(iterable):
        calls.append(1)
        name = PROGRESS_NAMES[inference] + (f" (chain {len(calls)} of {parts})" if parts > 1 else "")
        total = len(iterable) if hasattr(iterable, "__len__") else None
        return Progress(name, total, unit=PROGRESS_UNITS[inference], elapsed=elapsed).wrap(iterable)

    return wrap
