"""Fixtures shared by the estimator tests of mlgp.baselines."""

from __future__ import annotations

import warnings

import pytest


@pytest.fixture
def assert_failing_checks_are():
    """``f(estimator, expected)``: run scikit-learn's ``check_estimator`` with the checks in
    ``expected`` (name → reason) marked as expected failures, and assert that every listed check
    runs and fails and that no other check fails (so the list cannot go stale either way)."""
    from sklearn.utils.estimator_checks import check_estimator

    def check(estimator, expected: dict[str, str]) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results = check_estimator(estimator, on_fail=None, expected_failed_checks=expected)
        status: dict[str, set] = {}
        for r in results:
            status.setdefault(r["check_name"], set()).add(r["status"])
        assert {name for name, s in status.items() if "failed" in s} == set()
        assert {name for name, s in status.items() if "xfail" in s} == set(expected)

    return check
