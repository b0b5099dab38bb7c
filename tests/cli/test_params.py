"""``mlgp params`` and ``--params FILE``: parameters as files (round trip for every family, the
precedence, JSON arrays as tuples, and every bad file refused before any data are read)."""

from __future__ import annotations

import dataclasses
import json
import re

import numpy as np
import pandas as pd
import pytest

from mlgp.cli import build_parser, main
from mlgp.cli.fit import build_estimator
from mlgp.cli.params import compare_settings, from_json, to_json
from mlgp.data import write_labelled
from mlgp.errors import ArgumentError
from mlgp.families import FAMILIES, make_estimator


def _params_file(tmp_path, family: str, *options: str):
    """``mlgp params FAMILY OPTIONS --out FILE``'s file, and its JSON."""
    path = tmp_path / f"{family}.json"
    assert main(["params", family, *options, "--out", str(path)]) == 0
    return path, json.loads(path.read_text())


def _write(tmp_path, content, name: str = "p.json"):
    """A file holding ``content`` (a JSON value, or text/bytes as they are)."""
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def _fit_args(family: str, *options: str):
    """``mlgp fit``'s parsed arguments (the training file is never read by :func:`build_estimator`)."""
    return build_parser().parse_args(["fit", family, "--train", "unused.txt", "--out", "unused.npz", *options])


def _same_params(estimator, expected) -> None:
    """``get_params()`` equal, value by value, with equal types (a tuple stays a tuple)."""
    ours, theirs = estimator.get_params(deep=False), expected.get_params(deep=False)
    assert ours == theirs
    assert {k: type(v) for k, v in ours.items()} == {k: type(v) for k, v in theirs.items()}


# ------------------------------------------------------------------------------ round trip --
@pytest.mark.parametrize("family", list(FAMILIES))
def test_params_then_fit_params_builds_the_same_estimator(family, tmp_path) -> None:
    path, document = _params_file(tmp_path, family)
    expected = make_estimator(family)
    assert document["family"] == family and document["class"] == type(expected).__name__
    assert set(document) == {"family", "class", "params"}
    assert set(document["params"]) == set(expected.get_params(deep=False))
    _same_params(build_estimator(_fit_args(family, "--params", str(path))), expected)
    # with a seed and a budget: what 'mlgp fit --seed 7 --budget 3' builds, read back without them
    path, _ = _params_file(tmp_path, family, "--seed", "7", "--budget", "3")
    _same_params(build_estimator(_fit_args(family, "--params", str(path))), make_estimator(family, seed=7, budget=3.0))


def test_params_prints_sorted_json_to_stdout(tmp_path, capsys) -> None:
    assert main(["params", "mllspccv", "--seed", "2"]) == 0
    printed = capsys.readouterr().out
    document = json.loads(printed)
    assert printed == json.dumps(document, indent=2, sort_keys=True) + "\n"
    assert list(document["params"]) == sorted(document["params"])
    assert document["params"]["alphas"] == [0.001, 0.01, 0.1, 1.0] and document["params"]["random_state"] == 2
    _, written = _params_file(tmp_path, "mllspccv", "--seed", "2")
    assert written == document


def test_a_plain_object_is_read_as_the_parameters(tmp_path) -> None:
    path = _write(tmp_path, {"n_estimators": 4, "split_loss": "dcg"})
    est = build_estimator(_fit_args("fastxml", "--params", str(path)))
    _same_params(est, make_estimator("fastxml", {"n_estimators": 4, "split_loss": "dcg"}, seed=0))  # fit's seed 0


