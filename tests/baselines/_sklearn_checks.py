"""scikit-learn's estimator checks for the estimators of mlgp.baselines, written once.

:func:`estimator_check_tests` returns the two tests a test module assigns to module-level names:

- ``test_sklearn_estimator_checks``: ``parametrize_with_checks`` over the estimators, with the
  listed checks as strict expected failures (a listed check that starts passing fails the test);
- ``test_skipped_checks_are_exactly_the_failing_ones``: ``check_estimator`` run in full on each
  (exhaustive) estimator, asserting that every listed check runs and fails and that no other
  check fails, so the list cannot go stale either way.
"""

from __future__ import annotations

import warnings
from typing import Callable

import pytest
from sklearn.utils.estimator_checks import check_estimator, parametrize_with_checks

__all__ = ["LABEL_MATRIX_EXPECTED", "SHARED_EXPECTED", "estimator_check_tests"]

#: Checks every estimator here fails, for one reason: added to each module's own list.
SHARED_EXPECTED = {
    "check_dtype_object": "wants a TypeError for an object X holding a dict; mlgp.validation raises "
                          "ShapeError (a ValueError), like for every other bad input",
}

#: Checks that every estimator fitted on a 0/1 label matrix only (no 1-D class targets) fails.
LABEL_MATRIX_EXPECTED = {
    "check_classifiers_classes": "fits a 1-D y of class labels; multi-label needs a 2-D 0/1 Y",
    "check_classifiers_train": "fits a 1-D binary y and expects 1-D predictions; multi-label predict returns (N, K)",
    "check_classifier_not_supporting_multiclass": "fits a 1-D multiclass y; every 1-D y is refused",
    "check_estimators_dtypes": "the target is the class labels {1, 2}, not 0/1 labels",
    "check_classifier_data_not_an_array": "the target is the class labels {1, 2}, not 0/1 labels",
    "check_fit2d_1feature": "the target is the class labels {1, 2}, not 0/1 labels",
    "check_decision_proba_consistency": "fits a 1-D binary y; multi-label needs a 2-D 0/1 Y",
    "check_estimator_sparse_matrix": "sparse X is fitted and predicted fine; the check then wants predict_proba of a "
                                     "one-column target to have shape (N, 2), a column per class, while multi-label "
                                     "predict_proba returns (N, K) presence probabilities",
    "check_estimator_sparse_array": "as check_estimator_sparse_matrix, with a csr_array",
}


def _failing_checks(estimator, expected: dict[str, str]) -> tuple[set, set]:
    """(checks that failed, checks that failed as expected) over all of scikit-learn's checks."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(estimator, on_fail=None, expected_failed_checks=expected)
    status: dict[str, set] = {}
    for r in results:
        status.setdefault(r["check_name"], set()).add(r["status"])
    return ({name for name, s in status.items() if "failed" in s},
            {name for name, s in status.items() if "xfail" in s})


def estimator_check_tests(estimators: list, expected: dict[str, str] | Callable[[object], dict[str, str]],
                          exhaustive: list | None = None, ids: list[str] | None = None) -> tuple:
    """The two check tests (module docstring) for ``estimators``.

    Parameters
    ----------
    estimators : list of estimators
        Instances given to ``parametrize_with_checks``.
    expected : dict or callable
        Check name → why it fails, or a function of the estimator returning that dict; the
        :data:`SHARED_EXPECTED` checks are added to it.
    exhaustive : list of estimators, optional
        Instances for the exhaustive test (default: ``estimators``).
    ids : list of str, optional
        Test ids of the exhaustive instances (default: their class names).
    """
    own = expected if callable(expected) else (lambda est: expected)

    def expected_for(est) -> dict[str, str]:
        return {**SHARED_EXPECTED, **own(est)}

    exhaustive = list(estimators if exhaustive is None else exhaustive)

    @parametrize_with_checks(list(estimators), expected_failed_checks=expected_for, xfail_strict=True)
    def test_sklearn_estimator_checks(estimator, check) -> None:
        check(estimator)

    @pytest.mark.parametrize("estimator", exhaustive, ids=ids or [type(e).__name__ for e in exhaustive])
    def test_skipped_checks_are_exactly_the_failing_ones(estimator) -> None:
        """Every listed check runs and fails, and no other check fails."""
        listed = expected_for(estimator)
        failed, xfailed = _failing_checks(estimator, listed)
        assert failed == set()
        assert xfailed == set(listed)

    return test_sklearn_estimator_checks, test_skipped_checks_are_exactly_the_failing_ones
