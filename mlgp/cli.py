"""The ``mlgp`` command: list the benchmark datasets, evaluate saved scores, train a demo model.

Subcommands
-----------
``mlgp datasets [--data-home PATH]``
    Statistics (N train/test, D, K, labels per point, points per label) of every dataset in the
    data home; without a data home, how to set one and the names of the known datasets.
``mlgp evaluate SCORES --dataset NAME [--split test] [--k 1,3,5] [--csv OUT]``
    P@k, nDCG@k, PSP@k and PSnDCG@k (percent) of a file of predicted scores against a split's
    labels. ``SCORES`` is one of

    * ``.npy`` — a dense (N, K) array of scores (``numpy.save``);
    * ``.npz`` written by ``scipy.sparse.save_npz`` — a sparse (N, K) score matrix (missing entries
      rank below every stored one, see :mod:`mlgp.metrics`);
    * ``.npz`` with arrays ``indices`` and ``scores`` (``numpy.savez``), both (N, k) — a top-k
      ranking, best label first (a :class:`mlgp.metrics.TopK`); ``k`` must be at least the
      largest cut-off asked for;
    * ``.npz`` with a single array ``scores`` — a dense (N, K) array.

    Rows are the split's points in file order; columns (or ``indices``) are 0-based label indices.
    Text formats are not read: convert them with NumPy first.
``mlgp demo [--dataset NAME] [--epochs N] [--quick] ...``
    Train MLGPF with the paper's recipe (:func:`mlgp.recipes.train_mlgpf`) on Bibtex when a data
    home is available (else on the synthetic :func:`mlgp.data.default_problem`) and print the test
    metric table and a summary of the ELBO trace.

Every error the package raises on bad input (:class:`mlgp.errors.MLGPError`) is printed as
``mlgp: error: <message>`` and the command exits with status 2, without a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from . import __version__
from .errors import DataFormatError, DatasetNotFoundError, MLGPError, ShapeError

__all__ = ["main", "build_parser", "load_scores"]

PROG = "mlgp"

#: Settings of ``mlgp demo`` (P, M, epochs, batch size, kernel) per dataset; flags override them.
DEMO_SETTINGS: dict[str, dict] = {
    "bibtex": dict(kernel="se+linear", latent=60, inducing=200, epochs=30, batch_size=100, whiten=True),
    "synthetic": dict(kernel="se+linear", latent=10, inducing=50, epochs=100, batch_size=200, whiten=False),
}
#: Settings for any other dataset named with ``--dataset``.
DEMO_FALLBACK = dict(kernel="se+linear", latent=60, inducing=200, epochs=10, batch_size=100, whiten=True)
#: ``--quick``: tiny sizes for smoke tests.
DEMO_QUICK = dict(latent=8, inducing=20, epochs=1, max_train=300)


# --------------------------------------------------------------------------- #
# Helpers
# --------------------------------------------------------------------------- #
def _int_list(text: str) -> list[int]:
    """``"1,3,5"`` → ``[1, 3, 5]`` (argparse type)."""
    try:
        ks = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not ks or min(ks) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return sorted(set(ks))


def _float_pair(text: str) -> tuple[float, float]:
    """``"0.55,1.5"`` → ``(0.55, 1.5)`` (argparse type)."""
    try:
        a, b = (float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected two comma-separated numbers A,B, got {text!r}") from None
    return a, b


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return v


def _resolve_home(path: str | None) -> Path | None:
    """The data home from ``--data-home`` or ``$MLGP_DATA``; None when neither is set.

    An explicitly given folder that does not exist is an error
    (:class:`~mlgp.errors.DatasetNotFoundError`).
    """
    from .data import data_home
    from .data.registry import ENV_VAR

    if path is None and not os.environ.get(ENV_VAR):
        return None
    return data_home(path)


def _no_home_message() -> str:
    from .data import DATASETS
    from .data.registry import ENV_VAR

    return (
        f"No data home: set the environment variable {ENV_VAR} (or pass --data-home) to a folder "
        "holding one sub-folder per dataset, each with train.txt.gz and test.txt.gz in the "
        "Extreme Classification (XC) sparse text format and optionally labels.txt, e.g.\n"
        f"    export {ENV_VAR}=/path/to/data      # then: /path/to/data/bibtex/train.txt.gz ...\n"
        f"Known datasets: {', '.join(sorted(DATASETS))}."
    )


def _percent(table):
    """A metric table from :func:`mlgp.metrics.evaluate` in percent, whichever way it was made."""
    if table.attrs.get("percent", False):
        return table
    out = table * 100.0
    out.attrs.update(table.attrs)
    out.attrs["percent"] = True
    return out


def _format_metrics(table) -> str:
    """The metric table as text: rows P, nDCG, PSP, PSnDCG; columns @k; two decimals (percent)."""
    shown = table.copy()
    shown.columns = [f"@{k}" for k in shown.columns]
    shown.index.name = "metric (%)"
    return shown.to_string(float_format=lambda v: f"{v:.2f}")


def _table_to_csv(table, path: Path) -> None:
    out = table.copy()
    out.columns = [f"@{k}" for k in out.columns]
    out.index.name = "metric"
    try:
        out.to_csv(path)
    except OSError as exc:
        raise MLGPError(f"cannot write {path}: {exc.strerror or exc}") from None


# --------------------------------------------------------------------------- #
# Reading scores
# --------------------------------------------------------------------------- #
def load_scores(path: str | Path):
    """Read a scores file for ``mlgp evaluate``.

    Parameters
    ----------
    path
        ``.npy`` (dense (N, K) array), or ``.npz`` holding either a scipy sparse matrix written by
        ``scipy.sparse.save_npz``, arrays ``indices`` and ``scores`` (a top-k ranking, both
        (N, k), best first) or a single dense array ``scores``.

    Returns
    -------
    numpy.ndarray, scipy.sparse.csr_matrix or mlgp.metrics.TopK

    Raises
    ------
    MLGPError
        When the file does not exist.
    DataFormatError
        When it cannot be read as one of the forms above.
    ShapeError
        When its arrays have the wrong number of dimensions or do not match each other.
    """
    import zipfile

    import scipy.sparse as sp

    from .metrics import TopK

    path = Path(path)
    if not path.exists():
        raise MLGPError(f"scores file {str(path)!r} does not exist")
    if path.is_dir():
        raise MLGPError(f"scores file {str(path)!r} is a folder, not a file")
    suffix = path.suffix.lower()
    if suffix not in (".npy", ".npz"):
        raise DataFormatError(
            f"unsupported scores file type {path.suffix or '(none)'!r}: use .npy (dense N×K "
            "array) or .npz (scipy.sparse.save_npz matrix, or arrays 'indices' and 'scores' "
            "for a top-k ranking)", path)
    try:
        loaded = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise DataFormatError(f"cannot read as a NumPy {suffix} file: {exc}", path) from None
    if isinstance(loaded, np.ndarray):  # also a .npy file named .npz
        return _check_dense(loaded, path)
    with loaded as npz:
        names = set(npz.files)
        if "format" in names and {"data", "indices", "indptr", "shape"} <= names:
            try:
                S = sp.load_npz(path)
            except (ValueError, OSError, KeyError) as exc:
                raise DataFormatError(f"cannot read the sparse matrix: {exc}", path) from None
            if not np.issubdtype(S.dtype, np.number) or np.issubdtype(S.dtype, np.complexfloating):
                raise DataFormatError(f"sparse scores must be real numbers, got dtype {S.dtype}", path)
            return sp.csr_matrix(S)
        if {"indices", "scores"} <= names:
            idx, val = npz["indices"], npz["scores"]
            try:
                return TopK(idx, val)
            except ShapeError as exc:
                raise ShapeError(f"{path}: top-k arrays: {exc}") from None
        if names == {"scores"}:
            return _check_dense(npz["scores"], path)
        raise DataFormatError(
            f"the .npz file holds arrays {sorted(names)}; expected a scipy.sparse.save_npz matrix, "
            "arrays 'indices' and 'scores' (top-k ranking), or a single dense array 'scores'", path)


def _check_dense(arr: np.ndarray, path: Path) -> np.ndarray:
    if arr.ndim != 2:
        raise ShapeError(f"{path}: dense scores must be a 2-D (N, K) array, got shape {arr.shape}")
    if not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
            or arr.dtype == np.bool_):
        raise DataFormatError(f"scores must be real numbers, got dtype {arr.dtype}", path)
    return arr


def _describe_scores(scores) -> str:
    import scipy.sparse as sp

    from .metrics import TopK

    if isinstance(scores, TopK):
        return f"top-{scores.k} ranking of {scores.num_rows} rows"
    if sp.issparse(scores):
        return f"sparse {scores.shape[0]}×{scores.shape[1]} scores ({scores.nnz} stored)"
    return f"dense {scores.shape[0]}×{scores.shape[1]} scores ({scores.dtype})"


# --------------------------------------------------------------------------- #
# Subcommands
# --------------------------------------------------------------------------- #
def cmd_datasets(args: argparse.Namespace) -> int:
    """``mlgp datasets``: statistics of the datasets in the data home."""
    import pandas as pd

    from .data import DATASETS, available, load, statistics

    home = _resolve_home(args.data_home)
    if home is None:
        print(_no_home_message())
        print()
        rows = [
            dict(dataset=i.name, N_train=i.n_train, N_test=i.n_test, D=i.num_features,
                 K=i.num_labels, labels_per_point=i.labels_per_point, source=i.url)
            for i in sorted(DATASETS.values(), key=lambda i: i.name)
        ]
        print("Published statistics of the known datasets:")
        print(pd.DataFrame(rows).set_index("dataset").to_string(
            float_format=lambda v: f"{v:.4f}"))
        return 0
    names = available(home)
    print(f"data home: {home}")
    if not names:
        print(f"No datasets found (a dataset is a sub-folder with train.txt.gz and test.txt.gz).\n"
              f"Known datasets: {', '.join(sorted(DATASETS))}.")
        return 0
    rows, failed = [], []
    for name in names:
        try:
            s = statistics(load(name, home))
        except MLGPError as exc:
            failed.append(f"{name}: {exc}")
            continue
        rows.append(dict(
            dataset=name, N_train=s["N_train"], N_test=s["N_test"], D=s["D"], K=s["K"],
            labels_per_point=float(s["labels_per_point"]),
            points_per_label=float(s["points_per_label"]),
        ))
    if rows:
        table = pd.DataFrame(rows).set_index("dataset")
        print(table.to_string(float_format=lambda v: f"{v:.2f}"))
        print("(labels_per_point and points_per_label over train and test together)")
    missing = sorted(set(DATASETS) - set(names))
    if missing:
        print(f"Known datasets not in this data home: {', '.join(missing)}.")
    for msg in failed:
        print(f"{PROG}: error: {msg}", file=sys.stderr)
    return 2 if failed else 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    """``mlgp evaluate``: metric table of a scores file against a split's labels."""
    import scipy.sparse as sp

    from .data import DATASETS, load
    from .metrics import TopK, evaluate, inverse_propensity, propensity_params

    scores = load_scores(args.scores)
    home = _resolve_home(args.data_home)
    if home is None:
        raise DatasetNotFoundError(_no_home_message().replace("\n", " ").replace("    ", ""))
    ds = load(args.dataset, home)
    split = ds.train if args.split == "train" else ds.test
    N, K = split.Y.shape
    where = f"{args.scores}"
    if isinstance(scores, TopK):
        if scores.num_rows != N:
            raise ShapeError(f"{where}: the ranking has {scores.num_rows} rows but {ds.name}'s "
                             f"{split.name} split has N={N} points")
        if scores.k < max(args.k):
            raise ShapeError(f"{where}: the ranking keeps k={scores.k} labels per row, fewer than "
                             f"the largest cut-off {max(args.k)} (use --k)")
    elif scores.shape != (N, K):
        raise ShapeError(f"{where}: scores have shape {scores.shape[0]}×{scores.shape[1]} but "
                         f"{ds.name}'s {split.name} split has N×K = {N}×{K}")
    if args.propensity is not None:
        a, b = args.propensity
    elif ds.name in DATASETS:
        a, b = DATASETS[ds.name].propensity_a, DATASETS[ds.name].propensity_b
    else:
        a, b = propensity_params(ds.name)
    w = inverse_propensity(sp.csr_matrix(ds.train.Y), a, b)
    table = evaluate(split.Y, scores, ks=args.k, inv_propensity=w, percent=True)
    print(f"{ds.name}, {split.name} split (N={N}, K={K}); {_describe_scores(scores)} from {where}")
    print(f"propensities from the train split with A={a:g}, B={b:g}")
    print(_format_metrics(table))
    if args.csv is not None:
        _table_to_csv(table, args.csv)
        print(f"table written to {args.csv}")
    return 0


