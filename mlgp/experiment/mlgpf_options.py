"""The MLGPF training options every experiment script shares, generated from the recipe's settings.

:func:`add_training_args` adds one option per field of :data:`SCRIPT_OPTIONS` of
:class:`mlgp.recipes.MLGPFSettings` (flags, parsers, choices and help texts from the fields), plus
``--validate``, ``--checkpoint-dir`` and the deprecated ``--whiten``. The scripts reproduce the
paper's tables, so their defaults are the recipe's with the paper's model form over them
(:data:`mlgp.recipes.PAPER_FORM`), the script's own epoch count, and in ``--quick`` mode
:data:`mlgp.recipes.QUICK_SETTINGS` with :data:`QUICK_BATCH_SIZE`; ``--help`` shows them.
:func:`training_options` turns the parsed options into keyword arguments of
:func:`mlgp.recipes.train_mlgpf`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import ArgumentError, warn
from ..recipes.options import add_settings_options, describe_value, given_settings
from ..recipes.settings import PAPER_FORM, QUICK_SETTINGS, setting_fields

__all__ = ["QUICK_BATCH_SIZE", "QUICK_SIZES", "SCRIPT_OPTIONS", "add_training_args", "run_checkpoint_dir",
           "script_defaults", "training_options"]

#: The settings the scripts take as options, in the order ``--help`` lists them.
SCRIPT_OPTIONS: tuple[str, ...] = ("epochs", "batch_size", "learning_rate", "q_family", "optimizer", "dtype",
                                   "warm_start", "covariance_warmup", "kl_weight", "batch_growth", "bias_init", "unit_sphere_inducing",
                                   "subspace_rank", "subspace_sample")

#: Model sizes of every MLGPF script's ``--quick`` mode (tiny, for the CI smoke test).
QUICK_SIZES: dict[str, int] = {k: v for k, v in QUICK_SETTINGS.items() if k != "epochs"}

#: The batch of the scripts' ``--quick`` mode (two steps per epoch on its 300 points).
QUICK_BATCH_SIZE = 200

#: A script's epochs when it does not name its own (full run, ``--quick``).
_EPOCHS = (30, QUICK_SETTINGS["epochs"])


def script_defaults(epochs: int, quick_epochs: int, quick: bool) -> dict[str, Any]:
    """The values of :data:`SCRIPT_OPTIONS` that a script uses when an option is not given."""
    values = {name: f.default for name, f in setting_fields().items() if name in SCRIPT_OPTIONS}
    values.update({k: v for k, v in PAPER_FORM.items() if k in SCRIPT_OPTIONS})
    values["epochs"] = quick_epochs if quick else epochs
    if quick:
        values["batch_size"] = QUICK_BATCH_SIZE
    return values


def add_training_args(parser: argparse.ArgumentParser, epochs: int = _EPOCHS[0],
                      quick_epochs: int = _EPOCHS[1]) -> argparse.ArgumentParser:
    """Add the MLGPF training options the scripts share (see the module's description).

    ``epochs`` and ``quick_epochs``: the script's epoch count in full and ``--quick`` runs (what
    ``--help`` shows, and :func:`training_options` uses).
    """
    full, quick = script_defaults(epochs, quick_epochs, False), script_defaults(epochs, quick_epochs, True)

    def default_text(name: str) -> str:
        text = describe_value(name, full[name])
        return text if full[name] == quick[name] else f"{text}; {describe_value(name, quick[name])} with --quick"

    add_settings_options(parser, SCRIPT_OPTIONS, default_text)
    parser.add_argument("--whiten", action="store_true",
                        help="deprecated: the same as --q-family whitened")
    parser.add_argument("--validate", action="store_true", help="record test P@1/3/5 in the ELBO trace after every epoch")
    parser.add_argument(
        "--checkpoint-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="checkpoint every run after each epoch in its own sub-folder of DIR and resume from it; "
        "rerun with a larger --epochs to extend finished runs",
    )
    parser.set_defaults(_mlgpf_epochs=(epochs, quick_epochs))
    return parser


def training_options(args: argparse.Namespace, epochs: int | None = None, quick_epochs: int | None = None) -> dict[str, Any]:
    """Keyword arguments of :func:`mlgp.recipes.train_mlgpf` from parsed :func:`add_training_args`
    options: the fields of :data:`SCRIPT_OPTIONS` and ``validate``, and in ``--quick`` mode
    :data:`QUICK_SIZES` too.

    ``epochs``, ``quick_epochs``: the script's epoch counts, when :func:`add_training_args` was
    not told them. ``--whiten`` warns (``FutureWarning``) and stands for ``--q-family whitened``.

    Raises
    ------
    ArgumentError
        For ``--whiten`` with another ``--q-family``.
    """
    quick = bool(getattr(args, "quick", False))
    e, qe = getattr(args, "_mlgpf_epochs", _EPOCHS)
    options = script_defaults(e if epochs is None else epochs, qe if quick_epochs is None else quick_epochs, quick)
    given = given_settings(args, SCRIPT_OPTIONS)
    if getattr(args, "whiten", False):
        warn("--whiten is deprecated; use --q-family whitened", FutureWarning)
        if given.get("q_family", "whitened") != "whitened":
            raise ArgumentError(f"--whiten asks for the whitened family but --q-family is {given['q_family']}")
        given["q_family"] = "whitened"
    options.update(given)
    options["validate"] = bool(getattr(args, "validate", False))
    if quick:
        options.update(QUICK_SIZES)
    return options


def run_checkpoint_dir(args: argparse.Namespace, *parts: object) -> Path | None:
    """The checkpoint folder of one run, ``<--checkpoint-dir>/<part>_<part>…`` (None without the option).

    ``parts`` name the run, e.g. ``("bibtex", "SE", "seed0")``; characters other than letters,
    digits, ``-``, ``+`` and ``.`` become ``_``.
    """
    root = getattr(args, "checkpoint_dir", None)
    if root is None:
        return None
    name = "_".join(str(p) for p in parts)
    return Path(root) / "".join(c if c.isalnum() or c in "-+." else "_" for c in name)
