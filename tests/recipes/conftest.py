"""The recipe tests use the scikit-learn-checks scaffolding of ``tests/baselines`` by basename."""

from __future__ import annotations

import sys
from pathlib import Path

BASELINES = Path(__file__).resolve().parent.parent / "baselines"
if str(BASELINES) not in sys.path:
    sys.path.insert(0, str(BASELINES))
