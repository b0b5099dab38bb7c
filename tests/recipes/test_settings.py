"""The MLGPF recipe's one settings source: :class:`mlgp.recipes.MLGPFSettings`, its layers, the
registries its choices come from, and the command-line options generated from it."""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import subprocess
import sys

import pytest

from mlgp.errors import ArgumentError
from mlgp.recipes import (
    DEMO_SETTINGS,
    OTHER_SIZES,
    PAPER_FORM,
    PAPER_SETTINGS,
    QUICK_SETTINGS,
    MLGPFSettings,
    demo_settings,
)
from mlgp.recipes.options import RegistryChoices, add_settings_options, describe_cases
from mlgp.recipes.settings import demo_values, setting_fields


def _registries() -> dict[str, tuple[str, ...]]:
    """Each choice field and the names of the registry it must take them from."""
    from mlgp.floats import FLOAT_POLICIES
    from mlgp.kernels.factory import KERNELS
    from mlgp.models.builders import BIAS_INITS
    from mlgp.training import OPTIMIZERS
    from mlgp.variational import Q_FAMILIES

    return {"kernel": tuple(KERNELS), "q_family": tuple(Q_FAMILIES), "optimizer": tuple(OPTIMIZERS),
            "dtype": tuple(FLOAT_POLICIES), "bias_init": tuple(BIAS_INITS), "preprocessing": ("auto", "rows", "columns")}


def test_every_field_has_a_default_and_a_one_line_help():
    fields = setting_fields()
    assert list(fields) == list(MLGPFSettings.names())
    for name, f in fields.items():
        assert f.default is not dataclasses.MISSING, name
        text = f.metadata["help"]
        assert text and "\n" not in text and "%" not in text, name
        if f.default is None:
            assert f.metadata["none"], f"{name}: help texts need to say what None means"


def test_the_choice_fields_are_exactly_the_registries():
    fields = setting_fields()
    choice_fields = {n for n, f in fields.items() if f.metadata["kind"] == "choice"}
    registries = _registries()
    assert choice_fields == set(registries)
    for name, names in registries.items():
        assert fields[name].metadata["choices"]() == names, name
        assert getattr(MLGPFSettings(), name) in names, name


@pytest.mark.parametrize("name", ["kernel", "q_family", "optimizer", "dtype", "bias_init"])
def test_a_bad_choice_raises_argument_error_naming_the_choices(name):
    with pytest.raises(ArgumentError, match=f"^{name} must be one of") as caught:
        MLGPFSettings(**{name: "nonsense"})
    message = str(caught.value)
    assert "'nonsense'" in message
    for choice in _registries()[name]:
        assert repr(choice) in message, (name, choice)


def test_canonical_kernel_name_is_the_kernel_registry_check():
    from mlgp.kernels.factory import KERNEL_ALIASES, KERNELS, canonical_kernel_name

    for alias, name in KERNEL_ALIASES.items():
        assert name in KERNELS and canonical_kernel_name(alias.upper()) == name
    for name in KERNELS:
        assert canonical_kernel_name(name) == name
    for bad in ("matern", None, 3):
        with pytest.raises(ArgumentError, match=r"kernel must be one of 'linear', 'se', 'se\+linear', 'se\+linear-shared'"):
            canonical_kernel_name(bad)


def test_settings_canonicalise_once_and_refuse_unknown_names():
    s = MLGPFSettings(kernel="RBF", batch_growth="paper", dtype="float64", natgrad_gamma=[0.05, 0.2, 10], learning_rate=1)
    assert (s.kernel, s.batch_growth, s.dtype, s.natgrad_gamma) == ("se", (10, 20), "float64", (0.05, 0.2, 10))
    assert isinstance(s.learning_rate, float)
    assert s.replace(epochs=3).epochs == 3 and s.epochs == 20  # frozen: replace makes a copy
    with pytest.raises(ArgumentError, match="unknown MLGPF setting\\(s\\) 'epoch'; the settings are kernel, "):
        s.replace(epoch=3)
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'epochs'"):
        s.epochs = 3


def test_sizes_come_from_the_paper_else_the_other_sizes():
    s = MLGPFSettings()
    assert s.sized_for("bibtex", 159).num_latent_gps == PAPER_SETTINGS["bibtex"]["num_latent_gps"]
    small = s.sized_for("emotions", 6)
    assert (small.num_latent_gps, small.num_inducing) == (6, OTHER_SIZES["num_inducing"])
    assert s.replace(num_latent_gps=3).sized_for("bibtex", 159).num_latent_gps == 3  # a given P is kept


