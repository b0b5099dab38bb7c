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

__all__ = ["FOLDER", "DiesInFit", "WarnsInFit", "command_line", "tiny"]

#: This folder: the ``PYTHONPATH`` a worker needs to unpickle :class:`DiesInFit`.
FOLDER = Path(__file__).resolve().parent


def tiny(seed: int = 3) -> Dataset:
    """40 training and 20 test points, D = 5, K = 6: every cheap family fits it in milliseconds."""
    return mlgpf_prior(num_train=40, num_test=20, num_features=5, num_labels=6, num_latent=2, seed=seed)


def command_line(command: str, family: str, folder: Path) -> list[str]:
    """``mlgp compare`` (in this process) or ``mlgp fit`` of ``family`` on :func:`tiny`'s split,
    written as labelled files into ``folder``, writing into ``folder`` (or ``mlgp params family``)."""
    from mlgp.data.io import write_labelled

    ds = tiny()
    train, test = folder / "train.txt", folder / "test.txt"
    write_labelled(train, ds.train.X, ds.train.Y)
    write_labelled(test, ds.test.X, ds.test.Y)
    return {"compare": ["compare", "--train", str(train), "--test", str(test), "--models", family, "--in-process",
                        "--out", str(folder / "c")],
            "fit": ["fit", family, "--train", str(train), "--out", str(folder / "m.npz")],
            "params": ["params", family]}[command]


class DiesInFit(LabelFrequency):
    """A :class:`~mlgp.baselines.LabelFrequency` whose ``fit`` kills its own process with ``signum``."""

    def __init__(self, *, smoothing: float = 0.5, threshold: float = 0.5, signum: int = int(signal.SIGKILL)) -> None:
        super().__init__(smoothing=smoothing, threshold=threshold)
        self.signum = signum

    def fit(self, X, Y) -> "DiesInFit":
        os.kill(os.getpid(), self.signum)
        time.sleep(30)  # the signal ends the process before this does
        raise RuntimeError(f"signal {self.signum} did not end the process")


class WarnsInFit(LabelFrequency):
    """A :class:`~mlgp.baselines.LabelFrequency` whose ``fit`` warns, as GenEML does on too many
    components (``stacklevel=2``: the warning names the line that called ``fit``)."""

    def fit(self, X, Y) -> "WarnsInFit":
        import warnings

        warnings.warn("WarnsInFit: planted advice the user can act on", UserWarning, stacklevel=2)
        return super().fit(X, Y)
