"""The classes defined so far, by name: how a saved file's class name becomes a class on the floor.

Contract: every subclass of :class:`~mlgp.estimator.MultiLabelEstimator` is recorded under its
``__name__`` when Python creates it (``__init_subclass__`` calls :func:`register`): this is not a
list anyone keeps, only what the imported modules defined, so loading needs no import beyond the
module that defines the file's class. Which module that is, for the ten families, is declared once,
in :data:`mlgp.families.FAMILIES` (:attr:`~mlgp.families.Family.class_names`), and
:func:`mlgp.families.load_model` imports that one family before the floor resolves the name here
(the floor imports no family, so ``Class.load`` needs the class's module imported, as it is when
the class is named). A name belongs to one
class: defining the same class again (same module and qualified name, e.g. a re-run notebook cell)
replaces the entry; a different class with a taken name (a user's subclass named ``FastXML``) is
allowed, but the name becomes ambiguous: :func:`resolve` then refuses it, so saving or loading a
file under that name raises while everything else works.
"""

from __future__ import annotations

__all__ = ["register", "registered", "resolve"]

_CLASSES: dict[str, type] = {}
_AMBIGUOUS: dict[str, list[str]] = {}


def _where(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def register(cls: type) -> type:
    """Record ``cls`` under ``cls.__name__``; returns ``cls``."""
    name = cls.__name__
    known = _CLASSES.get(name)
    if known is not None and _where(known) != _where(cls):
        _AMBIGUOUS.setdefault(name, [_where(known)]).append(_where(cls))
        return cls
    _CLASSES[name] = cls
    return cls


def resolve(name: str) -> type | None:
    """The class registered under ``name``, or ``None``.

    Raises
    ------
    TypeError
        When several classes carry ``name`` (saved files name their class by ``__name__``).
    """
    if name in _AMBIGUOUS:
        raise TypeError(f"several estimator classes are named {name!r} ({', '.join(_AMBIGUOUS[name])}); saved files "
                        "name their class, so give yours another name to save or load it")
    return _CLASSES.get(name)


def registered() -> dict[str, type]:
    """A copy of the registry: class name → class."""
    return dict(_CLASSES)
