"""The command-line pieces the experiment scripts share: :func:`mlgp.experiment.choice_list`, the
LSPC scripts' options (:mod:`mlgp.experiment.lspc`) and the FastXML table scripts' parser
(:func:`mlgp.experiment.fastxml.parse_table_args`)."""

from __future__ import annotations

import argparse

import pytest

from mlgp.experiment import choice_list
from mlgp.experiment.fastxml import parse_table_args
from mlgp.experiment.lspc import LSPC_METHODS, add_run_options, method_list, params_text


def _error(call, capsys) -> str:
    """What ``parser.error`` printed (its last line) for ``call()``, which must exit with status 2."""
    with pytest.raises(SystemExit, match="^2$"):
        call()
    return capsys.readouterr().err.strip().splitlines()[-1]


def test_choice_list_keeps_the_order_and_drops_blanks() -> None:
    parser = argparse.ArgumentParser(prog="p")
    assert choice_list(parser, " b,,a ,b", ("a", "b", "c"), "variant") == ["b", "a", "b"]


def test_choice_list_names_the_unknown_and_refuses_none(capsys) -> None:
    parser = argparse.ArgumentParser(prog="p")
    message = _error(lambda: choice_list(parser, "a,x,y", ("a", "b"), "variant"), capsys)
    assert message == "p: error: unknown variant(s) ['x', 'y']; choose from a, b"
    assert _error(lambda: choice_list(parser, " , ", ("a", "b"), "method"), capsys) == "p: error: no method given"


def test_the_lspc_scripts_options(capsys) -> None:
    parser = argparse.ArgumentParser(prog="p")
    add_run_options(parser, "runs.csv")
    args = parser.parse_args([])
    assert (args.methods, args.fresh, args.threads) == (",".join(LSPC_METHODS), False, None)
    assert method_list(parser, args.methods) == list(LSPC_METHODS)
    args = parser.parse_args(["--methods", "ML-kNN", "--fresh", "--threads", "2"])
    assert (method_list(parser, args.methods), args.fresh, args.threads) == (["ML-kNN"], True, 2)
    assert "runs.csv" in parser.format_help()
    assert "unknown method(s) ['SVM']" in _error(lambda: method_list(parser, "LSPC,SVM"), capsys)


def test_params_text() -> None:
    assert params_text({"b": 0.123456, "a": 3, "c": "x"}) == "a=3; b=0.1235; c=x"
    assert params_text({}) == ""


def test_parse_table_args(capsys) -> None:
    args = parse_table_args([], "d", "bibtex,delicious")
    assert (args.datasets, args.trees, args.n_jobs, args.fresh) == (["bibtex", "delicious"], 50, 2, False)
    args = parse_table_args(["--quick", "--fresh"], "d", "bibtex,delicious")
    assert (args.datasets, args.trees, args.n_jobs, args.fresh) == (["enron"], 3, 1, True)
    args = parse_table_args(["--datasets", "enron,bibtex", "--trees", "7", "--n-jobs", "-1"], "d", "bibtex")
    assert (args.datasets, args.trees, args.n_jobs) == (["enron", "bibtex"], 7, -1)
    assert "--trees must be >= 1" in _error(lambda: parse_table_args(["--trees", "0"], "d", "bibtex"), capsys)


def test_dataset_and_method_options() -> None:
    """``--datasets`` and the repeatable ``--method`` (a name may hold a comma), their defaults, and
    an unknown method refused by argparse."""
    from mlgp.experiment import parse_dataset_method_args

    methods = {"a": {}, "b, with a comma": {}, "c": {}}
    args = parse_dataset_method_args("d", ("x", "y"), methods, [])
    assert args.datasets == "x,y" and args.methods == ["a", "b, with a comma", "c"] and not args.fresh
    args = parse_dataset_method_args("d", ("x",), methods, ["--method", "c", "--method", "b, with a comma", "--fresh",
                                                             "--datasets", "z", "--quick"])
    assert args.methods == ["c", "b, with a comma"] and args.datasets == "z" and args.fresh and args.quick
    assert parse_dataset_method_args("d", ("x",), methods, [], default_methods=["c"]).methods == ["c"]
    with pytest.raises(SystemExit):
        parse_dataset_method_args("d", ("x",), methods, ["--method", "e"])
