"""What a newcomer meets first on the command line: a text ranking that ``evaluate`` reads, scoring
against a labelled file, one-based labels named, the parameters and seed of a fit echoed, typos
answered with a suggestion and errors worded for the shell."""

from __future__ import annotations

import re

import numpy as np
import pytest

import mlgp.data
from mlgp.cli import main
from mlgp.data.io import write_labelled
from mlgp.metrics import evaluate
from mlgp.scores import load_scores


def _status(argv) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse's usage errors
        return exc.code


def _last_error(capsys) -> str:
    return capsys.readouterr().err.strip().splitlines()[-1]


def test_a_txt_ranking_from_predict_is_scored_by_evaluate_as_its_npz(home, tmp_path, capsys) -> None:
    model = tmp_path / "m.npz"
    data = ["--dataset", "tiny", "--data-home", str(home)]
    assert main(["fit", "mllspc", *data, "--out", str(model), "--set", "n_basis=30"]) == 0
    for out in ("t.txt", "t.npz"):
        assert main(["predict", str(model), *data, "--top-k", "5", "--out", str(tmp_path / out)]) == 0
    txt, npz = load_scores(tmp_path / "t.txt"), load_scores(tmp_path / "t.npz")
    np.testing.assert_array_equal(txt.indices, npz.indices)
    capsys.readouterr()
    tables = []
    for out in ("t.txt", "t.npz"):
        assert main(["evaluate", str(tmp_path / out), *data]) == 0
        tables.append(capsys.readouterr().out.splitlines()[2:])
    assert tables[0] == tables[1] and tables[0][0].split() == ["@1", "@3", "@5"]


def test_predict_takes_the_format_from_the_ending_and_refuses_a_mismatch(home, tmp_path, capsys) -> None:
    model = tmp_path / "m.npz"
    assert main(["fit", "frequency", "--dataset", "tiny", "--data-home", str(home), "--out", str(model)]) == 0
    pred = ["predict", str(model), "--dataset", "tiny", "--data-home", str(home), "--top-k", "2"]
    assert _status([*pred, "--out", str(tmp_path / "t.npz"), "--format", "txt"]) == 2
    assert _last_error(capsys).endswith("a --format txt score file ends in .txt")
    assert _status([*pred, "--out", str(tmp_path / "t.csv")]) == 2
    assert _last_error(capsys).endswith("a top-k score file ends in .npz or .txt")
    assert not (tmp_path / "t.npz").exists() and not (tmp_path / "t.csv").exists()


def test_evaluate_scores_against_a_labelled_file(home, tmp_path, capsys) -> None:
    ds = mlgp.data.load("tiny", home)
    test = tmp_path / "test.svm"
    write_labelled(test, ds.test.X, ds.test.Y)
    rng = np.random.default_rng(0)
    scores = rng.normal(size=ds.test.Y.shape)
    np.save(tmp_path / "s.npy", scores)
    capsys.readouterr()
    assert main(["evaluate", str(tmp_path / "s.npy"), "--data", str(test), "--csv", str(tmp_path / "t.csv")]) == 0
    out = capsys.readouterr().out
    assert f"propensities from {test}'s own labels with A=0.55, B=1.5" in out
    table = evaluate(ds.test.Y, scores, ks=[1, 3, 5], percent=True,
                     inv_propensity=mlgp.metrics.inverse_propensity(ds.test.Y, 0.55, 1.5))
    import pandas as pd

    written = pd.read_csv(tmp_path / "t.csv", index_col=0)
    np.testing.assert_allclose(written.to_numpy(), table.to_numpy(), rtol=1e-12)
    assert _status(["evaluate", str(tmp_path / "s.npy"), "--data", str(test), "--dataset", "tiny"]) == 2


def test_one_based_labels_are_named_and_read_with_the_option(home, tmp_path, capsys) -> None:
    """A training file whose labels count from 1 is refused (it used to gain a label 0 that never
    occurs); ``--labels-from 1`` reads it with the dataset's own K."""
    ds = mlgp.data.load("tiny", home)
    path = tmp_path / "train.svm"
    lines = []
    for r in range(ds.train.X.shape[0]):
        labels = ",".join(str(j + 1) for j in ds.train.Y[r].indices)
        pairs = " ".join(f"{j + 1}:{v!r}" for j, v in zip(ds.train.X[r].indices, ds.train.X[r].data))
        lines.append(f"{labels} {pairs}".strip())
    path.write_text("\n".join(lines) + "\n")
    model = tmp_path / "m.npz"
    assert _status(["fit", "frequency", "--train", str(path), "--out", str(model)]) == 2
    line = _last_error(capsys)
    assert "no point has label 0" in line and "--labels-from 1" in line and not model.exists()
    assert main(["fit", "frequency", "--train", str(path), "--out", str(model), "--labels-from", "1"]) == 0
    assert f"K={ds.train.Y.shape[1]}" in capsys.readouterr().out


def test_fit_echoes_its_parameters_and_seeds_with_0(home, tmp_path, capsys) -> None:
    out = tmp_path / "m.npz"
    assert main(["fit", "fastxml", "--dataset", "tiny", "--data-home", str(home), "--out", str(out),
                 "--set", "n_estimators=2"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert re.fullmatch(r"fitting FastXML\(.*\) on tiny \(train\)", first), first
    shown = re.search(r"FastXML\((.*)\) on ", first).group(1).replace(" ", "")
    assert "n_estimators=2" in shown.split(",") and "random_state=0" in shown.split(","), shown


@pytest.mark.parametrize("argv, suggestion", [
    (["fit", "fastxm", "--dataset", "tiny", "--out", "m.npz"], "did you mean 'fastxml'?"),
    (["params", "mllspcc"], "did you mean 'mllspccv'?"),
    (["evalute", "s.npy"], "did you mean 'evaluate'?"),
])
def test_a_mistyped_choice_gets_a_suggestion(argv, suggestion, capsys) -> None:
    assert _status(argv) == 2
    assert _last_error(capsys).endswith(suggestion)


def test_a_mistyped_dataset_gets_a_suggestion(home, tmp_path, capsys) -> None:
    assert _status(["fit", "frequency", "--dataset", "tinyy", "--data-home", str(home),
                    "--out", str(tmp_path / "m.npz")]) == 2
    assert _last_error(capsys) == f"mlgp: error: dataset 'tinyy' not found in {home}: did you mean 'tiny'?"


def test_errors_name_the_options_of_the_shell_not_python_keywords(monkeypatch, tmp_path, capsys) -> None:
    monkeypatch.delenv("MLGP_DATA", raising=False)
    assert _status(["fit", "frequency", "--dataset", "bibtex", "--out", str(tmp_path / "m.npz")]) == 2
    line = _last_error(capsys)
    assert "pass --data-home PATH" in line and "data_home=" not in line
    bad = tmp_path / "zero.svm"
    bad.write_text("0,1 0:1 2:1\n1 1:1\n")
    assert _status(["fit", "frequency", "--train", str(bad), "--out", str(tmp_path / "m.npz")]) == 2
    line = _last_error(capsys)
    assert "--zero-based yes" in line and "zero_based=" not in line