def test_fit_with_a_params_file_end_to_end(tmp_path, capsys) -> None:
    from mlgp.data.synthetic import mlgpf_prior
    from mlgp.families import load_model

    ds = mlgpf_prior(num_train=60, num_test=20, num_features=6, num_labels=8, num_latent=2, seed=1)
    train, test = tmp_path / "train.svm", tmp_path / "test.svm"
    write_labelled(train, ds.train.X, ds.train.Y)
    write_labelled(test, ds.test.X, ds.test.Y)
    path, document = _params_file(tmp_path, "fastxml", "--seed", "4")
    document["params"].update(n_estimators=2, n_jobs=1)
    _write(tmp_path, document, path.name)
    model = tmp_path / "model.npz"
    assert main(["fit", "fastxml", "--train", str(train), "--params", str(path), "--out", str(model)]) == 0
    fitted = load_model(model)
    expected = make_estimator("fastxml", {"n_estimators": 2, "n_jobs": 1}, seed=4)
    _same_params(fitted, expected)
    expected.fit(ds.train.X, ds.train.Y)
    np.testing.assert_array_equal(fitted.predict_topk(ds.test.X, 3).indices,
                                  expected.predict_topk(ds.test.X, 3).indices)


def test_compare_with_a_params_file_end_to_end(tmp_path, capsys) -> None:
    from mlgp.data.synthetic import mlgpf_prior

    ds = mlgpf_prior(num_train=60, num_test=20, num_features=6, num_labels=8, num_latent=2, seed=1)
    train, test = tmp_path / "train.svm", tmp_path / "test.svm"
    write_labelled(train, ds.train.X, ds.train.Y)
    write_labelled(test, ds.test.X, ds.test.Y)
    path = _write(tmp_path, {"family": "frequency", "params": {"smoothing": 2.5}})
    out = tmp_path / "cmp"
    assert main(["compare", "--train", str(train), "--test", str(test), "--models", "frequency",
                 "--params", f"frequency={path}", "--out", str(out), "--in-process"]) == 0
    results = pd.read_csv(out / "results.csv").set_index("family")
    assert results.loc["frequency", "settings"] == "smoothing=2.5"


# ------------------------------------------------------------------------------ precedence --
def test_the_file_wins_over_seed_and_budget_and_set_wins_over_the_file(tmp_path) -> None:
    path = _write(tmp_path, {"random_state": 5, "max_seconds": 2.0, "n_estimators": 4, "max_leaf": 7})
    est = build_estimator(_fit_args("fastxml", "--params", str(path), "--seed", "9", "--budget", "8",
                                    "--set", "n_estimators=6"))
    assert (est.random_state, est.max_seconds, est.n_estimators, est.max_leaf) == (5, 2.0, 6, 7)
    assert est.n_jobs == -1  # the command line's default, which the file does not name
    # what the file leaves out comes from --seed and --budget
    path = _write(tmp_path, {"n_estimators": 4})
    est = build_estimator(_fit_args("fastxml", "--params", str(path), "--seed", "9", "--budget", "8"))
    assert (est.random_state, est.max_seconds, est.n_estimators) == (9, 8.0, 4)


def test_the_file_wins_over_the_budgets_own_defaults(tmp_path) -> None:
    path = _write(tmp_path, {"epochs": 3})
    est = build_estimator(_fit_args("mlgpf", "--params", str(path), "--budget", "5"))
    assert (est.epochs, est.max_seconds) == (3, 5.0)
    assert build_estimator(_fit_args("mlgpf", "--budget", "5")).epochs == 100000  # without the file


def test_compare_settings_apply_the_same_precedence(tmp_path) -> None:
    tree = _write(tmp_path, {"family": "fastxml", "params": {"n_estimators": 4, "random_state": 5}}, "tree.json")
    knn = _write(tmp_path, {"n_neighbors": 3}, "knn.json")
    args = build_parser().parse_args(["compare", "--dataset", "x", "--models", "fastxml,mlknn,lspc", "--out", "o",
                                      "--params", f"fastxml={tree}", "--params", f"mlknn={knn}",
                                      "--set", "fastxml.n_estimators=6", "--set", "lspc.n_basis=20"])
    settings = compare_settings(args)
    assert settings == {"fastxml": {"n_estimators": 6, "random_state": 5}, "mlknn": {"n_neighbors": 3},
                        "lspc": {"n_basis": 20}}
    assert make_estimator("fastxml", settings["fastxml"], seed=args.seed).random_state == 5  # not --seed's 0