def test_the_demo_layers():
    for name, layer in DEMO_SETTINGS.items():
        assert set(layer) <= set(MLGPFSettings.names()), name
        s = demo_settings(name)
        assert all(getattr(s, k) == v for k, v in layer.items())
    quick = demo_settings("synthetic", quick=True)
    assert all(getattr(quick, k) == v for k, v in QUICK_SETTINGS.items())
    assert quick.batch_size == DEMO_SETTINGS["synthetic"]["batch_size"]
    assert demo_values("no-such-set") == demo_values("*")


def test_from_data_defaults_are_the_paper_form():
    """mlgpf_from_data and fit keep their own defaults (a model family cannot import the recipes):
    the paper's form, the model's in the spec and the training's (no tied factors) in fit."""
    from mlgp.data import mlgpf_prior
    from mlgp.models import mlgpf_from_data
    from mlgp.training import fit

    params = inspect.signature(mlgpf_from_data).parameters
    for name, value in OTHER_SIZES.items():
        assert params[name].default == value, name
    ds = mlgpf_prior(num_train=40, num_test=5, num_features=3, num_labels=4, num_latent=2, seed=0)
    spec = mlgpf_from_data(ds.train.X, ds.train.Y, kernel="se", num_latent_gps=2, num_inducing=4).spec
    training = {"covariance_warmup"}
    assert {k: spec[k] for k in PAPER_FORM if k not in training} == {k: v for k, v in PAPER_FORM.items() if k not in training}
    assert {k: inspect.signature(fit).parameters[k].default for k in training} == {k: PAPER_FORM[k] for k in training}
    # the form the recipe's defaults depart from
    assert any(getattr(MLGPFSettings(), k) != v for k, v in PAPER_FORM.items())


def test_generated_options_parse_into_settings_and_name_their_registries(capsys):
    parser = argparse.ArgumentParser(prog="p")
    names = [n for n, f in setting_fields().items() if f.metadata["kind"] is not None]
    add_settings_options(parser, names, lambda name: "x")
    actions = {a.dest: a for a in parser._actions}
    for name, registry in _registries().items():
        assert isinstance(actions[name].choices, RegistryChoices) and tuple(actions[name].choices) == registry
    args = parser.parse_args(["--latent", "3", "--no-warm-start", "--batch-growth", "paper", "--kernel", "se",
                              "--learning-rate", "0.01", "--seed", "0"])
    given = {n: getattr(args, n) for n in names if getattr(args, n) is not None}
    assert given == dict(num_latent_gps=3, warm_start=False, batch_growth=(10, 20), kernel="se", learning_rate=0.01, seed=0)
    for argv, flag in [(["--dtype", "float16"], "--dtype"), (["--learning-rate", "0"], "--learning-rate"),
                       (["--batch-growth", "0,1"], "--batch-growth"), (["--seed", "-1"], "--seed")]:
        with pytest.raises(SystemExit, match="2"):
            parser.parse_args(argv)
        assert f"argument {flag}" in capsys.readouterr().err


def test_describe_cases_groups_equal_values():
    cases = [("bibtex", demo_values("bibtex")), ("synthetic", demo_values("synthetic")), ("other datasets", demo_values("*"))]
    assert describe_cases("kernel", cases) == MLGPFSettings().kernel
    assert describe_cases("num_latent_gps", cases) == "60 on bibtex and other datasets, 10 on synthetic"
    assert describe_cases("negatives", cases) == setting_fields()["negatives"].metadata["none"]


