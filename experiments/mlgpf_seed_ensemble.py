"""MLGPF on Bibtex at the paper's sizes (P = 159, M = 400): independent short fits, and the mean of
their predictive probabilities, against the issue's "best within 300 s ≥ 64.5".

Each member is ``MLGPFClassifier(num_latent_gps=159, num_inducing=400, max_seconds=BUDGET,
seed=s)`` with every other parameter at its default (the held-out tenth of the training rows
chooses its epoch). A group of members is scored by the mean of their ``predict_proba``: a
mixture of the fitted models, which costs the sum of their fits. Per member and per group: test
P@1/3/5, the NLL per entry, the ECE (:func:`mlgp.metrics.evaluate_proba`) and the test log
predictive density (nats per row). Writes ``members`` (resumable, ``--fresh`` starts over; each
member's test probabilities are kept in ``checkpoints/``, which git ignores) and ``groups``:
consecutive seeds in groups of ``--group``, and all members together.

    python experiments/mlgpf_seed_ensemble.py                       # seeds 0–8, 20 s each, groups of 3
    python experiments/mlgpf_seed_ensemble.py --seeds 0,1,2,3 --budget 40 --group 2
    python experiments/mlgpf_seed_ensemble.py --quick
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

MEMBERS = 9  # seeds 0–8 unless --seeds
SIZES = dict(num_latent_gps=159, num_inducing=400)
COLUMNS = ["seed", "P@1", "P@3", "P@5", "NLL", "ECE", "LPD", "fit s", "epochs", "best epoch"]
GROUP_COLUMNS = ["seeds", "members", "P@1", "P@3", "P@5", "NLL", "ECE", "LPD", "fit s"]


def main(argv: list[str] | None = None) -> None:
    from mlgp.experiment import add_argparse_args

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_argparse_args(parser)
    parser.add_argument("--dataset", default="bibtex", help="data set (default bibtex)")
    parser.add_argument("--group", type=int, default=3, help="members per group (default 3)")
    parser.add_argument("--budget", type=float, default=20.0, help="wall seconds of each member's fit (default 20)")
    parser.add_argument("--fresh", action="store_true", help="discard the stored members and start over")
    args = parser.parse_args(argv)
    args.seeds = args.seeds or list(range(MEMBERS))
    if not 1 <= args.group <= len(args.seeds) or len(set(args.seeds)) < len(args.seeds):
        parser.error("need distinct --seeds and 1 ≤ --group ≤ the number of seeds")
    if not args.budget > 0:
        parser.error("--budget must be positive")
    run(args)


def score(Y_test, proba: np.ndarray) -> dict:
    """Test P@1/3/5 (percent), NLL per entry, ECE and LPD (nats per row) of (N, K) probabilities."""
    from mlgp.metrics import evaluate, evaluate_proba, log_predictive_density

    p = evaluate(Y_test, proba, ks=[1, 3, 5]).loc["P"]
    report = evaluate_proba(Y_test, proba, ks=[])
    return {"P@1": float(p[1]), "P@3": float(p[3]), "P@5": float(p[5]), "NLL": report.nll_per_entry,
            "ECE": report.ece, "LPD": float(log_predictive_density(Y_test, proba))}


def groups_of(seeds: list[int], size: int) -> list[list[int]]:
    """Consecutive seeds in groups of ``size`` (a short last group dropped), then all seeds together
    when that is not already one of them."""
    out = [seeds[i:i + size] for i in range(0, len(seeds) - size + 1, size)]
    if seeds not in out:
        out.append(list(seeds))
    return out


def load_member(path: Path, shape: tuple[int, int]) -> np.ndarray:
    """A member's stored test probabilities, checked: an (N_test, K) array of finite values in [0, 1]."""
    try:
        proba = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as err:
        raise SystemExit(f"{path} is not a readable .npy file ({err}); rerun with --fresh") from None
    if proba.shape != shape or not np.all(np.isfinite(proba)) or proba.min() < 0 or proba.max() > 1:
        raise SystemExit(f"{path} holds no ({shape[0]}, {shape[1]}) probabilities of this test split; rerun with --fresh")
    return proba


def run(args: argparse.Namespace) -> None:
    from mlgp.data import load
    from mlgp.experiment import Experiment, RunLog
    from mlgp.files import atomic_write
    from mlgp.recipes import MLGPFClassifier

    ds = load(args.dataset)
    X, Y, Xt, Yt = ds.train.X, ds.train.Y, ds.test.X, ds.test.Y
    sizes = dict(num_latent_gps=2, num_inducing=10, epochs=2) if args.quick else SIZES
    if args.quick:
        X, Y, Xt, Yt = X[:200], Y[:200], Xt[:100], Yt[:100]
    seeds = args.seeds[:2] if args.quick else args.seeds
    group = min(args.group, len(seeds))
    settings = {"dataset": args.dataset, "sizes": sizes, "budget": args.budget, "quick": args.quick}
    with Experiment("mlgpf_seed_ensemble", quick=args.quick, settings=settings, seeds=seeds, out=args.out) as exp:
        log = RunLog(exp.folder, "members", COLUMNS, ["seed"], settings, args.fresh)
        store = exp.folder / "checkpoints"
        store.mkdir(exist_ok=True)
        for seed in seeds:
            path = store / f"member_{seed}.npy"
            if log.done(seed):
                if not path.is_file():  # refitting would add a second row for the seed
                    raise SystemExit(f"{path}, seed {seed}'s probabilities, is missing; rerun with --fresh")
                continue
            start = time.perf_counter()
            clf = MLGPFClassifier(**sizes, max_seconds=args.budget, seed=seed).fit(X, Y)
            seconds = time.perf_counter() - start
            proba = np.asarray(clf.predict_proba(Xt), dtype=np.float64)
            atomic_write(path, lambda f, p=proba: np.save(f, p))
            log.append({"seed": seed, **score(Yt, proba), "fit s": seconds, "epochs": clf.n_iter_,
                        "best epoch": clf.best_epoch_ or 0})
            print(log.rows.iloc[-1].to_dict(), flush=True)
        exp.table("members", log.rows, floatfmt=".4g")
        members = log.rows.set_index("seed")
        rows = []
        for chosen in groups_of(seeds, group):
            proba = np.mean([load_member(store / f"member_{s}.npy", Yt.shape) for s in chosen], axis=0)
            rows.append({"seeds": " ".join(map(str, chosen)), "members": len(chosen), **score(Yt, proba),
                         "fit s": float(members.loc[chosen, "fit s"].sum())})
        exp.table("groups", pd.DataFrame(rows, columns=GROUP_COLUMNS), floatfmt=".4g")


if __name__ == "__main__":
    main()
