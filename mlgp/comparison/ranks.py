"""The statistics of a comparison over many data sets (Demšar, "Statistical comparisons of
classifiers over multiple data sets", JMLR 7:1–30, 2006) and of one data set's test rows.

Contract (NumPy, SciPy and pandas only; no TensorFlow):

- :func:`rank_table`: each data set's ranks of the families, rank 1 = best, ties sharing the mean
  of the ranks they span (Demšar §3.2.2); values equal to :data:`TIE_DIGITS` significant digits are
  tied (two families with the same predictions then tie whatever order their sums were taken in).
  **Missing values**: a family with no value on a data set
  (it failed there) is ranked *last* on that data set, tied with the other families missing there;
  a family with no value on any data set is left out of the table (e.g. no probabilities, so no
  LPD) unless it failed on every one (then it is last on each), and a data set where no family has
  a value is left out. Ranking a failure last keeps every data set in the test (a family that
  cannot run on a data set has lost there) rather than dropping the data sets where any family
  failed.
- :func:`friedman`: the Friedman statistic χ²_F = 12N/(k(k+1)) [Σ_j R_j² − k(k+1)²/4] over the mean
  ranks R_j of k families on N data sets, divided by the tie correction 1 − Σ(t³ − t)/(N k (k² − 1))
  (as :func:`scipy.stats.friedmanchisquare`; 1 without ties), its p-value from χ²(k − 1), and the
  Iman–Davenport form F_F = (N − 1) χ²_F / (N(k − 1) − χ²_F) with its p-value from F(k − 1,
  (k − 1)(N − 1)). NaN with fewer than 2 families or 2 data sets.
- :func:`q_alpha` and :func:`critical_difference`: the Nemenyi test's q_α = the studentized range
  quantile (k means, infinite degrees of freedom) / √2, and CD = q_α √(k(k+1)/(6N)); two families
  differ significantly when their mean ranks differ by at least CD. q_0.05 for k = 2..10 agrees with
  Demšar's Table 5a within 0.001 (his table is rounded from older tables).
- :func:`cliques`: the maximal runs of families, in order of mean rank, whose ranks span less than
  CD — the bars of a critical-difference diagram.
- :func:`paired_bootstrap`: on one data set, each family's mean difference to the best family
  (highest mean) in a per-test-row measure, and a percentile interval from resampling the test rows
  with replacement — the same resampled rows for every family (paired). An interval excludes 0 when
  it lies beyond 0 by more than rounding (1e-9 relative to the best family's mean), so two families
  with the same values never differ.
"""

from __future__ import annotations

from typing import Mapping, NamedTuple

import numpy as np
import pandas as pd

from ..errors import ArgumentError, ShapeError

#: Values of a measure equal to this many significant digits are tied when ranked.
TIE_DIGITS = 10

__all__ = ["TIE_DIGITS", "FriedmanResult", "cliques", "critical_difference", "friedman", "paired_bootstrap", "q_alpha",
           "rank_table"]


def rank_table(values: pd.DataFrame, *, failed: pd.DataFrame | None = None,
               higher_is_better: bool = True) -> pd.DataFrame:
    """Each data set's ranks of the families (module docstring: ties, missing values).

    Parameters
    ----------
    values : pandas.DataFrame (N data sets, k families)
        One measure; NaN where a family has no value.
    failed : pandas.DataFrame (N, k) of bool, optional
        Where a family failed (default: nowhere); only a family that failed on every data set is
        ranked without any value.
    higher_is_better : bool
        Whether the largest value gets rank 1.

    Returns
    -------
    pandas.DataFrame (N', k')
        Ranks in [1, k'], each row summing to k'(k' + 1)/2; families with no value anywhere that did
        not fail everywhere, and data sets with no value at all, are left out.
    """
    from scipy.stats import rankdata

    table = values.astype(float)
    everywhere = pd.Series(False, index=table.columns)
    if failed is not None and len(table):
        everywhere = failed.reindex(index=table.index, columns=table.columns).fillna(False).astype(bool).all(axis=0)
    table = table.loc[:, table.notna().any(axis=0) | everywhere]
    table = table.loc[table.notna().any(axis=1)]
    rounded = np.array([[float(f"{v:.{TIE_DIGITS}g}") for v in row] for row in table.to_numpy()]).reshape(table.shape)
    signed = -rounded if higher_is_better else rounded
    ranks = rankdata(np.where(np.isnan(signed), np.inf, signed), method="average", axis=1)
    return pd.DataFrame(ranks.reshape(table.shape), index=table.index, columns=table.columns)


class FriedmanResult(NamedTuple):
    """What :func:`friedman` returns (NaN where it is not defined)."""

    families: int
    datasets: int
    chi2: float
    p_value: float
    iman_davenport: float
    iman_davenport_p: float


