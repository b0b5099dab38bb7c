"""The ``mlgp`` command, run in-process: datasets, evaluate, demo, and its error handling."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import mlgp.data
from mlgp.cli import load_scores, main
from mlgp.metrics import TopK, evaluate, inverse_propensity, topk


def _metric_lines(out: str) -> dict[str, list[float]]:
    """The printed metric rows ``P 12.34 ...`` as {name: values}."""
    rows = {}
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[0] in ("P", "nDCG", "PSP", "PSnDCG"):
            rows[parts[0]] = [float(v) for v in parts[1:]]
    return rows


@pytest.fixture
def no_data_home(monkeypatch):
    monkeypatch.delenv("MLGP_DATA", raising=False)


@pytest.fixture
def with_data_home(monkeypatch, data_home: Path) -> Path:
    monkeypatch.setenv("MLGP_DATA", str(data_home))
    return data_home


@pytest.fixture(scope="module")
def emotions(data_home: Path):
    return mlgp.data.load("emotions", data_home)


# --------------------------------------------------------------------------- #
# mlgp datasets
# --------------------------------------------------------------------------- #
def test_datasets_table(with_data_home: Path, capsys) -> None:
    assert main(["datasets"]) == 0
    out = capsys.readouterr().out
    assert str(with_data_home) in out
    for name in mlgp.data.available(with_data_home):
        assert name in out
    line = next(l for l in out.splitlines() if l.startswith("bibtex "))
    # N_train N_test D K labels_per_point points_per_label
    assert line.split()[1:5] == ["4880", "2515", "1836", "159"]
    assert float(line.split()[5]) == pytest.approx(2.40, abs=0.005)


def test_datasets_with_explicit_home_over_env(monkeypatch, data_home: Path, tmp_path: Path, capsys) -> None:
    monkeypatch.setenv("MLGP_DATA", str(tmp_path))  # an empty folder
    assert main(["datasets", "--data-home", str(data_home)]) == 0
    assert "bibtex" in capsys.readouterr().out
    assert main(["datasets"]) == 0  # the empty env home: says none found, lists the known names
    out = capsys.readouterr().out
    assert "No datasets found" in out and "bibtex" in out


def test_datasets_without_data_home(no_data_home, capsys) -> None:
    assert main(["datasets"]) == 0
    out = capsys.readouterr().out
    assert "MLGP_DATA" in out and "export MLGP_DATA=" in out
    for name in mlgp.data.DATASETS:
        assert name in out


def test_datasets_missing_home_is_an_error(tmp_path: Path, capsys) -> None:
    assert main(["datasets", "--data-home", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mlgp: error: ") and "nowhere" in err and "Traceback" not in err


# --------------------------------------------------------------------------- #
# mlgp evaluate
# --------------------------------------------------------------------------- #
def _expected(ds, scores, ks=(1, 3, 5)) -> pd.DataFrame:
    w = inverse_propensity(ds.train.Y, 0.55, 1.5)
    return evaluate(ds.test.Y, scores, ks=ks, inv_propensity=w, percent=True)


def _check_printed(out: str, expected: pd.DataFrame) -> None:
    rows = _metric_lines(out)
    assert set(rows) == {"P", "nDCG", "PSP", "PSnDCG"}
    for name, values in rows.items():
        np.testing.assert_allclose(values, expected.loc[name].to_numpy(), atol=0.006)


def test_evaluate_dense_npy_matches_metrics(with_data_home, emotions, tmp_path: Path, capsys) -> None:
    rng = np.random.default_rng(0)
    S = rng.standard_normal(emotions.test.Y.shape)
    S[:, 0] += 1.0  # some signal in one label
    path = tmp_path / "scores.npy"
    np.save(path, S)
    out_csv = tmp_path / "table.csv"
    assert main(["evaluate", str(path), "--dataset", "emotions", "--csv", str(out_csv)]) == 0
    out = capsys.readouterr().out
    n, k = S.shape
    assert f"dense {n}×{k} scores (float64) from {path}" in out
    expected = _expected(emotions, S)
    _check_printed(out, expected)
    table = pd.read_csv(out_csv, index_col="metric")
    assert list(table.columns) == ["@1", "@3", "@5"]
    np.testing.assert_allclose(table.to_numpy(), expected.to_numpy(), rtol=1e-12)


def test_evaluate_topk_and_sparse_npz(with_data_home, emotions, tmp_path: Path, capsys) -> None:
    rng = np.random.default_rng(1)
    S = rng.random(emotions.test.Y.shape)
    t = topk(S, 5)
    np.savez(tmp_path / "top.npz", indices=t.indices, scores=t.scores)
    Ssp = sp.csr_matrix(np.where(S > 0.5, S, 0.0))
    sp.save_npz(tmp_path / "sparse.npz", Ssp)
    assert isinstance(load_scores(tmp_path / "top.npz"), TopK)
    assert sp.issparse(load_scores(tmp_path / "sparse.npz"))

    assert main(["evaluate", str(tmp_path / "top.npz"), "--dataset", "emotions"]) == 0
    _check_printed(capsys.readouterr().out, _expected(emotions, t))
    assert main(["evaluate", str(tmp_path / "sparse.npz"), "--dataset", "emotions", "--k", "2,1"]) == 0
    out = capsys.readouterr().out
    _check_printed(out, _expected(emotions, Ssp, ks=(1, 2)))
    assert "@1" in out and "@2" in out and "@3" not in out


def test_evaluate_train_split(with_data_home, emotions, tmp_path: Path, capsys) -> None:
    # relevant labels scored by their propensity weight: the best achievable ranking for PSP too
    w = inverse_propensity(emotions.train.Y, 0.55, 1.5)
    Y = emotions.train.Y.toarray() * w[None, :]
    np.save(tmp_path / "oracle.npy", Y)
    assert main(["evaluate", str(tmp_path / "oracle.npy"), "--dataset", "emotions", "--split", "train", "--k", "1"]) == 0
    rows = _metric_lines(capsys.readouterr().out)
    assert rows["P"] == [100.0] and rows["nDCG"] == [100.0] and rows["PSP"] == [100.0]


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p, n, k: np.save(p / "s.npy", np.zeros((n + 1, k))), "shape"),
        (lambda p, n, k: np.save(p / "s.npy", np.zeros(n)), "2-D"),
        (lambda p, n, k: (p / "s.npy").write_text("not numpy"), "not a NumPy .npy file"),
        (lambda p, n, k: np.save(p / "s.npy", np.array([object()] * n, dtype=object)), "Python objects"),
        (lambda p, n, k: np.savez(p / "s.npz", foo=np.zeros((n, k))), "'indices' and 'scores'"),
        (lambda p, n, k: (p / "s.csv").write_text("1,2"), "unsupported"),
        (lambda p, n, k: None, "does not exist"),
    ],
    ids=["rows", "1-D", "garbage", "pickled", "npz-keys", "csv", "missing"],
)
def test_evaluate_bad_scores_file(with_data_home, emotions, tmp_path: Path, capsys, make, message) -> None:
    n, k = emotions.test.Y.shape
    make(tmp_path, n, k)
    files = sorted(tmp_path.glob("s.*"))
    path = files[0] if files else tmp_path / "absent.npy"
    assert main(["evaluate", str(path), "--dataset", "emotions"]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("mlgp: error: ")
    assert message in captured.err
    assert "Traceback" not in captured.err and "pickle" not in captured.err
    assert _metric_lines(captured.out) == {}


def test_evaluate_names_the_shapes_that_disagree(with_data_home, emotions, tmp_path: Path, capsys) -> None:
    n, k = emotions.test.Y.shape
    np.save(tmp_path / "s.npy", np.zeros((n + 1, k)))
    assert main(["evaluate", str(tmp_path / "s.npy"), "--dataset", "emotions"]) == 2
    assert f"scores have shape {n + 1}×{k} but emotions's test split has N×K = {n}×{k}" in capsys.readouterr().err
    t = topk(np.zeros((n - 1, k)), 3)  # a ranking of fewer rows than the split has
    np.savez(tmp_path / "top.npz", indices=t.indices, scores=t.scores)
    assert main(["evaluate", str(tmp_path / "top.npz"), "--dataset", "emotions"]) == 2
    assert f"the ranking has {n - 1} rows but emotions's test split has N={n} points" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(["evaluate", str(tmp_path / "top.npz")])
    assert exit_info.value.code == 2 and "--dataset" in capsys.readouterr().err


def test_evaluate_a_narrow_ranking_at_the_cut_offs_it_holds(with_data_home, emotions, tmp_path: Path,
                                                             capsys) -> None:
    """A top-2 ranking: @1 without --k (the default cut-offs 1, 3, 5 that it holds); --k beyond 2 is
    refused, naming the ranking's k and the cut-off."""
    S = np.random.default_rng(2).random(emotions.test.Y.shape)
    t = topk(S, 2)
    np.savez(tmp_path / "top2.npz", indices=t.indices, scores=t.scores)
    assert main(["evaluate", str(tmp_path / "top2.npz"), "--dataset", "emotions"]) == 0
    out = capsys.readouterr().out
    assert "@1" in out and "@2" not in out and "@3" not in out
    _check_printed(out, _expected(emotions, t, ks=(1,)))
    assert main(["evaluate", str(tmp_path / "top2.npz"), "--dataset", "emotions", "--k", "2"]) == 0
    _check_printed(capsys.readouterr().out, _expected(emotions, t, ks=(2,)))
    assert main(["evaluate", str(tmp_path / "top2.npz"), "--dataset", "emotions", "--k", "1,3"]) == 2
    captured = capsys.readouterr()
    assert captured.err == (f"mlgp: error: {tmp_path / 'top2.npz'}: the ranking keeps k=2 labels per row, fewer "
                            "than the largest cut-off 3 (use --k)\n")
    assert _metric_lines(captured.out) == {}


