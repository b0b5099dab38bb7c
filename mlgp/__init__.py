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


def __getattr__(name: str):
    """``mlgp.compare``: :func:`mlgp.comparison.compare`, imported on first use."""
    if name == "compare":
        from .comparison import compare

        return compare
    raise AttributeError(f"module 'mlgp' has no attribute {name!r}")
