"""The trace figure: ELBO axis fitted past the first epochs, P@1 panel when recorded."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mlgp.experiment import elbo_axis_limits, plot_traces


def _trace(epochs: int, with_p1: bool = True) -> pd.DataFrame:
    e = np.arange(1, epochs + 1)
    df = pd.DataFrame({"epoch": e, "elbo": -36_000.0 - 84_000.0 * np.exp(-(e - 1) / 2.0)})
    if with_p1:
        df["P@1"] = 60.0 - 40.0 * np.exp(-(e - 1) / 3.0)
    return df


def test_axis_leaves_out_the_first_tenth_of_the_epochs() -> None:
    tr = _trace(100)
    bottom, top, cut = elbo_axis_limits(tr["epoch"], tr["elbo"])
    assert cut == 10
    late = tr.loc[tr["epoch"] > 10, "elbo"]
    assert bottom < late.min() and top > late.max()
    # the margins are 5% of the late range, so the first epochs (far below) are off the axis
    assert np.isclose(late.min() - bottom, 0.05 * (tr["elbo"].max() - late.min()))
    assert tr.loc[tr["epoch"] == 1, "elbo"].item() < bottom


def test_no_clipping_for_short_flat_or_empty_traces() -> None:
    short = _trace(9)
    assert elbo_axis_limits(short["epoch"], short["elbo"]) is None
    flat = pd.DataFrame({"epoch": np.arange(1, 21), "elbo": np.full(20, -5.0)})
    assert elbo_axis_limits(flat["epoch"], flat["elbo"]) is None
    nan_late = pd.DataFrame({"epoch": np.arange(1, 21), "elbo": [-10.0] * 2 + [np.nan] * 18})
    assert elbo_axis_limits(nan_late["epoch"], nan_late["elbo"]) is None


def test_plot_traces_panels_and_limits() -> None:
    a, b = _trace(30), _trace(30)
    b["elbo"] += 500.0
    a["run"], b["run"] = "A", "B"
    fig = plot_traces(pd.concat([a, b]), ["run"], title="t")
    axes = fig.get_axes()
    assert len(axes) == 2
    assert [l.get_text() for l in axes[0].get_legend().get_texts()] == ["A", "B"]
    both = pd.concat([a, b])
    bottom, top, cut = elbo_axis_limits(both["epoch"], both["elbo"])
    assert cut == 3 and np.allclose(axes[0].get_ylim(), (bottom, top))
    assert bottom > a["elbo"].iloc[:2].max()  # epochs 1-2 of run A are below the axis
    assert "epochs 4–30" in axes[0].get_title()
    one = plot_traces(_trace(5, with_p1=False).assign(run="A"), ["run"])
    assert len(one.get_axes()) == 1
