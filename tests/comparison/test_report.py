"""The comparison's report: the text tables, the best-family lines and the two figures, from small
hand-made results (no family is fitted)."""

from __future__ import annotations

import struct

import numpy as np
import pandas as pd
import pytest

from mlgp.comparison import report
from mlgp.comparison.figures import save

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
    assert report.best_lines(RESULTS) == ["- P@1: highest **mlgpf** (60.00); not tested (no per-row values).",
                                          "- LPD: highest **mlgpf** (-1.000); not tested (no per-row values)."]
    with_prior = pd.concat([RESULTS, pd.DataFrame({"family": ["frequency"], "NLL": [0.25], "P@1": [1.0],
                                                    "LPD": [-5.0]})], ignore_index=True)
    last = report.best_lines(with_prior)[-1]
    assert last.startswith("- Worse than the label prior (NLL per entry above frequency's 0.2500)") and "geneml" in last
    assert "mlgpf" not in last and "lspc" not in last


def _p1_rows(N: int = 579, seed: int = 0) -> dict[str, np.ndarray]:
    """Three families' P@1 rows: geneml, then mllspc one test point behind, then mlgpf two behind."""
    hits = (np.random.default_rng(seed).random(N) < 0.78).astype(float)
    behind = [np.flatnonzero(hits)[:1], np.flatnonzero(hits)[:2]]
    rows = {"geneml": hits}
    for name, drop in zip(("mllspc", "mlgpf"), behind):
        rows[name] = hits.copy()
        rows[name][drop] = 0.0
    return rows


def test_a_lead_within_the_noise_is_a_tie_and_each_measure_has_its_own_best() -> None:
    """GenEML ahead by one and two test points of 579 by P@1 ties with both; by P@5, where mlgpf
    leads by 10 points, mlgpf is named best; the test is stated once."""
    p1 = _p1_rows()
    p5 = {name: np.full(579, 0.2) for name in p1}
    p5["mlgpf"] = np.full(579, 0.4)
    results = pd.DataFrame({"family": list(p1), "P@1": [100 * v.mean() for v in p1.values()],
                            "P@5": [100 * v.mean() for v in p5.values()], "error": ["", "", ""]})
    rows = {name: {"P@1": p1[name], "P@5": p5[name]} for name in p1}
    lines = report.best_lines(results, rows)
    assert lines[0].startswith("Best family per measure, by a paired bootstrap over the 579 test rows")
    assert lines[2].startswith("- P@1: no single best; tied within the test split's noise: geneml ")
    assert "mllspc" in lines[2] and "mlgpf" in lines[2] and "best **" not in lines[2]
    assert lines[3] == f"- P@5: best **mlgpf** ({40.0:.2f}), beyond the test split's noise."
    from mlgp.comparison.best import best_table

    table = best_table(results, rows).set_index("measure")
    assert table.loc["P@1", "families"] == ["geneml", "mllspc", "mlgpf"] and table.loc["P@5", "families"] == ["mlgpf"]


def test_a_clear_lead_is_named_best_and_a_family_without_rows_is_untested() -> None:
    hits = _p1_rows()["geneml"]
    results = pd.DataFrame({"family": ["a", "b", "c"], "nDCG@3": [90.0, 50.0, 95.0], "error": ["", "", ""]})
    rows = {"a": {"nDCG@3": np.full(579, 0.9)}, "b": {"nDCG@3": hits * 0.5 / hits.mean()}}
    line = report.best_lines(results, rows)[-1]
    assert line == "- nDCG@3: best **a** (90.00), beyond the test split's noise (untested: c)."


