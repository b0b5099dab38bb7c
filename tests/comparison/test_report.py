"""The comparison's report: the text tables, the best-family lines and the two figures, from small
hand-made results (no family is fitted)."""

from __future__ import annotations

import struct

import numpy as np
import pandas as pd
import pytest

from mlgp.comparison import report

RESULTS = pd.DataFrame({"family": ["mlgpf", "geneml", "lspc"], "P@1": [60.0, 55.5, 50.25],
                        "fit_seconds": [3.0, 2.0, 1.0], "peak_memory_mb": [101.4, 99.6, 50.0],
                        "NLL": [0.1, 0.3, 0.2], "LPD": [-1.0, -3.0, -2.0], "error": ["", "", ""]})
TRACES = pd.DataFrame({"family": ["mlgpf"] * 4 + ["geneml"] * 2, "step": [1, 1, 2, 2, 1, 1],
                       "seconds": [1.0, 1.0, 2.0, 2.0, 1.5, 1.5],
                       "quantity": ["P@1", "objective", "P@1", "objective", "P@1", "objective"],
                       "value": [40.0, -9.0, 50.0, -8.0, 45.0, -7.0]})


def test_tables_are_plain_text_unless_markdown_is_asked_for() -> None:
    for text in (report.probability_table_text(RESULTS), report.table_text(RESULTS)):
        assert "|" not in text and "---" not in text
    for text in (report.probability_table_text(RESULTS, markdown=True), report.table_text(RESULTS, markdown=True)):
        assert text.splitlines()[0].startswith("|") and "---" in text.splitlines()[1]


def test_table_digits() -> None:
    """Metrics to 2 decimals, seconds to 1, memory in MiB to 0."""
    row = report.table_text(RESULTS).splitlines()[1].split()
    assert row[:2] == ["mlgpf", "60.00"] and "3.0" in row and "101" in row


def test_probability_table_digits() -> None:
    """LPD to 3 decimals, NLL, Brier and the ECEs to 4, the F1 columns (percent) to 2."""
    columns = ["LPD", "NLL", "Brier", "ECE", "ECE@1", "ECE@5", "microF1@0.5", "macroF1@0.5", "microF1_tuned",
               "macroF1_tuned"]
    results = pd.DataFrame({"family": ["mlgpf"], **{c: [1.0 / 3.0] for c in columns}})
    header, row = report.probability_table_text(results).splitlines()
    assert header.split() == ["family", *columns]
    assert row.split() == ["mlgpf", "0.333", *["0.3333"] * 5, *["0.33"] * 4]


def test_best_lines_without_the_frequency_family() -> None:
    """The label-prior line needs the frequency family; without it there is none (and no error)."""
    assert report.best_lines(RESULTS) == ["- Best test log predictive density: **mlgpf** (-1.000 nats per test point).",
                                          "- Best P@1: **mlgpf** (60.000)."]
    with_prior = pd.concat([RESULTS, pd.DataFrame({"family": ["frequency"], "NLL": [0.25], "P@1": [1.0],
                                                    "LPD": [-5.0]})], ignore_index=True)
    last = report.best_lines(with_prior)[-1]
    assert last.startswith("- Worse than the label prior (NLL per entry above frequency's 0.2500)") and "geneml" in last
    assert "mlgpf" not in last and "lspc" not in last


def _png_size(path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_the_traces_figure(tmp_path) -> None:
    """A P@1 panel and an objective panel; each panel plots its own quantity; a family without a
    trace is a square at (fit seconds, P@1) on the P@1 panel only; 5.2 × 4 inches a panel at 110 dpi."""
    fig = report._traces_figure(RESULTS, TRACES)
    p1, objective = fig.axes
    assert [ax.get_ylabel().split("\n")[0] for ax in fig.axes] == ["test P@1 (%)", "training objective per point"]
    lines = {line.get_label(): line.get_ydata().tolist() for line in p1.get_lines()}
    assert lines == {"mlgpf": [40.0, 50.0], "geneml": [45.0]}
    assert {line.get_label(): line.get_ydata().tolist() for line in objective.get_lines()} == \
        {"mlgpf": [-9.0, -8.0], "geneml": [-7.0]}
    squares = [c for c in p1.collections]
    assert len(squares) == 1 and squares[0].get_label() == "lspc"
    np.testing.assert_array_equal(squares[0].get_offsets(), [[1.0, 50.25]])
    assert not objective.collections
    colours = {line.get_label(): line.get_color() for line in p1.get_lines()}
    assert colours["mlgpf"] != colours["geneml"]
    report._save(fig, tmp_path / "t.png")
    assert _png_size(tmp_path / "t.png") == (round(2 * 5.2 * report.DPI), round(4 * report.DPI))


def test_the_traces_figure_without_traces_has_the_p1_panel_only() -> None:
    fig = report._traces_figure(RESULTS, TRACES.iloc[:0])
    assert len(fig.axes) == 1 and len(fig.axes[0].collections) == 3
    fig = report._traces_figure(RESULTS, TRACES[TRACES["quantity"] == "P@1"])  # no objective traced
    assert len(fig.axes) == 1 and len(fig.axes[0].get_lines()) == 2


@pytest.mark.parametrize("entries", ["all", "top5"])
def test_the_reliability_figure(tmp_path, entries) -> None:
    reliability = pd.DataFrame({"family": ["mlgpf"] * 2 + ["lspc"] * 2, "entries": [entries] * 4,
                                "mean_probability": [0.1, 0.8, 0.2, 0.6], "frequency": [0.05, 0.9, 0.3, 0.5],
                                "count": [10, 10, 10, 10]})
    fig = report._reliability_figure(reliability)
    shown = fig.axes[0 if entries == "all" else 1]
    empty = fig.axes[1 if entries == "all" else 0]
    for ax in fig.axes:
        assert ax.get_xlim() == (0.0, 1.0) and ax.get_ylim() == (0.0, 1.0)
    curves = {line.get_label(): line.get_xdata().tolist() for line in shown.get_lines()[1:]}  # [0]: the diagonal
    assert curves == {"mlgpf": [0.1, 0.8], "lspc": [0.2, 0.6]}
    assert len(empty.get_lines()) == 1 and empty.get_legend() is None
    report._save(fig, tmp_path / "c.png")
    assert _png_size(tmp_path / "c.png") == (round(10.4 * report.DPI), round(4.6 * report.DPI))
