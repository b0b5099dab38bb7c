"""The ``mlgp`` command: one module per subcommand, no model code.

``mlgp datasets``  statistics of the datasets in the data home (:mod:`mlgp.cli.datasets`);
``mlgp evaluate``  metrics of a score file against a split's labels (:mod:`mlgp.cli.evaluate`);
``mlgp demo``      train MLGPF with the paper's recipe and print its test metrics (:mod:`mlgp.cli.demo`);
``mlgp params``    a family's parameters as JSON, for ``--params`` (:mod:`mlgp.cli.params`);
``mlgp fit``       fit any family and save it (:mod:`mlgp.cli.fit`);
``mlgp predict``   top-k labels of a saved model (:mod:`mlgp.cli.predict`);
``mlgp compare``   fit several families on one split and compare them (:mod:`mlgp.cli.compare`).

Output is mlgp's own: TensorFlow is imported only by the commands that build or load a family
that uses it, and then without its start-up and log lines (:mod:`mlgp.quiet`) unless ``--verbose``
is given. Every error the package raises on bad input
(:class:`mlgp.errors.MLGPError`) and every bad option value is printed as ``mlgp: error: <message>``
and the command exits with status 2, without a traceback. Where numba cannot cache FastXML's
compiled kernels (a read-only install), the ``RuntimeWarning`` saying so is kept out too, unless
``--verbose`` is given (:data:`NUMBA_CANNOT_CACHE`); other warnings show as one line each,
``mlgp: warning: <message>``, without a file name, line number or source line.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import warnings
from typing import Sequence

from .. import __version__
from ..errors import MLGPError, one_line_warnings
from ..quiet import LEVEL
from ..scores import load_scores
from . import compare, datasets, demo, evaluate, fit, params, predict
from .common import PROG, Parser, join_negative_values

__all__ = ["main", "build_parser", "load_scores", "NUMBA_CANNOT_CACHE"]

#: the start of the warning of :func:`mlgp.baselines._fastxml._jit.compiled` where numba finds no
#: folder for its cache (the kernels are compiled in each process instead)
NUMBA_CANNOT_CACHE = "numba cannot cache "


def build_parser() -> argparse.ArgumentParser:
    """The ``mlgp`` argument parser with its subcommands."""
    parser = Parser(
        prog=PROG,
        description="Multi-label learning with Gaussian processes (GPflow 2) and its peers: fit, predict, "
                    "evaluate and compare every model family; datasets; a demo of MLGPF.",
        epilog="Data home: set MLGP_DATA (or pass --data-home) to a folder with one sub-folder "
               "per dataset holding train.txt.gz and test.txt.gz in XC format.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--verbose", action="store_true",
                        help="also show TensorFlow's start-up and log lines")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    home_kw = dict(metavar="PATH", default=None, help="data home (default: $MLGP_DATA)")
    datasets.add_parser(sub, home_kw)
    evaluate.add_parser(sub, home_kw)
    demo.add_parser(sub, home_kw)
    params.add_parser(sub, home_kw)
    fit.add_parser(sub, home_kw)
    predict.add_parser(sub, home_kw)
    compare.add_parser(sub, home_kw)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``mlgp`` command with ``argv`` (default ``sys.argv[1:]``); returns the exit status.

    0 on success; 2 for a usage error (argparse raises ``SystemExit(2)`` after printing
    ``mlgp: error: …``) or an :class:`~mlgp.errors.MLGPError` (printed the same way).
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    with warnings.catch_warnings(), one_line_warnings(PROG):
        if "--verbose" not in argv:
            warnings.filterwarnings("ignore", message=NUMBA_CANNOT_CACHE, category=RuntimeWarning)
        return _run(argv)


def _run(argv: list[str]) -> int:
    """:func:`main` without its warning filter."""
    parser = build_parser()
    try:
        with _tensorflow_logging(verbose="--verbose" in argv):
            args = parser.parse_args(join_negative_values(argv))
            args.argv = tuple(argv)  # the words as given, for a report that records its command
            return int(args.func(args) or 0)
    except MLGPError as exc:
        sys.stdout.flush()
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


@contextlib.contextmanager
def _tensorflow_logging(verbose: bool):
    """With ``--verbose``, TensorFlow's own logging for the command's duration (and its worker
    processes): ``TF_CPP_MIN_LOG_LEVEL=0`` unless the user set a level, which :mod:`mlgp.quiet`
    takes as the user's choice. Without it nothing is done here: the library keeps TensorFlow's
    start-up lines out when (and only when) a family that uses TensorFlow is imported."""
    if not verbose or LEVEL in os.environ:
        yield
        return
    os.environ[LEVEL] = "0"
    try:
        yield
    finally:
        os.environ.pop(LEVEL, None)


def _command(argv: Sequence[str]) -> str | None:
    """The subcommand named in ``argv``: its first word that is not an option (no option of the
    ``mlgp`` command itself takes a value)."""
    return next((a for a in argv if not a.startswith("-")), None)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
