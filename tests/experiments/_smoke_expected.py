"""What each experiment script's ``--quick`` run must write (used by ``test_experiments_smoke``):
table name -> (columns it must have, numeric columns that may hold NaN), and the figure names."""

from __future__ import annotations

TRACE_COLUMNS = ["epoch", "elbo", "elbo_std", "seconds", "batch_size"]
METRICS = {"P", "nDCG", "PSP", "PSnDCG"}
ENRON_METRICS = ["f1_example", "f1_micro", "f1_macro", "hamming", "P@1", "P@3", "P@5"]
LSPC_METHODS = {"LSPC", "ML-LSPC", "ML-kNN"}
BENCH_STEPS = {("non-whitened", "tf.function"), ("whitened", "XLA"), ("whitened", "XLA except chol(K_ZZ)")}

TTA_LEVELS = [f"s to P@1≥{v}" for v in ("59", "62", "63.5", "64")]
FASTXML_METHODS = {"FastXML", "PfastXML", "PfastreXML"}
XC_COLUMNS = [f"{m}@{k}" for m in ("P", "nDCG", "PSP", "PSnDCG") for k in (1, 3, 5)]
BENCH_FASTXML_NUMBERS = ["fit s", "predict s", "predict ms/point", "peak MB", "data MB", "P@1", "P@3", "P@5",
                         "fit s / FastXML", "peak MB / FastXML"]