def test_settings_and_the_cli_parser_import_no_tensorflow():
    code = ("import sys, mlgp.recipes, mlgp.recipes.options; from mlgp.cli import build_parser; build_parser(); "
            "mlgp.recipes.settings.demo_values('bibtex'); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('tensorflow', 'gpflow')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout[:300]


def test_a_kernel_is_a_name_or_a_gpflow_kernel():
    from gpflow.kernels import Matern32

    from mlgp.errors import ArgumentError
    from mlgp.recipes import MLGPFSettings

    with pytest.raises(ArgumentError, match=r"kernel must be a kernel name or a gpflow.kernels.Kernel; got 5"):
        MLGPFSettings(kernel=5)
    kernel = Matern32()
    assert MLGPFSettings(kernel=kernel).kernel is kernel


def test_replace_checks_only_what_changed_and_the_relations_again(monkeypatch) -> None:
    """Each field is checked once, when the settings are made: ``replace`` checks the fields it
    changes (a bad one still raises) and the checks between fields, not every field again."""
    import mlgp.arguments

    calls = []
    for name in ("positive_int", "positive_real", "flag", "seed", "natgrad_gamma"):
        real = getattr(mlgp.arguments, name)
        monkeypatch.setattr(mlgp.arguments, name, lambda *a, _real=real, _name=name, **k: calls.append(_name) or _real(*a, **k))
    s = MLGPFSettings()
    made = len(calls)
    assert made >= 10
    t = s.replace(seed=3, epochs=7)
    assert sorted(calls[made:]) == ["positive_int", "seed"] and (t.seed, t.epochs) == (3, 7)
    with pytest.raises(ArgumentError, match="epochs"):
        s.replace(epochs=0)
    with pytest.raises(ArgumentError, match="subspace_sample chooses the rows"):
        s.replace(subspace_sample=100)
    assert s.replace() == s and s.replace(seed=3) == MLGPFSettings(seed=3)


def test_trusting_checks_all_but_the_trusted_fields() -> None:
    """``trusting`` gives the settings the constructor gives, but takes the trusted fields as they
    are (their caller checked them); every other field and the checks between fields still run."""
    values = {"seed": 3, "epochs": 2, "batch_growth": "paper", "kernel": "SE+linear"}
    assert MLGPFSettings.trusting(values, ("seed",)) == MLGPFSettings(**values)
    assert MLGPFSettings.trusting({"seed": -5}, ("seed",)).seed == -5  # not checked again
    with pytest.raises(ArgumentError, match=r"seed must be an integer from 0 to 2147483647, got -5"):
        MLGPFSettings.trusting({"seed": -5}, ("epochs",))
    with pytest.raises(ArgumentError, match=r"epochs must be a positive integer"):
        MLGPFSettings.trusting({"seed": 3, "epochs": 0}, ("seed",))
    with pytest.raises(ArgumentError, match=r"subspace_sample chooses the rows of the subspace's basis"):
        MLGPFSettings.trusting({"subspace_sample": 10}, ("seed",))
    with pytest.raises(ArgumentError, match=r"unknown MLGPF setting\(s\) 'sed'"):
        MLGPFSettings.trusting({"sed": 3}, ("seed",))


def test_sized_for_data_fills_what_is_none() -> None:
    """P, M (and the batch unless given) from :func:`sizes_for_data`; given sizes are kept."""
    from mlgp.recipes.build import sized_for_data, sizes_for_data

    sizes = sizes_for_data(700, 30, 90)
    s = sized_for_data(MLGPFSettings(), 700, 30, 90, batch_given=False)
    assert (s.num_latent_gps, s.num_inducing, s.batch_size) == (sizes["num_latent_gps"], sizes["num_inducing"], 500)
    s = sized_for_data(MLGPFSettings(num_latent_gps=3, batch_size=64), 300, 30, 90, batch_given=True)
    assert (s.num_latent_gps, s.num_inducing, s.batch_size) == (3, sizes_for_data(300, 30, 90)["num_inducing"], 64)
    assert sized_for_data(MLGPFSettings(batch_size=64), 300, 30, 90, batch_given=False).batch_size == 300


def test_kl_weight_is_checked_once_and_its_option_parses():
    assert MLGPFSettings().kl_weight == 1.0 and "kl_weight" not in PAPER_FORM  # the paper's bound
    assert MLGPFSettings(kl_weight=1).kl_weight == 1.0 and type(MLGPFSettings(kl_weight=1).kl_weight) is float
    for bad in (0, 1.01, float("nan"), "0.5", True):
        with pytest.raises(ArgumentError, match=r"kl_weight must be a number in \(0, 1\]"):
            MLGPFSettings(kl_weight=bad)
    parser = argparse.ArgumentParser(prog="p")
    add_settings_options(parser, ["kl_weight"], lambda name: "x")
    assert parser.parse_args(["--kl-weight", "0.5"]).kl_weight == 0.5
    for text in ("0", "2", "half"):
        with pytest.raises(SystemExit, match="2"):
            parser.parse_args(["--kl-weight", text])


def test_covariance_warmup_is_checked_and_auto_resolves_by_family_and_optimizer():
    from mlgp.recipes.build import resolved_warmup

    assert MLGPFSettings().covariance_warmup == "auto"
    assert resolved_warmup(MLGPFSettings()) == "all"  # whitened, Adam
    assert resolved_warmup(MLGPFSettings(q_family="cholesky")) == "all"
    assert resolved_warmup(MLGPFSettings(optimizer="natgrad")) == 0
    assert resolved_warmup(MLGPFSettings(q_family="preconditioned")) == 0
    assert MLGPFSettings(covariance_warmup=" ALL ").covariance_warmup == "all"
    assert MLGPFSettings(covariance_warmup="12").covariance_warmup == 12
    assert resolved_warmup(MLGPFSettings(covariance_warmup=0)) == 0
    with pytest.raises(ArgumentError, match="covariance_warmup must be 'auto', 'all' or a whole number of steps ≥ 0; got 'x'"):
        MLGPFSettings(covariance_warmup="x")
    with pytest.raises(ArgumentError, match="covariance_warmup must be a non-negative integer, got -2"):
        MLGPFSettings(covariance_warmup=-2)
    for bad in (dict(optimizer="natgrad"), dict(q_family="preconditioned")):
        with pytest.raises(ArgumentError, match="covariance_warmup=5 ties the factors of a Cholesky q\\(u\\) family"):
            MLGPFSettings(covariance_warmup=5, **bad)
        MLGPFSettings(covariance_warmup=0, **bad)  # none asked: fine


@pytest.mark.parametrize("N, K, P, M, batch", [
    (4880, 159, 79, 400, 500),     # Bibtex's shape: half the labels, the paper's M from 4,000 points on
    (12920, 983, 300, 400, 500),   # Delicious': P capped at 300
    (1123, 53, 26, 112, 500),      # Enron's: a tenth of the points
    (391, 6, 6, 50, 391),          # emotions': every label (K ≤ 20), at least 50 inducing inputs
    (30, 45, 22, 30, 30),          # fewer points than 50: M = N
    (700, 41, 20, 70, 500),        # K // 2 = 20
])
def test_sizes_for_data_follow_the_stated_rule(N, K, P, M, batch) -> None:
    """P = min(K, max(20, min(300, K // 2))), M = min(N, 400, max(50, N // 10)), batch min(N, 500),
    worked out by hand for data sets' shapes; D does not enter."""
    from mlgp.recipes.build import sizes_for_data

    for D in (3, 100_000):
        assert sizes_for_data(N, D, K) == {"num_latent_gps": P, "num_inducing": M, "batch_size": batch}


def test_the_paper_sizes_are_table_2s() -> None:
    """The MLGPF paper's Table 2 (../shared/papers/NOTES.md): P = 159, M = 400 on Bibtex; P = 300,
    M = 400 on Delicious; 30 and 100 elsewhere."""
    assert PAPER_SETTINGS == {"bibtex": {"num_latent_gps": 159, "num_inducing": 400},
                              "delicious": {"num_latent_gps": 300, "num_inducing": 400}}
    assert OTHER_SIZES == {"num_latent_gps": 30, "num_inducing": 100}


def test_the_recipes_defaults_are_the_documented_ones() -> None:
    """The defaults docs/results.md measures (and MLGPFClassifier's docstring states): the
    shared-scale SE + linear kernel, whitened q(u), Adam at 0.005, batch 500, float32, warm start,
    Z on the unit sphere, the full KL, 20 epochs (the estimator's "auto" resolves its own), the
    factors' warm-up chosen by family and optimizer ("auto"), log-odds biases, and natural
    gradients' γ ramp."""
    s = MLGPFSettings()
    assert (s.kernel, s.q_family, s.optimizer, s.learning_rate, s.batch_size, s.dtype, s.warm_start,
            s.unit_sphere_inducing, s.kl_weight, s.epochs) == ("se+linear-shared", "whitened", "adam", 0.005, 500,
                                                              "float32", True, True, 1.0, 20)
    assert s.negatives is None and s.fixed_inducing is False and s.batch_growth is None
    assert (s.covariance_warmup, s.bias_init, s.subspace_rank) == ("auto", "log-odds", None)
    assert s.natgrad_gamma == (0.01, 0.1, 100)  # with optimizer="natgrad": γ from 0.01 to 0.1 over 100 steps
