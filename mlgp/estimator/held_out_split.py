"""The one held-out split of N rows, for every family that holds training rows out.

:func:`held_out_split` is which rows a seed holds out: the first ``round(fraction · N)`` entries of
``np.random.default_rng(seed).permutation(N)``, both sides returned sorted (in row order). MLGPF's
early stopping and bias guard (:func:`mlgp.recipes.held_out.held_out_rows`) and the grid search's
single split (:class:`HeldOutSplit`, GenEMLCV's default) both take their rows from it, so one seed
and one fraction hold out the same rows in every family. They differ only in what they do with a
count outside [1, N − 1]: the grid search refuses it (``clip=False``), MLGPF keeps at least one row
on each side (``clip=True``).
"""

from __future__ import annotations

import numpy as np

from ..errors import ArgumentError

__all__ = ["HeldOutSplit", "held_out_split"]


def held_out_split(num_rows: int, fraction: float, seed: int, *, clip: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Sorted row indices ``(kept, held)`` of ``num_rows`` rows (N ≥ 2 with ``clip``): the first
    ``round(fraction · N)`` entries of ``np.random.default_rng(seed).permutation(N)`` held out.

    With ``clip`` that count is kept within [1, N − 1]; without it, a count outside is an
    :class:`~mlgp.errors.ArgumentError` (a side would be empty)."""
    num_rows = int(num_rows)
    held = int(round(float(fraction) * num_rows))
    if clip:
        held = min(num_rows - 1, max(1, held))
    if not 1 <= held <= num_rows - 1:
        raise ArgumentError(f"validation_fraction={fraction} of N={num_rows} rows holds out {held} row(s), leaving "
                            f"{num_rows - held} to fit: each side needs at least one row")
    order = np.random.default_rng(int(seed)).permutation(num_rows)
    return np.sort(order[held:]), np.sort(order[:held])


class HeldOutSplit:
    """One split of N rows by :func:`held_out_split` (a count outside [1, N − 1] refused). A
    scikit-learn splitter (``split``, ``get_n_splits``), so GridSearchCV can score the same split."""

    def __init__(self, validation_fraction: float, random_state: int = 0) -> None:
        self.validation_fraction = validation_fraction
        self.random_state = random_state

    def __repr__(self) -> str:
        return f"HeldOutSplit(validation_fraction={self.validation_fraction!r}, random_state={self.random_state!r})"

    def get_n_splits(self, X=None, y=None, groups=None) -> int:
        return 1

    def rows(self, num_rows: int) -> tuple[np.ndarray, np.ndarray]:
        """Sorted row indices ``(fitting, held_out)``; an ArgumentError when a side would be empty."""
        return held_out_split(num_rows, self.validation_fraction, self.random_state)

    def split(self, X, y=None, groups=None):
        yield self.rows(np.shape(X)[0])
