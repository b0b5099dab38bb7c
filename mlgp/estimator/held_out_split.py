"""One held-out split of N rows, as a scikit-learn splitter: what :class:`~mlgp.estimator.search.GridSearch`
scores its candidates on when it does not use K folds (GenEMLCV's default)."""

from __future__ import annotations

import numpy as np

from ..errors import ArgumentError

__all__ = ["HeldOutSplit"]


class HeldOutSplit:
    """One split of N rows: the last ``round(validation_fraction * N)`` entries of
    ``np.random.default_rng(random_state).permutation(N)`` are held out, both sides in row order. A
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
        held = int(round(float(self.validation_fraction) * num_rows))
        if not 1 <= held <= num_rows - 1:
            raise ArgumentError(f"validation_fraction={self.validation_fraction} of N={num_rows} rows holds out "
                                f"{held} row(s), leaving {num_rows - held} to fit: each side needs at least one row")
        order = np.random.default_rng(int(self.random_state)).permutation(num_rows)
        return np.sort(order[:num_rows - held]), np.sort(order[num_rows - held:])

    def split(self, X, y=None, groups=None):
        yield self.rows(np.shape(X)[0])
