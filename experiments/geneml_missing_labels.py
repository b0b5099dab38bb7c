"""GenEML's purpose, measured: training labels with positives hidden, test labels whole.

For each dataset (Bibtex, Delicious, Enron by default) and each fraction ρ of the training
positives hidden (0, 0.2, 0.4, 0.6), two ways of hiding: ``uniform`` (every positive hidden with
probability ρ) and ``propensity`` (tail labels hidden more: positive (n, l) hidden with probability
proportional to 1 − p_l, p_l = 1 / w_l the label's propensity by Jain et al.'s model
(:func:`mlgp.metrics.inverse_propensity`), scaled so that a fraction ρ of all positives is hidden).
Methods: GenEML with global exposure by each inference of ``--inferences``, GenEML without
exposure, and ``LabelFrequency``, all trained on what remains and scored on the full test labels:
P@1/3/5 and PSP@1/3/5 (propensities from the full training labels). Writes ``missing_labels`` and
``missing_labels.png`` (P@1 and PSP@3 against ρ, one panel pair per dataset and hiding). The table
is rewritten after every run.

    python experiments/geneml_missing_labels.py
    python experiments/geneml_missing_labels.py --datasets enron --inferences em,online-em
    python experiments/geneml_missing_labels.py --quick
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
import scipy.sparse as sp

FRACTIONS = (0.0, 0.2, 0.4, 0.6)
SETTINGS = dict(n_components=30, max_iter=20, batch_size=500, num_results=20, num_burnin_steps=20,
                lambda_u=1.0, lambda_v=1.0, lambda_w=1.0)
QUICK = dict(n_components=3, max_iter=2, batch_size=100, num_results=2, num_burnin_steps=2, max_train=300,
             fractions=(0.0, 0.4))


def hide(Y: sp.csr_matrix, fraction: float, scheme: str, inv_propensity: np.ndarray, seed: int) -> sp.csr_matrix:
    """``Y`` with a fraction of its positives set to 0 (``uniform`` or ``propensity``: module docstring)."""
    Y = sp.csr_matrix(Y, dtype=np.float64, copy=True)
    if fraction == 0:
        return Y
    rng = np.random.default_rng(seed)
    if scheme == "uniform":
        p = np.full(Y.nnz, fraction)
    else:
        weight = (1 - 1 / inv_propensity)[Y.indices]
        p = np.minimum(1.0, fraction * weight / weight.mean())
    Y.data[rng.random(Y.nnz) < p] = 0.0
    Y.eliminate_zeros()
    return Y


def main(argv: list[str] | None = None) -> None:
    from mlgp.experiment import add_argparse_args

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_argparse_args(parser)
    parser.add_argument("--datasets", default=None, help="default bibtex,delicious,enron (enron with --quick)")
    parser.add_argument("--inferences", default="em,online-em,gibbs", help="GenEML inferences with exposure")
    parser.add_argument("--schemes", default="uniform,propensity")
    args = parser.parse_args(argv)
    args.datasets = args.datasets or ("enron" if args.quick else "bibtex,delicious,enron")
    run(args)


def run(args: argparse.Namespace) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import mlgp.data
    from mlgp.baselines import LabelFrequency
    from mlgp.experiment import Experiment
    from mlgp.geneml import GenEML
    from mlgp.metrics import evaluate, inverse_propensity, propensity_params

    s = dict(SETTINGS, **(QUICK if args.quick else {}))
    fractions = s.pop("fractions", FRACTIONS)
    max_train = s.pop("max_train", None)
    seeds = args.seeds or [0]
    common = {k: s[k] for k in ("n_components", "lambda_u", "lambda_v", "lambda_w")}
    per_inference = {"em": dict(max_iter=s["max_iter"]), "online-em": dict(max_iter=s["max_iter"], batch_size=s["batch_size"]),
                     "gibbs": dict(num_results=s["num_results"], num_burnin_steps=s["num_burnin_steps"])}
    methods = {f"GenEML exposure ({inf})": dict(exposure="global", inference=inf, **per_inference[inf])
               for inf in args.inferences.split(",")}
    methods["GenEML no exposure"] = dict(exposure=None, inference="em", **per_inference["em"])
    with Experiment("geneml_missing_labels", quick=args.quick, settings=dict(fractions=fractions, **s), seeds=seeds,
                    out=args.out) as exp:
        rows = []
        for name in args.datasets.split(","):
            ds = mlgp.data.load(name)
            Xtr, Ytr = ds.train.X[:max_train], ds.train.Y[:max_train]
            w = inverse_propensity(Ytr, *propensity_params(name))
            for scheme in args.schemes.split(","):
                for fraction in fractions:
                    if fraction == 0 and scheme != args.schemes.split(",")[0]:
                        continue  # nothing hidden: the same run for every scheme
                    for seed in seeds:
                        seen = hide(Ytr, fraction, scheme, w, seed)
                        models = {m: GenEML(random_state=seed, **common, **p) for m, p in methods.items()}
                        models["LabelFrequency"] = LabelFrequency()
                        for method, est in models.items():
                            t = time.perf_counter()
                            est.fit(Xtr, seen)
                            seconds = time.perf_counter() - t
                            metrics = evaluate(ds.test.Y, est.predict_topk(ds.test.X, 5), inv_propensity=w)
                            rows.append(dict(dataset=name, hiding=scheme if fraction else "none", fraction=fraction,
                                             method=method, seed=seed,
                                             **{f"{m}@{k}": float(metrics.loc[m, k]) for m in ("P", "PSP") for k in (1, 3, 5)},
                                             **{"train s": seconds}))
                            print(rows[-1], flush=True)
                            exp.table("missing_labels", pd.DataFrame(rows), show=False)
        table = pd.DataFrame(rows)
        exp.table("missing_labels", table)
        exp.figure("missing_labels", _figure(plt, table))


def _figure(plt, table: pd.DataFrame):
    """P@1 and PSP@3 against the hidden fraction, per dataset and hiding scheme."""
    panels = [(d, h) for d in table["dataset"].unique() for h in table["hiding"].unique() if h != "none"]
    fig, axes = plt.subplots(len(panels), 2, figsize=(9, 3 * len(panels)), squeeze=False)
    for row, (dataset, hiding) in enumerate(panels):
        part = table[(table["dataset"] == dataset) & table["hiding"].isin([hiding, "none"])]
        for col, metric in enumerate(("P@1", "PSP@3")):
            ax = axes[row, col]
            for method, g in part.groupby("method"):
                mean = g.groupby("fraction")[metric].mean()
                ax.plot(mean.index, mean.values, marker="o", label=method)
            ax.set_title(f"{dataset}, {hiding} hiding", fontsize="small")
            ax.set_xlabel("fraction of training positives hidden")
            ax.set_ylabel(f"test {metric} (%)")
    axes[0, 0].legend(fontsize="x-small")
    fig.tight_layout()
    return fig


if __name__ == "__main__":
    main()
