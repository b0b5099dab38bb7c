"""The experiment scripts' MLGPF options (:mod:`mlgp.experiment.mlgpf_options`): generated from the
recipe's settings, the paper's form by default, ``--help`` showing what a run uses, and the
deprecated ``--whiten``."""

from __future__ import annotations

import argparse

import pytest

from mlgp.errors import ArgumentError
from mlgp.experiment import QUICK_SIZES, add_training_args, training_options
from mlgp.experiment.mlgpf_options import QUICK_BATCH_SIZE, SCRIPT_OPTIONS
from mlgp.recipes import PAPER_FORM, QUICK_SETTINGS, MLGPFSettings


def _parser(**kw) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="script")
    parser.add_argument("--quick", action="store_true")
    return add_training_args(parser, **kw)


def test_defaults_are_the_recipe_in_the_paper_form():
    opts = training_options(_parser().parse_args([]))
    expected = MLGPFSettings().replace(**PAPER_FORM, epochs=30)
    for name in SCRIPT_OPTIONS:
        assert opts[name] == getattr(expected, name), name
    assert opts["validate"] is False and "whiten" not in opts
    assert opts["covariance_warmup"] == 0  # the paper's scripts train every factor from the first step
    # the options are train_mlgpf's keywords, and pass its checks
    MLGPFSettings(**{k: v for k, v in opts.items() if k != "validate"})


def test_quick_mode_and_the_scripts_own_epochs():
    opts = training_options(_parser(epochs=50, quick_epochs=2).parse_args(["--quick"]))
    assert opts["epochs"] == 2 and opts["batch_size"] == QUICK_BATCH_SIZE
    assert {k: opts[k] for k in QUICK_SIZES} == QUICK_SIZES
    assert QUICK_SIZES == {k: v for k, v in QUICK_SETTINGS.items() if k != "epochs"}
    assert training_options(_parser(epochs=50).parse_args([]))["epochs"] == 50
    # the older spelling, epochs passed to training_options, still works
    assert training_options(_parser().parse_args(["--quick"]), quick_epochs=3)["epochs"] == 3
    assert training_options(_parser().parse_args(["--epochs", "7", "--quick"]))["epochs"] == 7


def test_help_shows_the_values_a_run_uses():
    text = " ".join(_parser(epochs=50, quick_epochs=2).format_help().split())
    full = training_options(_parser(epochs=50, quick_epochs=2).parse_args([]))
    quick = training_options(_parser(epochs=50, quick_epochs=2).parse_args(["--quick"]))
    assert f"(default: {full['epochs']}; {quick['epochs']} with --quick)" in text
    assert f"(default: {full['batch_size']}; {quick['batch_size']} with --quick)" in text
    assert f"(default: {PAPER_FORM['q_family']})" in text and f"(default: {PAPER_FORM['dtype']})" in text


@pytest.mark.parametrize("option", ["--q-family", "--optimizer", "--dtype", "--bias-init"])
def test_a_bad_choice_is_a_usage_error_naming_the_choices(option, capsys):
    with pytest.raises(SystemExit, match="2"):
        _parser().parse_args([option, "nonsense"])
    err = capsys.readouterr().err
    assert f"argument {option}: invalid choice: 'nonsense' (choose from" in err


def test_whiten_warns_and_means_the_whitened_family():
    with pytest.warns(FutureWarning, match="--whiten is deprecated; use --q-family whitened"):
        old = training_options(_parser().parse_args(["--whiten"]))
    assert old == training_options(_parser().parse_args(["--q-family", "whitened"]))
    with pytest.warns(FutureWarning, match="deprecated"), pytest.raises(ArgumentError, match="--whiten asks for the whitened family"):
        training_options(_parser().parse_args(["--whiten", "--q-family", "cholesky"]))


def test_covariance_warmup_option_parses_all_auto_and_steps_and_refuses_the_rest(capsys):
    for text, value in (("all", "all"), ("auto", "auto"), ("40", 40)):
        assert training_options(_parser().parse_args(["--covariance-warmup", text]))["covariance_warmup"] == value
    with pytest.raises(SystemExit, match="2"):
        _parser().parse_args(["--covariance-warmup", "most"])
    assert "covariance_warmup must be 'auto', 'all' or a whole number of steps ≥ 0; got 'most'" in capsys.readouterr().err
