"""Kernels for MLGPF: GPflow's own ARD linear and squared-exponential kernels and their sum, the
authors' SE+LR with one shared ARD vector, and the subspace kernels on projected inputs."""

from ..quiet import quiet_tensorflow

quiet_tensorflow()  # TensorFlow's first import, without its start-up lines (mlgp.quiet)

from .factory import KERNEL_NAMES, make_kernel
from .shared_scale import SharedScaleSEPlusLinear
from .subspace import SubspaceLinear, SubspaceSE, SubspaceSharedScaleSEPlusLinear, make_subspace_kernel

__all__ = ["KERNEL_NAMES", "SharedScaleSEPlusLinear", "SubspaceLinear", "SubspaceSE",
           "SubspaceSharedScaleSEPlusLinear", "make_kernel", "make_subspace_kernel"]
