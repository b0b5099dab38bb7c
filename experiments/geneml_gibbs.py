"""GenEML's Gibbs sampler on Bibtex (or ``--dataset``): mixing diagnostics and test P@k, with and without the scale move.

For each variant — ``conditional`` (the plain sweep: every block of (ξ, ω, U), V, W, μ from its
conditional) and ``scale`` (the same sweep plus the label-scale move, the default), optionally
``hyperprior`` (the scale move and Gamma(1, 1) hyperpriors on λ_u, λ_w and each λ_vj) — it fits
``GenEML(n_components=100, inference="gibbs", normalize_rows=True, random_state=0)`` with the other
parameters at their defaults (4 chains, 25 burn-in sweeps and 100 kept draws each), watching the
test points, and writes

- ``runs.csv``: test P@1/3/5 of ``coef_`` (the Rao-Blackwellised posterior mean over all chains),
  fit seconds, the effective sample size (ESS, chains pooled) and split R-hat of the watched test
  predictions (median, 10 % quantile, max) and of the log posterior, and ESS per second;
- ``curves.csv`` and ``mixing.png``: per kept draw, the root mean square of the chains' test
  predictions (the scale of ψ, the slow direction of the plain sweep) and the test P@1 of the mean
  over the draws so far (all chains), against the sweep.

Each finished variant is appended at once; a rerun resumes after the variants done (``--fresh``
starts over). ``--quick``: 300 training and 300 test points, k = 5, 2 chains of 3 + 4 sweeps.

    python experiments/geneml_gibbs.py
    python experiments/geneml_gibbs.py --variants conditional,scale,hyperprior
    python experiments/geneml_gibbs.py --dataset enron --variants scale
    python experiments/geneml_gibbs.py --dataset delicious --variants scale --num-chains 2 --num-burnin-steps 5 --num-results 15
    python experiments/geneml_gibbs.py --quick
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

VARIANTS = {"conditional": dict(scale_move=False), "scale": dict(scale_move=True),
            "hyperprior": dict(scale_move=True, precision_prior=(1.0, 1.0)),
            "scale-lv10": dict(scale_move=True, lambda_v=10.0),
            "scale-k20": dict(scale_move=True, n_components=20), "scale-k50": dict(scale_move=True, n_components=50)}
QUICK = dict(n_components=5, num_chains=2, num_burnin_steps=3, num_results=4)
RUN_COLUMNS = ["variant", "P@1", "P@3", "P@5", "fit s", "sweeps", "ess_pred_median", "ess_pred_q10", "rhat_pred_median",
               "rhat_pred_max", "ess_logpost", "rhat_logpost", "ess_pred_per_s"]
CURVE_COLUMNS = ["variant", "draw", "rms_psi", "P@1_mean_so_far"]
DRAW_COLUMNS = ["variant", "chain", "draw", "P@1_single", "log_posterior"]
MODE_COLUMNS = ["variant", "em_P@1", "em_log_posterior", "draws_log_posterior_median", "draws_log_posterior_max",
                "ess_P@1_single", "acf_P@1_single_lag1", "acf_P@1_single_lag5", "acf_P@1_single_lag10"]


def main(argv: list[str] | None = None) -> None:
    from mlgp.experiment import add_argparse_args, choice_list

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_argparse_args(parser)
    parser.add_argument("--variants", default="conditional,scale", help=f"any of {','.join(VARIANTS)}")
    parser.add_argument("--dataset", default="bibtex", help="the dataset (default bibtex; results of another go to "
                                                             "geneml_gibbs/<dataset> unless --out)")
    parser.add_argument("--fresh", action="store_true", help="discard the stored runs and start over")
    for name in ("num_chains", "num_burnin_steps", "num_results"):
        parser.add_argument("--" + name.replace("_", "-"), type=int, default=None,
                            help=f"GenEML's {name} (default: the estimator's; part of the stored settings)")
    parser.add_argument("--n-jobs", type=int, default=None,
                        help="GenEML's n_jobs: chains run at once (the draws are the same for any; default: one at a time)")
    args = parser.parse_args(argv)
    choice_list(parser, args.variants, VARIANTS, "variant")
    run(args)


def p_at_1(Y, scores: np.ndarray) -> float:
    """Test P@1 (percent) of dense scores (N, K)."""
    top = np.argmax(scores, axis=1)
    return 100.0 * float(np.mean(np.asarray(Y[np.arange(Y.shape[0]), top])))


def run(args: argparse.Namespace) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import mlgp.data
    from mlgp.experiment import Experiment, RunLog, results_root
    from mlgp.geneml import GenEML
    from mlgp.geneml.diagnostics import ess, split_rhat
    from mlgp.metrics import evaluate

    chains = {name: getattr(args, name) for name in ("num_chains", "num_burnin_steps", "num_results")
              if getattr(args, name) is not None}
    settings = {**dict(n_components=100, normalize_rows=True, random_state=0), **(QUICK if args.quick else {}), **chains}
    out = args.out if args.out is not None or args.dataset == "bibtex" else f"{results_root()}/geneml_gibbs/{args.dataset}"
    with Experiment("geneml_gibbs", quick=args.quick, settings=dict(settings, dataset=args.dataset, n_jobs=args.n_jobs),
                    seeds=[0], out=out) as exp:
        runs = RunLog(exp.folder, "runs", RUN_COLUMNS, ["variant"], settings, args.fresh)
        curves = RunLog(exp.folder, "curves", CURVE_COLUMNS, ["variant", "draw"], settings, args.fresh)
        draws = RunLog(exp.folder, "draws", DRAW_COLUMNS, ["variant", "chain", "draw"], settings, args.fresh)
        modes = RunLog(exp.folder, "modes", MODE_COLUMNS, ["variant"], settings, args.fresh)
        ds = mlgp.data.load(args.dataset)
        n = 300 if args.quick else None
        Xtr, Ytr, Xte, Yte = ds.train.X[:n], ds.train.Y[:n], ds.test.X[:n], ds.test.Y[:n]
        for variant in args.variants.split(","):
            if runs.done(variant):
                continue
            est = GenEML(inference="gibbs", n_jobs=args.n_jobs, **{**settings, **VARIANTS[variant]})
            t = time.perf_counter()
            est.fit(Xtr, Ytr, validation=(Xte, Yte))
            seconds = time.perf_counter() - t
            p = evaluate(Yte, est.predict_topk(Xte, 5), ks=[1, 3, 5])
            watched = est.samples_["watched"]  # (R, C, N_test, K)
            R = watched.shape[0]
            flat = watched.reshape(R, watched.shape[1], -1)
            pred_ess, pred_rhat = ess(flat), split_rhat(flat)
            d = est.diagnostics_
            running = np.cumsum(watched.mean(axis=1), axis=0)
            for r in range(R):
                if not curves.done(variant, r + 1):
                    curves.append(dict(variant=variant, draw=r + 1, rms_psi=float(np.sqrt(np.mean(watched[r] ** 2))),
                                       **{"P@1_mean_so_far": p_at_1(Yte, running[r] / (r + 1))}))
            _single_draws(variant, watched, Yte, est, draws)
            _against_the_mode(variant, settings, Xtr, Ytr, Xte, Yte, est, draws, modes)
            runs.append({"variant": variant, "P@1": float(p.loc["P", 1]), "P@3": float(p.loc["P", 3]),
                         "P@5": float(p.loc["P", 5]), "fit s": seconds, "sweeps": est.n_iter_,
                         "ess_pred_median": float(np.nanmedian(pred_ess)), "ess_pred_q10": float(np.nanquantile(pred_ess, 0.1)),
                         "rhat_pred_median": float(np.nanmedian(pred_rhat)), "rhat_pred_max": float(np.nanmax(pred_rhat)),
                         "ess_logpost": d.get("ess_log_posterior", np.nan), "rhat_logpost": d.get("rhat_log_posterior", np.nan),
                         "ess_pred_per_s": float(np.nanmedian(pred_ess)) / seconds})
            del est, watched, flat
        exp.table("runs", runs.rows)
        if not modes.rows.empty:
            exp.table("modes", modes.rows)
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
        for variant, rows in curves.rows.groupby("variant", sort=False):
            axes[0].plot(rows["draw"], rows["rms_psi"], label=variant)
            axes[1].plot(rows["draw"], rows["P@1_mean_so_far"], label=variant)
        axes[0].set(xlabel="kept draw (per chain)", ylabel="RMS of the test predictions ψ", title="the scale of ψ")
        axes[1].set(xlabel=f"kept draws per chain averaged ({settings.get('num_chains', 4)} chains)", ylabel="test P@1 of the mean so far")
        axes[0].legend()
        exp.figure("mixing", fig)


def _single_draws(variant: str, watched: np.ndarray, Yte, est, draws) -> None:
    """Per chain and kept draw: the test P@1 of that draw's predictions alone and the log posterior."""
    trace = est.trace_[est.trace_["kept"]]
    for c in range(watched.shape[1]):
        objective = trace.loc[trace["chain"] == c, "log_posterior"].to_numpy()  # the total ("objective" is per point)
        for r in range(watched.shape[0]):
            if not draws.done(variant, c, r + 1):
                draws.append(dict(variant=variant, chain=c, draw=r + 1, log_posterior=float(objective[r]),
                                  **{"P@1_single": p_at_1(Yte, watched[r, c])}))


