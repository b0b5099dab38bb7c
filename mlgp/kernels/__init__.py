"""Kernels for MLGPF: GPflow's own ARD linear and squared-exponential kernels and their sum."""

from .factory import KERNEL_NAMES, make_kernel

__all__ = ["KERNEL_NAMES", "make_kernel"]
