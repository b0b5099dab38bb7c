"""``mlgp demo``'s options: generated from the recipe's settings, ``--help`` showing the values a
run uses, choices from the registries, and the settings a run really trains with."""

from __future__ import annotations

import pytest

from mlgp.cli import main


@pytest.fixture
def no_data_home(monkeypatch):
    monkeypatch.delenv("MLGP_DATA", raising=False)


def _demo_help(capsys) -> dict[str, str]:
    """``mlgp demo --help``: each option's help text (whitespace normalised), by its flag."""
    with pytest.raises(SystemExit, match="^0$") as exc:
        main(["demo", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    options = out[out.index("options:"):]
    entries, flag = {}, None
    for line in options.splitlines()[1:]:
        if line.startswith("  -"):
            flag = line.split()[0].rstrip(",")
            entries[flag] = " ".join(line.split()[1:])
        elif flag is not None:
            entries[flag] += " " + line.strip()
    return {f: " ".join(t.split()) for f, t in entries.items()}


def test_demo_help_shows_the_values_the_demo_trains_with(capsys) -> None:
    """Every default in ``--help`` is the one a run uses: the settings of mlgp.recipes.demo_settings."""
    from mlgp.recipes import demo_settings

    helps = _demo_help(capsys)
    bibtex, synthetic, other = demo_settings("bibtex"), demo_settings("synthetic"), demo_settings("elsewhere")
    for flag, name in [("--epochs", "epochs"), ("--batch-size", "batch_size"), ("--latent", "num_latent_gps"),
                       ("--inducing", "num_inducing"), ("--q-family", "q_family")]:
        values = (getattr(bibtex, name), getattr(synthetic, name), getattr(other, name))
        text = helps[flag]
        if len(set(values)) == 1:
            assert f"(default: {values[0]})" in text, (flag, text)
        else:
            assert "default: " in text and f"{values[0]} on bibtex" in text, (flag, text)
            assert f"{values[1]} on synthetic" in text, (flag, text)
            assert f"{values[2]} on " in text and "other datasets" in text, (flag, text)
    for flag, default in [("--seed", "(default: 0)"), ("--kernel", f"(default: {bibtex.kernel})"),
                          ("--learning-rate", f"(default: {bibtex.learning_rate:g})"), ("--dtype", f"(default: {bibtex.dtype})"),
                          ("--negatives", "(default: all labels, the exact bound)"), ("--max-train", "(default: all)"),
                          ("--warm-start", "(default: on)"), ("--unit-sphere-z", "(default: on)")]:
        assert default in helps[flag], (flag, helps[flag])


def test_demo_options_take_their_choices_from_the_registries(capsys) -> None:
    from mlgp.cli import build_parser
    from mlgp.floats import FLOAT_POLICIES
    from mlgp.kernels.factory import KERNELS
    from mlgp.training import OPTIMIZERS
    from mlgp.variational import Q_FAMILIES

    demo = build_parser()._subparsers._group_actions[0].choices["demo"]
    actions = {a.option_strings[0]: a for a in demo._actions if a.option_strings}
    helps = _demo_help(capsys)
    for flag, registry in [("--kernel", KERNELS), ("--q-family", Q_FAMILIES), ("--optimizer", OPTIMIZERS),
                           ("--dtype", FLOAT_POLICIES)]:
        assert tuple(actions[flag].choices) == tuple(registry), flag
        assert ", ".join(registry) in helps[flag], flag


def _demo_settings_used(monkeypatch, argv):
    """The settings ``mlgp demo`` hands :func:`mlgp.recipes.train_mlgpf` (which is not run)."""
    import mlgp.recipes
    from mlgp.errors import MLGPError

    seen = {}

    def spy(dataset, settings, **kw):
        seen["settings"], seen["kw"] = settings, kw
        raise MLGPError("stopped by the test")

    monkeypatch.setattr(mlgp.recipes, "train_mlgpf", spy)
    assert main(["demo", *argv]) == 2
    return seen["settings"]


def test_demo_trains_with_the_settings_it_shows(no_data_home, monkeypatch, capsys) -> None:
    from mlgp.recipes import demo_settings

    assert _demo_settings_used(monkeypatch, []) == demo_settings("synthetic")
    assert _demo_settings_used(monkeypatch, ["--quick"]) == demo_settings("synthetic", quick=True)
    changed = _demo_settings_used(monkeypatch, ["--quick", "--epochs", "3", "--no-warm-start", "--q-family", "whitened"])
    assert changed == demo_settings("synthetic", quick=True).replace(epochs=3, warm_start=False, q_family="whitened")
    out = capsys.readouterr().out
    assert "P=8 latent GPs" in out and "whitened q(u), float32; Adam (lr 0.005), 3 epoch(s), batch 200" in out


def test_demo_refuses_options_that_cannot_be_combined(no_data_home, capsys) -> None:
    assert main(["demo", "--quick", "--optimizer", "natgrad", "--q-family", "preconditioned"]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("mlgp: error: optimizer='natgrad' needs a Cholesky q(u) family")
    assert "model:" not in captured.out