#: What each script's ``--quick`` run writes: table name -> (columns it must have, numeric columns
#: that may hold NaN), and the figure names. The numbers of every other numeric column must be finite.
EXPECTED: dict[str, dict] = {
    "geneml_defaults": dict(
        tables={"runs": (["dataset", "method", "P@1", "P@3", "P@5", "fit s", "iterations", "preprocessing",
                          "effective rank", "in use", "M-step"], set())},
        figures=[],
    ),
    "mlgpf_defaults": dict(
        tables={"runs": (["dataset", "method", "P@1", "P@3", "P@5", "NLL", "ECE", "LPD", "fit s", "epochs", "steps",
                          "best epoch", "refit"], set())},
        figures=[],
    ),
    "mlgpf_informative": dict(
        tables={"runs": (["size", "seed", "method", "P@1", "P@5", "LPD", "epochs", "best epoch", "fit s"], {"LPD"}),
                "summary": (["size", "method", "P@1 mean", "P@5 mean", "LPD mean", "P@1 − MLLSPC",
                             "P@1 − LabelFrequency", "seeds"], {"P@1 std", "P@5 std", "LPD mean", "LPD std", "fit s std"})},
        figures=[],
    ),
    "mlgpf_seed_ensemble": dict(
        tables={"members": (["seed", "P@1", "P@3", "P@5", "NLL", "ECE", "LPD", "fit s", "epochs", "best epoch"], set()),
                "groups": (["seeds", "members", "P@1", "P@3", "P@5", "NLL", "ECE", "LPD", "fit s"], set())},
        figures=[],
    ),
    "mlgpf_paper_gap": dict(
        tables={"runs": (["seed", "method", "P@1", "P@3", "P@5", "LPD", "NLL", "ECE", "epochs", "best epoch", "fit s"],
                         set()),
                "summary": (["method", "P@1 mean", "NLL mean", "P@1 − paper", "seeds"],
                            {"P@1 std", "P@3 std", "P@5 std", "LPD std", "NLL std", "ECE std", "fit s std"})},
        figures=[],
    ),
    "elbo_vs_lpd": dict(
        tables={"runs": (["dataset", "variant", "ELBO/N", "LPD", "NLL", "ECE", "P@1", "bias_only", "fit s"], set()),
                "correlation": (["dataset", "runs", "ρ(ELBO/N, LPD)", "ρ(ELBO/N, P@1)", "ρ(LPD, P@1)"], set())},
        figures=["elbo_vs_lpd"],
    ),
    "calibration_study": dict(
        tables={"posterior": (["dataset", "variant", "probabilities", "NLL", "ECE", "ECE@5", "P@1", "NLL rarest 50%",
                               "ECE rarest 50%", "NLL middle 40%", "ECE middle 40%", "NLL top 10%", "ECE top 10%",
                               "fit s"], set()),
                "posthoc": (["dataset", "family", "calibration", "NLL", "ECE", "ECE@5", "P@1", "fit s"], set())},
        figures=[],
    ),
    "compare_datasets": dict(
        # the tiny data sets have 30 test rows and other names: no ECE or ECE@5 target applies
        tables={"targets": (["target", "value", "detail"], set()),
                "targets_by_dataset": (["dataset", "P@1", "best P@1", "best by P@1", "P@1 − best", "P@1 within 2", "LPD",
                                        "best LPD", "LPD short %", "LPD within 1 %", "test rows", "ECE", "ECE@5",
                                        "cells worse than prior", "seconds"], {"ECE", "ECE@5"}),
                "worse_than_prior": (["dataset", "family", "NLL", "prior NLL", "excess"], set()),
                "mean_ranks": (["family", "mean rank P@1", "mean rank LPD"], set())},
        figures=[],
    ),
    "probability_metrics_scale": dict(
        tables={"scale": (["N", "K", "entries", "threads", "generation s", "metrics s", "total s", "peak MB",
                           "exact bins", "LPD", "NLL", "Brier", "ECE", "MCE", "ECE@1", "ECE@3", "ECE@5"], set())},
        figures=[],
    ),
    "bench_data_metrics": dict(
        tables={"bench_data_metrics": (["task", "size", "repeats", "median s", "min s", "max s", "throughput", "unit"], set())},
        figures=[],
    ),
    "bench_fastxml": dict(
        # omikuji and napkinXC are in the bench extra, not the test extra: their rows may be empty
        tables={"bench_fastxml": (["dataset", "tool", "threads", "seed", *BENCH_FASTXML_NUMBERS,
                                   "FastXML fit s / omikuji", "status"],
                                  {"seed", "FastXML fit s / omikuji", *BENCH_FASTXML_NUMBERS}),
                # one seed in --quick: the standard deviations are NaN
                "bench_fastxml_summary": (["dataset", "tool", "threads", "fit s mean", "fit s std", "P@1 mean",
                                           "P@1 std", "P@3 mean", "P@5 mean"],
                                          {"fit s std", "P@1 std", "P@3 std", "P@5 std"})},
        figures=[],
    ),
    "dask_fits": dict(
        tables={"dask_fits": (["dataset", "model", "fit s (1 process)", "fit s (Dask)", "identical",
                               "data scatter calls", "other scatter calls",
                               "data MB", "worker 0 peak MB", "worker 1 peak MB"], set())},
        figures=[],
    ),
    "multiworker": dict(
        tables={"multiworker": (["epoch", "max_rel_diff", "s_per_step_1", "s_per_step_W"], set())},
        figures=[],
    ),
    "fastxml_scale": dict(
        tables={"phases": (["phase", "seconds", "peak_GB", "peak_PSS_GB", "detail"], set()),
                "accuracy": (["method", "P@1", "P@3", "P@5"], set())},
        figures=[],
    ),
    "amazoncat_scale": dict(
        tables={"phases": (["phase", "seconds", "peak_gb"], {"nnz_per_row", "labels_per_point", "X_gb",
                                                             "top_singular_value", "ms_per_step", "elbo"}),
                "accuracy": (["method", "P@1", "P@3", "P@5"], set())},
        figures=[],
    ),
    "geneml_missing_labels": dict(
        tables={"missing_labels": (["dataset", "hiding", "fraction", "method", "seed", "P@1", "P@3", "P@5", "PSP@1",
                                    "PSP@3", "PSP@5", "train s"], set()),
                "summary": (["dataset", "hiding", "fraction", "method", "seeds", "P@1", "PSP@3", "P@1 drop"], set())},
        figures=["missing_labels"],
    ),
    "geneml_cv": dict(
        tables={"cv": (["dataset", "P@1", "P@3", "P@5", "best", "validation P@1", "search s"], set())},
        figures=[],
    ),
    "geneml_gibbs": dict(
        tables={"runs": (["variant", "P@1", "P@3", "P@5", "fit s", "sweeps", "ess_pred_median", "ess_pred_q10",
                          "rhat_pred_median", "rhat_pred_max", "ess_logpost", "rhat_logpost", "ess_pred_per_s"], set()),
                "modes": (["variant", "em_P@1", "em_log_posterior", "draws_log_posterior_median",
                           "draws_log_posterior_max", "ess_P@1_single", "acf_P@1_single_lag1", "acf_P@1_single_lag5",
                           "acf_P@1_single_lag10"], {"acf_P@1_single_lag5", "acf_P@1_single_lag10"})},
        figures=["mixing"],
    ),
    "geneml_gibbs_predictive": dict(
        tables={"runs": (["dataset", "method", "P@1", "P@3", "P@5", "NLL per entry", "ECE", "ECE@1", "ECE@3", "ECE@5",
                          "fit s", "draws", "rhat_log_posterior", "rhat_watched_share_1.1", "ess_log_posterior"],
                         {"draws", "rhat_log_posterior", "rhat_watched_share_1.1", "ess_log_posterior"})},
        figures=[],
    ),
    "geneml_online_em": dict(
        tables={"online_em": (["dataset", "method", "seeds", "P@1", "P@3", "P@5", "P@1 epochs only", "fit s",
                               "median s per epoch", "final pass s"], {"P@1 epochs only", "final pass s"})},
        figures=["curves"],
    ),
    "geneml_benchmarks": dict(
        tables={"benchmarks": (["dataset", "name", "method", "seed", "P@1", "P@3", "P@5", "PSP@1", "PSP@3", "PSP@5",
                                "train s", "iterations", "s/iteration"], {"iterations", "s/iteration"}),
                "convergence": (["dataset", "method", "seed", "iteration", "seconds", "P@1"], set())},
        figures=["convergence", "exposure"],
    ),
    "geneml_synthetic": dict(
        tables={"precision": (["method", "seed", "P@1", "P@3", "P@5", "corr(μ, true μ)", "train s"],
                              {"corr(μ, true μ)", "train s"})},
        figures=["exposure"],
    ),
    "table2_subspace": dict(
        tables={"table2_runs": (["dataset", "variant", "q_family", "seed", "R", "epochs", "P@1", "P@3", "P@5",
                                 "min/epoch", "bound+grad s", "KL+grad s", "train s"], {"R"}),
                "table2_subspace": (["dataset", "variant", "P@1", "paper P@1", "diff P@1"], set()),
                "table4_fixed": (["dataset", "variant", "P@1", "paper P@1", "diff P@1"], set()),
                "table5_times": (["dataset", "variant", "min/epoch", "paper min/epoch", "bound+grad s", "KL+grad s"],
                                 {"paper min/epoch", "paper bound+grad s", "paper KL+grad s"})},
        figures=["fig1_traces_bibtex"],
    ),
    "bench_subspace": dict(
        tables={"bench_subspace": (["D", "method", "svd randomized s", "svd svds s", "projection s", "build s",
                                    "s per step", "peak MB"], set())},
        figures=["step_time_vs_d"],
    ),
    "bench_mlgpf": dict(
        tables={"bench_mlgpf": (["P", "M", "batch", "q(u)", "mlgpf step", "timing", "mlgpf s/epoch", "mlgpf peak MB",
                                 "mlgpf GFLOP/s", "numpy matmul GFLOP/s", "fraction of matmul rate", "stock s/epoch",
                                 "stock peak MB", "speed-up (stock/mlgpf)", "dataset", "N"], set())},
        figures=[],
    ),
    "fig1_elbo_traces": dict(
        tables={"elbo_traces": (["epoch", "elbo", "inducing", "final test P@1"], set())},
        figures=["elbo_traces"],
    ),
    "fig1_fastxml_trees": dict(
        tables={"fastxml_trees_runs": (["dataset", "order", "trees", "P@1", "P@3", "P@5"], set()),
                "fig1_fastxml_trees": (["dataset", "trees", "P@5 mean", "P@5 min", "P@5 max", "P@1 mean", "P@3 mean"],
                                       set())},
        figures=["fig1_fastxml_trees"],
    ),
    "fig1_mllspc_toy": dict(
        tables={
            "fig1a_misclassification": (["T", "LSPC mean", "ML-LSPC mean", "ML-kNN mean", "ML-LSPC − LSPC"]
                                        + [f"{m} {s}" for m in ("LSPC", "ML-LSPC", "ML-kNN") for s in ("std", "count")], set()),
            "toy_runs": (["run", "T", "method", "error", "cv_error", "params"], set()),
            "fig1b_solver_time": (["T", "n_basis", "solver", "median_seconds", "min_seconds", "max_seconds",
                                   "cg_iterations", "rel_diff_vs_eig"], {"cg_iterations"}),
            "fig1b_speedups": (["n_basis", "T", "cg", "dense", "eig", "sylvester", "dense / cg"], set()),
        },
        figures=["fig1a_misclassification", "fig1b_solver_time"],
    ),
    "mllspc_xc_metrics": dict(
        tables={
            "xc_runs": (["dataset", "method", "params", "cv P@1", "select_seconds", "fit_seconds", "predict_seconds",
                         "N train", "N test", "test rows without labels (kept)"]
                        + [f"{m}@{k}" for m in ("P", "nDCG", "PSP", "PSnDCG") for k in (1, 3, 5)], set()),
            "mllspc_xc_metrics": (["dataset", "method", "metric", "k", "value"], set()),
            "mllspc_xc_metrics_wide": (["dataset", "metric", "method", "@1", "@3", "@5"], set()),
        },
        figures=[],
    ),
    "table4_mlgpf": dict(
        tables={
            # one seed: no std; the paper's numbers exist for P@k of some (dataset, kernel) only
            "table4_mlgpf": (["dataset", "kernel", "metric", "k", "mean", "std", "count", "paper", "difference",
                              "test rows without labels (kept)"], {"std", "paper", "difference"}),
            "elbo_traces": (TRACE_COLUMNS + ["dataset", "kernel", "seed"], set()),
        },
        figures=["elbo_traces"],
    ),
    "table_enron_mllspc": dict(
        tables={
            "enron_runs": (["split", "seed", "method", "params", "cv_f1_example", *ENRON_METRICS, "select_seconds",
                            "fit_seconds"], set()),
            # quick: 2 random splits, so every std exists
            "enron_mllspc": (["method", "splits", "f1_example mean", "f1_example std", "paper F", "fit_seconds mean",
                              "fit_seconds std", "paper seconds", "select_seconds mean"]
                             + [f"{m} mean" for m in ENRON_METRICS] + [f"mulan {m}" for m in [*ENRON_METRICS, "fit_seconds"]],
                             set()),
            # two splits: the statistic is undefined where the differences are equal
            "enron_ttest": (["comparison", "metric", "splits", "mean difference", "statistic", "p (two-sided)",
                             "p (one-sided, ML-LSPC greater)", "ML-LSPC better at 5% (one-sided)"],
                            {"statistic", "p (two-sided)", "p (one-sided, ML-LSPC greater)"}),
        },
        figures=[],
    ),
    "table2_fastxml": dict(
        tables={
            "fastxml_runs": (["dataset", "method", "seed", *XC_COLUMNS, "fit_seconds", "predict_seconds", "balance",
                              "balance_std_over_trees", "labels_per_leaf", "leaves_per_tree"], set()),
            # Enron is not in the paper: no published numbers
            "table2_fastxml": (["dataset", "method", "seeds"] + [f"P@{k} {s}" for k in (1, 3, 5) for s in ("mean", "std")]
                               + [f"paper P@{k}" for k in (1, 3, 5)],
                               {f"paper P@{k}" for k in (1, 3, 5)} | {f"P@{k} − paper" for k in (1, 3, 5)}),
            "psp_fastxml": (["dataset", "method", "seeds", "PSP@1 mean", "PSP@1 std", "PSP@5 mean", "PSnDCG@5 mean",
                             "fit_seconds mean"], set()),
            "table6_fastxml": (["dataset", "method", "balance mean", "labels_per_leaf mean", "leaves_per_tree mean",
                                "paper balance", "paper labels per leaf"], {"paper balance", "paper labels per leaf"}),
        },
        figures=[],
    ),
    "table7_fastxml_loss": dict(
        tables={
            "loss_runs": (["dataset", "loss", "seed", *XC_COLUMNS, "fit_seconds", "predict_seconds", "balance",
                           "labels_per_leaf"], set()),
            "table7_fastxml_loss": (["dataset", "loss", "seeds", "P@1", "paper P@1", "P@3", "paper P@3", "P@5",
                                     "paper P@5"], {"paper P@1", "paper P@3", "paper P@5"}),
        },
        figures=[],
    ),
    "table7_kernels": dict(
        tables={
            "table7_runs": (["dataset", "variant", "seed", "epochs", "P@1", "P@3", "P@5", "train_s"], set()),
            # one run per variant: no std
            "table7_kernels": (["dataset", "variant", "runs", "epochs", "P@1 mean", "P@1 std", "P@3 mean", "P@3 std",
                                "P@5 mean", "P@5 std", "train_s mean", "train_s std"],
                               {"P@1 std", "P@3 std", "P@5 std", "train_s std"}),
            "elbo_traces": (TRACE_COLUMNS + ["dataset", "variant", "seed"], set()),
        },
        figures=["elbo_traces_bibtex"],  # --quick trains Bibtex only
    ),
    "time_to_accuracy": dict(
        tables={
            # a 5-second quick run reaches no level
            "time_to_accuracy_bibtex": (["combo", "q_family", "optimizer", "batch", "dtype", "warm start"] + TTA_LEVELS
                                        + [f"best {m}@{k}" for m in ("P", "PSP") for k in (1, 3, 5)]
                                        + ["epochs", "train s", "s/epoch", "final ELBO", "peak MB"], set(TTA_LEVELS)),
        },
        figures=["time_to_accuracy_bibtex"],
    ),
}