def test_evaluate_checks_the_csv_path_before_work(with_data_home, emotions, tmp_path: Path, capsys) -> None:
    np.save(tmp_path / "s.npy", np.zeros(emotions.test.Y.shape))
    (tmp_path / "a_file").write_text("")
    assert main(["evaluate", str(tmp_path / "s.npy"), "--dataset", "emotions",
                 "--csv", str(tmp_path / "a_file" / "t.csv")]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("mlgp: error: --csv ") and "is a file, not a folder" in captured.err
    assert _metric_lines(captured.out) == {}


def test_evaluate_makes_the_csv_folder_as_fit_and_predict_make_theirs(with_data_home, emotions, tmp_path: Path,
                                                                     capsys) -> None:
    """``--csv`` is checked by the one output-file check (:func:`mlgp.files.check_output_file`), as
    ``--out`` of ``mlgp fit`` and ``mlgp predict`` is: a folder that does not exist yet is made."""
    np.save(tmp_path / "s.npy", np.zeros(emotions.test.Y.shape))
    target = tmp_path / "new" / "deeper" / "t.csv"
    assert main(["evaluate", str(tmp_path / "s.npy"), "--dataset", "emotions", "--csv", str(target)]) == 0
    assert target.read_text().startswith("metric,@1")


def test_evaluate_unknown_dataset(with_data_home, tmp_path: Path, capsys) -> None:
    np.save(tmp_path / "s.npy", np.zeros((3, 3)))
    assert main(["evaluate", str(tmp_path / "s.npy"), "--dataset", "no_such_set"]) == 2
    assert "no_such_set" in capsys.readouterr().err


def test_usage_errors_exit_2(capsys) -> None:
    with pytest.raises(SystemExit, match="^2$") as exc:
        main([])
    assert exc.value.code == 2
    assert "mlgp: error: " in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, option",
    [
        (["demo", "--seed", "-1"], "--seed"),
        (["demo", "--seed", "1.5"], "--seed"),
        (["demo", "--seed", str(2**40)], "--seed"),
        (["demo", "--epochs", "0"], "--epochs"),
        (["demo", "--batch-size", "-5"], "--batch-size"),
        (["demo", "--latent", "0"], "--latent"),
        (["demo", "--inducing", "many"], "--inducing"),
        (["demo", "--negatives", "0"], "--negatives"),
        (["demo", "--max-train", "-3"], "--max-train"),
        (["demo", "--kernel", "rbf"], "--kernel"),
        (["demo", "--q-family", "full"], "--q-family"),
        (["demo", "--optimizer", "sgd"], "--optimizer"),
        (["demo", "--dtype", "float16"], "--dtype"),
        (["demo", "--learning-rate", "0"], "--learning-rate"),
        (["evaluate", "x.npy", "--dataset", "bibtex", "--k", "0"], "--k"),
        (["evaluate", "x.npy", "--dataset", "bibtex", "--k", "1,a"], "--k"),
        (["evaluate", "x.npy", "--dataset", "bibtex", "--propensity", "nan,1.5"], "--propensity"),
        (["evaluate", "x.npy", "--dataset", "bibtex", "--propensity", "0.55"], "--propensity"),
    ],
)
def test_bad_option_values_exit_2_with_mlgp_error(argv, option, capsys) -> None:
    with pytest.raises(SystemExit, match="^2$") as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"mlgp: error: argument {option}" in err and "Traceback" not in err


