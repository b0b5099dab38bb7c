"""``geneml_missing_labels.summary``: means over seeds, and each fit's P@1 drop paired with the
same method and seed at ρ = 0."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _scripts import load_script


@pytest.fixture(scope="module")
def script():
    return load_script("geneml_missing_labels")


def _row(fraction, seed, p1, hiding="uniform", method="m"):
    return dict(dataset="d", hiding=hiding if fraction else "none", fraction=fraction, method=method, seed=seed,
                **{"P@1": p1, "P@3": 0.0, "P@5": 0.0, "PSP@1": 0.0, "PSP@3": 0.0, "PSP@5": 0.0, "train s": 1.0})


def test_the_drop_pairs_each_fit_with_its_own_seed_at_rho_zero(script):
    table = pd.DataFrame([_row(0.0, 0, 60.0), _row(0.0, 1, 62.0), _row(0.4, 1, 59.0)])
    out = script.summary(table).set_index("fraction")
    assert out.loc[0.0, "seeds"] == 2 and out.loc[0.0, "P@1"] == 61.0 and out.loc[0.0, "P@1 drop"] == 0.0
    assert out.loc[0.4, "P@1 drop"] == 3.0  # 62 − 59 for seed 1, not the unpaired 61 − 59


def test_a_fit_without_its_rho_zero_partner_has_no_drop(script):
    out = script.summary(pd.DataFrame([_row(0.0, 0, 60.0), _row(0.4, 5, 59.0)])).set_index("fraction")
    assert np.isnan(out.loc[0.4, "P@1 drop"])


@pytest.mark.parametrize("text, parsed", [("em:0.9", ("em", 0.9, "global")),
                                          ("gibbs:0.5:covariates", ("gibbs", 0.5, "covariates"))])
def test_methods_parse(script, text, parsed):
    assert script.parse_method(text) == parsed


@pytest.mark.parametrize("text", ["em", "vb:0.5", "em:0.5:cov", "em:x"])
def test_bad_methods_are_refused(script, text):
    with pytest.raises(ValueError, match="inference:exposure_init|could not convert"):
        script.parse_method(text)


@pytest.mark.parametrize("fractions", ["1.5", "0,-0.2", "1"])
def test_fractions_outside_zero_one_are_refused(script, fractions, capsys):
    with pytest.raises(SystemExit, match="2"):
        script.main(["--fractions", fractions])
    assert "--fractions must lie in [0, 1)" in capsys.readouterr().err


def test_relevance_prior_adds_an_ard_twin_of_each_geneml_method(script, data_home, tmp_path, monkeypatch):
    import mlgp.geneml

    seen = []

    class Recording(mlgp.geneml.GenEML):
        def fit(self, X, Y, **kw):
            if self.calibration is not None:  # not a copy fitted for the calibration map (calibration=None)
                seen.append(self.relevance_prior)
            return super().fit(X, Y, **kw)

    monkeypatch.setattr(mlgp.geneml, "GenEML", Recording)
    monkeypatch.setenv("MLGP_DATA", str(data_home))  # the script reads the data home from it
    script.main(["--quick", "--methods", "em:0.5", "--relevance-prior", "2,0.5", "--fractions", "0",
                 "--out", str(tmp_path)])
    runs = pd.read_csv(tmp_path / "runs.csv")
    assert sorted(runs["method"]) == sorted(["GenEML exposure μ₀=0.5 (em)", "GenEML no exposure (em)",
                                             "GenEML exposure μ₀=0.5 (em) + ARD", "GenEML no exposure (em) + ARD",
                                             "LabelFrequency"])
    assert seen == [None, None, (2.0, 0.5), (2.0, 0.5)]


@pytest.mark.parametrize("text", ["1", "1,2,3", "a,1"])
def test_relevance_prior_is_two_numbers(script, text, capsys):
    with pytest.raises(SystemExit) as exit_info:
        script.main(["--quick", "--relevance-prior", text])
    assert exit_info.value.code == 2 and "give two numbers A,B" in capsys.readouterr().err
