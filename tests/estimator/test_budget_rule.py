"""One rule of a time budget: every place a budget enters — :class:`~mlgp.estimator.budget.Budget`
(``train_mlgpf``, ``mlgp.training.fit``), the ``max_seconds`` constraint of every family
(:data:`~mlgp.estimator.budget.MAX_SECONDS`), the ``budget`` of
:func:`mlgp.families.make_estimator` (``mlgp.compare``, ``mlgp fit`` / ``compare`` / ``params``) and
the ``--budget`` option's text — accepts and refuses the same values: ``None`` and finite reals
> 0; not inf, NaN, 0, negatives, booleans or non-numbers."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from mlgp.errors import ArgumentError, MLGPError

#: value → whether it is a budget (the documented rule)
RULE = [(None, True), (1, True), (0.5, True), (1e-9, True), (1e300, True), (np.float64(2.5), True),
        (np.float32(0.25), True), (np.int64(3), True), (Fraction(1, 3), True),
        (math.inf, False), (-math.inf, False), (math.nan, False), (0, False), (0.0, False), (-0.0, False),
        (-1, False), (True, False), (False, False), (np.bool_(True), False), ("5", False), (10**400, False),
        (complex(1, 0), False), ([3], False)]


def _budget(value) -> bool:
    from mlgp.estimator.budget import Budget

    try:
        Budget(value)
    except ArgumentError:
        return False
    return True


def _constraint(value) -> bool:
    from mlgp.baselines import LSPC

    try:
        LSPC(max_seconds=value)._validate_params()
    except (MLGPError, ValueError, TypeError):
        return False
    return True


def _make_estimator(value) -> bool:
    from mlgp.families import make_estimator

    try:
        estimator = make_estimator("lspc", budget=value)
    except ArgumentError:
        return False
    return value is None or estimator.max_seconds == float(value)


ENTRIES = {"Budget": _budget, "max_seconds constraint": _constraint, "make_estimator budget": _make_estimator}


@pytest.mark.parametrize("value, expected", RULE, ids=[repr(v)[:12] for v, _ in RULE])
def test_every_budget_entry_gives_the_rules_answer(value, expected) -> None:
    verdicts = {name: entry(value) for name, entry in ENTRIES.items()}
    assert verdicts == {name: expected for name in ENTRIES}


@pytest.mark.parametrize("text", ["5", "0.5", "1e300", "inf", "-inf", "nan", "0", "-0", "-1", "1e400"])
def test_the_budget_option_text_gets_the_rules_answer(text) -> None:
    """``--budget TEXT``: the option turns the text into a float, :func:`make_estimator` judges it."""
    from mlgp.cli.common import seconds

    value = seconds(text)
    expected = 0 < value < math.inf
    assert _make_estimator(value) is expected and _budget(value) is expected and _constraint(value) is expected


def test_the_rule_is_one_predicate() -> None:
    from mlgp.arguments import is_seconds, max_seconds

    assert [is_seconds(v) for v, _ in RULE] == [ok for _, ok in RULE]
    assert max_seconds(None) is None and max_seconds(np.int64(3)) == 3.0 and type(max_seconds(np.int64(3))) is float
    with pytest.raises(ArgumentError, match=r"^budget must be a positive number \(finite seconds\) or None, got inf$"):
        max_seconds(math.inf, "budget")