def _autocorrelation(series: np.ndarray, lag: int) -> float:
    """The autocorrelation at ``lag`` of (R, C) series, chains pooled (each centred on its own mean)."""
    centred = series - series.mean(axis=0)
    if lag >= len(series):
        return float("nan")
    return float(np.sum(centred[lag:] * centred[:-lag or None]) / np.sum(centred ** 2))


def _against_the_mode(variant: str, settings: dict, Xtr, Ytr, Xte, Yte, est, draws, modes) -> None:
    """Batch EM at the variant's priors (its MAP estimate's log posterior and test P@1) against the
    draws' log posterior, and the effective sample size and autocorrelation of single draws' P@1."""
    from mlgp.geneml import GenEML
    from mlgp.geneml.diagnostics import ess

    if modes.done(variant):
        return
    priors = {name: value for name, value in VARIANTS[variant].items() if name.startswith("lambda_") or name == "n_components"}
    em = GenEML(inference="em", max_iter=30, **{**settings, **priors}).fit(Xtr, Ytr)
    rows = draws.rows[draws.rows["variant"] == variant].sort_values(["draw", "chain"])
    single = rows.pivot(index="draw", columns="chain", values="P@1_single").to_numpy()  # (R, C)
    objective = rows["log_posterior"].to_numpy(dtype=float)
    modes.append({"variant": variant, "em_P@1": p_at_1(Yte, em.decision_function(Xte)),
                  "em_log_posterior": float(em.trace_["log_posterior"].iloc[-1]),
                  "draws_log_posterior_median": float(np.median(objective)),
                  "draws_log_posterior_max": float(np.max(objective)),
                  "ess_P@1_single": float(ess(single[:, :, None])[0]),
                  "acf_P@1_single_lag1": _autocorrelation(single, 1), "acf_P@1_single_lag5": _autocorrelation(single, 5),
                  "acf_P@1_single_lag10": _autocorrelation(single, 10)})


if __name__ == "__main__":
    main()
