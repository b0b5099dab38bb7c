"""Smoke test: every experiment script runs end to end in its ``--quick`` mode."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p for p in (REPO / "experiments").glob("*.py") if not p.name.startswith("_"))


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_quick_mode_runs(script: Path, data_home: Path, tmp_path: Path) -> None:
    env = dict(os.environ, MLGP_DATA=str(data_home), MLGP_RESULTS=str(tmp_path))
    proc = subprocess.run(
        [sys.executable, str(script), "--quick"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, f"{script.name} --quick failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"


def test_bench_configs_option_parses_pairs_and_rejects_the_rest() -> None:
    import argparse
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_mlgpf", REPO / "experiments" / "bench_mlgpf.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.parse_configs("159:400,30:100") == [(159, 400), (30, 100)]
    for bad in ("159", "159:x", "0:400", "159:400:2", ""):
        with pytest.raises(argparse.ArgumentTypeError):
            bench.parse_configs(bad)
