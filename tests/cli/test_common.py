"""``mlgp.cli.common``: negative option values joined to their option, the metric table's text."""

from __future__ import annotations

import pandas as pd
import pytest

from mlgp.cli import build_parser
from mlgp.cli.common import VALUE_OPTIONS, format_metrics, join_negative_values


@pytest.fixture(scope="module", autouse=True)
def value_options() -> None:
    build_parser()  # records the options that take a value
    assert {"--budget", "--seed", "--out"} <= VALUE_OPTIONS and "--in-process" not in VALUE_OPTIONS


@pytest.mark.parametrize("argv, joined", [
    (["--budget", "-1"], ["--budget=-1"]),
    (["--budget", "-.5"], ["--budget=-.5"]),
    (["compare", "--in-process", "--budget", "-2", "--seed", "-3"], ["compare", "--in-process", "--budget=-2", "--seed=-3"]),
    (["--budget", "--verbose"], ["--budget", "--verbose"]),  # an option, not a value
    (["--seed", "-a"], ["--seed", "-a"]),
    (["--out", "-"], ["--out", "-"]),  # a lone minus sign is left to argparse
    (["--in-process", "-1"], ["--in-process", "-1"]),  # a flag takes no value
    (["-1", "--budget"], ["-1", "--budget"]),
])
def test_negative_values_are_joined_to_their_option(argv, joined) -> None:
    given = list(argv)
    assert join_negative_values(argv) == joined
    assert argv == given  # the caller's list is left alone


def test_metric_tables_are_shown_in_percent() -> None:
    fractions = pd.DataFrame({1: [0.5, 0.25], 3: [0.125, 1.0]}, index=["P", "nDCG"])
    text = format_metrics(fractions)
    assert text.splitlines() == ["              @1     @3", "metric (%)             ", "P          50.00  12.50",
                                 "nDCG       25.00 100.00"]
    percent = fractions * 100
    percent.attrs["percent"] = True  # already in percent: shown as given
    assert format_metrics(percent) == text