def _demo_dataset(args: argparse.Namespace):
    """(dataset, description of where it came from)."""
    from .data import default_problem, load
    from .data.registry import ENV_VAR

    name = args.dataset
    if name == "synthetic":
        ds = default_problem(seed=args.seed)
        return ds, f"synthetic MLGPF-prior problem, mlgp.data.default_problem(seed={args.seed})"
    if args.data_home is None:
        env = os.environ.get(ENV_VAR)
        if not env:
            if name is not None:
                raise DatasetNotFoundError(f"dataset {name!r} needs a data home. {_no_home_message()}")
            ds = default_problem(seed=args.seed)
            return ds, (f"synthetic MLGPF-prior problem, mlgp.data.default_problem(seed={args.seed}): "
                        f"no data home (set {ENV_VAR} to train on Bibtex)")
        if not Path(env).expanduser().is_dir() and name is None:
            ds = default_problem(seed=args.seed)
            return ds, (f"synthetic MLGPF-prior problem, mlgp.data.default_problem(seed={args.seed}): "
                        f"{ENV_VAR}={env!r} is not a folder")
    home = _resolve_home(args.data_home)
    ds = load(name or "bibtex", home)
    return ds, f"{ds.name} from {ds.train.path} and {ds.test.path}"


def _frequency_baseline(ds):
    """Test metrics of ranking every point's labels by their training frequency."""
    from .metrics import TopK, evaluate

    freq = np.asarray(ds.train.Y.sum(axis=0), dtype=np.float64).ravel()
    k = min(5, freq.size)
    order = np.lexsort((np.arange(freq.size), -freq))[:k]  # the lower label index first on ties
    n = ds.test.num_points
    ranking = TopK(np.tile(order, (n, 1)), np.tile(freq[order], (n, 1)))
    return evaluate(ds.test.Y, ranking, ks=[c for c in (1, 3, 5) if c <= k], percent=True)