# ------------------------------------------------------------------------- JSON and tuples --
def test_json_arrays_are_read_as_tuples_where_the_class_takes_them(tmp_path) -> None:
    path = _write(tmp_path, {"alphas": [0.01, 0.1], "couplings": [0.0, 0.1]})
    est = build_estimator(_fit_args("mllspccv", "--params", str(path)))
    assert est.alphas == (0.01, 0.1) and est.couplings == (0.0, 0.1) and type(est.alphas) is tuple
    path = _write(tmp_path, {"params": {"natgrad_gamma": [0.02, 0.2, 10], "batch_growth": [10, 20],
                                        "optimizer": "natgrad", "q_family": "whitened"}})
    est = build_estimator(_fit_args("mlgpf", "--params", str(path)))
    assert est.natgrad_gamma == (0.02, 0.2, 10) and est.batch_growth == (10, 20)
    assert type(est.natgrad_gamma) is tuple and type(est.batch_growth) is tuple


def test_to_json_and_from_json() -> None:
    assert to_json((1, (2.5, None), "a"), "p") == [1, [2.5, None], "a"]
    assert type(to_json(np.int64(3), "p")) is int and to_json(np.bool_(True), "p") is True
    assert from_json([1, [2, [3]], {"a": [4]}]) == (1, (2, (3,)), {"a": [4]})
    with pytest.raises(ArgumentError, match=r"parameter 'gamma': nan \(float\) cannot be written as JSON"):
        to_json(float("nan"), "gamma")
    with pytest.raises(ArgumentError, match=r"parameter 'similarity': .*ndarray.* cannot be written as JSON"):
        to_json([np.eye(2)], "similarity")
    with pytest.raises(ArgumentError, match=r"^parameter 'similarity': array\(\[\[.*\.\.\. \(ndarray\) cannot be written as JSON$") as info:  # a long value is shown on one line, cut to 60 characters
        to_json(np.arange(100.0).reshape(10, 10), "similarity")
    shown = str(info.value).removeprefix("parameter 'similarity': ").removesuffix(" (ndarray) cannot be written as JSON")
    assert len(shown) == 60 and shown.endswith("...") and shown.startswith("array([[ 0., 1., 2.,") and "\n" not in shown

    class Shown:
        def __init__(self, n: int) -> None:
            self.n = n

        def __repr__(self) -> str:
            return "v" * self.n

    for n, expected in ((60, "v" * 60), (61, "v" * 57 + "...")):
        with pytest.raises(ArgumentError, match=f"parameter 'p': {re.escape(expected)} \\(Shown\\)"):
            to_json(Shown(n), "p")


def test_params_refuses_a_value_json_cannot_hold(tmp_path, capsys, monkeypatch) -> None:
    changed = dataclasses.replace(FAMILIES["mllspccv"], defaults={"similarity": np.eye(3)})
    monkeypatch.setitem(FAMILIES, "mllspccv", changed)
    out = tmp_path / "p.json"
    assert main(["params", "mllspccv", "--out", str(out)]) == 2
    assert _one_error_line(capsys).startswith("mlgp: error: parameter 'similarity': array([[1., 0., 0.], [0., 1.,")
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_params_into_a_missing_folder_is_refused(tmp_path, capsys) -> None:
    out = tmp_path / "no" / "p.json"
    assert main(["params", "frequency", "--out", str(out)]) == 2
    assert _one_error_line(capsys).startswith(f"mlgp: error: cannot write {out}")


# ---------------------------------------------------------------------------- bad files --
def _one_error_line(capsys) -> str:
    """The only line on standard error (nothing on standard output)."""
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert captured.out == ""
    return lines[0]


