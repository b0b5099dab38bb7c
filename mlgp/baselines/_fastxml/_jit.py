"""numba compilation for FastXML's kernels, cached where numba can cache and plain where it cannot.

Contract: :func:`compiled` is ``numba.njit(cache=True, nogil=True)``, except where numba finds no
folder to keep its cache in (a read-only install whose user has a read-only home: numba then raises
``RuntimeError: cannot cache function ...: no locator available`` when the function is decorated):
there the function is compiled in each process without a cache, and a :class:`RuntimeWarning` says
so once per process.
"""

from __future__ import annotations

import numba

from ...errors import warn

__all__ = ["compiled"]

_WARNED = False


def compiled(func):
    """``func`` compiled by numba (nopython, without the GIL), with an on-disk cache when possible."""
    global _WARNED
    try:
        return numba.njit(cache=True, nogil=True)(func)
    except RuntimeError as err:
        if "cannot cache" not in str(err):
            raise
        if not _WARNED:
            _WARNED = True
            warn(f"numba cannot cache mlgp's compiled FastXML kernels here ({err}); they are compiled anew "
                 "in each process (set NUMBA_CACHE_DIR to a writable folder to keep them)",
                 RuntimeWarning)
        return numba.njit(nogil=True)(func)
