"""Each test row's P@1, P@5 and log predictive density (:mod:`mlgp.comparison.rows`): equal on
average to the columns of the results, kept beside the run file, read back on resume, and a missing
or broken rows file fits the family again."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from _compare_stubs import tiny
from sklearn.metrics import log_loss

import mlgp
from mlgp.comparison.rows import log_density_rows, ranking_rows, rows_file, save_rows
from mlgp.metrics import evaluate_proba
from mlgp.scores import topk


@pytest.mark.parametrize("name", ["frequency", "mlknn"])
def test_the_rows_average_to_the_columns(name) -> None:
    from mlgp.comparison.isolation import run_one
    from mlgp.families import make_estimator

    ds = tiny()
    row, _ = run_one(name, make_estimator(name), ds, ds.inverse_propensity(), False)
    rows = {m: np.asarray(v) for m, v in row["_rows"].items()}
    ranking = [f"{m}@{k}" for m in ("P", "nDCG", "PSP") for k in (1, 3, 5)]
    assert sorted(rows) == sorted(ranking + ["LPD"]) and all(v.shape == (20,) for v in rows.values())
    assert set(np.unique(rows["P@1"])) <= {0.0, 1.0}
    for measure in ranking:  # PSP@k a ratio of means: its rows share the mean denominator
        assert 100 * rows[measure].mean() == pytest.approx(row[measure], rel=1e-12), measure
    assert rows["LPD"].mean() == pytest.approx(row["LPD"], rel=1e-12)


def test_the_row_log_density_is_minus_the_log_loss_of_each_row() -> None:
    """Against scikit-learn's ``log_loss`` row by row, with probabilities 0 and 1 (clipped alike)."""
    rng = np.random.default_rng(2)
    P = rng.random((30, 7))
    P[0, :3] = [0.0, 1.0, 1.0]
    y = (rng.random((30, 7)) < P).astype(float)
    y[0, 0], y[0, 1] = 1.0, 0.0  # a positive given probability 0, a negative given 1
    Y = sp.csr_matrix(y)
    rows = log_density_rows(Y, P)
    expected = [-7 * log_loss(y[i], P[i], labels=[0, 1]) for i in range(30)]
    np.testing.assert_allclose(rows, expected, rtol=1e-12)
    assert rows.mean() == pytest.approx(evaluate_proba(Y, P, n_bins=None).log_predictive_density, rel=1e-12)


def test_ranking_rows_are_hits_of_the_top_labels() -> None:
    Y = sp.csr_matrix(np.array([[1, 0, 0, 1, 0, 1], [0, 1, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0]], dtype=float))
    scores = np.array([[6, 5, 4, 3, 2, 1], [6, 5, 4, 3, 2, 1], [1, 2, 3, 4, 5, 6]], dtype=float)
    rows = ranking_rows(Y, topk(scores, 5))
    assert rows["P@1"].tolist() == [1.0, 0.0, 0.0]
    assert rows["P@5"].tolist() == [2 / 5, 1 / 5, 0.0]
    # nDCG@3 of row 0: hits at ranks 1 and 4 → 1 / (1 + 1/log2(3) + 1/2)
    np.testing.assert_allclose(rows["nDCG@3"], [1 / (1 + 1 / np.log2(3) + 0.5), 1 / np.log2(3), 0.0], rtol=1e-12)
    assert "PSP@1" not in rows  # no propensities
    assert sorted(ranking_rows(Y[:, :4], topk(scores[:, :4], 4))) == ["P@1", "P@3", "nDCG@1", "nDCG@3"]  # K < 5


def test_psp_rows_average_to_psp() -> None:
    """PSP@k is a ratio of means; its rows (each row's weighted hits over the mean best) average to it."""
    from mlgp.metrics import psprecision_at_k

    rng = np.random.default_rng(4)
    Y = sp.csr_matrix((rng.random((25, 8)) < 0.3).astype(float))
    scores, w = rng.random((25, 8)), 1.0 + rng.random(8) * 3
    rows = ranking_rows(Y, topk(scores, 5), w)
    for k in (1, 3, 5):
        assert rows[f"PSP@{k}"].mean() == pytest.approx(psprecision_at_k(Y, scores, k, w), rel=1e-12)


def _compare(out, lines=None, models="frequency"):
    return mlgp.compare(models, dataset=tiny(), out=out, isolate=False,
                        echo=None if lines is None else lines.append)


def test_the_rows_are_kept_and_read_back_on_resume(tmp_path) -> None:
    first = _compare(tmp_path, models="frequency,mlknn")
    assert sorted(first.rows) == ["frequency", "mlknn"]
    assert rows_file(tmp_path, "mlknn").is_file()
    stamp = rows_file(tmp_path, "mlknn").stat().st_mtime_ns
    again = _compare(tmp_path, models="frequency,mlknn")
    assert again.results["resumed"].all() and rows_file(tmp_path, "mlknn").stat().st_mtime_ns == stamp
    for family, rows in first.rows.items():
        assert sorted(again.rows[family]) == sorted(rows)
        for measure, values in rows.items():
            np.testing.assert_array_equal(again.rows[family][measure], values)


