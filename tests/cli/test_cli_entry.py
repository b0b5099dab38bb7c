"""``mlgp.cli.main`` itself: which commands quiet TensorFlow's start-up lines (those that may import
it, unless ``--verbose``), the subcommand found past the command's own options, and the exit
status of an interrupted command."""

from __future__ import annotations

import pytest

import mlgp.cli
import mlgp.cli.quiet
from mlgp.cli import main


@pytest.fixture
def quieted(monkeypatch) -> list:
    """Each call of ``quiet_tensorflow`` (replaced: nothing is quieted)."""
    calls: list = []
    monkeypatch.setattr(mlgp.cli.quiet, "quiet_tensorflow", lambda: calls.append(1))
    return calls


@pytest.mark.parametrize("argv, quiet", [(["params", "lspc"], True), (["--verbose", "params", "lspc"], False),
                                         (["datasets", "--data-home", "."], False)])
def test_tensorflow_is_quieted_for_the_commands_that_may_import_it(quieted, capsys, argv, quiet) -> None:
    assert main(argv) == 0
    assert quieted == ([1] if quiet else [])


def test_the_subcommand_is_the_first_word_that_is_not_an_option() -> None:
    assert mlgp.cli._command(["--verbose", "fit", "lspc", "--set", "a=1"]) == "fit"
    assert mlgp.cli._command(["-h"]) is None and mlgp.cli._command([]) is None


def test_an_interrupted_command_exits_130(monkeypatch, capsys) -> None:
    import mlgp.cli.params as params

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(params, "run", interrupted)
    assert main(["params", "lspc"]) == 130
    assert capsys.readouterr().err.strip() == "mlgp: interrupted"