# --------------------------------------------------------------------------- #
# mlgp demo
# --------------------------------------------------------------------------- #
def _check_demo_output(out: str) -> None:
    assert "ELBO trace (1 epoch(s)" in out and "s per epoch" in out
    assert "by their training frequency" in out
    rows = _metric_lines(out)
    assert set(rows) == {"P", "nDCG", "PSP", "PSnDCG"}
    for values in rows.values():
        assert len(values) == 3 and all(0.0 <= v <= 100.0 for v in values)


@pytest.mark.slow
def test_demo_quick_synthetic(no_data_home, capsys) -> None:
    assert main(["demo", "--quick"]) == 0
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert first.startswith("data: synthetic") and "no data home is set" in first and "MLGP_DATA" in first
    assert "P=8 latent GPs, M=20 inducing inputs on the unit sphere" in out
    assert "true utilities" in out
    _check_demo_output(out)


@pytest.mark.slow
def test_demo_quick_bibtex(with_data_home: Path, tmp_path: Path, capsys) -> None:
    saved = tmp_path / "top5.npz"
    assert main(["demo", "--quick", "--save-scores", str(saved)]) == 0
    out = capsys.readouterr().out
    assert f"data: bibtex from {with_data_home}" in out
    assert "using the first 300" in out
    _check_demo_output(out)
    # the saved ranking gives the printed numbers back through `mlgp evaluate`
    printed = _metric_lines(out)
    assert main(["evaluate", str(saved), "--dataset", "bibtex"]) == 0
    again = _metric_lines(capsys.readouterr().out)
    assert again == printed


