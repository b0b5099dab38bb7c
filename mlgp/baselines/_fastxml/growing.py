"""Growing a FastXML forest's trees: in parallel with joblib, kept as each is done, under a budget.

:func:`grow_trees` grows the trees not yet grown (each with its own seed), stores each as it
arrives where a :class:`~mlgp.baselines._fastxml.store.TreeStore` is given, and looks at the fit's
:class:`~mlgp.estimator.budget.Budget` after every tree: the tree that spends it is the last one
kept (trees still growing then are abandoned), so a fit overruns its budget by at most the trees
in flight and always has at least one.
"""

from __future__ import annotations

import time
import warnings
from typing import Callable

from ...estimator.budget import Budget
from .tree import grow_tree

__all__ = ["grow_trees"]


def _grow_indexed(t: int, *args) -> tuple[int, object, float]:
    """``(t, grow_tree(*args), seconds it took)``: a tree with its number, for results that arrive
    in any order."""
    start = time.perf_counter()
    tree = grow_tree(*args)
    return t, tree, time.perf_counter() - start


def grow_trees(todo: list[int], trees: dict, arguments: Callable[[int], tuple], *, n_jobs, prefer: str, verbose,
               budget: Budget, store=None, seeds=None, bar=None) -> dict:
    """Grow tree ``t`` for each ``t`` in ``todo`` from ``grow_tree(*arguments(t))`` into ``trees``
    (tree number → tree), in any order, until the budget is spent; returns ``trees``."""
    from joblib import Parallel, delayed

    if not todo:
        return trees
    grown = Parallel(n_jobs=n_jobs, prefer=prefer, verbose=verbose, return_as="generator_unordered")(
        delayed(_grow_indexed)(t, *arguments(t)) for t in todo)
    for t, tree, seconds in grown:  # as each tree is done, in any order
        if store is not None:
            store.save(t, tree, int(seeds[t]), seconds)
        trees[t] = tree
        stop = budget.spent()  # its elapsed seconds are the progress line's
        if bar is not None:
            bar.unit_done(last=stop)
        if stop:
            break
    with warnings.catch_warnings():  # abandoning the trees in flight is the budget's rule, not news
        warnings.filterwarnings("ignore", message=r"\d+ tasks (which were still being processed|have been successfully)",
                                category=UserWarning)
        grown.close()
    return trees
