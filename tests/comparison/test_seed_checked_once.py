"""A seed is checked once on its way to a family's ``fit`` (by :func:`mlgp.families.make_estimator`,
the command line only turning its text into an int) and has one range everywhere: 0 to
:data:`mlgp.arguments.MAX_SEED`. MLGPF's settings are checked once per ``fit`` too: ``fit`` reuses
the settings its parameter check made."""

from __future__ import annotations

import pytest
from _compare_stubs import command_line, tiny

import mlgp
from mlgp.arguments import MAX_SEED
from mlgp.errors import ArgumentError
from mlgp.estimator import MultiLabelEstimator, ParameterError
from mlgp.families import FAMILIES, make_estimator


@pytest.fixture
def seed_checks(monkeypatch) -> dict:
    """Counts :func:`mlgp.arguments.seed` (make_estimator's check and MLGPF's settings check) and
    records the ``trusted`` names each estimator's parameter check was given."""
    import mlgp.arguments

    seen = {"seed": 0, "trusted": []}
    check, validate = mlgp.arguments.seed, MultiLabelEstimator._validate_params

    def counted(value, name="seed"):
        seen["seed"] += 1
        return check(value, name)

    def recorded(self, trusted=()):
        seen["trusted"].append(tuple(trusted))
        return validate(self, trusted)

    monkeypatch.setattr(mlgp.arguments, "seed", counted)
    monkeypatch.setattr(MultiLabelEstimator, "_validate_params", recorded)
    return seen


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_make_estimator_checks_the_seed_once_and_the_family_trusts_it(seed_checks, name) -> None:
    est = make_estimator(name, seed=7)
    seed_name = FAMILIES[name].seed
    assert seed_checks["seed"] == 1  # MLGPF's settings do not check it again
    assert seed_checks["trusted"] == [(seed_name,) if seed_name else ()]
    if seed_name:
        assert est.get_params()[seed_name] == 7


def test_a_seed_given_as_a_setting_is_checked_by_the_family(seed_checks) -> None:
    make_estimator("lspc", {"random_state": 3}, seed=7)
    assert seed_checks["trusted"] == [()]  # the setting wins, and is not trusted
    with pytest.raises(ArgumentError, match="random_state"):
        make_estimator("lspc", {"random_state": -3}, seed=7)


@pytest.mark.parametrize("bad", [-1, MAX_SEED + 1, 1.5, True, "3"])
@pytest.mark.parametrize("name", ["frequency", "lspc", "geneml", "mlgpf"])
def test_one_range_for_every_family(name, bad) -> None:
    """Refused for a family that takes no seed too (the seed a comparison records is checked)."""
    with pytest.raises(ArgumentError, match=rf"^seed must be an integer from 0 to {MAX_SEED}, got {bad!r}$"):
        make_estimator(name, seed=bad)
    make_estimator(name, seed=MAX_SEED)


def test_compare_checks_the_seed_once_per_family(seed_checks) -> None:
    result = mlgp.compare(["frequency", "lspc"], dataset=tiny(), seed=5, isolate=False)
    assert (result.results["error"] == "").all()
    assert seed_checks["seed"] == 2 and seed_checks["trusted"] == [(), ("random_state",)]


def test_mlgpf_classifier_fit_checks_its_settings_once(seed_checks) -> None:
    """A user's own fit (scikit-learn's parameter check, then ``fit``'s body) checks each setting
    once; a changed parameter is checked again."""
    from mlgp.recipes import MLGPFClassifier

    ds = tiny()
    clf = MLGPFClassifier(epochs=1, num_latent_gps=2, num_inducing=5, validation_fraction=0, seed=4)
    clf.fit(ds.train.X, ds.train.Y)
    assert seed_checks["seed"] == 1
    clf.set_params(seed=MAX_SEED + 1)
    with pytest.raises(ParameterError, match="seed must be an integer"):
        clf.fit(ds.train.X, ds.train.Y)


@pytest.mark.parametrize("command", ["compare", "fit", "params"])
def test_the_command_line_converts_the_seed_and_make_estimator_checks_it(seed_checks, tmp_path, capsys,
                                                                         command) -> None:
    from mlgp.cli import main

    args = command_line(command, "lspc", tmp_path)
    assert main([*args, "--seed", "5"]) == 0
    assert seed_checks["seed"] == 1
    capsys.readouterr()
    for bad, message in (("-1", "seed must be an integer from 0 to 2147483647, got -1"),
                         ("2147483648", "seed must be an integer from 0 to 2147483647, got 2147483648"),
                         ("abc", "argument --seed: expected a whole number, got 'abc'")):
        try:
            status = main([*args, "--seed", bad])
        except SystemExit as exit_:  # argparse's own usage errors
            status = exit_.code
        assert status == 2
        assert capsys.readouterr().err.strip().endswith(f"mlgp: error: {message}")


def test_mlgpf_settings_are_checked_again_when_a_parameter_is_another_object(seed_checks) -> None:
    """The settings kept from the parameter check serve the same parameter objects only: a changed
    seed is checked again, and an array where a tuple was (which ``==`` cannot compare as one truth
    value) is checked, not compared."""
    import numpy as np

    from mlgp.recipes import MLGPFClassifier

    clf = MLGPFClassifier(natgrad_gamma=(0.01, 0.1, 100))
    clf._validate_params()
    clf._validate_params()
    assert seed_checks["seed"] == 1
    clf.set_params(seed=5)
    clf._validate_params()
    assert seed_checks["seed"] == 2
    clf.set_params(natgrad_gamma=np.array([0.01, 0.1, 100.0]))
    try:
        clf._validate_params()
    except ParameterError:
        pass  # refused by its check; a ValueError from comparing the two would fail the test
