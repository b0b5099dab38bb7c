"""Names of a package imported on first use (PEP 562), so that importing the package imports none
of the modules behind them: ``mlgp.baselines`` (a command using one family does not import the
others, nor FastXML's numba kernels) and ``mlgp.recipes`` (its settings import no estimator)."""

from __future__ import annotations

import importlib
from typing import Callable

__all__ = ["lazy_names"]


def lazy_names(package: str, where: dict[str, str], public: list[str]) -> tuple[Callable, Callable]:
    """The module ``__getattr__`` and ``__dir__`` of ``package`` for the names of ``where`` (each
    name → the module, relative to ``package``, that defines it); ``public``: the package's
    ``__all__``. A name is imported once, then kept in the package's namespace."""
    import sys

    def __getattr__(name: str):
        if name in where:
            value = getattr(importlib.import_module(where[name], package), name)
            setattr(sys.modules[package], name, value)
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(public))

    return __getattr__, __dir__
