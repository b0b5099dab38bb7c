"""The estimator floor: what every scikit-learn-style estimator of mlgp shares.

:class:`MultiLabelEstimator` (``base``) holds the multi-label tags, the one fit-time validation,
the scoring methods (``decision_function``, ``predict_topk``, ``predict``, ``predict_proba``) over
per-block hooks, and ``save`` / ``load``; ``persistence`` is the file format (JSON header + ``.npz``
arrays, no pickle, atomic writes) and ``saved_state``'s :class:`SavedState` the checked view of a file's fitted state;
``registry`` maps saved class names to classes; ``calibration`` recalibrates any family's
probabilities on held-out rows (isotonic regression or a temperature); ``search``'s
:class:`GridSearch` is the one grid search (K folds or a :class:`HeldOutSplit`) that a family's
``...CV`` estimator names its estimator and grid to. This package imports NumPy, SciPy, scikit-learn and
mlgp's floor (``errors``, ``validation``, ``scores``, ``data``, ``metrics``) only: no TensorFlow, no model family.
"""

from .base import N_JOBS, MultiLabelEstimator, ParameterError
from .calibration import CalibratedEstimator, ProbabilityCalibrator
from .persistence import FORMAT, load_estimator, save_estimator
from .registry import register, registered, resolve
from .saved_state import SavedState
from .search import GridSearch, HeldOutSplit

__all__ = ["CalibratedEstimator", "ProbabilityCalibrator", "FORMAT", "N_JOBS", "GridSearch", "HeldOutSplit", "MultiLabelEstimator", "ParameterError", "SavedState", "load_estimator", "register", "registered", "resolve",
           "save_estimator"]
