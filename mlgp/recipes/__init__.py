"""The papers' training recipes, one call each, shared by ``mlgp demo`` and the experiment scripts.

Recipes are where the model families meet the data: they may combine any of them. Today:
:func:`train_mlgpf` (the MLGPF paper's recipe) and the settings in :mod:`mlgp.recipes.settings`.
"""

from __future__ import annotations

from ..data.preprocessing import normalise_rows
from .mlgpf import MLGPFRun, train_mlgpf
from .settings import BATCH_GROWTH_NAMES, PAPER_BATCH_GROWTH, PAPER_SETTINGS, batch_growth

__all__ = [
    "BATCH_GROWTH_NAMES",
    "MLGPFRun",
    "PAPER_BATCH_GROWTH",
    "PAPER_SETTINGS",
    "batch_growth",
    "normalise_rows",
    "train_mlgpf",
]
