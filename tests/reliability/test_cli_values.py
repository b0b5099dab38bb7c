"""The command line checks each value with the package's own check, in one ``mlgp: error:`` line.

Negative values after an option reach that option's check (argparse alone reads ``-1,2`` as an
option), non-finite numbers are refused where the option is parsed, and file errors are one line
with exit status 2, never a traceback.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from mlgp.cli import build_parser, main
from mlgp.cli.common import join_negative_values

EVALUATE = ["evaluate", "scores.npy", "--dataset", "emotions"]

VALUE_CASES = {
    "propensity -1,2": (EVALUATE + ["--propensity", "-1,2"], r"argument --propensity: expected finite A > 0 and B ≥ 0, got '-1,2'"),
    "propensity -0.5,1": (EVALUATE + ["--propensity", "-0.5,1"], r"argument --propensity: expected finite A > 0"),
    "propensity 1,-2": (EVALUATE + ["--propensity", "1,-2"], r"argument --propensity: expected finite A > 0"),
    "propensity inf,1": (EVALUATE + ["--propensity", "inf,1"], r"argument --propensity: expected finite A > 0"),
    "k -1": (EVALUATE + ["--k", "-1"], r"argument --k: expected positive integers, got '-1'"),
    "k -1,3": (EVALUATE + ["--k", "-1,3"], r"argument --k: expected positive integers, got '-1,3'"),
    "learning-rate inf": (["demo", "--learning-rate", "inf"], r"argument --learning-rate: expected a positive number, got 'inf'"),
    "learning-rate nan": (["demo", "--learning-rate", "nan"], r"argument --learning-rate: expected a positive number, got 'nan'"),
    "learning-rate -1": (["demo", "--learning-rate", "-1"], r"argument --learning-rate: expected a positive number, got '-1'"),
    "learning-rate -1e-3": (["demo", "--learning-rate", "-1e-3"], r"argument --learning-rate: expected a positive number"),
    "learning-rate 1e999": (["demo", "--learning-rate", "1e999"], r"argument --learning-rate: expected a positive number"),
    "seed -3": (["demo", "--seed", "-3"], r"argument --seed: expected an integer from 0 to 2147483647, got '-3'"),
    "seed 2**31": (["demo", "--seed", str(2**31)], r"argument --seed: expected an integer from 0 to 2147483647"),
    "epochs -2": (["demo", "--epochs", "-2"], r"argument --epochs: expected a positive integer, got '-2'"),
    "negatives -1": (["demo", "--negatives", "-1"], r"argument --negatives: expected a positive integer, got '-1'"),
}


@pytest.mark.parametrize("case", VALUE_CASES)
def test_a_bad_value_is_one_error_line_naming_the_option(case, capsys):
    argv, message = VALUE_CASES[case]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("mlgp: error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert re.search(message, lines[0]), lines[0]


def test_only_options_that_take_a_value_take_a_negative_one():
    build_parser()  # building the parser records the options that take a value
    assert join_negative_values(["evaluate", "--k", "-1", "x"]) == ["evaluate", "--k=-1", "x"]
    assert join_negative_values(["--verbose", "-1"]) == ["--verbose", "-1"]  # a flag takes no value
    assert join_negative_values(["demo", "--seed", "5"]) == ["demo", "--seed", "5"]
    assert join_negative_values(["demo", "--seed", "-x"]) == ["demo", "--seed", "-x"]  # not a number


def test_a_csv_that_cannot_be_written_is_one_error_line(monkeypatch, data_home, tmp_path, capsys):
    import mlgp.data

    monkeypatch.setenv("MLGP_DATA", str(data_home))
    Y = mlgp.data.load("emotions", data_home).test.Y
    np.save(tmp_path / "s.npy", np.random.default_rng(0).random(Y.shape))
    target = tmp_path / "out"
    target.mkdir()
    assert main(["evaluate", str(tmp_path / "s.npy"), "--dataset", "emotions", "--csv", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mlgp: error: --csv") and "is a folder" in err and "Traceback" not in err
