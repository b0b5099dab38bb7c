"""The critical-difference diagram (:mod:`mlgp.comparison.cd_diagram`): what it draws."""

from __future__ import annotations

import pandas as pd

from mlgp.comparison.cd_diagram import cd_figure, write_cd_diagram


def _texts(ax) -> list[str]:
    return [t.get_text() for t in ax.texts]


def test_the_diagram_draws_each_family_its_rank_the_cd_and_the_groups(tmp_path) -> None:
    import matplotlib.pyplot as plt

    ranks = pd.Series({"e": 4.0, "a": 1.0, "b": 1.5, "c": 2.4, "d": 3.9})
    fig = cd_figure(ranks, 1.0, title="P@1")
    ax = fig.axes[0]
    texts = _texts(ax)
    for name, rank in ranks.items():
        assert f"{name} ({rank:.2f})" in texts
    assert "CD = 1.00" in texts and [str(r) for r in range(1, 6)] == [t for t in texts if t.isdigit()]
    bars = sorted((tuple(line.get_xdata()), tuple(line.get_ydata())) for line in ax.lines if line.get_linewidth() == 3)
    assert [x for x, _ in bars] == [(1.0 - 0.03, 1.5 + 0.03), (1.5 - 0.03, 2.4 + 0.03), (3.9 - 0.03, 4.0 + 0.03)]
    assert len({y for _, y in bars}) == 3  # one height each
    # the better half named on the left, the worse on the right
    left = {t.get_text().split()[0] for t in ax.texts if t.get_ha() == "right"}
    assert left == {"a", "b", "c"}
    plt.close(fig)
    path = write_cd_diagram(tmp_path / "cd.png", ranks, 1.0)
    assert path.read_bytes()[:4] == b"\x89PNG"


def test_without_a_critical_difference_no_bars_are_drawn() -> None:
    import matplotlib.pyplot as plt

    fig = cd_figure(pd.Series({"a": 1.0, "b": 2.0}), float("nan"))
    ax = fig.axes[0]
    assert not [line for line in ax.lines if line.get_linewidth() == 3]
    assert not [t for t in _texts(ax) if t.startswith("CD")]
    plt.close(fig)
