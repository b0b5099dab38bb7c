"""GenEML on the benchmarks: Bibtex, Delicious and Enron P@1/3/5 and PSP@1/3/5 by each inference, with seconds.

Features are L2-normalised per row. The settings (``SETTINGS``) were chosen on a validation split
of Bibtex's training set (the last fifth of a seeded permutation; results README) and are used
unchanged on every dataset, except the Gibbs sampler's sweeps on Delicious (``GIBBS_SWEEPS``: a
sweep there costs about 16 times Bibtex's). Methods: GenEML with global exposure by batch EM, online EM and the
Gibbs sampler (started, like the EM fits, from random U and V); GenEML without exposure (the
LEML-like logistic low-rank model, batch EM); ``LabelFrequency``; and, on request
(``--methods gibbs-em-start``), the Gibbs sampler started at the batch-EM fit (``gibbs_start="em"``). Writes

- ``benchmarks``: P@1/3/5, PSP@1/3/5 (propensities from the training labels), training seconds
  (the whole ``fit``), iterations (EM iterations, online-EM epochs or Gibbs sweeps) and training
  seconds per iteration (for ``gibbs-em-start`` the EM start's seconds are in the numerator);
- ``convergence`` and ``convergence.png``: test P@1 after every batch-EM iteration and online-EM
  epoch against the training seconds spent so far (the test set is only watched, never used to
  choose anything; the P@k evaluation is not counted in the seconds);
- ``exposure.png``: each label's inferred exposure μ_l against its training frequency.

Each finished fit is appended to ``runs.csv`` (and its trace to ``traces.csv``) at once; a rerun
with the same options resumes after the fits already done, ``--fresh`` starts over.

    python experiments/geneml_benchmarks.py
    python experiments/geneml_benchmarks.py --datasets bibtex --methods em,online-em
    python experiments/geneml_benchmarks.py --quick
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

SETTINGS = dict(n_components=100, lambda_u=1.0, lambda_v=1.0, lambda_w=1.0, max_iter=20, batch_size=1000,
                num_results=50, num_burnin_steps=50, num_chains=1)
#: Gibbs sweeps (burn-in, kept) where a sweep costs too much for SETTINGS' 50 + 50 on 2 cores.
GIBBS_SWEEPS = {"delicious": (15, 15)}
QUICK = dict(n_components=3, max_iter=2, batch_size=100, num_results=2, num_burnin_steps=2, num_chains=1, max_train=300)
METHODS = {"em": dict(exposure="global", inference="em"), "online-em": dict(exposure="global", inference="online-em"),
           "gibbs": dict(exposure="global", inference="gibbs"),
           "gibbs-em-start": dict(exposure="global", inference="gibbs", gibbs_start="em"),
           "no-exposure": dict(exposure=None, inference="em"), "label-frequency": None}
NAMES = {"em": "GenEML exposure, batch EM", "online-em": "GenEML exposure, online EM",
         "gibbs": "GenEML exposure, Gibbs", "gibbs-em-start": "GenEML exposure, Gibbs from the EM fit",
         "no-exposure": "GenEML no exposure (batch EM)",
         "label-frequency": "LabelFrequency"}
DEFAULT_METHODS = "em,online-em,gibbs,no-exposure,label-frequency"
METRICS = [f"{m}@{k}" for m in ("P", "PSP") for k in (1, 3, 5)]
RUN_COLUMNS = ["dataset", "method", "seed", *METRICS, "train s", "iterations", "s/iteration"]
TRACE_COLUMNS = ["dataset", "method", "seed", "iteration", "seconds", "P@1"]


def main(argv: list[str] | None = None) -> None:
    from mlgp.experiment import add_argparse_args, choice_list

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_argparse_args(parser)
    parser.add_argument("--datasets", default=None, help="default bibtex,delicious,enron (enron with --quick)")
    parser.add_argument("--methods", default=DEFAULT_METHODS, help=f"any of {','.join(METHODS)} (default {DEFAULT_METHODS})")
    parser.add_argument("--fresh", action="store_true", help="discard the stored fits and start over")
    args = parser.parse_args(argv)
    args.datasets = args.datasets or ("enron" if args.quick else "bibtex,delicious,enron")
    choice_list(parser, args.methods, METHODS, "method")
    run(args)


def fit_one(method: str, settings: dict, seed: int, Xtr, Ytr, Xte, Yte, sweeps: tuple[int, int] | None = None,
            n_jobs: int = 2):
    """Fit ``method``; returns (the estimator, training seconds, its trace with test P@1 per
    iteration or None). Batch and online EM record test P@1 through ``validation=``; the trace's
    ``seconds`` exclude that evaluation."""
    from mlgp.baselines import LabelFrequency
    from mlgp.geneml import GenEML

    if METHODS[method] is None:
        t = time.perf_counter()
        return LabelFrequency().fit(Xtr, Ytr), time.perf_counter() - t, None
    params = {k: settings[k] for k in ("n_components", "lambda_u", "lambda_v", "lambda_w", "max_iter", "batch_size",
                                      "num_results", "num_burnin_steps", "num_chains")}
    if sweeps is not None:
        params["num_burnin_steps"], params["num_results"] = sweeps
    est = GenEML(random_state=seed, n_jobs=n_jobs, tol=None, **params, **METHODS[method])  # the recorded iteration counts
    watch = (Xte, Yte) if est.inference != "gibbs" else None
    t = time.perf_counter()
    est.fit(Xtr, Ytr, validation=watch)
    seconds = time.perf_counter() - t
    return est, seconds, est.trace_


def run(args: argparse.Namespace) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from sklearn.preprocessing import normalize

    import mlgp.data
    from mlgp.experiment import Experiment, RunLog
    from mlgp.files import atomic_write_text
    from mlgp.metrics import evaluate, inverse_propensity, propensity_params

    s = dict(SETTINGS, **(QUICK if args.quick else {}))
    max_train = s.pop("max_train", None)
    seeds = args.seeds or [0]
    methods = args.methods.split(",")
    with Experiment("geneml_benchmarks", quick=args.quick, settings=dict(s, features="rows L2-normalised"),
                    seeds=seeds, out=args.out) as exp:
        settings = dict(s, max_train=max_train, gibbs_sweeps=None if args.quick else GIBBS_SWEEPS)
        log = RunLog(exp.folder, "runs", RUN_COLUMNS, ["dataset", "method", "seed"], settings, args.fresh)
        traces = RunLog(exp.folder, "traces", TRACE_COLUMNS, ["dataset", "method", "seed", "iteration"], settings,
                        args.fresh)
        for name in args.datasets.split(","):
            ds = mlgp.data.load(name)
            Xtr, Ytr = normalize(ds.train.X[:max_train], "l2"), ds.train.Y[:max_train]
            Xte, Yte = normalize(ds.test.X, "l2"), ds.test.Y
            w = inverse_propensity(Ytr, *propensity_params(name))
            for method in methods:
                for seed in seeds:
                    if log.done(name, method, seed):
                        continue
                    sweeps = None if args.quick else GIBBS_SWEEPS.get(name)
                    # --quick: one process (the fit is the same for any n_jobs; starting workers costs more)
                    est, seconds, trace = fit_one(method, s, seed, Xtr, Ytr, Xte, Yte, sweeps, 1 if args.quick else 2)
                    metrics = evaluate(Yte, est.predict_topk(Xte, 5), inv_propensity=w)
                    # the trace and the exposures first, the run's row last: a run killed in between
                    # is fitted again, and its trace rows already stored are not repeated
                    if trace is not None and "P@1" in trace:
                        elapsed = trace["seconds"].cumsum()
                        for i in range(len(trace)):
                            if not traces.done(name, method, seed, i + 1):
                                traces.append({"dataset": name, "method": method, "seed": seed, "iteration": i + 1,
                                               "seconds": float(elapsed.iloc[i]), "P@1": float(trace["P@1"].iloc[i])})
                    if getattr(est, "exposure_", None) is not None:
                        frequency = np.asarray(Ytr.sum(axis=0)).ravel() / Ytr.shape[0]
                        atomic_write_text(exp.folder / f"exposure_{name}_{method}_{seed}.csv",
                                          pd.DataFrame({"frequency": frequency, "exposure": est.exposure_}).to_csv(index=False))
                    iterations = getattr(est, "n_iter_", np.nan)
                    log.append(dict(dataset=name, method=method, seed=seed,
                                    **{f"{m}@{k}": float(metrics.loc[m, k]) for m in ("P", "PSP") for k in (1, 3, 5)},
                                    **{"train s": seconds, "iterations": iterations,
                                       "s/iteration": seconds / iterations}))
                    print(log.rows.iloc[-1].to_dict(), flush=True)
        table = log.rows.copy()
        table.insert(1, "name", table["method"].map(NAMES))
        exp.table("benchmarks", table)
        exp.table("convergence", traces.rows, show=False)
        if not traces.rows.empty:
            exp.figure("convergence", _convergence_figure(plt, traces.rows))
        files = {(r.dataset, r.method, r.seed): exp.folder / f"exposure_{r.dataset}_{r.method}_{r.seed}.csv"
                 for r in log.rows.itertuples() if METHODS[r.method] and METHODS[r.method]["exposure"]}
        missing = sorted(str(path.name) for path in files.values() if not path.is_file())
        if missing:  # deleted by hand: the figure is drawn without them, and says so in run.json
            exp.note("exposure files missing", missing)
        exposures = {key: pd.read_csv(path) for key, path in files.items() if path.is_file()}
        if exposures:
            exp.figure("exposure", _exposure_figure(plt, exposures))


def _dataset_panels(plt, datasets: list[str], draw, xlabel: str, ylabel: str, xscale: str = "linear"):
    """One panel per dataset, side by side; ``draw(ax, dataset)`` plots into each."""
    fig, axes = plt.subplots(1, len(datasets), figsize=(4.2 * len(datasets), 3.4), squeeze=False)
    for ax, dataset in zip(axes[0], datasets):
        draw(ax, dataset)
        ax.set_xscale(xscale)
        ax.set_title(dataset, fontsize="small")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
    axes[0, 0].legend(fontsize="x-small")
    fig.tight_layout()
    return fig


def _convergence_figure(plt, traces: pd.DataFrame):
    """Test P@1 against training seconds, batch against online EM, one panel per dataset."""
    def draw(ax, dataset):
        for (method, seed), g in traces[traces["dataset"] == dataset].groupby(["method", "seed"]):
            ax.plot(g["seconds"], g["P@1"], marker=".", label=f"{NAMES[method]} (seed {seed})")

    return _dataset_panels(plt, list(traces["dataset"].unique()), draw, "training seconds", "test P@1 (%)")


def _exposure_figure(plt, exposures: dict):
    """Inferred μ_l against the label's training frequency, one panel per dataset (log x)."""
    def draw(ax, dataset):
        for (name, method, seed), frame in exposures.items():
            if name == dataset:
                ax.scatter(np.maximum(frame["frequency"], 1e-5), frame["exposure"], s=6, alpha=0.6, label=NAMES[method])

    return _dataset_panels(plt, list(dict.fromkeys(k[0] for k in exposures)), draw, "label frequency in training",
                           "inferred exposure μ_l", xscale="log")


if __name__ == "__main__":
    main()
