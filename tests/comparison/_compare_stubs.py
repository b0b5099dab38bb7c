"""Data and estimators of the comparison tests (``tests/comparison`` is on ``sys.path``; a worker
process of :func:`mlgp.compare` finds this module when the test puts the folder on ``PYTHONPATH``)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from mlgp.baselines import LabelFrequency
from mlgp.data.registry import Dataset
from mlgp.data.synthetic import mlgpf_prior

__all__ = ["FOLDER", "DiesInFit", "tiny"]

#: This folder: the ``PYTHONPATH`` a worker needs to unpickle :class:`DiesInFit`.
FOLDER = Path(__file__).resolve().parent


def tiny(seed: int = 3) -> Dataset:
    """40 training and 20 test points, D = 5, K = 6: every cheap family fits it in milliseconds."""
    return mlgpf_prior(num_train=40, num_test=20, num_features=5, num_labels=6, num_latent=2, seed=seed)


class DiesInFit(LabelFrequency):
    """A :class:`~mlgp.baselines.LabelFrequency` whose ``fit`` kills its own process with ``signum``."""

    def __init__(self, *, smoothing: float = 0.5, threshold: float = 0.5, signum: int = int(signal.SIGKILL)) -> None:
        super().__init__(smoothing=smoothing, threshold=threshold)
        self.signum = signum

    def fit(self, X, Y) -> "DiesInFit":
        os.kill(os.getpid(), self.signum)
        time.sleep(30)  # the signal ends the process before this does
        raise RuntimeError(f"signal {self.signum} did not end the process")
