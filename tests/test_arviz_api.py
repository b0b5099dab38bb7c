"""The ArviZ API mlgp uses (``mlgp.geneml.diagnostics``, ``mlgp.geneml.inference_data``), named in
one place: setup.cfg bounds ArviZ to the 0.2x line (1.0 splits the package and moves these names);
when a release moves one, this test names it."""

from __future__ import annotations

import inspect
import re
import os
import subprocess
import sys
from pathlib import Path

from mlgp.geneml.diagnostics import arviz

SETUP = Path(__file__).resolve().parents[1] / "setup.cfg"

#: name → the parameters mlgp passes to it
USED = {"from_dict": {"posterior", "sample_stats", "warmup_sample_stats", "dims", "save_warmup"},
        "rhat": {"method"}, "ess": {"method"}, "convert_to_dataset": set(), "summary": {"var_names", "kind"},
        "plot_trace": {"var_names"}}


def test_the_names_mlgp_calls_take_its_arguments() -> None:
    az = arviz()
    for name, parameters in USED.items():
        assert hasattr(az, name), f"arviz.{name} is gone: mlgp.geneml.diagnostics / inference_data use it"
        missing = parameters - set(inspect.signature(getattr(az, name)).parameters)
        assert not missing, f"arviz.{name} no longer takes {sorted(missing)}"
    assert "method" in inspect.signature(az.rhat).parameters and "rank" in (az.rhat.__doc__ or "")


def test_setup_bounds_arviz_to_the_installed_line() -> None:
    import arviz as az

    bound = re.search(r"arviz>=([\d.]+),<([\d.]+)", SETUP.read_text())
    assert bound, "setup.cfg must bound arviz (>=low,<high)"
    version = tuple(int(p) for p in az.__version__.split(".")[:2])
    low, high = (tuple(int(p) for p in b.split(".")[:2]) for b in bound.groups())
    assert low <= version < high, (az.__version__, bound.group(0))


def test_its_import_notice_is_not_the_users(tmp_path) -> None:
    """ArviZ 0.2x warns of its refactor at its first import of the day (a stamp in the user's cache
    folder); a user of mlgp's diagnostics does not see it. A fresh process with an empty cache."""
    code = "from mlgp.geneml.diagnostics import arviz; arviz()"
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path), "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-W", "error::FutureWarning", "-c", code], capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
