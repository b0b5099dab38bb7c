"""``mlgp fit`` → ``mlgp predict`` → ``mlgp evaluate`` for every family, and their bad inputs."""

from __future__ import annotations


import numpy as np
import pandas as pd
import pytest

from _family_settings import SETTINGS, set_arguments
from mlgp.cli import main
from mlgp.families import FAMILIES, make_estimator
from mlgp.data.io import write_labelled
from mlgp.metrics import evaluate

@pytest.mark.slow
@pytest.mark.parametrize("family", list(FAMILIES))
def test_fit_predict_evaluate_equals_the_python_api(family, home, tmp_path, capsys) -> None:
    import mlgp.data

    model, scores, table = tmp_path / "model.npz", tmp_path / "top.npz", tmp_path / "table.csv"
    assert main(["fit", family, "--dataset", "tiny", "--data-home", str(home), "--out", str(model), "--seed", "1",
                 *set_arguments(family)]) == 0
    assert main(["predict", str(model), "--dataset", "tiny", "--data-home", str(home), "--top-k", "5",
                 "--out", str(scores)]) == 0
    assert main(["evaluate", str(scores), "--dataset", "tiny", "--data-home", str(home), "--csv", str(table)]) == 0
    cli = pd.read_csv(table, index_col=0)
    ds = mlgp.data.load("tiny", home)
    est = make_estimator(family, SETTINGS[family].small, seed=1).fit(ds.train.X, ds.train.Y)
    ours = evaluate(ds.test.Y, est.predict_topk(ds.test.X, 5), inv_propensity=ds.inverse_propensity())
    # the same fit and the same scores: P@k equal to the digits a CSV holds
    np.testing.assert_allclose(cli.loc["P"].to_numpy(), ours.loc["P"].to_numpy(), rtol=0, atol=1e-9)
    np.testing.assert_allclose(cli.loc["PSP"].to_numpy(), ours.loc["PSP"].to_numpy(), rtol=0, atol=1e-9)


def test_predict_txt_and_files_in_every_format(home, tmp_path, capsys) -> None:
    import mlgp.data

    ds = mlgp.data.load("tiny", home)
    for suffix in ("svm", "npz", "txt"):
        train, test = tmp_path / f"train.{suffix}", tmp_path / f"test.{suffix}"
        write_labelled(train, ds.train.X, ds.train.Y)
        write_labelled(test, ds.test.X, ds.test.Y)
        model = tmp_path / f"m-{suffix}.npz"
        assert main(["fit", "fastxml", "--train", str(train), "--out", str(model), "--seed", "0",
                     "--set", "n_estimators=2"]) == 0
        out = tmp_path / f"top-{suffix}.txt"
        assert main(["predict", str(model), "--data", str(test), "--top-k", "3", "--out", str(out),
                     "--format", "txt"]) == 0
        lines = out.read_text().splitlines()
        assert len(lines) == ds.test.X.shape[0]
        expected = make_estimator("fastxml", {"n_estimators": 2}, seed=0).fit(ds.train.X, ds.train.Y)
        top = expected.predict_topk(ds.test.X, 3)
        assert [[int(p.split(":")[0]) for p in line.split()] for line in lines] == top.indices.tolist()


def _fails(argv, capsys, *words) -> str:
    try:
        status = main(argv)
    except SystemExit as exc:  # argparse's own usage errors
        status = exc.code
    assert status == 2
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert last.startswith("mlgp: error:")
    for w in words:
        assert w in last, (w, last)
    return last


