"""q(u) families of MLGPF (one per file), the marginals they share and the transform of Cholesky factors.

:func:`make_q` builds a family by name: ``"cholesky"`` (:class:`CholeskyQ`, the MLGPF paper's),
``"whitened"`` (:class:`WhitenedQ`) or ``"preconditioned"`` (:class:`PreconditionedQ`, the 2M
parameters per GP of "Fully scalable GPs"); :func:`to_cholesky` converts any family into an
equivalent Cholesky or whitened one.
"""

from ..quiet import quiet_tensorflow

quiet_tensorflow()  # TensorFlow's first import, without its start-up lines (mlgp.quiet)

from .base import QDistribution
from .cholesky import CholeskyQ, WhitenedQ
from .factory import Q_FAMILIES, make_q, to_cholesky
from .marginals import shared_marginals, shared_marginals_from_projection
from .preconditioned import PreconditionedQ, default_sigma_lower
from .transforms import LowerTriangular, lower_triangular

__all__ = [
    "CholeskyQ",
    "LowerTriangular",
    "PreconditionedQ",
    "QDistribution",
    "Q_FAMILIES",
    "WhitenedQ",
    "default_sigma_lower",
    "lower_triangular",
    "make_q",
    "shared_marginals",
    "shared_marginals_from_projection",
    "to_cholesky",
]