def _png_size(path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_the_traces_figure(tmp_path) -> None:
    """A P@1 panel, then one panel per family's objective on its own axis (their scales differ);
    a family without a trace is a square at (fit seconds, P@1) on the P@1 panel only; the title
    names the data set; 5.2 × 4 inches a panel at 110 dpi."""
    traces = TRACES.copy()
    traces.loc[(traces["family"] == "geneml") & (traces["quantity"] == "objective"), "value"] = -100.0
    fig = report._traces_figure(RESULTS, traces, "mlgp compare: emotions")
    p1, mlgpf, geneml = [ax for ax in fig.axes if ax.get_visible()]
    assert "emotions" in fig._suptitle.get_text()
    assert [ax.get_ylabel() for ax in fig.axes] == ["test P@1 (%)", "mlgpf: ELBO per training point",
                                                    "geneml: log posterior per training point"]
    lines = {line.get_label(): line.get_ydata().tolist() for line in p1.get_lines()}
    assert lines == {"mlgpf": [40.0, 50.0], "geneml": [45.0]}
    assert [line.get_ydata().tolist() for line in mlgpf.get_lines()] == [[-9.0, -8.0]]
    assert [line.get_ydata().tolist() for line in geneml.get_lines()] == [[-100.0]]
    low, high = mlgpf.get_ylim()
    assert -9.0 - 1 < low and high < -8.0 + 1  # its own scale: not stretched to GenEML's -100
    squares = [c for c in p1.collections]
    assert len(squares) == 1 and squares[0].get_label() == "lspc"
    np.testing.assert_array_equal(squares[0].get_offsets(), [[1.0, 50.25]])
    assert not mlgpf.collections and not geneml.collections
    colours = {line.get_label(): line.get_color() for line in p1.get_lines()}
    assert colours["mlgpf"] != colours["geneml"]
    save(fig, tmp_path / "t.png")
    assert _png_size(tmp_path / "t.png") == (round(3 * 5.2 * report.DPI), round(4 * report.DPI))


def test_the_traces_figure_without_traces_has_the_p1_panel_only() -> None:
    fig = report._traces_figure(RESULTS, TRACES.iloc[:0])
    assert len(fig.axes) == 1 and len(fig.axes[0].collections) == 3
    fig = report._traces_figure(RESULTS, TRACES[TRACES["quantity"] == "P@1"])  # no objective traced
    assert len(fig.axes) == 1 and len(fig.axes[0].get_lines()) == 2


@pytest.mark.parametrize("entries", ["all", "top5"])
def test_the_reliability_figure(tmp_path, entries) -> None:
    """Top-5 probabilities in 0.3–0.8: linear axes over that range, not 0 to 1; all entries,
    spanning three decades: logarithmic axes over them; the same range on both axes; the title names
    the data set."""
    values = {"all": ([0.002, 0.5, 0.01, 0.3], [0.001, 0.6, 0.02, 0.25]),
              "top5": ([0.35, 0.75, 0.4, 0.6], [0.3, 0.8, 0.45, 0.5])}[entries]
    reliability = pd.DataFrame({"family": ["mlgpf"] * 2 + ["lspc"] * 2, "entries": [entries] * 4,
                                "mean_probability": values[0], "frequency": values[1], "count": [10] * 4})
    fig = report._reliability_figure(reliability, "mlgp compare: cal500")
    assert "cal500" in fig._suptitle.get_text()
    shown = fig.axes[0 if entries == "all" else 1]
    empty = fig.axes[1 if entries == "all" else 0]
    low, high = shown.get_xlim()
    assert shown.get_ylim() == (low, high)
    if entries == "top5":
        assert shown.get_xscale() == "linear" and 0.2 < low < 0.3 and 0.8 < high < 0.9
    else:
        assert shown.get_xscale() == shown.get_yscale() == "log" and 0.0005 < low < 0.001 and 0.6 < high <= 1
    curves = {line.get_label(): line.get_xdata().tolist() for line in shown.get_lines()[1:]}  # [0]: the diagonal
    assert curves == {"mlgpf": values[0][:2], "lspc": values[0][2:]}
    assert len(empty.get_lines()) == 1 and empty.get_legend() is None
    save(fig, tmp_path / "c.png")
    assert _png_size(tmp_path / "c.png") == (round(10.4 * report.DPI), round(4.6 * report.DPI))