def _truncate(path) -> None:
    path.write_bytes(path.read_bytes()[:50])


def _rewrite(change):
    def apply(path) -> None:
        from mlgp.files import read_npz

        rows = read_npz(path)
        change(rows)
        save_rows(path.parent.parent, "frequency", rows)
    return apply


def _halves(rows) -> None:
    """One P@1 row of 1 and one of 0 both made 1/2: the mean stays."""
    v = rows["P@1"]
    v[np.flatnonzero(v == 1)[0]] = 0.5
    v[np.flatnonzero(v == 0)[0]] = 0.5


def _off_the_fifths(rows) -> None:
    """Two P@5 rows moved by ±0.1 (off the multiples of 1/5): the mean stays."""
    v = rows["P@5"]
    i = np.flatnonzero(v > 0.1)[0]
    j = next(j for j in range(len(v)) if j != i and v[j] < 0.9)
    v[i] -= 0.1
    v[j] += 0.1


def _positive_lpd(rows) -> None:
    """One LPD row made +0.1, another lowered to keep the mean."""
    v = rows["LPD"]
    v[1] -= 0.1 - v[0]
    v[0] = 0.1


#: a change to the rows file → what the line that says why names
BROKEN = {
    "missing": (lambda path: path.unlink(), "rows file frequency.rows.npz is missing"),
    "truncated": (_truncate, "rows file frequency.rows.npz does not read"),
    "LPD rows missing": (_rewrite(lambda rows: rows.pop("LPD")), "'nDCG@5'], not ['LPD', "),
    "an unknown measure": (_rewrite(lambda rows: rows.update({"P@7": rows["P@1"]})), "'P@5', 'P@7', 'PSP@1'"),
    "the nDCG rows of an older run missing": (_rewrite(lambda rows: rows.pop("nDCG@3")), "'nDCG@5'], not ['LPD', "),
    "an nDCG above 1": (_rewrite(lambda rows: rows["nDCG@3"].__setitem__(0, 1.5)), "the nDCG@3 rows are not in [0, 1]"),
    "a negative PSP": (_rewrite(lambda rows: rows["PSP@1"].__setitem__(0, -0.5)), "the PSP@1 rows are not all ≥ 0"),
    "one row short": (_rewrite(lambda rows: rows.update({"P@1": rows["P@1"][:-1]})), "the P@1 rows have shape (19,)"),
    "a P@1 of one half": (_rewrite(_halves), "the P@1 rows are not multiples of 1/1"),
    "a P@5 not a fifth": (_rewrite(_off_the_fifths), "the P@5 rows are not multiples of 1/5"),
    "a positive LPD": (_rewrite(_positive_lpd), "the LPD rows are not all ≤ 0"),
    "a NaN": (_rewrite(lambda rows: rows["LPD"].__setitem__(0, np.nan)), "the LPD rows are not all finite"),
    "another mean": (_rewrite(lambda rows: rows["P@1"].__setitem__(slice(None), 1.0 - rows["P@1"])),
                     "the P@1 rows have the mean"),
    "LPD rows of another family": (_rewrite(lambda rows: rows.update({"LPD": rows["LPD"] - 0.5})),
                                   "the LPD rows have the mean"),
    "integers": (lambda path: _write_npz(path), "dtype int64"),
}


def _write_npz(path) -> None:
    """The rows file with P@1 as 0/1 integers (``save_rows`` would make them floats)."""
    from mlgp.files import read_npz

    rows = read_npz(path)
    rows["P@1"] = rows["P@1"].astype(np.int64)
    with open(path, "wb") as f:
        np.savez(f, **rows)


@pytest.fixture()
def no_ece_interval(monkeypatch) -> None:
    """No bootstrap interval of ECE (the slowest part of scoring a family; not looked at here)."""
    import mlgp.comparison.probabilities as probabilities

    monkeypatch.setattr(probabilities, "MAX_BOOTSTRAP_ENTRIES", 0)


@pytest.mark.parametrize("change, why", list(BROKEN.values()), ids=list(BROKEN))
def test_a_missing_or_broken_rows_file_fits_the_family_again(tmp_path, no_ece_interval, change, why) -> None:
    first = _compare(tmp_path)
    change(rows_file(tmp_path, "frequency"))
    lines: list[str] = []
    again = _compare(tmp_path, lines)
    assert not again.results["resumed"].any()
    said = [line for line in lines if "not resuming" in line]
    assert len(said) == 1 and why in said[0] and said[0].endswith("fitting again"), lines
    for measure, values in first.rows["frequency"].items():
        np.testing.assert_array_equal(again.rows["frequency"][measure], values)
    assert _compare(tmp_path).results["resumed"].all()  # the rows file written again is whole


def test_a_family_that_failed_has_no_rows(tmp_path, monkeypatch) -> None:
    from mlgp.baselines import LabelFrequency

    def broken(self, X, Y):
        raise RuntimeError("planted failure")

    monkeypatch.setattr(LabelFrequency, "fit", broken)
    result = _compare(tmp_path)
    assert result.rows == {} and not rows_file(tmp_path, "frequency").exists()
