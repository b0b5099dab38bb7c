"""The statistics over many data sets (:mod:`mlgp.comparison.ranks`) against hand computations,
SciPy's Friedman test and the values printed in Demšar (2006), and the paired bootstrap on cases
with a known answer."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import friedmanchisquare

from mlgp.comparison.ranks import (cliques, critical_difference, friedman, paired_bootstrap, q_alpha,
                                   rank_table)
from mlgp.errors import ArgumentError, ShapeError

#: Demšar (2006), Table 5(a): q_0.05 of the Nemenyi test for k = 2..10 families.
DEMSAR_Q05 = [1.960, 2.343, 2.569, 2.728, 2.850, 2.949, 3.031, 3.102, 3.164]


def test_ranks_with_ties_by_hand() -> None:
    values = pd.DataFrame({"a": [0.9, 0.5, 0.7], "b": [0.8, 0.5, 0.7], "c": [0.8, 0.6, 0.1]},
                          index=["d1", "d2", "d3"])
    ranks = rank_table(values)
    expected = pd.DataFrame({"a": [1.0, 2.5, 1.5], "b": [2.5, 2.5, 1.5], "c": [2.5, 1.0, 3.0]}, index=values.index)
    pd.testing.assert_frame_equal(ranks, expected)
    pd.testing.assert_series_equal(ranks.mean(), pd.Series({"a": 5 / 3, "b": 6.5 / 3, "c": 6.5 / 3}))
    lower = rank_table(values, higher_is_better=False)  # the smallest value best: the ranks reversed
    pd.testing.assert_frame_equal(lower, 4.0 - expected)


def test_values_equal_to_rounding_tie() -> None:
    values = pd.DataFrame({"a": [-5.391205 + 1e-15], "b": [-5.391205], "c": [-6.0]})
    assert rank_table(values).iloc[0].tolist() == [1.5, 1.5, 3.0]


def test_a_missing_value_ranks_last_and_a_family_without_values_is_left_out() -> None:
    nan = np.nan
    values = pd.DataFrame({"a": [0.9, nan, 0.2], "b": [0.1, nan, nan], "c": [0.5, 0.3, nan], "none": [nan] * 3},
                          index=["d1", "d2", "d3"])
    ranks = rank_table(values)
    assert list(ranks.columns) == ["a", "b", "c"]  # "none" has no value anywhere
    assert ranks.loc["d1"].tolist() == [1.0, 3.0, 2.0]
    assert ranks.loc["d2"].tolist() == [2.5, 2.5, 1.0]  # the two that failed share the last places
    assert ranks.loc["d3"].tolist() == [1.0, 2.5, 2.5]
    every_family_failed = pd.DataFrame({"a": [0.5, nan], "b": [0.4, nan]}, index=["d1", "d2"])
    assert list(rank_table(every_family_failed).index) == ["d1"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_friedman_equals_scipy_on_random_data(seed) -> None:
    rng = np.random.default_rng(seed)
    values = rng.random((12, 4 + seed))
    result = friedman(rank_table(pd.DataFrame(values)))
    reference = friedmanchisquare(*values.T)
    assert result.chi2 == pytest.approx(reference.statistic, rel=1e-12)
    assert result.p_value == pytest.approx(reference.pvalue, rel=1e-9)
    N, k = values.shape
    assert (result.datasets, result.families) == (N, k)
    F = (N - 1) * result.chi2 / (N * (k - 1) - result.chi2)  # Demšar's equation for F_F
    assert result.iman_davenport == pytest.approx(F, rel=1e-12)
    from scipy.stats import f

    assert result.iman_davenport_p == pytest.approx(f.sf(F, k - 1, (k - 1) * (N - 1)), rel=1e-9)


def test_friedman_with_ties_equals_scipy() -> None:
    """SciPy corrects χ² for ties; so does :func:`friedman`."""
    rng = np.random.default_rng(7)
    values = rng.integers(0, 3, size=(10, 5)).astype(float)
    result = friedman(rank_table(pd.DataFrame(values), higher_is_better=False))
    assert result.chi2 == pytest.approx(friedmanchisquare(*values.T).statistic, rel=1e-12)


def test_friedman_is_nan_for_one_data_set_and_zero_when_everything_ties() -> None:
    assert np.isnan(friedman(pd.DataFrame([[1.0, 2.0, 3.0]])).chi2)
    tied = friedman(pd.DataFrame([[1.5, 1.5], [1.5, 1.5]]))
    assert (tied.chi2, tied.p_value) == (0.0, 1.0)
    agreed = friedman(pd.DataFrame([[1.0, 2.0], [1.0, 2.0], [1.0, 2.0]]))  # perfect agreement: F_F infinite
    assert agreed.iman_davenport == np.inf and agreed.iman_davenport_p == 0.0


def test_q_alpha_agrees_with_demsar_table_5() -> None:
    computed = [q_alpha(k) for k in range(2, 11)]
    np.testing.assert_allclose(computed, DEMSAR_Q05, atol=1e-3, rtol=0)
    assert q_alpha(2) == pytest.approx(1.959964, abs=1e-6)  # k = 2: the normal quantile, 1.96


def test_critical_difference_of_demsars_example() -> None:
    """Demšar §3.2.2: four algorithms on 14 data sets, CD = 2.569 √(4·5/(6·14)) = 1.25."""
    assert critical_difference(4, 14) == pytest.approx(1.25, abs=5e-3)
    assert critical_difference(4, 14) == pytest.approx(q_alpha(4) * np.sqrt(20 / 84), rel=1e-12)
    with pytest.raises(ArgumentError, match=r"^the Nemenyi test needs k >= 2 families, got 1$"):
        critical_difference(1, 14)
    with pytest.raises(ArgumentError, match=r"^the critical difference needs N >= 1 data sets, got 0$"):
        critical_difference(3, 0)


def test_cliques_join_families_closer_than_cd() -> None:
    ranks = pd.Series({"e": 4.0, "a": 1.0, "b": 1.5, "c": 2.4, "d": 3.9})
    assert cliques(ranks, 1.0) == [["a", "b"], ["b", "c"], ["d", "e"]]
    assert cliques(ranks, 0.3) == [["d", "e"]]
    assert cliques(ranks, 10.0) == [["a", "b", "c", "d", "e"]]
    assert cliques(pd.Series({"a": 1.0, "b": 2.0}), 1.0) == []  # a difference of exactly CD is significant


def test_the_bootstrap_of_identical_families_contains_zero() -> None:
    rng = np.random.default_rng(0)
    rows = rng.random(200)
    table = paired_bootstrap({"a": rows, "b": rows.copy()}, n_resamples=300, seed=1).set_index("family")
    assert (table["difference"] == 0).all() and not table["excludes_zero"].any()
    assert (table["low"] <= 0).all() and (table["high"] >= 0).all()


def test_differences_of_rounding_are_not_beyond_the_noise() -> None:
    """The same values summed in another order differ in the last bits, all of one sign."""
    rows = np.random.default_rng(0).random(100) - 5.0
    table = paired_bootstrap({"a": rows, "b": rows * (1 + 1e-14)}, n_resamples=200).set_index("family")
    assert table.loc["b", "high"] < 0  # every row's difference of one sign: the interval lies below 0 ...
    assert not table["excludes_zero"].any()  # ... by rounding only, which is not a difference


def test_a_family_worse_on_every_row_is_beyond_the_noise() -> None:
    rng = np.random.default_rng(0)
    good = rng.random(50)
    table = paired_bootstrap({"worse": good - 0.01 - 0.02 * rng.random(50), "good": good, "noisy": rng.random(50)},
                             n_resamples=500, seed=3).set_index("family")
    assert (table["best"] == "good").all()
    assert table.loc["worse", "excludes_zero"] and table.loc["worse", "high"] < 0
    assert table.loc["worse", "low"] <= table.loc["worse", "difference"] <= table.loc["worse", "high"]
    assert table.loc["good", ["difference", "low", "high"]].tolist() == [0.0, 0.0, 0.0]
    assert not table.loc["good", "excludes_zero"]


def test_the_bootstrap_is_seeded_and_its_interval_is_the_percentile_one() -> None:
    rng = np.random.default_rng(5)
    values = {"a": rng.random(40), "b": rng.random(40)}
    first = paired_bootstrap(values, n_resamples=200, seed=4)
    pd.testing.assert_frame_equal(first, paired_bootstrap(values, n_resamples=200, seed=4))
    assert not first.equals(paired_bootstrap(values, n_resamples=200, seed=5))
    best = first["best"].iloc[0]
    other = "b" if best == "a" else "a"
    d = values[other] - values[best]
    idx = np.random.default_rng(4).integers(0, 40, size=(200, 40))
    low, high = np.quantile(d[idx].mean(axis=1), [0.025, 0.975])
    row = first.set_index("family").loc[other]
    assert (row["low"], row["high"]) == pytest.approx((low, high), rel=1e-12)


def test_the_bootstrap_needs_rows_of_one_length() -> None:
    with pytest.raises(ShapeError, match=r"^paired_bootstrap needs \(N,\) arrays of one length N >= 1, got shapes"):
        paired_bootstrap({"a": np.zeros(3), "b": np.zeros(4)})
    with pytest.raises(ArgumentError, match=r"^paired_bootstrap needs at least one family$"):
        paired_bootstrap({})
    with pytest.raises(ArgumentError, match=r"^n_resamples must be a whole number >= 1 and level in \(0, 1\); got 0,"):
        paired_bootstrap({"a": np.zeros(3)}, n_resamples=0)


def test_a_family_that_failed_everywhere_ranks_last_everywhere() -> None:
    """Without a value anywhere a family is left out — unless it failed on every data set."""
    nan = np.nan
    values = pd.DataFrame({"a": [0.9, 0.2], "b": [0.5, 0.3], "gone": [nan, nan], "no_proba": [nan, nan]},
                          index=["d1", "d2"])
    failed = pd.DataFrame({"a": [False, False], "b": [False, False], "gone": [True, True],
                           "no_proba": [True, False]}, index=["d1", "d2"])
    ranks = rank_table(values, failed=failed)
    assert list(ranks.columns) == ["a", "b", "gone"]
    assert ranks["gone"].tolist() == [3.0, 3.0] and ranks["a"].tolist() == [1.0, 2.0]
    assert list(rank_table(values).columns) == ["a", "b"]
