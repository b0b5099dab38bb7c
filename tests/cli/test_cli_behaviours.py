"""Behaviours of ``mlgp fit`` / ``mlgp predict`` / ``mlgp evaluate`` on the command-line surface:
zero-based LIBSVM files, top-k files narrower than the default cut-offs, numba's cannot-cache
warning, ``--set`` over the budget and the seed, the limits of ``--top-k``, padding of narrow
data, output checks before any read, ``--set`` given twice, and every family's saved model
predicted in a fresh process (the ``test_subprocess_*`` tests start new Python processes)."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file

import mlgp.data
from _family_settings import fit_order, set_arguments
from mlgp.cli import main
from mlgp.comparison import FAMILIES
from mlgp.data.io import read_labelled, write_labelled, write_labelled_npz
from mlgp.data.synthetic import mlgpf_prior
from mlgp.errors import DataFormatError
from mlgp.scores import load_scores

def _status(argv) -> int:
    """``main(argv)``'s exit status, argparse's usage errors (``SystemExit``) included."""
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code


def _error(argv, capsys) -> str:
    """The one ``mlgp: error:`` line of a command that must fail with status 2."""
    assert _status(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[-1].startswith("mlgp: error: "), lines
    return lines[-1]


def _params(model: Path) -> dict:
    """The constructor parameters saved in a model file (its class is registered by the fit)."""
    from mlgp.estimator import MultiLabelEstimator

    return MultiLabelEstimator.load(model).get_params()


@pytest.fixture(scope="module")
def tiny_file(tmp_path_factory) -> Path:
    """A LIBSVM file of 60 points, D = 6, K = 6."""
    ds = mlgpf_prior(num_train=60, num_test=10, num_features=6, num_labels=6, num_latent=2, seed=5)
    path = tmp_path_factory.mktemp("tiny") / "train.svm"
    write_labelled(path, ds.train.X, ds.train.Y)
    return path


# ------------------------------------------------------------------------- zero-based LIBSVM --
def test_zero_based_libsvm_file_names_the_cli_option(tmp_path, capsys) -> None:
    from mlgp.estimator import MultiLabelEstimator

    X = sp.csr_matrix(np.array([[1.0, 0, 2], [0.5, 3, 0], [4, 0, 0]]))
    Y = sp.csr_matrix(np.array([[1, 0], [0, 1], [1, 1]]))
    data = tmp_path / "zero.svm"
    with open(data, "wb") as f:
        dump_svmlight_file(X, Y, f, multilabel=True, zero_based=True)
    model, top = tmp_path / "m.npz", tmp_path / "top.npz"
    line = _error(["fit", "mlknn", "--train", str(data), "--out", str(model), "--set", "n_neighbors=1"], capsys)
    assert "line 1: feature index 0 in a one-based file" in line and "--zero-based yes" in line
    assert "zero_based=True" not in line and not model.exists()
    for choice in ("yes", "auto"):
        assert main(["fit", "mlknn", "--train", str(data), "--zero-based", choice, "--out", str(model),
                     "--set", "n_neighbors=1"]) == 0
        assert "D=3, K=2" in capsys.readouterr().out
    assert "--zero-based yes" in _error(["predict", str(model), "--data", str(data), "--top-k", "1",
                                         "--out", str(top)], capsys)
    assert main(["predict", str(model), "--data", str(data), "--zero-based", "yes", "--top-k", "1",
                 "--out", str(top)]) == 0
    expected = MultiLabelEstimator.load(model).predict_topk(X, 1)
    np.testing.assert_array_equal(load_scores(top).indices, expected.indices)


# ------------------------------------------------------------- evaluate of a narrow top-k file --
def test_evaluate_a_top_3_file_at_the_cut_offs_it_holds(home, tmp_path, capsys) -> None:
    model, top = tmp_path / "m.npz", tmp_path / "top3.npz"
    source = ["--dataset", "tiny", "--data-home", str(home)]
    assert main(["fit", "frequency", *source, "--out", str(model)]) == 0
    assert main(["predict", str(model), *source, "--top-k", "3", "--out", str(top)]) == 0
    capsys.readouterr()
    assert main(["evaluate", str(top), *source]) == 0
    header = next(line for line in capsys.readouterr().out.splitlines() if "@1" in line)
    assert header.split() == ["@1", "@3"]
    line = _error(["evaluate", str(top), *source, "--k", "1,5"], capsys)
    assert "keeps k=3 labels per row, fewer than the largest cut-off 5 (use --k)" in line


# -------------------------------------------------------------- numba's cannot-cache warning --
def _no_cache_locator_env(tmp_path: Path) -> dict:
    """An environment where numba finds no folder for its cache (as in a read-only install)."""
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    return {**os.environ, "NUMBA_CACHE_LOCATOR_CLASSES": "UserProvidedCacheLocator",
            "NUMBA_CACHE_DIR": str(blocker / "cache")}


def test_cannot_cache_warning_is_silenced_and_only_it(monkeypatch, tmp_path, capsys) -> None:
    import numba

    from mlgp.baselines._fastxml import _jit
    from mlgp.cli import evaluate

    def run(args) -> int:  # what importing FastXML's kernels does where numba cannot cache
        _jit.compiled(lambda x: x + 1)
        warnings.warn("another warning", RuntimeWarning)
        return 0

    monkeypatch.setattr(numba.core.config, "CACHE_LOCATOR_CLASSES", "UserProvidedCacheLocator")
    monkeypatch.setattr(numba.core.config, "CACHE_DIR", str(tmp_path / "missing" / "cache"))
    (tmp_path / "missing").write_text("a file, so no folder can be made under it")
    monkeypatch.setattr(evaluate, "run", run)
    for verbose, expected in (([], ["another warning"]), (["--verbose"], ["numba cannot cache", "another warning"])):
        monkeypatch.setattr(_jit, "_WARNED", False)
        capsys.readouterr()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert main([*verbose, "evaluate", "s.npy", "--dataset", "tiny"]) == 0
            warnings.warn("numba cannot cache: after main, the filter is gone", RuntimeWarning)
        lines = capsys.readouterr().err.splitlines()  # the command's warnings: one line each, no path
        said = ["mlgp: warning: RuntimeWarning: " + e for e in expected]
        assert [line[:len(s)] for line, s in zip(lines, said)] == said, lines
        assert len(lines) == len(expected), lines  # no file:line header, no source line
        assert [str(w.message) for w in caught] == ["numba cannot cache: after main, the filter is gone"]


@pytest.mark.slow
def test_subprocess_error_is_one_line_where_numba_cannot_cache(tmp_path) -> None:
    """A fresh ``mlgp predict`` imports every family, FastXML's numba kernels among them."""
    env = _no_cache_locator_env(tmp_path)
    done = subprocess.run([sys.executable, "-m", "mlgp.cli", "predict", str(tmp_path / "none.npz"), "--data",
                           "x.svm", "--top-k", "3", "--out", str(tmp_path / "t.npz")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"mlgp: error: {tmp_path / 'none.npz'}: no saved estimator at this path"]
    check = subprocess.run([sys.executable, "-c", "import mlgp.baselines._fastxml.kernels"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=120)
    assert "numba cannot cache" in check.stderr  # the environment does make numba warn


# ------------------------------------------------------------------- --set over the defaults --
@pytest.mark.slow
def test_set_wins_over_the_budget_and_the_seed(home, tmp_path, capsys) -> None:
    source = ["--dataset", "tiny", "--data-home", str(home)]
    small = ["--set", "num_inducing=5", "--set", "num_latent_gps=2"]
    model = tmp_path / "g.npz"
    assert main(["fit", "mlgpf", *source, "--out", str(model), "--budget", "5", "--seed", "3",
                 "--set", "epochs=1", "--set", "seed=7", *small]) == 0
    params = _params(model)
    assert (params["epochs"], params["max_seconds"], params["seed"]) == (1, 5.0, 7)
    assert main(["fit", "mlgpf", *source, "--out", str(model), "--budget", "0.01", "--seed", "3", *small]) == 0
    params = _params(model)  # without --set: the budget's epochs and the seed
    assert (params["epochs"], params["max_seconds"], params["seed"]) == (100000, 0.01, 3)
    trees = ["fit", "fastxml", *source, "--out", str(model), "--seed", "3", "--set", "n_estimators=1"]
    assert main([*trees, "--set", "random_state=7"]) == 0
    assert _params(model)["random_state"] == 7
    assert main(trees) == 0
    assert _params(model)["random_state"] == 3


def test_set_twice_is_refused(home, tmp_path, capsys) -> None:
    fit = ["fit", "fastxml", "--dataset", "tiny", "--data-home", str(home), "--out", str(tmp_path / "m.npz")]
    for first, second in (("n_estimators=2", "n_estimators=3"), ("n_estimators=2", " n_estimators =2")):
        line = _error([*fit, "--set", first, "--set", second], capsys)
        assert line == "mlgp: error: --set " + repr(second) + ": 'n_estimators' is set twice"
    compare = ["compare", "--dataset", "tiny", "--data-home", str(home), "--models", "mlknn,fastxml",
               "--out", str(tmp_path / "cmp")]
    line = _error([*compare, "--set", "mlknn.n_neighbors=3", "--set", "mlknn.n_neighbors=4"], capsys)
    assert line == "mlgp: error: --set 'mlknn.n_neighbors=4': 'n_neighbors' is set twice"
    assert not (tmp_path / "m.npz").exists() and not (tmp_path / "cmp").exists()


# ------------------------------------------------------------------------------- mlgp predict --
def test_top_k_equal_to_k_is_allowed(home, tmp_path, capsys) -> None:
    model, top = tmp_path / "m.npz", tmp_path / "top.npz"
    source = ["--dataset", "tiny", "--data-home", str(home)]
    assert main(["fit", "frequency", *source, "--out", str(model)]) == 0
    assert main(["predict", str(model), *source, "--top-k", "12", "--out", str(top)]) == 0
    ranking = load_scores(top)
    assert ranking.indices.shape == (80, 12) and sorted(ranking.indices[0]) == list(range(12))
    line = _error(["predict", str(model), *source, "--top-k", "13", "--out", str(tmp_path / "t13.npz")], capsys)
    assert "--top-k 13: the model ranks K=12 labels" in line and not (tmp_path / "t13.npz").exists()


def test_predict_pads_a_narrow_file_to_the_models_width(home, tmp_path, capsys) -> None:
    from mlgp.estimator import MultiLabelEstimator

    ds = mlgp.data.load("tiny", home)
    model, top, narrow = tmp_path / "m.npz", tmp_path / "top.npz", tmp_path / "narrow.npz"
    assert main(["fit", "mlknn", "--dataset", "tiny", "--data-home", str(home), "--out", str(model),
                 "--set", "n_neighbors=5"]) == 0
    X5 = ds.test.X[:, :5]
    write_labelled_npz(narrow, X5, ds.test.Y)
    assert read_labelled(narrow)[0].shape == (80, 5)
    assert main(["predict", str(model), "--data", str(narrow), "--top-k", "4", "--out", str(top)]) == 0
    padded = sp.hstack([X5, sp.csr_matrix((80, 3))]).tocsr()
    expected = MultiLabelEstimator.load(model).predict_topk(padded, 4)
    np.testing.assert_array_equal(load_scores(top).indices, expected.indices)


def test_output_is_checked_before_any_data_are_read(home, tmp_path, capsys) -> None:
    garbage = tmp_path / "garbage.svm"
    garbage.write_text("this is not LIBSVM\n")
    with pytest.raises(DataFormatError, match=r"garbage\.svm, line 1: malformed label 'this'"):
        read_labelled(garbage)  # what reading it first would report
    blocked = garbage / "sub"  # no folder can be made under a file
    line = _error(["fit", "frequency", "--train", str(garbage), "--out", str(blocked / "m.npz")], capsys)
    assert line == f"mlgp: error: --out {blocked / 'm.npz'}: {str(garbage)!r} is a file, not a folder"
    model = tmp_path / "m.npz"
    assert main(["fit", "frequency", "--dataset", "tiny", "--data-home", str(home), "--out", str(model)]) == 0
    line = _error(["predict", str(model), "--data", str(garbage), "--top-k", "2", "--out", str(blocked / "t.npz")],
                  capsys)
    assert line == f"mlgp: error: --out {blocked / 't.npz'}: {str(garbage)!r} is a file, not a folder"


def test_output_folders_that_do_not_exist_are_made(home, tmp_path, capsys) -> None:
    """``fit`` and ``predict`` make the folders of ``--out``, as ``compare`` does, once the work is done."""
    model, scores = tmp_path / "a" / "b" / "m.npz", tmp_path / "c" / "t.txt"
    assert main(["fit", "frequency", "--dataset", "tiny", "--data-home", str(home), "--out", str(model)]) == 0
    assert main(["predict", str(model), "--dataset", "tiny", "--data-home", str(home), "--top-k", "2",
                 "--out", str(scores)]) == 0
    assert model.is_file() and len(scores.read_text().splitlines()) == 80


# ------------------------------------------------- every family's model in a fresh process --
@pytest.mark.slow
def test_subprocess_predict_every_familys_model_in_a_fresh_process(tiny_file, tmp_path, capsys) -> None:
    """Fit each family here, then ``mlgp predict`` its file in a new process, whose registry of
    estimator classes starts empty: it gives this process's ranking. Each process starts as soon as
    its model is saved, so they run beside the later fits. ``--verbose`` keeps TensorFlow from being
    imported up front, so a process loads only what reading the model needs (and starts faster). The
    families that import TensorFlow, the slowest to fit and to predict in a new process, come first."""
    runs = {}
    for family in fit_order(FAMILIES):
        model = tmp_path / f"{family}.npz"
        assert main(["fit", family, "--train", str(tiny_file), "--out", str(model), "--seed", "0",
                     *set_arguments(family)]) == 0, family
        here = tmp_path / f"{family}-here.npz"
        assert main(["predict", str(model), "--data", str(tiny_file), "--top-k", "3", "--out", str(here)]) == 0
        fresh = tmp_path / f"{family}-fresh.npz"
        command = [sys.executable, "-m", "mlgp.cli", "--verbose", "predict", str(model), "--data", str(tiny_file),
                   "--top-k", "3", "--out", str(fresh)]
        runs[family] = (subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         text=True), here, fresh)
    for family, (process, here, fresh) in runs.items():
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, (family, err)
        assert out.startswith("top-3 labels of 60 points by "), (family, out, err)
        mine, theirs = load_scores(here), load_scores(fresh)
        np.testing.assert_array_equal(theirs.indices, mine.indices, err_msg=family)
        np.testing.assert_allclose(theirs.scores, mine.scores, rtol=1e-6, atol=1e-12, err_msg=family)
