"""ML-LSPC paper Fig. 1: the rotating-boundaries toy study (misclassification and solve time against T).

Nam, Hachiya & Sugiyama, section 6.1: x ~ N(0, I_300), N = 2000 training points, label t positive
where cos(2πt/T) x1 + sin(2πt/T) x2 > 0, similarity max(0, Pearson), Gaussian kernel, every tuning
parameter chosen by 5-fold CV on the misclassification rate, averaged over 50 runs.

(a) Test misclassification rate (Hamming loss) of LSPC, ML-LSPC and ML-kNN against T. One
    ``MLLSPCCV`` grid per run serves both LSPC models: LSPC is its best point with coupling 0,
    ML-LSPC its best point with coupling > 0; each is refitted (``LSPC`` and ``MLLSPC``).
(b) Seconds to fit ML-LSPC with fixed hyperparameters against T for each solver: the naive dense
    BT × BT solve (the paper's ``mldivide``), CG (the paper's ``pcg``), the two-eigendecomposition
    solution and Bartels–Stewart; medians of ``--repeats`` fits, all in this one process.

Rows are appended to ``toy_runs.csv`` / ``toy_timing.csv`` as they finish (:class:`mlgp.experiment.RunLog`);
a rerun with the same sizes skips what is there, so a stopped run resumes and ``--runs``/``--tasks``
can be extended.

    python experiments/fig1_mllspc_toy.py                  # 50 runs, T = 2..50
    python experiments/fig1_mllspc_toy.py --runs 10 --tasks 5,20,50
    python experiments/fig1_mllspc_toy.py --quick
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd


def _ints(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated positive integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected comma-separated positive integers, got {text!r}")
    return values


RUN_COLUMNS = ["run", "T", "method", "error", "cv_error", "params"]
TIMING_COLUMNS = ["T", "n_basis", "solver", "median_seconds", "min_seconds", "max_seconds", "cg_iterations",
                  "rel_diff_vs_eig"]


def _accuracy_runs(args, sizes, exp, settings) -> pd.DataFrame:
    from sklearn.metrics import hamming_loss, make_scorer
    from sklearn.model_selection import GridSearchCV

    from mlgp.baselines import LSPC, MLLSPC, MLLSPCCV, MLkNN
    from mlgp.data import lspc_toy
    from mlgp.experiment import RunLog

    log = RunLog(exp.folder, "toy_runs", RUN_COLUMNS, ["run", "T"], settings, args.fresh)
    for T in args.tasks:
        for run in range(args.runs):
            if log.done(run, T):
                continue
            t0 = time.perf_counter()
            seed = 1000 * run + T
            ds = lspc_toy(sizes["N"], sizes["N_test"], num_labels=T, num_features=sizes["D"], seed=seed)
            X, Y, Xt, Yt = ds.train.X.toarray(), ds.train.Y.toarray(), ds.test.X.toarray(), ds.test.Y.toarray()
            cv = MLLSPCCV(alphas=sizes["alphas"], couplings=[0.0, *sizes["couplings"]], n_basis=sizes["B"],
                          cv=5, scoring="hamming_loss", random_state=seed).fit(X, Y)
            res = pd.DataFrame(cv.cv_results_["params"]).assign(score=cv.cv_results_["mean_test_score"])
            rows = []
            for method, subset in (("LSPC", res[res.coupling == 0]), ("ML-LSPC", res[res.coupling > 0])):
                best = subset.loc[subset.score.idxmax()]
                kw = dict(kernel_width=best.kernel_width, alpha=best.alpha, n_basis=sizes["B"], random_state=seed)
                model = LSPC(**kw) if method == "LSPC" else MLLSPC(coupling=best.coupling, **kw)
                error = float(np.mean(model.fit(X, Y).predict(Xt) != Yt))
                rows.append(dict(run=run, T=T, method=method, error=error, cv_error=-best.score,
                                 params=f"width={best.kernel_width:.3g} alpha={best.alpha:g} coupling={best.coupling:g}"))
            knn = GridSearchCV(MLkNN(), {"n_neighbors": sizes["ks"]}, cv=5,
                               scoring=make_scorer(hamming_loss, greater_is_better=False)).fit(X, Y)
            rows.append(dict(run=run, T=T, method="ML-kNN", error=float(np.mean(knn.predict(Xt) != Yt)),
                             cv_error=-knn.best_score_, params=f"k={knn.best_params_['n_neighbors']}"))
            for row in rows:
                log.append(row)
            print(f"  T={T:3d} run {run:2d}: " + "  ".join(f"{r['method']} {r['error']:.4f}" for r in rows)
                  + f"  ({time.perf_counter() - t0:.1f} s)", flush=True)
    return log.rows


def _timing_runs(args, sizes, exp, settings) -> pd.DataFrame:
    from mlgp.baselines import MLLSPC, median_heuristic
    from mlgp.baselines._sylvester import DENSE_MAX_UNKNOWNS
    from mlgp.data import lspc_toy
    from mlgp.experiment import RunLog

    log = RunLog(exp.folder, "toy_timing", TIMING_COLUMNS, ["T", "n_basis", "solver"], settings, args.fresh)
    for B in sizes["timing_basis"]:
        for T in args.tasks:
            ds = lspc_toy(sizes["N"], 1, num_labels=T, num_features=sizes["D"], seed=T)
            X, Y = ds.train.X.toarray(), ds.train.Y.toarray()
            width = median_heuristic(X)
            rows = []
            for solver in ("dense", "cg", "eig", "sylvester"):
                if log.done(T, B, solver) or (solver == "dense" and B * T > DENSE_MAX_UNKNOWNS):
                    continue
                seconds, models = [], []
                for _ in range(args.repeats):
                    est = MLLSPC(kernel_width=width, alpha=0.01, coupling=0.1, n_basis=B, solver=solver,
                                 tol=1e-8, random_state=0)
                    t = time.perf_counter()
                    est.fit(X, Y)
                    seconds.append(time.perf_counter() - t)
                    models.append(est)
                rows.append(dict(T=T, n_basis=B, solver=solver, median_seconds=float(np.median(seconds)),
                                 min_seconds=float(np.min(seconds)), max_seconds=float(np.max(seconds)),
                                 cg_iterations=models[0].n_iter_ if solver == "cg" else np.nan, coef=models[0].coef_))
            if rows:
                ref = next((r["coef"] for r in rows if r["solver"] == "eig"), rows[0]["coef"])
                for r in rows:
                    r["rel_diff_vs_eig"] = float(np.linalg.norm(r.pop("coef") - ref) / np.linalg.norm(ref))
                    log.append(r)
                print(f"  timing B={B} T={T:3d}: " + "  ".join(f"{r['solver']} {r['median_seconds']:.3f} s" for r in rows), flush=True)
    return log.rows


def _figures(exp, runs: pd.DataFrame, timing: pd.DataFrame, sizes) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for method, g in runs.groupby("method"):
        s = g.groupby("T")["error"].agg(["mean", "std", "count"])
        ax.errorbar(s.index, s["mean"], yerr=s["std"] / np.sqrt(s["count"]), marker="o", capsize=3, label=method)
    ax.set(xlabel="number of labels T", ylabel="test misclassification rate",
           title=f"Toy problem (N={sizes['N']}, D={sizes['D']}, B={sizes['B']}): mean ± s.e. over runs")
    ax.legend()
    exp.figure("fig1a_misclassification", fig)

    fig, ax = plt.subplots(figsize=(7, 4.5))
    colours = dict(zip(("dense", "cg", "eig", "sylvester"), ("C3", "C0", "C2", "C1")))
    styles = dict(zip(sorted(timing["n_basis"].unique()), ("-", "--", ":", "-.")))
    for (solver, B), g in timing.groupby(["solver", "n_basis"]):
        g = g.sort_values("T")
        ax.plot(g["T"], g["median_seconds"], marker="o", color=colours.get(solver), linestyle=styles[B],
                label=f"{solver} (B={B})")
    ax.set(xlabel="number of labels T", ylabel="fit seconds (median)", yscale="log",
           title=f"ML-LSPC fit time by solver (N={sizes['N']}, D={sizes['D']})")
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    exp.figure("fig1b_solver_time", fig)


def main(argv: list[str] | None = None) -> None:
    from mlgp.experiment import Experiment, add_argparse_args

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_argparse_args(parser)
    parser.add_argument("--tasks", type=_ints, default=None, help="numbers of labels T (default 2,5,10,20,30,50)")
    parser.add_argument("--runs", type=int, default=None, help="random data sets per T (default 50, the paper's)")
    parser.add_argument("--n-basis", type=int, default=1000, help="basis functions B of the accuracy study (default 1000)")
    parser.add_argument("--timing-basis", type=_ints, default=[200, 2000],
                        help="B values of the timing study (default 200,2000; dense runs only where B·T <= 20000)")
    parser.add_argument("--repeats", type=int, default=3, help="fits per timing (the median is reported)")
    parser.add_argument("--fresh", action="store_true", help="discard the rows of an earlier run in the results folder")
    args = parser.parse_args(argv)
    args.tasks = args.tasks or ([2, 5] if args.quick else [2, 5, 10, 20, 30, 50])
    args.runs = args.runs or (2 if args.quick else 50)
    if args.quick:
        sizes = dict(N=200, N_test=200, D=20, B=50, timing_basis=[30], alphas=[0.01, 0.1], couplings=[0.1], ks=[5, 10])
        args.repeats = 1
    else:
        sizes = dict(N=2000, N_test=1000, D=300, B=args.n_basis, timing_basis=args.timing_basis,
                     alphas=[1e-3, 1e-2, 1e-1], couplings=[0.01, 0.03, 0.1, 0.3], ks=[5, 10, 20])
    settings = dict(tasks=args.tasks, runs=args.runs, repeats=args.repeats, **sizes)
    with Experiment("fig1_mllspc_toy", quick=args.quick, settings=settings, out=args.out) as exp:
        exp.note("inputs", "x ~ N(0, I_D) as the paper; its kernel-centre count B is not stated (B = N is its "
                           "kernel model); here B = n_basis random training points")
        exp.note("grid", "widths 0.5/1/2 × median distance; alphas and couplings as in settings; ML-kNN k by 5-fold CV")
        # rows made with the same sizes and grid are kept and extended (more --runs or --tasks)
        runs = _accuracy_runs(args, sizes, exp, {k: v for k, v in sizes.items() if k != "timing_basis"})
        timing = _timing_runs(args, sizes, exp, dict(N=sizes["N"], D=sizes["D"], repeats=args.repeats))
        summary = (runs.groupby(["T", "method"])["error"].agg(["mean", "std", "count"]).reset_index()
                   .pivot(index="T", columns="method", values=["mean", "std", "count"]))
        summary.columns = [f"{m} {stat}" for stat, m in summary.columns]
        summary = summary.reset_index()
        for c in [c for c in summary.columns if c.endswith(" count")]:
            summary[c] = summary[c].astype(int)
        summary["ML-LSPC − LSPC"] = summary["ML-LSPC mean"] - summary["LSPC mean"]
        exp.table("fig1a_misclassification", summary, floatfmt=".4f")
        exp.table("toy_runs", runs, floatfmt=".4f", show=False)
        exp.table("fig1b_solver_time", timing, floatfmt=".4g")
        wide = timing.pivot_table(index=["n_basis", "T"], columns="solver", values="median_seconds").reset_index()
        if {"dense", "cg"} <= set(wide.columns):
            wide["dense / cg"] = wide["dense"] / wide["cg"]
        exp.table("fig1b_speedups", wide, floatfmt=".4g")
        _figures(exp, runs, timing, sizes)


if __name__ == "__main__":
    main()