def friedman(ranks: pd.DataFrame) -> FriedmanResult:
    """The Friedman test and its Iman–Davenport form on a table of ranks.

    Parameters
    ----------
    ranks : pandas.DataFrame (N data sets, k families)
        As :func:`rank_table` returns (tied families share a mean rank).

    Returns
    -------
    FriedmanResult
    """
    from scipy.stats import chi2 as chi2_dist
    from scipy.stats import f as f_dist

    R = ranks.to_numpy(dtype=float)
    N, k = R.shape
    if N < 2 or k < 2:
        return FriedmanResult(k, N, np.nan, np.nan, np.nan, np.nan)
    ties = sum(float((c ** 3 - c).sum()) for c in (np.unique(row, return_counts=True)[1] for row in R))
    correction = 1.0 - ties / (N * k * (k * k - 1))
    if correction <= 0:  # every family tied on every data set
        return FriedmanResult(k, N, 0.0, 1.0, 0.0, 1.0)
    mean = R.mean(axis=0)
    chi2 = 12.0 * N / (k * (k + 1)) * (float((mean ** 2).sum()) - k * (k + 1) ** 2 / 4.0) / correction
    p = float(chi2_dist.sf(chi2, k - 1))
    denominator = N * (k - 1) - chi2
    if denominator <= 0:
        return FriedmanResult(k, N, chi2, p, np.inf, 0.0)
    F = (N - 1) * chi2 / denominator
    return FriedmanResult(k, N, chi2, p, F, float(f_dist.sf(F, k - 1, (k - 1) * (N - 1))))


def q_alpha(k: int, alpha: float = 0.05) -> float:
    """The Nemenyi test's critical value for ``k`` families at level ``alpha``: the (1 − α) quantile
    of the studentized range of k means with infinite degrees of freedom, divided by √2."""
    from scipy.stats import studentized_range

    if int(k) != k or k < 2:
        raise ArgumentError(f"the Nemenyi test needs k >= 2 families, got {k!r}")
    if not 0 < alpha < 1:
        raise ArgumentError(f"alpha must be in (0, 1), got {alpha!r}")
    return float(studentized_range.ppf(1.0 - alpha, int(k), np.inf) / np.sqrt(2.0))


def critical_difference(k: int, N: int, alpha: float = 0.05) -> float:
    """The Nemenyi critical difference of mean ranks, q_α √(k(k+1)/(6N)), for ``k`` families on ``N``
    data sets."""
    if int(N) != N or N < 1:
        raise ArgumentError(f"the critical difference needs N >= 1 data sets, got {N!r}")
    return q_alpha(k, alpha) * float(np.sqrt(k * (k + 1) / (6.0 * N)))


def cliques(mean_ranks: pd.Series, cd: float) -> list[list[str]]:
    """The groups of families not significantly different: maximal runs, in order of mean rank, of
    two or more families whose mean ranks span less than ``cd``.

    Parameters
    ----------
    mean_ranks : pandas.Series (k,)
        Family → mean rank.
    cd : float
        The critical difference.

    Returns
    -------
    list of list of str
        Each group's families, best first; groups in order of their best member; no group inside
        another.
    """
    ranked = mean_ranks.sort_values(kind="stable")
    names, r = list(ranked.index), ranked.to_numpy(dtype=float)
    groups, previous_end = [], -1
    for i in range(len(r)):
        end = i  # the last family within cd of family i; never decreases with i
        while end + 1 < len(r) and r[end + 1] - r[i] < cd:
            end += 1
        if end > i and end > previous_end:  # else the run lies inside the one before
            groups.append(names[i:end + 1])
        previous_end = end
    return groups


def paired_bootstrap(values: Mapping[str, np.ndarray], *, n_resamples: int = 1000, level: float = 0.95,
                     seed: int = 0) -> pd.DataFrame:
    """Each family's difference to the best family in a per-test-row measure, with a paired
    bootstrap interval over the test rows.

    Parameters
    ----------
    values : mapping of str to numpy.ndarray (N,)
        Family → each test row's value (higher is better), all of one length N ≥ 1.
    n_resamples : int
        Bootstrap resamples of the N rows (with replacement; the same rows for every family).
    level : float
        Coverage of the percentile interval.
    seed : int
        Seeds the resampling.

    Returns
    -------
    pandas.DataFrame
        One row per family, in the order given: ``family``, ``mean`` (its mean over the rows),
        ``best`` (the family with the highest mean; the first of tied ones), ``difference`` (its
        mean minus the best's, ≤ 0), ``low`` and ``high`` (the interval of the difference) and
        ``excludes_zero`` (the interval lies wholly below or above 0: larger than the test split's
        noise).
    """
    if not values:
        raise ArgumentError("paired_bootstrap needs at least one family")
    if int(n_resamples) != n_resamples or n_resamples < 1 or not 0 < level < 1:
        raise ArgumentError(f"n_resamples must be a whole number >= 1 and level in (0, 1); got {n_resamples!r}, "
                            f"{level!r}")
    names = list(values)
    V = np.stack([np.asarray(values[n], dtype=np.float64) for n in names]) if len(
        {np.shape(values[n]) for n in names}) == 1 else None
    if V is None or V.ndim != 2 or V.shape[1] == 0:
        raise ShapeError(f"paired_bootstrap needs (N,) arrays of one length N >= 1, got shapes "
                         f"{sorted({np.shape(values[n]) for n in names})}")
    means = V.mean(axis=1)
    best = int(np.argmax(means))
    D = V - V[best]  # (F, N): each row's difference to the best family
    N = D.shape[1]
    rng = np.random.default_rng(seed)
    resampled = np.empty((len(names), int(n_resamples)))
    chunk = max(1, 4_000_000 // (N * len(names)))
    for start in range(0, int(n_resamples), chunk):
        stop = min(int(n_resamples), start + chunk)
        idx = rng.integers(0, N, size=(stop - start, N))
        resampled[:, start:stop] = D[:, idx].mean(axis=2)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(resampled, [tail, 1.0 - tail], axis=1)
    rounding = 1e-9 * max(1.0, abs(float(means[best])))
    return pd.DataFrame({"family": names, "mean": means, "best": names[best], "difference": D.mean(axis=1),
                         "low": low, "high": high, "excludes_zero": (low > rounding) | (high < -rounding)})
