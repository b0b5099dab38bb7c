"""``mlgp compare``'s inputs as a shell user gives them: LIBSVM files with zero-based features or
labels counted from 1, a mistyped family, no data home — each read right or refused in the shell's
words, before any data are read where the error allows."""

from __future__ import annotations

import numpy as np
import pytest

import mlgp
from mlgp.cli import main
from mlgp.data.io import write_labelled
from mlgp.data.synthetic import mlgpf_prior
from mlgp.errors import ArgumentError


def _status(argv) -> int:
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code


def _shifted(path, X, Y, feature_from: int, label_from: int) -> None:
    """LIBSVM text with feature indices and labels counted from the given numbers."""
    lines = []
    for r in range(X.shape[0]):
        labels = ",".join(str(j + label_from) for j in Y[r].indices)
        pairs = " ".join(f"{j + feature_from}:{v!r}" for j, v in zip(X[r].indices, X[r].data))
        lines.append(f"{labels} {pairs}".strip())
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture
def split():
    return mlgpf_prior(num_train=40, num_test=20, num_features=5, num_labels=6, num_latent=2, seed=3)


def test_zero_based_features_and_one_based_labels_are_read_with_the_options(split, tmp_path, capsys) -> None:
    train, test = tmp_path / "train.svm", tmp_path / "test.svm"
    for path, part in ((train, split.train), (test, split.test)):
        _shifted(path, part.X, part.Y, feature_from=0, label_from=1)
    base = ["compare", "--train", str(train), "--test", str(test), "--models", "frequency", "--in-process"]
    assert _status([*base, "--out", str(tmp_path / "a")]) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--zero-based yes" in line and "zero_based=" not in line, line
    assert _status([*base, "--zero-based", "yes", "--out", str(tmp_path / "b")]) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert "no point has label 0" in line and "--labels-from 1" in line and "labels_from=" not in line, line
    assert main([*base, "--zero-based", "yes", "--labels-from", "1", "--out", str(tmp_path / "c")]) == 0
    results = (tmp_path / "c" / "results.csv").read_text()
    write_labelled(tmp_path / "train.txt", split.train.X, split.train.Y)  # the same split, as XC text
    write_labelled(tmp_path / "test.txt", split.test.X, split.test.Y)
    assert main(["compare", "--train", str(tmp_path / "train.txt"), "--test", str(tmp_path / "test.txt"),
                 "--models", "frequency", "--in-process", "--out", str(tmp_path / "d")]) == 0
    p1 = [line.split(",") for line in results.splitlines()[:2]]
    p1_xc = [line.split(",") for line in (tmp_path / "d" / "results.csv").read_text().splitlines()[:2]]
    column = p1[0].index("P@1")
    assert p1[1][column] == p1_xc[1][p1_xc[0].index("P@1")]


def test_a_mistyped_family_gets_a_suggestion(tmp_path, capsys) -> None:
    assert _status(["compare", "--dataset", "x", "--data-home", str(tmp_path), "--models", "frequency,fastxm",
                    "--out", str(tmp_path / "o")]) == 2
    assert "did you mean 'fastxml'?" in capsys.readouterr().err
    with pytest.raises(ArgumentError, match="unknown family 'mlgp'; did you mean 'mlgpf'\\?"):
        mlgp.families.family("mlgp")


def test_no_data_home_is_worded_for_the_shell(monkeypatch, tmp_path, capsys) -> None:
    monkeypatch.delenv("MLGP_DATA", raising=False)
    for dataset in ("bibtex", "bibtex,enron"):
        assert _status(["compare", "--dataset", dataset, "--models", "frequency", "--out", str(tmp_path / "o")]) == 2
        line = capsys.readouterr().err.strip().splitlines()[-1]
        assert "set the environment variable MLGP_DATA (or pass --data-home)" in line and "data_home=" not in line


def test_read_options_of_the_python_api_are_checked(split, tmp_path) -> None:
    train, test = tmp_path / "train.svm", tmp_path / "test.svm"
    for path, part in ((train, split.train), (test, split.test)):
        _shifted(path, part.X, part.Y, feature_from=1, label_from=1)
    result = mlgp.compare("frequency", train=train, test=test, read_options={"labels_from": 1}, isolate=False)
    assert np.isfinite(result.results["P@1"].iloc[0])
    with pytest.raises(ArgumentError, match="read_options: zero_base is not a keyword of read_labelled"):
        mlgp.compare("frequency", train=train, test=test, read_options={"zero_base": True}, isolate=False)
    with pytest.raises(ArgumentError, match="read_options takes a dict"):
        mlgp.compare("frequency", train=train, test=test, read_options=[("labels_from", 1)], isolate=False)
    with pytest.raises(ArgumentError, match="no train file is given"):
        mlgp.compare("frequency", dataset=split, read_options={"labels_from": 1}, isolate=False)
