"""GenEML's purpose, measured: training labels with positives hidden, test labels whole.

For each dataset (Bibtex, Delicious, Enron by default) and each fraction ρ of the training
positives hidden (``--fractions``, default 0, 0.2, 0.4, 0.6), two ways of hiding: ``uniform`` (every
positive hidden with probability ρ) and ``propensity`` (tail labels hidden more: positive (n, l)
hidden with probability proportional to 1 − p_l, p_l = 1 / w_l the label's propensity by Jain et
al.'s model (:func:`mlgp.metrics.inverse_propensity`), scaled so that a fraction ρ of all positives
is hidden). The hiding depends on the seed, as does the model's start. Methods (``--methods``):
GenEML with global exposure, written ``inference:μ₀`` (the inference and ``exposure_init``, the
exposures' start; default ``em:0.9,em:0.5,online-em:0.5,gibbs:0.5``) or, written
``inference:μ₀:covariates``, with covariate exposure (the label's log frequency and the point's
number of labels, :mod:`mlgp.geneml.exposure`), GenEML without exposure
(batch EM), and ``LabelFrequency``; with ``--relevance-prior A,B`` each GenEML method also runs with
ARD (``relevance_prior=(A, B)``, a relevance per latent dimension: :mod:`mlgp.geneml.relevance`),
named with `` + ARD``. All are trained on what remains (features L2-normalised per row;
``SETTINGS``, as in ``geneml_benchmarks.py``) and scored on the full test labels: P@1/3/5 and
PSP@1/3/5 (propensities from the full training labels). Writes ``missing_labels`` (every fit; the
same rows as the resumable log ``runs.csv``), ``summary``
(means over seeds, and each mean's P@1 drop from ρ = 0) and ``missing_labels.png`` (P@1 and PSP@3
against ρ, one panel pair per dataset and hiding). Each fit is appended to ``runs.csv`` as it
finishes; a rerun with the same options resumes, ``--fresh`` starts over.

    python experiments/geneml_missing_labels.py
    python experiments/geneml_missing_labels.py --datasets enron --methods em:0.9,online-em:0.9
    python experiments/geneml_missing_labels.py --datasets enron,bibtex --fractions 0,0.4 --seeds 0,1,2 \
        --methods em:0.5 --relevance-prior 1,1 --out experiments/results/geneml_missing_labels_ard
    python experiments/geneml_missing_labels.py --quick
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
import scipy.sparse as sp

FRACTIONS = (0.0, 0.2, 0.4, 0.6)
SETTINGS = dict(n_components=100, max_iter=20, batch_size=1000, num_results=30, num_burnin_steps=30,
                lambda_u=1.0, lambda_v=1.0, lambda_w=1.0)
QUICK = dict(n_components=3, max_iter=2, batch_size=100, num_results=2, num_burnin_steps=2, max_train=300,
             fractions=(0.0, 0.4))
METHODS = "em:0.9,em:0.5,online-em:0.5,gibbs:0.5"
RUN_COLUMNS = ["dataset", "hiding", "fraction", "method", "seed", "P@1", "P@3", "P@5", "PSP@1", "PSP@3", "PSP@5",
               "train s"]


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
    parser.add_argument("--methods", default=METHODS,
                        help=f"GenEML with exposure as inference:exposure_init[:covariates], comma-separated "
                             f"(default {METHODS})")
    parser.add_argument("--schemes", default="uniform,propensity")
    parser.add_argument("--fractions", type=lambda t: tuple(float(v) for v in t.split(",")), default=None,
                        help="fractions of the training positives to hide (default 0,0.2,0.4,0.6)")
    parser.add_argument("--relevance-prior", type=_pair, default=None, metavar="A,B",
                        help="also run each GenEML method with ARD, relevance_prior=(A, B)")
    parser.add_argument("--fresh", action="store_true", help="discard the stored fits and start over")
    args = parser.parse_args(argv)
    args.datasets = args.datasets or ("enron" if args.quick else "bibtex,delicious,enron")
    if args.fractions is not None and not all(0 <= f < 1 for f in args.fractions):
        parser.error(f"--fractions must lie in [0, 1); got {args.fractions}")
    try:
        args.exposure_methods = [parse_method(m) for m in args.methods.split(",")]
    except ValueError as err:
        parser.error(f"--methods: {err}")
    run(args)


def _pair(text: str) -> tuple[float, float]:
    """``A,B`` as two floats (checked by GenEML when it fits)."""
    parts = text.split(",")
    if len(parts) != 2:
        raise argparse.ArgumentTypeError(f"give two numbers A,B; got {text!r}")
    try:
        return float(parts[0]), float(parts[1])
    except ValueError:
        raise argparse.ArgumentTypeError(f"give two numbers A,B; got {text!r}") from None


def parse_method(text: str) -> tuple[str, float, str]:
    """``inference:μ₀[:covariates]`` as (inference, exposure_init, exposure)."""
    parts = text.split(":")
    if len(parts) not in (2, 3) or parts[0] not in ("em", "online-em", "gibbs") or parts[2:] not in ([], ["covariates"]):
        raise ValueError(f"methods are inference:exposure_init[:covariates] with inference em, online-em or gibbs, "
                         f"e.g. em:0.9; got {text!r}")
    return parts[0], float(parts[1]), "covariates" if len(parts) == 3 else "global"


def method_name(inference: str, init: float, exposure: str) -> str:
    kind = "covariate exposure" if exposure == "covariates" else "exposure"
    return f"GenEML {kind} μ₀={init:g} ({inference})"


def run(args: argparse.Namespace) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from sklearn.preprocessing import normalize

    import mlgp.data
    from mlgp.baselines import LabelFrequency
    from mlgp.experiment import Experiment, RunLog
    from mlgp.geneml import GenEML
    from mlgp.metrics import evaluate, inverse_propensity, propensity_params

    s = dict(SETTINGS, **(QUICK if args.quick else {}))
    fractions = args.fractions or s.pop("fractions", FRACTIONS)
    s.pop("fractions", None)
    max_train = s.pop("max_train", None)
    seeds = args.seeds or [0]
    common = {**{k: s[k] for k in ("n_components", "lambda_u", "lambda_v", "lambda_w")}, "tol": None}
    per_inference = {"em": dict(max_iter=s["max_iter"]), "online-em": dict(max_iter=s["max_iter"], batch_size=s["batch_size"]),
                     "gibbs": dict(num_results=s["num_results"], num_burnin_steps=s["num_burnin_steps"], num_chains=1)}
    methods = {method_name(inf, init, kind): dict(exposure=kind, inference=inf, exposure_init=init, **per_inference[inf])
               for inf, init, kind in args.exposure_methods}
    methods["GenEML no exposure (em)"] = dict(exposure=None, inference="em", **per_inference["em"])
    if args.relevance_prior is not None:
        methods.update({f"{m} + ARD": dict(p, relevance_prior=args.relevance_prior) for m, p in list(methods.items())})
    schemes = args.schemes.split(",")
    # the ARD prior joins the settings only when given, so that folders written without it resume
    ard = {} if args.relevance_prior is None else {"relevance_prior": list(args.relevance_prior)}
    with Experiment("geneml_missing_labels", quick=args.quick, settings=dict(s, features="rows L2-normalised", **ard),
                    seeds=seeds, out=args.out) as exp:
        log = RunLog(exp.folder, "runs", RUN_COLUMNS, ["dataset", "hiding", "fraction", "method", "seed"],
                     dict(s, max_train=max_train, **ard), args.fresh)
        for name in args.datasets.split(","):
            ds = mlgp.data.load(name)
            Xtr, Ytr = normalize(ds.train.X[:max_train], "l2"), ds.train.Y[:max_train]
            Xte = normalize(ds.test.X, "l2")
            w = inverse_propensity(Ytr, *propensity_params(name))
            for scheme in schemes:
                for fraction in fractions:
                    if fraction == 0 and scheme != schemes[0]:
                        continue  # nothing hidden: the same run for every scheme
                    hiding = scheme if fraction else "none"
                    for seed in seeds:
                        seen = hide(Ytr, fraction, scheme, w, seed)
                        n_jobs = 1 if args.quick else 2  # the fit is the same for any n_jobs
                        models = {m: GenEML(random_state=seed, n_jobs=n_jobs, **common, **p) for m, p in methods.items()}
                        models["LabelFrequency"] = LabelFrequency()
                        for method, est in models.items():
                            if log.done(name, hiding, fraction, method, seed):
                                continue
                            t = time.perf_counter()
                            est.fit(Xtr, seen)
                            seconds = time.perf_counter() - t
                            metrics = evaluate(ds.test.Y, est.predict_topk(Xte, 5), inv_propensity=w)
                            log.append(dict(dataset=name, hiding=hiding, fraction=fraction, method=method, seed=seed,
                                            **{f"{m}@{k}": float(metrics.loc[m, k]) for m in ("P", "PSP") for k in (1, 3, 5)},
                                            **{"train s": seconds}))
                            print(log.rows.iloc[-1].to_dict(), flush=True)
        table = log.rows.copy()
        exp.table("missing_labels", table, show=False)
        exp.table("summary", summary(table))
        exp.figure("missing_labels", _figure(plt, table))


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Means over seeds per (dataset, hiding, fraction, method), the number of seeds, and the mean
    over seeds of each fit's P@1 drop from the same method and seed at ρ = 0 (NaN where that fit
    is missing)."""
    keys = ["dataset", "hiding", "fraction", "method"]
    metrics = ["P@1", "P@3", "P@5", "PSP@1", "PSP@3", "PSP@5", "train s"]
    table = table.assign(fraction=table["fraction"].astype(float))
    base = table[table["fraction"] == 0].set_index(["dataset", "method", "seed"])["P@1"]
    drop = [base.get((d, m, s), np.nan) - p for d, m, s, p in zip(table["dataset"], table["method"], table["seed"],
                                                                   table["P@1"])]
    table = table.assign(**{"P@1 drop": drop})
    out = table.groupby(keys, sort=False)[metrics + ["P@1 drop"]].mean().reset_index()
    out.insert(4, "seeds", table.groupby(keys, sort=False).size().to_numpy())
    return out


