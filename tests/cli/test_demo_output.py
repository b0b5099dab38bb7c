"""``mlgp demo`` as a user sees it: its numbers against independent computations, and an output
free of TensorFlow's lines when run as a real process with standard output in a file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mlgp.data
from mlgp.cli import main


def _p_row(line: str) -> list[float]:
    """The three numbers of a printed 'P@1/3/5 = a, b, c' reference line."""
    text = line.split("= ")[1].split(" from")[0]
    return [float(v) for v in text.split(", ")]


def _precision(Y: np.ndarray, ranking: np.ndarray, k: int) -> float:
    return 100.0 * np.mean([Y[i, ranking[i, :k]].sum() / k for i in range(Y.shape[0])])


@pytest.mark.slow
def test_synthetic_demo_against_oracle_and_frequency(monkeypatch, capsys) -> None:
    monkeypatch.delenv("MLGP_DATA", raising=False)
    # the demo's synthetic settings (P=10, M=50, batch 200), 40 of its 100 epochs
    assert main(["demo", "--epochs", "40"]) == 0
    out = capsys.readouterr().out
    ds = mlgp.data.default_problem(seed=0)
    Y = ds.test.Y.toarray()

    # the frequency reference: labels ranked by training counts, ties to the lower index
    counts = np.asarray(ds.train.Y.sum(axis=0)).ravel()
    order = np.lexsort((np.arange(counts.size), -counts))
    freq = [_precision(Y, np.tile(order, (Y.shape[0], 1)), k) for k in (1, 3, 5)]
    line = next(l for l in out.splitlines() if "training frequency" in l)
    np.testing.assert_allclose(_p_row(line), freq, atol=0.006)

    # the oracle: the true utilities Φh + b of the test points
    e = ds.extras
    F = e["H"][ds.train.num_points:] @ e["Phi"].T + e["b"]
    oracle = [_precision(Y, np.argsort(-F, axis=1, kind="stable"), k) for k in (1, 3, 5)]
    line = next(l for l in out.splitlines() if "true utilities" in l)
    np.testing.assert_allclose(_p_row(line), oracle, atol=0.006)

    # the trained model lies between the two at every k
    model = next(l.split()[1:] for l in out.splitlines() if l.startswith("P "))
    model = [float(v) for v in model]
    for k in range(3):
        assert freq[k] < model[k] <= oracle[k] + 3.0, (freq, model, oracle)


_TF_LINES = ("I0000", "W0000", "E0000", "absl::InitializeLog", "cuInit", "cuda", "oneDNN",
             "cpu_feature_guard", "rebuild TensorFlow", "DT_DOUBLE", "retracing")


@pytest.mark.slow
def test_demo_process_prints_no_tensorflow_lines(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("MLGP_DATA", "TF_CPP_MIN_LOG_LEVEL")}
    out_file = tmp_path / "out.txt"
    with open(out_file, "w") as out:
        proc = subprocess.run([sys.executable, "-m", "mlgp.cli", "demo", "--quick", "--epochs", "2"],
                              stdout=out, stderr=subprocess.PIPE, text=True, env=env, timeout=300)
    text = out_file.read_text()
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "", proc.stderr
    for marker in _TF_LINES:
        assert marker not in text, marker
    assert [l.split(":")[0] for l in text.splitlines() if l.startswith("epoch ")] == ["epoch 1/2", "epoch 2/2"]
    assert "test metrics" in text


def test_verbose_gives_tensorflow_its_own_logging_for_the_command(monkeypatch, capsys) -> None:
    """``--verbose`` (before or after the subcommand) sets ``TF_CPP_MIN_LOG_LEVEL=0`` for the
    command's duration, which :mod:`mlgp.quiet` takes as the user's choice, and restores it."""
    import mlgp.cli.demo as demo
    from mlgp.quiet import LEVEL, user_chose

    seen = []
    monkeypatch.setattr(demo, "run", lambda args: seen.append((os.environ.get(LEVEL), user_chose())))
    monkeypatch.delenv(LEVEL, raising=False)
    assert main(["demo"]) == 0 and main(["--verbose", "demo"]) == 0 and main(["demo", "--verbose"]) == 0
    assert seen == [(None, False), ("0", True), ("0", True)]
    assert LEVEL not in os.environ
    monkeypatch.setenv(LEVEL, "3")  # the user's own level is kept
    assert main(["--verbose", "demo"]) == 0 and seen[-1] == ("3", True) and os.environ[LEVEL] == "3"


def test_verbose_flag_before_or_after_the_subcommand() -> None:
    from mlgp.cli import build_parser

    parser = build_parser()
    assert parser.parse_args(["--verbose", "demo"]).verbose is True
    assert parser.parse_args(["demo", "--verbose"]).verbose is True
    assert parser.parse_args(["demo"]).verbose is False
