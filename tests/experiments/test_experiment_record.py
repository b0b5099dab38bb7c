"""The run record every experiment script writes: settings, versions, the source revision, status."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from mlgp.experiment import Experiment, source_revision

REPO = Path(__file__).resolve().parents[2]


def test_run_record_names_the_source_commit(tmp_path):
    with Experiment("demo_script", settings={"epochs": 3}, seeds=[0, 1], out=tmp_path) as exp:
        exp.table("numbers", pd.DataFrame({"a": [1, 2]}))
    record = json.loads((tmp_path / "run.json").read_text())
    assert record["status"] == "ok" and record["settings"] == {"epochs": 3} and record["seeds"] == [0, 1]
    if (REPO / ".git").exists():
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
        assert record["source"]["commit"] == head
        assert isinstance(record["source"]["modified"], bool)
    else:  # an unpacked source tree: nothing to name
        assert record["source"] is None and source_revision() is None


def test_failed_run_is_recorded_with_its_error(tmp_path):
    # the script's own error passes through the helper unchanged
    with pytest.raises(RuntimeError, match=r"^the run broke$"):
        with Experiment("demo_script", out=tmp_path):
            raise RuntimeError("the run broke")
    record = json.loads((tmp_path / "run.json").read_text())
    assert record["status"] == "failed" and "the run broke" in record["error"]
