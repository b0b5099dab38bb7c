"""The papers' training settings in one place: MLGPF's per-dataset sizes and batch schedule.

:func:`batch_growth` is the one parser of a batch schedule: the recipes, the CLI and the
experiment scripts all accept what it accepts.
"""

from __future__ import annotations

from ..errors import ShapeError

__all__ = ["PAPER_SETTINGS", "PAPER_BATCH_GROWTH", "BATCH_GROWTH_NAMES", "batch_growth"]

#: Table 2 of the MLGPF paper: number of latent GPs P and inducing inputs M per dataset.
PAPER_SETTINGS: dict[str, dict[str, int]] = {
    "bibtex": {"num_latent_gps": 159, "num_inducing": 400},
    "delicious": {"num_latent_gps": 300, "num_inducing": 400},
}

#: The authors' batch schedule (their code's defaults): start at 100 points, add 20 every 10 epochs.
PAPER_BATCH_GROWTH: tuple[int, int] = (10, 20)

#: Named batch schedules.
BATCH_GROWTH_NAMES: dict[str, tuple[int, int]] = {"paper": PAPER_BATCH_GROWTH}


def batch_growth(value) -> tuple[int, int] | None:
    """A batch schedule ``(every, increment)`` from a name, a text or a pair.

    Parameters
    ----------
    value
        ``None`` (fixed batch), a name of :data:`BATCH_GROWTH_NAMES` (``"paper"``), a text
        ``"EVERY,INC"`` or a pair ``(every, increment)``, with EVERY ≥ 1 and INC ≥ 0 whole numbers.

    Raises
    ------
    ShapeError
        For anything else, naming what is accepted.
    """
    if value is None:
        return None
    accepted = f"{' or '.join(repr(n) for n in BATCH_GROWTH_NAMES)}, 'EVERY,INC' or a pair (every, increment)"
    if isinstance(value, str):
        text = value.strip().lower()
        if text in BATCH_GROWTH_NAMES:
            return BATCH_GROWTH_NAMES[text]
        parts = text.split(",")
        try:
            pair = tuple(int(v) for v in parts)
        except ValueError:
            raise ShapeError(f"batch_growth must be {accepted}; got {value!r}") from None
    else:
        try:
            pair = tuple(value)
        except TypeError:
            raise ShapeError(f"batch_growth must be {accepted}; got {value!r}") from None
    if len(pair) != 2 or any(isinstance(v, bool) or int(v) != v for v in pair):
        raise ShapeError(f"batch_growth must be {accepted}; got {value!r}")
    every, inc = int(pair[0]), int(pair[1])
    if every < 1 or inc < 0:
        raise ShapeError(f"batch_growth needs EVERY ≥ 1 and INC ≥ 0, got {value!r}")
    return every, inc
