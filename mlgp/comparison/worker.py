"""``python -m mlgp.comparison.worker FOLDER``: fit one family of a comparison in a fresh interpreter.

:func:`mlgp.compare` (``isolate=True``, through :mod:`mlgp.comparison.isolation`) writes
``FOLDER/job.pickle`` — the family's name, its unfitted estimator, the dataset, the inverse
propensities and the progress flag — into a private temporary folder it has just made, runs this
module in a new Python process, and reads back ``FOLDER/row.json`` and ``FOLDER/trace.csv``. The
pickle is this package's own hand-over between its two processes, never a user's file. A fresh
interpreter (rather than a ``multiprocessing`` child) runs each fit exactly as ``mlgp fit`` would,
joblib's workers included.
"""

from __future__ import annotations

import json
import pickle
import sys
from pathlib import Path

__all__ = ["main"]


def main(folder: str) -> int:
    """Fit and score the job of ``folder`` (:func:`mlgp.comparison.isolation.run_one`) and write
    ``trace.csv``, then ``row.json``.

    Parameters
    ----------
    folder : str
        The folder holding ``job.pickle``.

    Returns
    -------
    int
        0 (a family that fails is a row with its error, not a failed process).
    """
    from ..files import atomic_write
    from .isolation import run_one  # which brings TensorFlow up quietly where the family uses it

    folder = Path(folder)
    name, estimator, ds, inv_propensity, progress = pickle.loads((folder / "job.pickle").read_bytes())
    row, trace = run_one(name, estimator, ds, inv_propensity, progress)
    text = json.dumps(row, default=float).encode()
    csv = trace.to_csv(index=False).encode()
    atomic_write(folder / "trace.csv", lambda f: f.write(csv))
    atomic_write(folder / "row.json", lambda f: f.write(text))  # last: its presence means the run ended
    return 0


if __name__ == "__main__":  # pragma: no cover - run by mlgp.comparison.isolation
    sys.exit(main(sys.argv[1]))
