"""mlgp: Gaussian-process and probabilistic models for large-scale multi-label learning."""

from __future__ import annotations

__version__ = "0.1.0"

from .errors import (  # noqa: F401
    ArgumentError,
    CheckpointMismatchError,
    DataFormatError,
    DatasetNotFoundError,
    FileAccessError,
    MLGPError,
    ModelNotFoundError,
    ShapeError,
    TrainingDivergedError,
)