def _figure(plt, table: pd.DataFrame):
    """P@1 and PSP@3 against the hidden fraction, per dataset and hiding scheme that was run (means
    over seeds); each method keeps one colour in every panel, named in one legend below."""
    hidings = [h for h in table["hiding"].unique() if h != "none"]
    panels = [(d, h) for d in table["dataset"].unique() for h in hidings
              if ((table["dataset"] == d) & (table["hiding"] == h)).any()]
    methods = list(dict.fromkeys(table["method"]))
    colours = {m: f"C{i % 10}" for i, m in enumerate(methods)}
    markers = {m: "os^vD<>ph*"[i // 10 % 10] for i, m in enumerate(methods)}
    fig, axes = plt.subplots(max(len(panels), 1), 2, figsize=(9, 3 * max(len(panels), 1)), squeeze=False)
    for row, (dataset, hiding) in enumerate(panels):
        part = table[(table["dataset"] == dataset) & table["hiding"].isin([hiding, "none"])]
        for col, metric in enumerate(("P@1", "PSP@3")):
            ax = axes[row, col]
            for method, g in part.groupby("method", sort=False):
                mean = g.groupby("fraction")[metric].mean()
                ax.plot(mean.index, mean.values, marker=markers[method], color=colours[method], label=method)
            ax.set_title(f"{dataset}, {hiding} hiding", fontsize="small")
            ax.set_xlabel("fraction of training positives hidden")
            ax.set_ylabel(f"test {metric} (%)")
    handles = [plt.Line2D([], [], color=colours[m], marker=markers[m], label=m) for m in methods]
    fig.tight_layout(rect=(0, 0.06 + 0.012 * len(methods) / max(len(panels), 1), 1, 1))
    fig.legend(handles=handles, loc="lower center", ncol=2, fontsize="x-small", frameon=False)
    return fig


if __name__ == "__main__":
    main()
