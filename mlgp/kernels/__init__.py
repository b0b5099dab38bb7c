"""Kernels for MLGPF: GPflow's own ARD linear and squared-exponential kernels and their sum, and the
authors' SE+LR with one shared ARD vector."""

from .factory import KERNEL_NAMES, make_kernel
from .shared_scale import SharedScaleSEPlusLinear

__all__ = ["KERNEL_NAMES", "SharedScaleSEPlusLinear", "make_kernel"]