#: a bad file's content (None: no file) → what the error line says after ``FILE: ``
BAD_FILES = {
    "missing": (None, "cannot read the parameter file: No such file or directory"),
    "not UTF-8": (b"\xff\xfe{", "the parameter file is not UTF-8 text"),
    "not JSON": ("{n_estimators: 3}", "not JSON: Expecting property name enclosed in double quotes"),
    "NaN": ('{"tol": NaN}', "not JSON: NaN is not a JSON number"),
    "duplicate key": ('{"tol": 1, "tol": 2}', "not JSON: key(s) given twice: 'tol'"),
    "array": ([1, 2], "expected a JSON object {name: value}, got a JSON array"),
    "string": ('"n_estimators=3"', "expected a JSON object {name: value}, got a JSON string"),
    "params not an object": ({"params": [1]}, "'params' must be a JSON object {name: value}, got a JSON array"),
    "stray key": ({"params": {}, "seed": 1}, "unexpected key(s) 'seed' beside 'params'"),
    "other family": ({"family": "pfastxml", "params": {}}, "holds the parameters of family 'pfastxml', not 'fastxml'"),
    "other class": ({"class": "PfastXML", "params": {}}, "holds the parameters of class 'PfastXML', not 'FastXML'"),
    "a class that sorts first": ({"class": "Aardvark", "params": {}}, "holds the parameters of class 'Aardvark', not 'FastXML'"),
    "unknown parameter": ({"n_trees": 3}, "fastxml: unknown parameter(s) 'n_trees'; FastXML takes n_estimators,"),
    "out of range": ({"n_estimators": -1}, "fastxml: The 'n_estimators' parameter of FastXML must be an int in "
                                          "the range [1, inf). Got -1 instead."),
    "wrapped out of range": ({"family": "fastxml", "params": {"split_loss": "gini"}},
                             "fastxml: The 'split_loss' parameter of FastXML must be a str among"),
}


@pytest.fixture
def no_data(monkeypatch):
    """Fail any test that reads data in ``mlgp fit``."""
    def refuse(*args, **kwargs):
        raise AssertionError("data were read")

    monkeypatch.setattr("mlgp.cli.fit.read_file", refuse)
    monkeypatch.setattr("mlgp.cli.fit.load_dataset", refuse)


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_fit_refuses_a_bad_params_file_before_reading_data(case, tmp_path, capsys, no_data) -> None:
    content, says = BAD_FILES[case]
    path = tmp_path / "p.json" if content is None else _write(tmp_path, content)
    model = tmp_path / "model.npz"
    model.write_bytes(b"earlier model")
    before = sorted(tmp_path.iterdir())
    assert main(["fit", "fastxml", "--train", str(tmp_path / "train.svm"), "--params", str(path),
                 "--out", str(model)]) == 2
    line = _one_error_line(capsys)
    assert line.startswith(f"mlgp: error: {path}: {says}"), line
    assert model.read_bytes() == b"earlier model" and sorted(tmp_path.iterdir()) == before


def test_fit_refuses_a_folder_as_params_file(tmp_path, capsys, no_data) -> None:
    assert main(["fit", "frequency", "--train", "t.svm", "--params", str(tmp_path), "--out",
                 str(tmp_path / "m.npz")]) == 2
    line = _one_error_line(capsys)
    assert line.startswith(f"mlgp: error: {tmp_path}: cannot read the parameter file: Is a directory")
    assert list(tmp_path.iterdir()) == []


def test_a_bad_file_is_refused_even_where_set_would_override_it(tmp_path, capsys, no_data) -> None:
    path = _write(tmp_path, {"n_estimators": -1})
    assert main(["fit", "fastxml", "--train", "t.svm", "--params", str(path), "--set", "n_estimators=3",
                 "--out", str(tmp_path / "m.npz")]) == 2
    assert f"mlgp: error: {path}: fastxml: The 'n_estimators' parameter" in _one_error_line(capsys)