def test_demo_named_dataset_without_home_is_an_error(no_data_home, capsys) -> None:
    assert main(["demo", "--quick", "--dataset", "bibtex"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mlgp: error: ") and "MLGP_DATA" in err


def test_demo_checks_the_output_file_before_training(no_data_home, tmp_path: Path, capsys) -> None:
    assert main(["demo", "--quick", "--save-scores", str(tmp_path / "scores.npy")]) == 2
    assert "must end in .npz" in capsys.readouterr().err
    (tmp_path / "f").write_text("x")  # a missing folder is made (as for --out); a file in its place is refused
    assert main(["demo", "--quick", "--save-scores", str(tmp_path / "f" / "s.npz")]) == 2
    captured = capsys.readouterr()
    assert "is a file, not a folder" in captured.err and "ELBO" not in captured.out


@pytest.mark.parametrize("command", [["datasets"], ["demo", "--quick"]])
def test_missing_env_data_home_is_an_error(monkeypatch, tmp_path: Path, capsys, command) -> None:
    monkeypatch.setenv("MLGP_DATA", str(tmp_path / "nope"))
    assert main(command) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("mlgp: error: ")
    assert "$MLGP_DATA" in captured.err and "nope" in captured.err and "does not exist" in captured.err
    assert "ELBO" not in captured.out and "synthetic" not in captured.out


@pytest.mark.parametrize("command", [["datasets"], ["demo", "--quick"]])
def test_missing_flag_data_home_names_the_flag(with_data_home, tmp_path: Path, capsys, command) -> None:
    assert main([*command, "--data-home", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mlgp: error: ") and "(from --data-home)" in err and "(from data_home)" not in err


def test_demo_rejects_negatives_not_below_k(no_data_home, capsys) -> None:
    K = mlgp.data.default_problem(seed=0).num_labels
    assert main(["demo", "--quick", "--negatives", str(K)]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f"mlgp: error: --negatives {K}") and f"K={K}" in captured.err
    assert "ELBO" not in captured.out


def test_demo_free_z_sampled_negatives_and_a_line_per_epoch(no_data_home, capsys) -> None:
    """One run for three options: free Z, K − 1 sampled negatives, and progress without a terminal
    (capsys is not a terminal, as a pipe or a log file is not): a line per epoch."""
    K = mlgp.data.default_problem(seed=0).num_labels
    assert main(["demo", "--quick", "--no-unit-sphere-z", "--negatives", str(K - 1), "--epochs", "3"]) == 0
    out = capsys.readouterr().out
    assert "M=20 inducing inputs (free)" in out
    assert f"positives + {K - 1} sampled negatives per point" in out
    lines = [l for l in out.splitlines() if l.startswith("epoch ")]
    assert [l.split(":")[0] for l in lines] == ["epoch 1/3", "epoch 2/3", "epoch 3/3"]
    assert all(" ELBO -" in l for l in lines)
    assert "ELBO trace (3 epoch(s)" in out and "by their training frequency" in out


def test_evaluate_reads_what_the_scoring_interface_returns(with_data_home, emotions, tmp_path: Path, capsys) -> None:
    """decision_function → save_scores (.npy) and predict_topk → save_scores (.npz) give `mlgp evaluate`
    the same table as mlgp.metrics.evaluate on the model's outputs."""
    from mlgp.baselines import LabelFrequency
    from mlgp.scores import save_scores

    model = LabelFrequency().fit(emotions.train.X, emotions.train.Y)
    dense, top = model.decision_function(emotions.test.X), model.predict_topk(emotions.test.X, 5)
    for scores, name in ((dense, "dense.npy"), (top, "top.npz")):
        assert main(["evaluate", str(save_scores(tmp_path / name, scores)), "--dataset", "emotions"]) == 0
        _check_printed(capsys.readouterr().out, _expected(emotions, scores))
