"""GenEML's posterior predictive against its mode: Gibbs against batch EM on Bibtex, Enron,
Delicious and cal500 (26 labels per row), by ranking and by probabilities.

Methods per data set (one fit each, ``random_state=0``, 2 cores):

- ``batch EM``: ``GenEML()`` at its defaults (the MAP estimate);
- ``Gibbs``: ``GenEML(inference="gibbs")`` at its defaults, with the same priors (the posterior
  predictive: the Rao-Blackwellised posterior mean of the utilities over every kept draw);
- ``Gibbs, --max-seconds``: the same inside a budget (``--max-seconds``, default 900), for the sets
  where the defaults' sweeps take longer (Delicious).

Per fit, on the test split: P@1/3/5 (percent); the held-out negative log-likelihood per entry and
the ECE of ``predict_proba`` (15 equal-mass bins) and ECE@1/3/5 (:func:`mlgp.metrics.evaluate_proba`);
the fit's seconds; for Gibbs the kept draws and the chains' diagnostics (``diagnostics_``: rank-
normalised split R-hat of the log posterior and the share of watched predictions with R-hat ≤ 1.1,
bulk ESS of the log posterior). Writes ``runs`` (resumable: each finished fit is appended at once;
``--fresh`` starts over). ``--quick``: emotions, 100 training rows, k = 5, 2 chains of 3 + 4 sweeps.

    python experiments/geneml_gibbs_predictive.py
    python experiments/geneml_gibbs_predictive.py --datasets enron,cal500 --method "batch EM" --method Gibbs
    python experiments/geneml_gibbs_predictive.py --quick
"""

from __future__ import annotations

import argparse

DATASETS = ("bibtex", "enron", "delicious", "cal500")
METHODS = {"batch EM": {}, "Gibbs": dict(inference="gibbs"), "Gibbs, --max-seconds": dict(inference="gibbs")}
QUICK = dict(n_components=5, num_chains=2, num_burnin_steps=3, num_results=4, max_iter=3)
COLUMNS = ["dataset", "method", "P@1", "P@3", "P@5", "NLL per entry", "ECE", "ECE@1", "ECE@3", "ECE@5", "fit s",
           "draws", "rhat_log_posterior", "rhat_watched_share_1.1", "ess_log_posterior"]


def main(argv: list[str] | None = None) -> None:
    from mlgp.experiment import add_argparse_args

    parser = add_argparse_args(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    parser.add_argument("--fresh", action="store_true", help="discard the stored runs and start over")
    parser.add_argument("--datasets", default=",".join(DATASETS), help="comma-separated data sets")
    parser.add_argument("--method", dest="methods", action="append", choices=list(METHODS), metavar="NAME",
                        help=f"a method to run, repeatable (default: batch EM; Gibbs; of: {'; '.join(METHODS)})")
    parser.add_argument("--max-seconds", type=float, default=900.0, help="the budgeted Gibbs method's seconds")
    args = parser.parse_args(argv)
    args.methods = args.methods or ["batch EM", "Gibbs"]
    run(args)


def score(est, ds) -> dict:
    """A fitted GenEML's test columns (module docstring)."""
    from mlgp.metrics import evaluate, evaluate_proba

    K = ds.test.Y.shape[1]
    ks = [k for k in (1, 3, 5) if k <= K]
    p = evaluate(ds.test.Y, est.predict_topk(ds.test.X, max(ks)), ks=ks, percent=True).loc["P"]
    report = evaluate_proba(ds.test.Y, est.predict_proba(ds.test.X), ks=ks, n_bins=15)
    row = {f"P@{k}": float(p[k]) for k in ks}
    row.update({"NLL per entry": report.nll_per_entry, "ECE": report.ece})
    row.update({f"ECE@{k}": bins.expected_error() for k, bins in report.reliability_at_k.items()})
    diagnostics = getattr(est, "diagnostics_", None) or {}
    row.update({name: diagnostics.get(name) for name in COLUMNS[11:]})
    return row


def run(args: argparse.Namespace) -> None:
    from mlgp.experiment import Experiment, RunLog, each_dataset_and_method
    from mlgp.geneml import GenEML

    datasets = ["emotions"] if args.quick else [d for d in args.datasets.split(",") if d]
    methods = {m: dict(METHODS[m]) for m in args.methods}
    if "Gibbs, --max-seconds" in methods:
        methods["Gibbs, --max-seconds"]["max_seconds"] = args.max_seconds
    if args.quick:
        methods = {m: dict(p, **QUICK) for m, p in methods.items()}
    max_train = 100 if args.quick else None
    settings = {"methods": methods, "max_train": max_train}
    with Experiment("geneml_gibbs_predictive", quick=args.quick, settings=settings, seeds=[0], out=args.out) as exp:
        log = RunLog(exp.folder, "runs", COLUMNS, ["dataset", "method"], settings, args.fresh)
        each_dataset_and_method(log, datasets, methods,
                                lambda params, X, Y: GenEML(random_state=0, **params).fit(X, Y), score, max_train)
        exp.table("runs", log.rows, floatfmt=".4g")


if __name__ == "__main__":
    main()
