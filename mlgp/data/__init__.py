"""Multi-label data: XC-format I/O, labelled data files (XC, LIBSVM, npz), the benchmark dataset
registry, statistics, synthetic problems, preprocessing. Uses numpy, scipy and pandas only (no TensorFlow)."""

from __future__ import annotations

from .registry import (
    DATASETS,
    Dataset,
    DatasetInfo,
    Split,
    available,
    data_home,
    load,
)
from .stats import statistics, statistics_table
from .preprocessing import normalise_rows
from .synthetic import default_problem, geneml_lowrank, lspc_toy, mlgpf_prior
from .synthetic_xc import AMAZONCAT_13K, extreme_like
from .io import read_labelled, read_xc, write_labelled, write_labelled_npz, write_xc

__all__ = [
    "AMAZONCAT_13K",
    "DATASETS",
    "Dataset",
    "DatasetInfo",
    "Split",
    "available",
    "data_home",
    "default_problem",
    "extreme_like",
    "geneml_lowrank",
    "load",
    "lspc_toy",
    "mlgpf_prior",
    "normalise_rows",
    "read_labelled",
    "read_xc",
    "statistics",
    "statistics_table",
    "write_labelled",
    "write_labelled_npz",
    "write_xc",
]
