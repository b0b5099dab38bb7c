"""``mlgp.cli.main`` itself: the commands that need no TensorFlow do not import it, the subcommand
found past the command's own options, and the exit status of an interrupted command."""

from __future__ import annotations

import subprocess
import sys

import pytest

import mlgp.cli
from mlgp.cli import main


#: imports, then commands, run in a fresh process that must not import TensorFlow: the light
#: parts of the package and the commands of the families that need none (argument errors included)
_NO_TENSORFLOW = """
import sys, contextlib, io
import mlgp, mlgp.cli, mlgp.data, mlgp.metrics, mlgp.scores, mlgp.families, mlgp.baselines, mlgp.geneml
from mlgp.cli import main as run


def main(argv):
    try:
        return run(argv)
    except SystemExit as exc:  # argparse's usage errors
        return exc.code


with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    codes = [main(["params", "mllspc"]),
             main(["fit", "mllspc", "--dataset", "nowhere", "--out", "m.npz", "--data-home", "."]),
             main(["compare", "--dataset", "x", "--models", "nosuch"])]
    light = "numba" not in sys.modules and "mlgp.baselines.fastxml" not in sys.modules  # one family, not all
    codes += [main(["params", "fastxml"]), main(["fit", "fastxml", "--budget", "-5"])]
print(codes, light, "tensorflow" in sys.modules)
"""


def test_commands_that_need_no_tensorflow_do_not_import_it(tmp_path) -> None:
    proc = subprocess.run([sys.executable, "-c", _NO_TENSORFLOW], capture_output=True, text=True, cwd=tmp_path,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["[0,", "2,", "2,", "0,", "2]", "True", "False"], proc.stdout


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
