"""The papers' training recipes, one call each, shared by ``mlgp demo`` and the experiment scripts.

Recipes are where the model families meet the data: they may combine any of them:
:func:`train_mlgpf` (the MLGPF paper's recipe), its one settings source :class:`MLGPFSettings`
with the layers put over it (:mod:`mlgp.recipes.settings`), and the command-line options generated
from those settings (:mod:`mlgp.recipes.options`). The classifier and the recipe are imported on
first use, so that the settings and the options import no estimator. (Row normalisation is the
floor's: :func:`mlgp.data.normalise_rows`, no longer re-exported here.)
"""

from __future__ import annotations

from ..lazy import lazy_names
from .settings import (
    BATCH_GROWTH_NAMES,
    DEMO_SETTINGS,
    OTHER_SIZES,
    PAPER_BATCH_GROWTH,
    PAPER_FORM,
    PAPER_SETTINGS,
    QUICK_SETTINGS,
    MLGPFSettings,
    batch_growth,
    demo_settings,
)

__all__ = [
    "BATCH_GROWTH_NAMES",
    "DEMO_SETTINGS",
    "MLGPFClassifier",
    "MLGPFRun",
    "MLGPFSettings",
    "OTHER_SIZES",
    "PAPER_BATCH_GROWTH",
    "PAPER_FORM",
    "PAPER_SETTINGS",
    "QUICK_SETTINGS",
    "batch_growth",
    "demo_settings",
    "train_mlgpf",
]


#: the names imported on first use (PEP 562): the settings and the options built from them (what
#: ``mlgp --help`` reads) import neither scikit-learn's estimators nor the classifier
_LAZY = {"MLGPFClassifier": ".estimator", "MLGPFRun": ".mlgpf", "train_mlgpf": ".mlgpf"}


__getattr__, __dir__ = lazy_names(__name__, _LAZY, __all__)