def test_a_bad_set_over_a_good_file_names_no_file(tmp_path, capsys, no_data) -> None:
    path = _write(tmp_path, {"n_estimators": 3})
    assert main(["fit", "fastxml", "--train", "t.svm", "--params", str(path), "--set", "max_leaf=0",
                 "--out", str(tmp_path / "m.npz")]) == 2
    assert _one_error_line(capsys).startswith("mlgp: error: fastxml: The 'max_leaf' parameter of FastXML")


@pytest.mark.parametrize("case", ["missing", "not JSON", "array", "other family", "unknown parameter", "out of range"])
def test_compare_refuses_a_bad_params_file_before_reading_data(case, tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setattr("mlgp.comparison.run._dataset", lambda *a: pytest.fail("data were read"))
    content, says = BAD_FILES[case]
    path = tmp_path / "p.json" if content is None else _write(tmp_path, content)
    out = tmp_path / "cmp"
    assert main(["compare", "--dataset", "tiny", "--models", "frequency,fastxml", "--params", f"fastxml={path}",
                 "--out", str(out), "--in-process"]) == 2
    assert _one_error_line(capsys).startswith(f"mlgp: error: {path}: {says}")
    assert not out.exists()


@pytest.mark.parametrize("option, says", [
    ("fastxml", "--params takes FAMILY=FILE here, got 'fastxml'"),
    ("=p.json", "--params takes FAMILY=FILE here, got '=p.json'"),
    ("trees=p.json", "unknown family 'trees'"),
    ("mlknn=p.json", "--params mlknn=p.json: mlknn is not among the families compared (frequency, fastxml)"),
])
def test_compare_refuses_a_bad_params_option(option, says, tmp_path, capsys) -> None:
    out = tmp_path / "cmp"
    assert main(["compare", "--dataset", "tiny", "--models", "frequency,fastxml", "--params", option,
                 "--out", str(out)]) == 2
    assert _one_error_line(capsys).startswith(f"mlgp: error: {says}")
    assert not out.exists()


def test_compare_refuses_two_files_for_one_family(tmp_path, capsys) -> None:
    path = _write(tmp_path, {})
    assert main(["compare", "--dataset", "tiny", "--models", "fastxml", "--params", f"fastxml={path}",
                 "--params", f"fastxml={path}", "--out", str(tmp_path / "cmp")]) == 2
    assert _one_error_line(capsys) == f"mlgp: error: --params fastxml={path}: a file for fastxml is given twice"


def test_the_seed_and_the_budget_are_keyword_only(tmp_path) -> None:
    """``seed`` and ``budget`` cannot be passed by position (a swapped pair would go unnoticed)."""
    from mlgp.cli.params import file_changes, params_document

    with pytest.raises(TypeError, match=r"params_document\(\) takes 1 positional argument but 2 were given"):
        params_document("lspc", 3)
    with pytest.raises(TypeError, match=r"file_changes\(\) takes from 2 to 3 positional arguments but 4 were given"):
        file_changes("lspc", None, {}, 3)
    assert params_document("lspc", seed=3)["family"] == "lspc" and file_changes("lspc", None, {}, seed=3) == {}


BAD_BUDGET = "budget must be a positive number (finite seconds) or None, got "


@pytest.mark.parametrize("option, says", [(["--budget", "0"], BAD_BUDGET + "0.0"), (["--budget", "nan"], BAD_BUDGET + "nan"),
                                          (["--budget", "inf"], BAD_BUDGET + "inf")])
def test_a_bad_budget_with_a_good_params_file_is_not_blamed_on_the_file(option, says, tmp_path, capsys,
                                                                          no_data) -> None:
    path = _write(tmp_path, {"family": "fastxml", "class": "FastXML", "params": {"n_estimators": 2}})
    assert main(["fit", "fastxml", "--train", str(tmp_path / "train.svm"), "--params", str(path), *option,
                 "--out", str(tmp_path / "model.npz")]) == 2
    assert _one_error_line(capsys) == f"mlgp: error: {says}"
