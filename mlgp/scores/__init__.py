"""What every model emits: top-k rankings, scoring in batches, and score files.

:class:`TopK` holds each row's ``k`` best labels; :func:`topk` ranks a dense or sparse (N, K) score
matrix; :func:`score_in_batches` turns any ``fn`` from a dense (B, D) block of features to (B, K)
scores into dense scores or a ``TopK`` for CSR or dense ``X`` of any size, which is how every
model family implements ``decision_function`` and ``predict_topk``; :func:`save_scores` and
:func:`load_scores` write and read the score files that ``mlgp evaluate`` reads.

Tie rule
--------
When ranking a score matrix, equal scores are broken by label index: among equal scores the
*lower label index ranks first*. This makes the ranking deterministic and is applied identically
for dense and sparse score matrices (where missing entries count as ``-inf``, so every stored entry
outranks every missing one and missing entries are ranked by increasing label index; an explicitly
stored 0 is a stored score). A :class:`TopK` passed by the caller is taken in its given order (only
truncated to ``k``). Scores must be finite: NaN or infinite scores raise
:class:`~mlgp.errors.ShapeError`.

This module uses NumPy and SciPy only.
"""

from __future__ import annotations

from ._batches import score_in_batches, scored_blocks
from ._files import check_score_file_path, load_scores, save_scores
from ._topk import TopK, topk

__all__ = ["TopK", "topk", "score_in_batches", "scored_blocks", "save_scores", "load_scores", "check_score_file_path"]
