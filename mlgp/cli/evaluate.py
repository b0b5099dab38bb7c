"""``mlgp evaluate SCORES (--dataset NAME [--split test] | --data FILE) [--k 1,3,5] [--csv OUT]``.

P@k, nDCG@k, PSP@k and PSnDCG@k (percent) of a score file against a split's labels, or against the
labels of a labelled data file (``--data``, in any format ``mlgp fit --train`` reads; its
propensities then come from its own labels, which the output says). ``SCORES`` is any file
:func:`mlgp.scores.load_scores` reads — what :func:`mlgp.scores.save_scores` writes from a
model's ``decision_function`` (dense ``.npy``) or ``predict_topk`` (``.npz`` with ``indices`` and
``scores``, or ``.txt``: what ``mlgp predict --format txt`` writes), or a ``scipy.sparse.save_npz`` matrix. Rows are the split's points in file order;
columns (or ``indices``) are 0-based label indices. Without ``--k``, a top-k ranking is evaluated at
the default cut-offs (1, 3, 5) that it holds (those ≤ its k: ``mlgp predict --top-k 3`` gives @1 and
@3); a cut-off that ``--k`` asks for beyond the ranking's k is refused. Every input is checked
before the metrics run, ``--csv`` as every command's output file is (:func:`mlgp.files.check_output_file`:
a folder that does not exist yet is made when the table is written).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import ShapeError
from ..files import check_output_file, make_folder
from .common import format_metrics, int_list, propensity_pair, required_home, write_csv
from .inputs import add_format_option, add_labels_from_option, add_zero_based_option, read_file

__all__ = ["DEFAULT_KS", "add_parser", "cut_offs", "run"]

#: the cut-offs evaluated when ``--k`` is not given
DEFAULT_KS = (1, 3, 5)


def add_parser(sub, home_kw: dict) -> argparse.ArgumentParser:
    """Register the subcommand on ``sub`` (from ``add_subparsers``)."""
    p = sub.add_parser(
        "evaluate", help="P@k, nDCG@k, PSP@k, PSnDCG@k of a scores file",
        description="Evaluate predicted scores against a dataset split or a labelled data file. SCORES: .npy "
                    "(dense N×K array), .npz from scipy.sparse.save_npz (sparse N×K; missing entries rank "
                    "last), .npz with arrays 'indices' and 'scores' (top-k ranking, both N×k, "
                    "best first), or .txt (top-k ranking, one line of label:score pairs per point, as "
                    "'mlgp predict --format txt' writes). Rows follow the split's file order, columns are 0-based label "
                    "indices. Ties in scores are broken by lower label index.")
    p.add_argument("scores", type=Path, metavar="SCORES", help="scores file (.npy, .npz or .txt)")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--dataset", metavar="NAME", help="dataset name in the data home")
    source.add_argument("--data", type=Path, metavar="FILE",
                        help="a labelled data file (its propensities then come from its own labels)")
    p.add_argument("--split", choices=("test", "train"), default="test", help="with --dataset (default: test)")
    add_format_option(p, "--data-format")
    add_zero_based_option(p)
    add_labels_from_option(p)
    p.add_argument("--k", type=int_list, default=None, metavar="K,K,...",
                   help="cut-offs (default: 1,3,5, those a top-k ranking holds)")
    p.add_argument("--propensity", type=propensity_pair, default=None, metavar="A,B",
                   help="propensity parameters (default: the dataset's, usually 0.55,1.5; 0.55,1.5 for --data)")
    p.add_argument("--csv", type=Path, default=None, metavar="OUT", help="also write the table as CSV")
    p.add_argument("--data-home", **home_kw)
    p.set_defaults(func=run)
    return p


def _describe(scores) -> str:
    import scipy.sparse as sp

    from ..scores import TopK

    if isinstance(scores, TopK):
        return f"top-{scores.k} ranking of {scores.num_rows} rows"
    if sp.issparse(scores):
        return f"sparse {scores.shape[0]}×{scores.shape[1]} scores ({scores.nnz} stored)"
    return f"dense {scores.shape[0]}×{scores.shape[1]} scores ({scores.dtype})"


def cut_offs(asked: list[int] | None, scores, where: str) -> list[int]:
    """The cut-offs to evaluate ``scores`` at: ``--k``'s (``asked``) or, without it, the
    :data:`DEFAULT_KS` that a top-k ranking holds (all of them for full scores).

    Raises
    ------
    ShapeError
        When ``--k`` asks for a cut-off beyond a top-k ranking's k.
    """
    from ..scores import TopK

    if not isinstance(scores, TopK):
        return list(DEFAULT_KS) if asked is None else asked
    if asked is None:
        return [k for k in DEFAULT_KS if k <= scores.k]  # 1 ≤ k always
    if scores.k < max(asked):
        raise ShapeError(f"{where}: the ranking keeps k={scores.k} labels per row, fewer than "
                         f"the largest cut-off {max(asked)} (use --k)")
    return asked


def _labels(args: argparse.Namespace, scores):
    """``(Y, inverse propensities, what the labels are, their propensities' source)`` of
    ``--dataset``'s split or of the ``--data`` file."""
    import scipy.sparse as sp

    from ..data import load
    from ..metrics import inverse_propensity
    from ..scores import TopK

    if args.data is not None:
        width = None if isinstance(scores, TopK) else scores.shape[1]  # the K of full scores
        _, Y = read_file(args.data, args.data_format, args.zero_based, labels_from=args.labels_from,
                         num_labels=width)
        if isinstance(scores, TopK) and scores.num_rows == Y.shape[0]:
            needed = int(scores.indices.max()) + 1 if scores.indices.size else 0
            Y = sp.csr_matrix((Y.data, Y.indices, Y.indptr), shape=(Y.shape[0], max(Y.shape[1], needed)))
        a, b = args.propensity if args.propensity is not None else (0.55, 1.5)
        return Y, inverse_propensity(Y, a, b), f"{args.data}", f"{args.data}'s own labels with A={a:g}, B={b:g}"
    ds = load(args.dataset, required_home(args.data_home), option="--data-home")
    split = ds.train if args.split == "train" else ds.test
    a, b = args.propensity if args.propensity is not None else (ds.propensity_a, ds.propensity_b)
    return (split.Y, ds.inverse_propensity(a, b), f"{ds.name}'s {split.name} split",
            f"the train split with A={a:g}, B={b:g}")


def run(args: argparse.Namespace) -> int:
    """Print the metric table (and write it as CSV with ``--csv``)."""
    from ..metrics import evaluate
    from ..scores import TopK, load_scores

    if args.csv is not None:  # the one output-path check of every command (mlgp.files)
        check_output_file(args.csv, "--csv")
    scores = load_scores(args.scores)
    Y, inv_propensity, labels, propensities = _labels(args, scores)
    N, K = Y.shape
    where = f"{args.scores}"
    if isinstance(scores, TopK):
        if scores.num_rows != N:
            raise ShapeError(f"{where}: the ranking has {scores.num_rows} rows but {labels} has N={N} points")
        if scores.indices.size and scores.indices.max() >= K:
            raise ShapeError(f"{where}: the ranking names label {int(scores.indices.max())} but {labels} has "
                             f"K={K} labels")
    elif scores.shape != (N, K):
        raise ShapeError(f"{where}: scores have shape {scores.shape[0]}×{scores.shape[1]} but "
                         f"{labels} has N×K = {N}×{K}")
    ks = cut_offs(args.k, scores, where)
    table = evaluate(Y, scores, ks=ks, inv_propensity=inv_propensity, percent=True)
    print(f"{labels} (N={N}, K={K}); {_describe(scores)} from {where}")
    print(f"propensities from {propensities}")
    print(format_metrics(table))
    if args.csv is not None:
        make_folder(args.csv.parent, "--csv")  # as --out of fit and predict: a new folder is made
        write_csv(table, args.csv)
        print(f"table written to {args.csv}")
    return 0
