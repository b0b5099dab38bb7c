"""Fuzz of every saved model: corrupted copies of the files of each estimator class of mlgp.baselines
and of a small MLGPF are refused with a DataFormatError naming the path, or load and score finitely.

The cases (:mod:`_fuzz_mutations`: byte flips, truncations and insertions of whole files; valid zips
with a changed byte in a member; one changed array element, dtype or shape, a dropped, added or
renamed array, an edited header entry or parameter) run in two worker processes
(``_fuzz_saved_worker.py``, estimators and MLGPF side by side), so that a crash or a hang fails this
test, naming the case, instead of taking the test session down. Seeded: the same cases every run;
the estimators' cases make every kind of mutation (:data:`_fuzz_mutations.KINDS`) several times.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from _fuzz_mutations import KINDS

WORKER = Path(__file__).with_name("_fuzz_saved_worker.py")
REPO = Path(__file__).resolve().parents[2]
SEED = 20261123
# about 2 ms an estimator case (300 make each kind of mutation at least 3 times with this seed);
# MLGPF loads are the slow ones; more cases and seeds by hand
CASES = {"estimators": 300, "mlgpf": 30}
TIMEOUT_S = 420


def _last_case(progress: Path) -> str:
    lines = progress.read_text().splitlines() if progress.is_file() else []
    return lines[-1] if lines else "(before the first case)"


def _run_workers(tmp_path: Path) -> tuple[dict, list[str]]:
    """Start both workers, wait for them; their reports and what went wrong with the processes."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "OMP_NUM_THREADS": "1", "TF_NUM_INTRAOP_THREADS": "1",
           "TF_NUM_INTEROP_THREADS": "1", "PYTHONHASHSEED": "0"}
    runs = {}
    for family, cases in CASES.items():
        report, progress = tmp_path / f"{family}.json", tmp_path / f"{family}.progress"
        command = [sys.executable, str(WORKER), family, "--seed", str(SEED), "--cases", str(cases),
                   "--report", str(report), "--progress", str(progress)]
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=REPO)
        runs[family] = (proc, report, progress)
    deadline = time.monotonic() + TIMEOUT_S
    reports, problems = {}, []
    for family, (proc, report, progress) in runs.items():
        try:
            output, _ = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            problems.append(f"{family}: no result after {TIMEOUT_S} s (a hang?) in case {_last_case(progress)}")
            continue
        if proc.returncode != 0:
            problems.append(f"{family}: the worker exited with {proc.returncode} (negative: killed by that signal, a "
                            f"crash) in case {_last_case(progress)}\n{output[-3000:]}")
            continue
        reports[family] = json.loads(report.read_text())
    return reports, problems


@pytest.mark.slow
def test_every_corrupted_save_is_refused_or_loads_and_scores_finitely(tmp_path):
    reports, problems = _run_workers(tmp_path)
    assert not problems, "\n".join(problems)
    failures = [f"{f['target']} | {f['mutation']} | {f['error']}" for r in reports.values() for f in r["failures"]]
    assert not failures, f"{len(failures)} corrupted files broke the rule:\n" + "\n".join(failures[:50])
    # the estimators' files meet every kind of mutation; MLGPF's folders a part of them
    assert set(reports["estimators"]["kinds"]) == set(KINDS), sorted(set(KINDS) - set(reports["estimators"]["kinds"]))
    for family, report in reports.items():
        assert set(report["kinds"]) <= set(KINDS) and sum(report["kinds"].values()) == CASES[family], report["kinds"]
        outcomes = report["outcomes"]
        assert report["cases"] == CASES[family] and sum(outcomes.values()) == CASES[family], report
        # the fuzz reaches both sides: files refused, and altered files that load (valid, other models)
        assert outcomes.get("refused", 0) > CASES[family] / 3 and outcomes.get("loaded", 0) > 0, (family, outcomes)
