"""The critical-difference diagram of a comparison over many data sets (Demšar 2006, Fig. 1).

Contract: :func:`cd_figure` draws an axis of mean rank from 1 (best, left) to k; each family is a
line from its mean rank on the axis to its name and mean rank — the better half on the left, the
worse half on the right; thick bars join the families whose mean ranks differ by less than the
critical difference (:func:`mlgp.comparison.ranks.cliques`: not significantly different by the
Nemenyi test), and a bar above the axis shows the length of CD. Matplotlib's Agg backend (no
display needed); :func:`write_cd_diagram` writes it as a PNG atomically.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .ranks import cliques

__all__ = ["cd_figure", "write_cd_diagram"]


def cd_figure(mean_ranks: pd.Series, cd: float, title: str = ""):
    """The diagram of ``mean_ranks`` (family → mean rank, k ≥ 2) with critical difference ``cd``.

    Parameters
    ----------
    mean_ranks : pandas.Series (k,)
        Family → mean rank over the data sets.
    cd : float
        The Nemenyi critical difference (NaN: no bars are drawn).
    title : str
        Drawn above the diagram.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import math

    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    ranked = mean_ranks.sort_values(kind="stable")
    k = len(ranked)
    groups = cliques(ranked, cd) if math.isfinite(cd) else []
    half = (k + 1) // 2
    rows = max(half, k - half)
    bar_space = 0.25 * len(groups)
    bottom = 0.6 + bar_space + 0.5 * rows
    fig, ax = plt.subplots(figsize=(7.0, 0.9 + 0.55 * (bottom + 1.2)))
    ax.set_xlim(0.3 - 0.35 * k, k + 0.7 + 0.35 * k)
    ax.set_ylim(bottom, -1.2)
    ax.axis("off")
    ax.plot([1, k], [0, 0], color="black", linewidth=1)
    for r in range(1, k + 1):
        ax.plot([r, r], [0, -0.15], color="black", linewidth=1)
        ax.text(r, -0.25, str(r), ha="center", va="bottom", fontsize=9)
    if math.isfinite(cd):
        ax.plot([1, 1 + cd], [-0.85, -0.85], color="black", linewidth=1.5)
        ax.text(1 + cd / 2, -0.95, f"CD = {cd:.2f}", ha="center", va="bottom", fontsize=9)
    for i, (name, rank) in enumerate(ranked.items()):
        left = i < half
        level = 0.6 + bar_space + 0.5 * (i if left else k - 1 - i)  # the outermost names lowest
        edge = 0.3 if left else k + 0.7
        ax.plot([rank, rank, edge], [0, level, level], color="0.25", linewidth=1)
        ax.text(edge + (-0.05 if left else 0.05), level, f"{name} ({rank:.2f})", ha="right" if left else "left",
                va="center", fontsize=9)
    for j, group in enumerate(groups):
        y = 0.2 + 0.25 * j
        ax.plot([ranked[group[0]] - 0.03, ranked[group[-1]] + 0.03], [y, y], color="black", linewidth=3,
                solid_capstyle="round")
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


def write_cd_diagram(path: str | Path, mean_ranks: pd.Series, cd: float, title: str = "") -> Path:
    """Write :func:`cd_figure` to ``path`` as a PNG (atomically, as the report's figures); returns
    ``path``."""
    from .figures import save

    save(cd_figure(mean_ranks, cd, title), Path(path))
    return Path(path)
