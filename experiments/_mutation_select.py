"""Which mutants the mutation tool runs, and what its score says: helpers of ``_mutation.py``.

:func:`annotation_spans` finds a module's annotations (strings under postponed evaluation, so a
mutant there cannot change behaviour), :func:`drop_annotation_mutants` and :func:`keep_first`
trim a Cosmic Ray session to the mutants worth running, and :func:`wilson_interval` is the 95 %
interval of a score measured on a random sample of them.
"""

from __future__ import annotations

from pathlib import Path


def wilson_interval(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score interval (percent) of a proportion k / n; (0, 100) when n is 0."""
    if n == 0:
        return 0.0, 100.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / (1 + z * z / n)
    return 100.0 * max(centre - half, 0.0), 100.0 * min(centre + half, 1.0)


def keep_first(session: Path, count: int, seed: int | None = None) -> int:
    """Keep only ``count`` mutants of the session: the first in source order, or (with ``seed``) a
    random sample of them, kept in source order; returns how many there were."""
    import random

    from cosmic_ray.work_db import WorkDB, use_db

    with use_db(str(session), WorkDB.Mode.open) as db:
        items = sorted(db.work_items, key=lambda w: (tuple(w.mutations[0].start_pos), w.mutations[0].operator_name,
                                                     w.mutations[0].occurrence))
        if seed is None:
            kept = items[:count]
        else:
            kept = [items[i] for i in sorted(random.Random(seed).sample(range(len(items)), min(count, len(items))))]
        db.clear()
        db.add_work_items(kept)
    return len(items)


def annotation_spans(source: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """The (start, end) positions ((line, column), lines from 1) of every annotation in ``source``,
    or none when the module does not start with ``from __future__ import annotations`` (its
    annotations are then evaluated, and a mutant there can fail on import)."""
    import ast

    tree = ast.parse(source)
    postponed = any(isinstance(node, ast.ImportFrom) and node.module == "__future__"
                    and any(a.name == "annotations" for a in node.names) for node in tree.body)
    if not postponed:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            found += [a.annotation for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg)
                      if a is not None and a.annotation is not None]
            found += [node.returns] if node.returns is not None else []
        elif isinstance(node, ast.AnnAssign):  # a string under postponed evaluation (dataclass fields too)
            found.append(node.annotation)
    return [((a.lineno, a.col_offset), (a.end_lineno, a.end_col_offset)) for a in found]


def drop_annotation_mutants(session: Path, module_file: Path) -> int:
    """Remove the session's mutants that lie inside an annotation (:func:`annotation_spans`); how many."""
    from cosmic_ray.work_db import WorkDB, use_db

    spans = annotation_spans(module_file.read_text())
    if not spans:
        return 0
    with use_db(str(session), WorkDB.Mode.open) as db:
        items = list(db.work_items)
        kept = [w for w in items if not any(lo <= tuple(w.mutations[0].start_pos) and tuple(w.mutations[0].end_pos) <= hi
                                            for lo, hi in spans)]
        if len(kept) < len(items):
            db.clear()
            db.add_work_items(kept)
    return len(items) - len(kept)
