"""Bugs an audit planted in the comparison that no other test caught: a resume key that leaves out
the training features, and a P@k trace validated on another split than the test split."""

from __future__ import annotations

import dataclasses

import numpy as np
from _compare_stubs import tiny

import mlgp
from mlgp.fingerprint import data_fingerprint
from mlgp.geneml import GenEML


def _other_train_X(ds):
    """``ds`` with one stored value of the training features changed (the labels unchanged)."""
    X = ds.train.X.copy()
    X.data[0] += 1.0
    return dataclasses.replace(ds, train=dataclasses.replace(ds.train, X=X))


# 5. the resume key holds the training features --------------------------------------------------------------

def test_data_fingerprint_changes_with_one_value_of_the_training_features() -> None:
    ds = tiny()
    other = _other_train_X(ds)
    before = data_fingerprint(ds.train.X, ds.train.Y, ds.test.X, ds.test.Y)
    assert data_fingerprint(ds.train.X.toarray(), ds.train.Y, ds.test.X, ds.test.Y) == before  # dense or sparse
    assert data_fingerprint(other.train.X, other.train.Y, other.test.X, other.test.Y) != before


def test_compare_does_not_resume_a_run_made_on_other_training_features(tmp_path) -> None:
    ds = tiny()
    first = mlgp.compare("frequency", dataset=ds, out=tmp_path, isolate=False).results.set_index("family")
    assert not first.loc["frequency", "resumed"]
    same = mlgp.compare("frequency", dataset=ds, out=tmp_path, isolate=False).results.set_index("family")
    assert same.loc["frequency", "resumed"]  # the key does resume a run on the same data
    # frequency ignores X, but its run belongs to other data: fitted again
    other = mlgp.compare("frequency", dataset=_other_train_X(ds), out=tmp_path, isolate=False).results
    assert not other.set_index("family").loc["frequency", "resumed"]


# 6. the P@k trace is validated on the test split ---------------------------------------------------------------

def test_traced_precision_at_the_last_step_is_the_test_precision() -> None:
    c = mlgp.compare("geneml", dataset=tiny(), isolate=False, settings={"geneml": {"max_iter": 3}})
    row = c.results.set_index("family").loc["geneml"]
    assert not row["error"]
    trace = c.traces[c.traces["family"] == "geneml"]
    for k in (1, 3, 5):
        steps = trace[trace["quantity"] == f"P@{k}"].sort_values("step")
        assert len(steps) == 3
        assert steps["value"].iloc[-1] == row[f"P@{k}"]


def test_families_that_trace_get_the_test_split_as_validation(monkeypatch) -> None:
    ds = tiny()
    received = []
    fit = GenEML.fit

    def recording(self, X, Y, *args, **kwargs):
        received.append(kwargs.get("validation"))
        return fit(self, X, Y, *args, **kwargs)

    monkeypatch.setattr(GenEML, "fit", recording)
    mlgp.compare("geneml", dataset=ds, isolate=False, settings={"geneml": {"max_iter": 1}})
    given = [v for v in received if v is not None]  # compare's fit (refits for tuned thresholds take none)
    assert received[0] is not None and len(given) == 1
    X_val, Y_val = given[0]
    for given, test in ((X_val, ds.test.X), (Y_val, ds.test.Y)):
        assert given.shape == test.shape
        np.testing.assert_array_equal(np.asarray(given.todense()), test.toarray())