def test_bad_input_is_one_line_exit_2_and_writes_nothing(home, tmp_path, capsys) -> None:
    fit = ["fit", "--dataset", "tiny", "--data-home", str(home)]
    out = tmp_path / "m.npz"
    _fails(["fit", "nosuch", "--dataset", "tiny", "--out", str(out)], capsys, "nosuch")
    _fails([*fit[:1], "fastxml", *fit[1:], "--out", str(out), "--set", "n_trees=3"], capsys, "n_trees")
    _fails([*fit[:1], "fastxml", *fit[1:], "--out", str(out), "--set", "n_estimators=0"], capsys, "n_estimators")
    _fails([*fit[:1], "mlgpf", *fit[1:], "--out", str(out), "--set", "kernel=cubic"], capsys, "kernel")
    _fails([*fit[:1], "mlgpf", *fit[1:], "--out", str(out), "--set", "oops"], capsys, "NAME=VALUE")
    (tmp_path / "file").write_text("")
    _fails([*fit[:1], "fastxml", *fit[1:], "--out", str(tmp_path / "file" / "m.npz")], capsys, "is a file, not a folder")
    assert not out.exists()
    # a train file with no labels
    empty = tmp_path / "empty.npz"
    X = np.eye(4)
    import scipy.sparse as sp
    from mlgp.data.io import write_labelled_npz

    write_labelled_npz(empty, sp.csr_matrix(X), sp.csr_matrix((4, 3)))
    _fails(["fit", "frequency", "--train", str(empty), "--out", str(out)], capsys, "label")
    assert not out.exists()
    # a dataset of the data home whose training split has no labels
    from mlgp.data.io import write_xc

    (tmp_path / "home" / "bare").mkdir(parents=True)
    for split in ("train", "test"):
        write_xc(tmp_path / "home" / "bare" / f"{split}.txt", sp.csr_matrix(X), sp.csr_matrix((4, 3)))
    _fails(["fit", "frequency", "--dataset", "bare", "--data-home", str(tmp_path / "home"), "--out", str(out)],
           capsys, "bare (train): the training data have no labels")
    assert not out.exists()
    _fails(["fit", "frequency", "--dataset", "tiny", "--data-home", str(home)], capsys, "--out")


def test_fit_says_what_it_fitted_and_how_long_it_took(home, tmp_path, capsys) -> None:
    import re
    import time

    out = tmp_path / "m.npz"
    t0 = time.perf_counter()
    assert main(["fit", "frequency", "--dataset", "tiny", "--data-home", str(home), "--out", str(out)]) == 0
    wall = time.perf_counter() - t0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert "LabelFrequency fitted on " in line and "N=150, D=8, K=12 in " in line and line.endswith(f"saved to {out}")
    seconds = float(re.search(r" in ([0-9.]+) s;", line).group(1))
    assert 0 <= seconds <= wall + 0.05  # the fit's own seconds, at most the whole command's


def test_predict_refuses_bad_k_other_models_and_other_widths(home, tmp_path, capsys) -> None:
    model = tmp_path / "m.npz"
    assert main(["fit", "frequency", "--dataset", "tiny", "--data-home", str(home), "--out", str(model)]) == 0
    pred = ["predict", str(model), "--dataset", "tiny", "--data-home", str(home)]
    out = tmp_path / "top.npz"
    _fails([*pred, "--top-k", "0", "--out", str(out)], capsys, "0")
    _fails([*pred, "--top-k", "13", "--out", str(out)], capsys, "K=12")
    _fails([*pred, "--top-k", "3", "--out", str(model / "t.npz")], capsys, "is a file, not a folder")
    _fails([*pred, "--top-k", "3"], capsys, "--out")
    not_a_model = tmp_path / "x.npz"
    np.savez(not_a_model, a=np.zeros(3))
    _fails(["predict", str(not_a_model), "--dataset", "tiny", "--data-home", str(home), "--top-k", "3",
            "--out", str(out)], capsys, "x.npz")
    other_version = tmp_path / "v.npz"
    raw = dict(np.load(model))
    raw["__header__"] = np.array(str(raw["__header__"]).replace("mlgp.estimator/1", "mlgp.estimator/99"))
    np.savez(other_version, **raw)
    _fails(["predict", str(other_version), "--dataset", "tiny", "--data-home", str(home), "--top-k", "3",
            "--out", str(out)], capsys, "v.npz")
    wide = tmp_path / "wide.svm"
    import scipy.sparse as sp

    write_labelled(wide, sp.csr_matrix(np.ones((3, 20))), sp.csr_matrix(np.eye(3, 12)))
    _fails(["predict", str(model), "--data", str(wide), "--top-k", "3", "--out", str(out)], capsys, "20")
    assert not out.exists()


def test_predict_scores_the_split_asked_for(home, tmp_path, capsys) -> None:
    from mlgp.scores import load_scores

    model = tmp_path / "m.npz"
    assert main(["fit", "frequency", "--dataset", "tiny", "--data-home", str(home), "--out", str(model)]) == 0
    pred = ["predict", str(model), "--dataset", "tiny", "--data-home", str(home), "--top-k", "2"]
    for split, rows in (("train", 150), ("test", 80), (None, 80)):
        out = tmp_path / f"{split}.npz"
        assert main([*pred, "--out", str(out), *(["--split", split] if split else [])]) == 0
        assert f"top-2 labels of {rows} points by LabelFrequency written to {out}" in capsys.readouterr().out
        assert load_scores(out).indices.shape == (rows, 2)
