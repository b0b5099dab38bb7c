"""The reliability tests import the floor's small estimators (``tests/estimator/_small.py``) and their
own helper modules by basename: both folders go on ``sys.path``."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for folder in (HERE, HERE.parent / "estimator"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
