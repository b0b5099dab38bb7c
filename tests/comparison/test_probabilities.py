"""The probability columns of a comparison: equal to the metrics computed directly, tuned F1 from
thresholds chosen on the other half of the test rows, and an empty row with a reason for a family
without probabilities."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.metrics import f1_score, log_loss

from mlgp.baselines import MLkNN
from mlgp.comparison.probabilities import _halves, probability_row
from mlgp.comparison.report import best_lines, probability_table_text
from mlgp.metrics import select_thresholds

from _probes import Ranker


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(5)
    X = rng.random((300, 4))
    logits = X @ rng.normal(size=(4, 6)) * 3 - 2
    Y = sp.csr_matrix((rng.random((300, 6)) < 1 / (1 + np.exp(-logits))).astype(float))
    model = MLkNN(n_neighbors=7).fit(X[:200], Y[:200])
    return model, X[200:], Y[200:]


def test_columns_equal_the_metrics_computed_directly(fitted) -> None:
    model, X, Y = fitted
    row, bins = probability_row(model, X, Y)
    P = model.predict_proba(X)
    y = Y.toarray()
    assert row["NLL"] == pytest.approx(log_loss(y.ravel(), P.ravel(), labels=[0, 1]), rel=1e-12)
    assert row["LPD"] == pytest.approx(-6 * row["NLL"], rel=1e-12)
    assert row["microF1@0.5"] == pytest.approx(100 * f1_score(y, P >= 0.5, average="micro", zero_division=0))
    assert row["macroF1@0.5"] == pytest.approx(100 * f1_score(y, P >= 0.5, average="macro", zero_division=0))
    assert row["ECE_low"] <= row["ECE_high"]
    assert set(bins) == {"all", "top5"} and sum(bins["all"]["count"]) == Y.shape[0] * 6
    assert sum(bins["top5"]["count"]) == Y.shape[0] * 5


def test_tuned_f1_applies_each_halfs_thresholds_to_the_other_half(fitted) -> None:
    model, X, Y = fitted
    row, _ = probability_row(model, X, Y, seed=3)
    P, y = model.predict_proba(X), Y.toarray()
    a, b = _halves(Y.shape[0], 3)
    assert np.intersect1d(a, b).size == 0 and a.size + b.size == Y.shape[0]
    for column, average, per_label in (("microF1_tuned", "micro", False), ("macroF1_tuned", "macro", True)):
        decided = np.zeros_like(y)
        for fit_rows, apply_rows in ((a, b), (b, a)):
            t = select_thresholds(y[fit_rows], P[fit_rows], average=average, per_label=per_label).thresholds
            decided[apply_rows] = P[apply_rows] >= t
        expected = 100 * f1_score(y, decided, average=average, zero_division=0)
        assert row[column] == pytest.approx(expected, rel=1e-12), column


def test_a_family_without_probabilities_gets_empty_cells_and_a_reason(fitted) -> None:
    model, X, Y = fitted
    row, bins = probability_row(Ranker().fit(X, Y), X, Y)
    assert row == {"proba_note": "Ranker has no predict_proba"} and bins == {}
    good, _ = probability_row(model, X, Y)
    results = pd.DataFrame([{"family": "frequency", "P@1": 10.0, **good},
                            {"family": "ranker", "P@1": 20.0, **row}])
    text = probability_table_text(results)
    assert "Ranker has no predict_proba" in text and "nan" not in text.lower()
    lines = best_lines(results)  # no per-row values: the highest of each, said to be untested
    assert lines[0] == "- P@1: highest **ranker** (20.00); not tested (no per-row values)."
    assert lines[1].startswith("- LPD: highest **frequency**") and lines[1].endswith("not tested (no per-row values).")
    assert lines[2].endswith("none.")


class Half(Ranker):
    """Every label at probability exactly 0.5: predicted present at the 0.5 threshold."""

    def _proba_block(self, xb):
        return np.full((xb.shape[0], self.n_labels_), 0.5)


def test_f1_at_one_half_counts_a_probability_of_exactly_one_half_as_present(fitted) -> None:
    _, X, Y = fitted
    row, _ = probability_row(Half().fit(X, Y), X, Y)
    y = Y.toarray()
    assert row["microF1@0.5"] == pytest.approx(100 * f1_score(y, np.ones_like(y), average="micro"))


@pytest.mark.parametrize("limit, interval", [(600, True), (599, False)])
def test_the_ece_interval_up_to_its_number_of_entries(fitted, monkeypatch, limit, interval) -> None:
    """ECE's bootstrap interval is computed for test sets of at most MAX_BOOTSTRAP_ENTRIES
    (point, label) entries (here 100 × 6 = 600); ``proba_seconds`` is the seconds of ``predict_proba``."""
    import time

    from mlgp.comparison import probabilities

    model, X, Y = fitted
    monkeypatch.setattr(probabilities, "MAX_BOOTSTRAP_ENTRIES", limit)
    t0 = time.perf_counter()
    row, _ = probability_row(model, X, Y)
    assert ("ECE_low" in row and "ECE_high" in row) == interval
    assert 0 <= row["proba_seconds"] <= time.perf_counter() - t0


def test_ece_is_stated_with_its_debiased_value_and_the_interval_of_that(fitted) -> None:
    """The interval is the basic bootstrap interval of the debiased ECE (which it holds), the report
    says so, and ECE@k is given in both binnings."""
    from mlgp.comparison.report import PROBABILITY_NOTE
    from mlgp.metrics import calibration_error_bootstrap, evaluate_proba

    model, X, Y = fitted
    row, _ = probability_row(model, X, Y)
    boot = calibration_error_bootstrap(Y, model.predict_proba(X), 15)
    assert (row["ECE"], row["ECE_debiased"], row["ECE_low"], row["ECE_high"]) == pytest.approx(tuple(boot), rel=1e-12)
    assert row["ECE_low"] <= row["ECE_debiased"] <= row["ECE_high"]
    uniform = evaluate_proba(Y, model.predict_proba(X), ks=(1, 5)).ece_at_k_uniform
    assert row["ECE@5 (10 uniform)"] == pytest.approx(uniform[5], rel=1e-12)
    text = probability_table_text(pd.DataFrame([{"family": "mlknn", **row}]))
    assert f"{row['ECE_debiased']:.4f} [{row['ECE_low']:.4f}, {row['ECE_high']:.4f}]" in text
    assert "ECE@5 (10 uniform)" in text
    assert "basic bootstrap interval" in PROBABILITY_NOTE and "10 equal-width bins" in PROBABILITY_NOTE
