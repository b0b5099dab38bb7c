"""``mlgp predict MODEL (--dataset NAME [--split test] | --data FILE) --top-k K --out SCORES [--format npz|txt]``.

Scores a dataset split or a labelled file with a model saved by ``mlgp fit`` (any family) and
writes each point's K best labels: a ``.npz`` with ``indices`` and ``scores`` (N, K), best first, or
with ``--format txt`` (or an ``--out`` ending in ``.txt``) one line per point of ``label:score``
pairs (:mod:`mlgp.scores._text`); ``mlgp evaluate`` reads both. The model file, K (1 ≤ K ≤ the
model's labels) and the output path are checked before the data are read (a folder of ``--out``
that does not exist is made when the scores are written); a data file narrower than the model is padded with empty columns to its width, a wider one
raises :class:`~mlgp.errors.ShapeError`. ``--zero-based`` says where a LIBSVM file's feature indices
start. Files are written atomically.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import ArgumentError
from ..files import check_output_file, make_folder
from .common import positive_int
from .inputs import add_format_option, add_zero_based_option, load_dataset, read_file

__all__ = ["add_parser", "run"]

#: ``--format`` → the ending of its file
_ENDINGS = {"npz": ".npz", "txt": ".txt"}


def add_parser(sub, home_kw: dict) -> argparse.ArgumentParser:
    """Register the subcommand on ``sub`` (from ``add_subparsers``)."""
    p = sub.add_parser("predict", help="top-k labels of a saved model for a dataset split or a file",
                       description="Rank the labels of every point of a dataset split or a labelled data file "
                                   "with a model saved by 'mlgp fit', and write the top K.")
    p.add_argument("model", type=Path, metavar="MODEL", help="a model file written by 'mlgp fit'")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--dataset", metavar="NAME", help="a dataset of the data home")
    source.add_argument("--data", type=Path, metavar="FILE", help="a labelled data file (its labels are not used)")
    p.add_argument("--split", choices=("test", "train"), default="test", help="with --dataset (default: test)")
    add_format_option(p, "--data-format")
    add_zero_based_option(p)
    p.add_argument("--top-k", type=positive_int, required=True, metavar="K", help="labels kept per point")
    p.add_argument("--out", type=Path, required=True, metavar="SCORES", help="output file")
    p.add_argument("--format", dest="out_format", choices=tuple(_ENDINGS), default=None,
                   help="npz: arrays indices and scores; txt: one line per point of label:score pairs, best first "
                        "(default: from --out's ending, .npz or .txt); 'mlgp evaluate' reads both")
    p.add_argument("--batch-size", type=positive_int, default=1000, metavar="B", help="rows scored at a time")
    p.add_argument("--data-home", **home_kw)
    p.set_defaults(func=run)
    return p


def _out_format(args: argparse.Namespace) -> str:
    """``--format``, or the one ``--out``'s ending names; the ending must match the format."""
    by_ending = next((fmt for fmt, ending in _ENDINGS.items() if args.out.suffix == ending), None)
    fmt = args.out_format or by_ending
    if fmt is None:
        raise ArgumentError(f"--out {args.out}: a top-k score file ends in .npz or .txt")
    if by_ending != fmt:
        raise ArgumentError(f"--out {args.out}: a --format {fmt} score file ends in {_ENDINGS[fmt]}")
    return fmt


def run(args: argparse.Namespace) -> int:
    """Score and write; prints one line saying what was written."""
    from ..families import load_model
    from ..scores import save_scores

    _out_format(args)
    model = load_model(args.model)
    K = model._n_outputs  # the width of its scores: K labels (or classes)
    if args.top_k > K:
        raise ArgumentError(f"--top-k {args.top_k}: the model ranks K={K} labels; choose 1 ≤ K ≤ {K}")
    check_output_file(args.out)
    if args.dataset is not None:
        ds = load_dataset(args.dataset, args.data_home)
        X = (ds.test if args.split == "test" else ds.train).X
    else:
        X, _ = read_file(args.data, args.data_format, args.zero_based, num_features=model.n_features_in_,
                         labels_from=0)  # its labels are not used
    topk = model.predict_topk(X, args.top_k, batch_size=args.batch_size)  # checks X's width against the model
    make_folder(args.out.parent)
    save_scores(args.out, topk)
    print(f"top-{args.top_k} labels of {X.shape[0]} points by {type(model).__name__} written to {args.out}")
    return 0
