"""Does one GenEML default suit every data set? ``GenEML()`` as a user constructs it against the
settings it used to need, on Enron, Bibtex and emotions (one fit each, batch EM, 2 cores).

Methods per data set:

- ``default``: ``GenEML(random_state=0)``: k = 100 (cut to min(N, K)), the preprocessing chosen
  from the features (rows L2-normalised for non-negative sparse features, columns standardised
  for dense or signed ones), EM until the log posterior changes by at most 1e-4 of its size, at
  most 30 iterations;
- ``default + ARD``: the same with ``relevance_prior=(1, 1)`` (a relevance per latent dimension on
  V's columns);
- ``ARD, rate 0.01``: ``relevance_prior=(1, 0.01)``, a hyperprior that lets ARD switch dimensions
  off (a switched-off dimension's relevance sits at its cap (a − 1 + K/2) / b);
- ``ARD, Gamma(40, 40)``: ``relevance_prior=(40, 40)``, relevances held near 1 (mean 1, sd 0.16);
- ``exact M-step``: ``m_step="exact"``, every u_n and v_l solved exactly in each EM iteration
  (the default, ``"auto"``, takes ``cg_iterations`` conjugate-gradient steps on them from k = 32 on);
- ``CG, 5 steps``: ``cg_iterations=5`` (5 CG steps per iteration on U, V and W instead of the
  default 3);
- ``rows, 30 iterations``: ``normalize_rows=True, tol=None``, the settings ``mlgp compare`` used
  before (rows normalised whatever the features);
- ``earlier class defaults``: ``n_components=20, preprocessing=None, tol=None`` (the class's
  defaults before).

Per fit: P@1/3/5 on the test split, the fit's seconds, EM iterations, the preprocessing used, the
effective rank of the training ψ (singular values carrying 99 % of its squared norm), the latent
dimensions in use (``components_in_use_``: those ARD left on) and the M-step of U and V used
(``exact`` or ``cg``). Writes
``runs`` (resumable, ``--fresh`` starts over).

    python experiments/geneml_defaults.py
    python experiments/geneml_defaults.py --datasets enron,emotions
    python experiments/geneml_defaults.py --datasets delicious --method default --method "default + ARD" --out DIR
    python experiments/geneml_defaults.py --quick
"""

from __future__ import annotations

import argparse

DATASETS = ("enron", "bibtex", "emotions")
METHODS = {
    "default": {},
    "default + ARD": dict(relevance_prior=(1.0, 1.0)),
    "ARD, rate 0.01": dict(relevance_prior=(1.0, 0.01)),
    "ARD, Gamma(40, 40)": dict(relevance_prior=(40.0, 40.0)),
    "exact M-step": dict(m_step="exact"),
    "CG, 5 steps": dict(cg_iterations=5),
    "rows, 30 iterations": dict(normalize_rows=True, tol=None),
    "earlier class defaults": dict(n_components=20, preprocessing=None, tol=None),
}
COLUMNS = ["dataset", "method", "P@1", "P@3", "P@5", "fit s", "iterations", "preprocessing", "effective rank",
           "in use", "M-step"]


def main(argv: list[str] | None = None) -> None:
    from mlgp.experiment import parse_dataset_method_args

    run(parse_dataset_method_args(__doc__.splitlines()[0], DATASETS, METHODS, argv))


def _row(est, ds) -> dict:
    """A fitted GenEML's columns: test P@1/3/5 (percent), iterations, preprocessing, rank, M-step."""
    from mlgp.geneml.em import choose_m_step
    from mlgp.metrics import evaluate

    p = evaluate(ds.test.Y, est.predict_topk(ds.test.X, 5), ks=[1, 3, 5]).loc["P"]
    return {"P@1": float(p[1]), "P@3": float(p[3]), "P@5": float(p[5]), "iterations": est.n_iter_,
            "preprocessing": str(est.feature_map_.kind), "effective rank": est.effective_rank_,
            "in use": est.components_in_use_,
            "M-step": choose_m_step(est.m_step, est.n_components_, est.n_samples_, est.n_labels_)}


def run(args: argparse.Namespace) -> None:
    from mlgp.experiment import Experiment, RunLog, each_dataset_and_method
    from mlgp.geneml import GenEML

    datasets = ["emotions"] if args.quick else args.datasets.split(",")
    chosen = {k: METHODS[k] for k in args.methods}
    methods = {k: dict(v, max_iter=3) for k, v in chosen.items()} if args.quick else chosen
    max_train = 100 if args.quick else None
    settings = {"methods": methods, "max_train": max_train}
    with Experiment("geneml_defaults", quick=args.quick, settings=settings, seeds=[0], out=args.out) as exp:
        log = RunLog(exp.folder, "runs", COLUMNS, ["dataset", "method"], settings, args.fresh)
        each_dataset_and_method(log, datasets, methods,
                                lambda params, X, Y: GenEML(random_state=0, **params).fit(X, Y), _row, max_train)
        exp.table("runs", log.rows, floatfmt=".2f")


if __name__ == "__main__":
    main()