def _oracle_metrics(ds):
    """Test metrics of the true utilities of a synthetic MLGPF-prior problem, else None."""
    from .metrics import evaluate

    e = ds.extras or {}
    if not {"H", "Phi", "b"} <= set(e):
        return None
    n = ds.train.num_points
    H = np.asarray(e["H"])
    if H.shape[0] != n + ds.test.num_points:
        return None
    F = H[n:] @ np.asarray(e["Phi"]).T + np.asarray(e["b"])
    return evaluate(ds.test.Y, F, ks=(1, 3, 5), percent=True)


def cmd_demo(args: argparse.Namespace) -> int:
    """``mlgp demo``: train MLGPF with the paper's recipe and print the test metrics."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if args.save_scores is not None:  # check before training, not after
        if args.save_scores.suffix != ".npz":
            raise MLGPError(f"--save-scores {args.save_scores}: the file name must end in .npz")
        if not args.save_scores.parent.is_dir():
            raise MLGPError(f"--save-scores {args.save_scores}: folder "
                            f"{str(args.save_scores.parent)!r} does not exist")
    ds, origin = _demo_dataset(args)
    settings = dict(DEMO_SETTINGS.get(ds.name, DEMO_FALLBACK))
    settings["max_train"] = None
    if args.quick:
        settings.update(DEMO_QUICK)
    for key in ("kernel", "latent", "inducing", "epochs", "batch_size"):
        value = getattr(args, key)
        if value is not None:
            settings[key] = value
    if args.max_train is not None:
        settings["max_train"] = args.max_train
    K = ds.num_labels
    n_train = ds.train.num_points if settings["max_train"] is None else min(
        ds.train.num_points, settings["max_train"])
    if settings["latent"] > K:
        if args.latent is not None:
            raise ShapeError(f"--latent {settings['latent']} exceeds the number of labels K={K}")
        settings["latent"] = K
    if settings["inducing"] > n_train:
        if args.inducing is not None:
            raise ShapeError(f"--inducing {settings['inducing']} exceeds the number of training "
                             f"points N={n_train}")
        settings["inducing"] = n_train

    print(f"data: {origin}")
    print(f"      N_train={ds.train.num_points}"
          + (f" (using the first {n_train})" if n_train < ds.train.num_points else "")
          + f", N_test={ds.test.num_points}, D={ds.num_features}, K={K}")
    print(f"model: MLGPF, kernel {settings['kernel']}, P={settings['latent']} latent GPs, "
          f"M={settings['inducing']} inducing inputs"
          + (" on the unit sphere" if args.unit_sphere_z else " (free)")
          + f"; Adam (lr 0.005), {settings['epochs']} "
          f"epoch(s), batch {settings['batch_size']}, "
          + ("all labels per point" if args.negatives is None
             else f"positives + {args.negatives} sampled negatives per point")
          + f", seed {args.seed}", flush=True)

    from .recipes import train_mlgpf

    progress = sys.stderr.isatty() and not args.quick
    t0 = time.perf_counter()
    run = train_mlgpf(
        ds,
        kernel=settings["kernel"],
        num_latent_gps=settings["latent"],
        num_inducing=settings["inducing"],
        epochs=settings["epochs"],
        batch_size=settings["batch_size"],
        whiten=settings["whiten"],
        negatives=args.negatives,
        unit_sphere_inducing=args.unit_sphere_z,
        seed=args.seed,
        progress=progress,
        max_train=settings["max_train"],
        # XLA pays off a little at the paper's sizes (whitened, P=159, M=400, batch 100: 0.53 vs
        # 0.59 s per step on 2 cores) but not at the demo's P=60, M=200 (9.3 s per epoch with it,
        # 8.9 s without, same metrics), and the compilations would lengthen a short demo
        jit_compile=False,
    )
    total = time.perf_counter() - t0

    trace = run.trace
    print()
    if len(trace):
        first, last = float(trace["elbo"].iloc[0]), float(trace["elbo"].iloc[-1])
        sec = trace["seconds"].to_numpy(dtype=float)
        print(f"ELBO trace ({len(trace)} epoch(s); each value the mean of that epoch's minibatch "
              f"estimates of the full-data bound):")
        print(f"  first epoch {first:.6g}, last epoch {last:.6g} (change {last - first:+.6g})")
        if len(sec) > 1:
            print(f"  {np.mean(sec):.2f} s per epoch (first epoch {sec[0]:.2f} s, includes tracing; "
                  f"later epochs {np.mean(sec[1:]):.2f} s)")
        else:
            print(f"  {sec[0]:.2f} s per epoch (includes tracing the compiled step)")
        if len(trace) > 1:
            prev = float(trace["elbo"].iloc[-2])
            rise = (last - prev) / abs(prev) if prev else 0.0
            if rise > 0.005:
                print(f"  the ELBO still rose by {100 * rise:.1f}% in the last epoch: the model is not "
                      f"converged; train longer with --epochs")
    seconds = getattr(run, "seconds", {}) or {}
    if seconds:
        print("  training " + f"{seconds.get('train', float('nan')):.1f} s, prediction "
              f"{seconds.get('predict', float('nan')):.1f} s, total {total:.1f} s")
    print()
    print(f"test metrics ({ds.name}, N_test={ds.test.num_points}; labels ranked by mean utility):")
    print(_format_metrics(_percent(run.metrics)))
    baseline = _frequency_baseline(ds)
    print("for reference, P@1/3/5 = " + ", ".join(f"{v:.2f}" for v in baseline.loc["P"])
          + " from ranking every test point's labels by their training frequency")
    oracle = _oracle_metrics(ds)
    if oracle is not None:
        p = ", ".join(f"{v:.2f}" for v in oracle.loc["P"])
        print(f"and P@1/3/5 = {p} from the true utilities Φh + b that generated this synthetic problem")
    if args.save_scores is not None:
        from .recipes import normalise_rows

        t = run.model.predict_scores(normalise_rows(ds.test.X), top_k=min(K, 5))
        try:
            np.savez(args.save_scores, indices=t.indices, scores=t.scores)
        except OSError as exc:
            raise MLGPError(f"cannot write {args.save_scores}: {exc.strerror or exc}") from None
        print(f"test top-{t.k} scores written to {args.save_scores} "
              f"(mlgp evaluate {args.save_scores} --dataset {ds.name})")
    return 0


# --------------------------------------------------------------------------- #
# Parser and entry point
# --------------------------------------------------------------------------- #
def build_parser() -> argparse.ArgumentParser:
    """The ``mlgp`` argument parser with its three subcommands."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Multi-label learning with Gaussian processes (GPflow 2): datasets, "
                    "evaluation, and a demo of MLGPF.",
        epilog="Data home: set MLGP_DATA (or pass --data-home) to a folder with one sub-folder "
               "per dataset holding train.txt.gz and test.txt.gz in XC format.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    home_kw = dict(metavar="PATH", default=None, help="data home (default: $MLGP_DATA)")

    p = sub.add_parser("datasets", help="statistics of the datasets in the data home",
                       description="Table of the datasets in the data home with N train/test, "
                                   "D, K, labels per point and points per label.")
    p.add_argument("--data-home", **home_kw)
    p.set_defaults(func=cmd_datasets)

    p = sub.add_parser(
        "evaluate", help="P@k, nDCG@k, PSP@k, PSnDCG@k of a scores file",
        description="Evaluate predicted scores against a dataset split. SCORES: .npy (dense N×K "
                    "array), .npz from scipy.sparse.save_npz (sparse N×K; missing entries rank "
                    "last), or .npz with arrays 'indices' and 'scores' (top-k ranking, both N×k, "
                    "best first). Rows follow the split's file order, columns are 0-based label "
                    "indices. Ties in scores are broken by lower label index.")
    p.add_argument("scores", type=Path, metavar="SCORES", help="scores file (.npy or .npz)")
    p.add_argument("--dataset", required=True, metavar="NAME", help="dataset name in the data home")
    p.add_argument("--split", choices=("test", "train"), default="test", help="default: test")
    p.add_argument("--k", type=_int_list, default=[1, 3, 5], metavar="K,K,...",
                   help="cut-offs (default: 1,3,5)")
    p.add_argument("--propensity", type=_float_pair, default=None, metavar="A,B",
                   help="propensity parameters (default: the dataset's, usually 0.55,1.5)")
    p.add_argument("--csv", type=Path, default=None, metavar="OUT", help="also write the table as CSV")
    p.add_argument("--data-home", **home_kw)
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser(
        "demo", help="train MLGPF and print its test metrics",
        description="Train MLGPF with the paper's recipe (L2-normalised rows, k-means inducing "
                    "inputs kept on the unit sphere, Adam at 0.005) on Bibtex when a data home is "
                    "available, else on a synthetic problem, and print the test metrics and the "
                    "ELBO trace. Defaults for Bibtex: kernel se+linear, P=60, M=200, whitened "
                    "q(u), 30 epochs, batch 100.")
    p.add_argument("--dataset", default=None, metavar="NAME",
                   help="dataset in the data home, or 'synthetic' (default: bibtex when a data "
                        "home is set, else synthetic)")
    p.add_argument("--kernel", default=None, choices=("linear", "se", "se+linear", "se+linear-shared"))
    p.add_argument("--latent", type=_positive_int, default=None, metavar="P", help="latent GPs P")
    p.add_argument("--inducing", type=_positive_int, default=None, metavar="M",
                   help="inducing inputs M")
    p.add_argument("--epochs", type=_positive_int, default=None)
    p.add_argument("--batch-size", type=_positive_int, default=None)
    p.add_argument("--negatives", type=_positive_int, default=None,
                   help="negative labels sampled per point (default: all labels, the exact bound)")
    p.add_argument("--max-train", type=_positive_int, default=None, metavar="N",
                   help="use only the first N training points")
    p.add_argument("--unit-sphere-z", action=argparse.BooleanOptionalAction, default=True,
                   help="keep the inducing inputs on the unit sphere like the inputs (default)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true",
                   help="tiny run for tests: P=8, M=20, 1 epoch, 300 training points")
    p.add_argument("--save-scores", type=Path, default=None, metavar="OUT.npz",
                   help="write the test top-5 ranking (arrays indices, scores) for mlgp evaluate")
    p.add_argument("--data-home", **home_kw)
    p.set_defaults(func=cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``mlgp`` command with ``argv`` (default ``sys.argv[1:]``); returns the exit status.

    0 on success; 2 for a usage error (from argparse, which raises ``SystemExit``) or an
    :class:`~mlgp.errors.MLGPError` (printed as ``mlgp: error: <message>``, no traceback).
    """
    parser = build_parser()
    args = parser.parse_args(None if argv is None else list(argv))
    try:
        return int(args.func(args) or 0)
    except MLGPError as exc:
        sys.stdout.flush()
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
