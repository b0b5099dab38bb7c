"""``mlgp compare``'s command line: what it hands :func:`mlgp.compare` and the report, with both stubbed
(no family is fitted here; ``test_compare.py`` runs them)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

import mlgp.comparison as comparison
import mlgp.comparison.report as report
from mlgp.cli import main


@pytest.fixture()
def calls(monkeypatch, tmp_path_factory) -> dict:
    """Stubs :func:`mlgp.comparison.compare` and ``write_report``; records their arguments. A family
    named ``broken`` gets an error in the results. ``$MLGP_DATA`` is an empty folder (``seen["home"]``),
    which the command resolves before handing it on."""
    seen: dict = {"home": tmp_path_factory.mktemp("home")}
    monkeypatch.setenv("MLGP_DATA", str(seen["home"]))

    def compare(models, **kwargs):
        seen["models"], seen["compare"] = models, kwargs
        families = models.split(",")
        results = pd.DataFrame({"family": families, "P@1": [50.0] * len(families),
                                "error": ["ValueError: no" if f == "broken" else "" for f in families]})
        return SimpleNamespace(results=results, rows={})

    def write_report(result, out, title="", command=None):
        seen["report"] = dict(out=out, title=title, command=command)
        return {"results.csv": Path(out) / "results.csv"}

    monkeypatch.setattr(comparison, "compare", compare)
    monkeypatch.setattr(comparison, "write_report", write_report)
    monkeypatch.setattr(comparison, "table_text", lambda results: "TABLE")
    monkeypatch.setattr(comparison, "probability_table_text", lambda results: "PROBABILITIES")
    monkeypatch.setattr(report, "best_lines", lambda results, rows=None: ["BEST"])
    return seen


def test_the_defaults_handed_to_compare(calls, tmp_path, capsys) -> None:
    out = tmp_path / "c"
    assert main(["compare", "--dataset", "tiny", "--models", "frequency,lspc", "--out", str(out)]) == 0
    kwargs = calls["compare"]
    assert calls["models"] == "frequency,lspc"
    assert kwargs["dataset"] == "tiny" and kwargs["train"] is None and kwargs["test"] is None
    assert kwargs["seed"] == 0 and kwargs["budget"] is None and kwargs["out"] == out
    assert kwargs["isolate"] is True  # each family in a fresh process unless --in-process
    assert "quiet_tensorflow" not in kwargs  # the library keeps TensorFlow's lines out itself (mlgp.quiet)
    assert kwargs["settings"] == {} and kwargs["data_home"] == calls["home"]
    assert kwargs["progress"] is True  # a bar on a terminal, else a line every few seconds (the family decides)
    printed = capsys.readouterr().out
    assert printed.splitlines()[:4] == ["TABLE", "", "PROBABILITIES", "BEST"]
    assert printed.splitlines()[-1] == f"written: {out / 'results.csv'}"


def test_the_options_handed_to_compare(calls, tmp_path) -> None:
    argv = ["--verbose", "compare", "--dataset", "tiny", "--models", "frequency", "--seed", "7", "--budget", "2.5",
            "--in-process", "--set", "frequency.smoothing=2", "--data-home", str(tmp_path), "--out",
            str(tmp_path / "c")]
    assert main(argv) == 0
    kwargs = calls["compare"]
    assert kwargs["seed"] == 7 and kwargs["budget"] == 2.5 and kwargs["data_home"] == tmp_path
    assert kwargs["isolate"] is False and "quiet_tensorflow" not in kwargs  # --verbose: TF_CPP_MIN_LOG_LEVEL=0
    assert kwargs["settings"] == {"frequency": {"smoothing": 2}}


def test_the_report_records_the_command_as_given(calls, tmp_path) -> None:
    """The command line written into report.md is the one given to ``main`` (quoted for a shell),
    whatever the process's own ``sys.argv`` holds, and the title names the data."""
    out = tmp_path / "a b"
    argv = ["--verbose", "compare", "--dataset", "tiny", "--models", "frequency", "--out", str(out)]
    assert main(argv) == 0
    assert calls["report"] == dict(out=out, title="mlgp compare: tiny",
                                   command=f"mlgp --verbose compare --dataset tiny --models frequency --out '{out}'")
    train = tmp_path / "train.txt"
    assert main(["compare", "--train", str(train), "--test", str(tmp_path / "test.txt"), "--models", "frequency",
                 "--out", str(out)]) == 0
    assert calls["report"]["title"] == "mlgp compare: train.txt"
    assert calls["compare"]["train"] == train and calls["compare"]["dataset"] is None


@pytest.mark.parametrize("given", [["--train", "a.txt"], ["--dataset", "tiny", "--test", "b.txt"]])
def test_train_and_test_go_together(calls, tmp_path, capsys, given) -> None:
    assert main(["compare", *given, "--models", "frequency", "--out", str(tmp_path / "c")]) == 2
    assert capsys.readouterr().err.strip() == "mlgp: error: --train and --test go together"
    assert "compare" not in calls


def test_the_exit_status_is_1_when_a_family_failed(calls, tmp_path) -> None:
    base = ["compare", "--dataset", "tiny", "--out", str(tmp_path / "c")]
    assert main([*base, "--models", "frequency,broken"]) == 1
    assert main([*base, "--models", "frequency"]) == 0


def test_out_is_required(calls, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["compare", "--dataset", "tiny", "--models", "frequency"])
    assert exc.value.code == 2 and "--out" in capsys.readouterr().err
    assert "compare" not in calls


@pytest.mark.parametrize("setting", ["frequency.=2", "smoothing=2"])
def test_a_setting_names_its_family_and_parameter(calls, tmp_path, capsys, setting) -> None:
    argv = ["compare", "--dataset", "tiny", "--models", "frequency", "--set", setting, "--out", str(tmp_path / "c")]
    assert main(argv) == 2
    assert capsys.readouterr().err.strip() == f"mlgp: error: --set takes FAMILY.NAME=VALUE here, got {setting!r}"
    assert "compare" not in calls
