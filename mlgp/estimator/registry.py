"""The registry of estimator classes by name: how a saved file's class name becomes a class.

Contract: every subclass of :class:`~mlgp.estimator.MultiLabelEstimator` is registered under its
``__name__`` when Python creates it (``__init_subclass__`` calls :func:`register`), so loading needs
no import of the concrete classes' modules beyond the one that defines them. A name belongs to one
class: defining the same class again (same module and qualified name, e.g. a re-run notebook cell)
replaces the entry; a different class with a taken name raises ``TypeError``.
"""

from __future__ import annotations

__all__ = ["register", "registered", "resolve"]

_CLASSES: dict[str, type] = {}


def register(cls: type) -> type:
    """Record ``cls`` under ``cls.__name__``; returns ``cls``."""
    name = cls.__name__
    known = _CLASSES.get(name)
    if known is not None and (known.__module__, known.__qualname__) != (cls.__module__, cls.__qualname__):
        raise TypeError(f"an estimator class named {name!r} is already registered ({known.__module__}."
                        f"{known.__qualname__}); saved files name their class, so {cls.__module__}."
                        f"{cls.__qualname__} needs another name")
    _CLASSES[name] = cls
    return cls


def resolve(name: str) -> type | None:
    """The class registered under ``name``, or ``None``."""
    return _CLASSES.get(name)


def registered() -> dict[str, type]:
    """A copy of the registry: class name → class."""
    return dict(_CLASSES)
