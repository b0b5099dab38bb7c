"""GenEML's synthetic study: data drawn from the model with known per-label exposures.

Training labels come from GenEML's own generative model (:func:`mlgp.geneml.geneml_joint`) with
per-label exposures μ_l chosen to vary widely: a third of the labels are rarely exposed (μ = 0.15),
a third half the time (0.5), a third almost always (0.95). Labels are made sparse, as real ones
are, inside the model: X gains a constant feature whose row of W is (s, 0, …, 0), and every v_l's
first coordinate is −b/s, so each ψ_nl carries a shift of about −b (``label_bias``); W's other rows,
the rest of V, U, the exposures and Y are drawn from the joint distribution given those. Test labels
are drawn from the same preferences σ(u_nᵀ v_l) with every label exposed — the labels a point would
have if nothing were missing. Methods: GenEML with global exposure by each inference (batch EM, online EM, Gibbs),
GenEML without exposure (the logistic low-rank, LEML-like model) and ``LabelFrequency``. Writes
``precision`` (P@1/3/5 on the full test labels, the correlation of the true and inferred μ_l,
training seconds) and ``exposure.png`` (inferred against true μ_l).

    python experiments/geneml_synthetic.py
    python experiments/geneml_synthetic.py --quick
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
import scipy.sparse as sp

FULL = dict(num_train=3000, num_test=1000, num_features=300, num_labels=90, n_components=8, iterations=40,
            epochs=10, num_results=60, num_burnin_steps=60, batch_size=300, label_bias=6.0)
QUICK = dict(num_train=300, num_test=100, num_features=40, num_labels=12, n_components=3, iterations=3, epochs=2,
             num_results=3, num_burnin_steps=3, batch_size=100, label_bias=3.0)
EXPOSURES = (0.15, 0.5, 0.95)
PRIORS = dict(lambda_u=1.0, lambda_v=1.0, lambda_w=1.0)
SHIFT = 3.0  # s: the constant feature's weight on u's first coordinate


def draw(sizes: dict, seed: int):
    """(X, Y train, Y test with every label exposed, true μ) from GenEML's joint distribution."""
    import tensorflow as tf

    from mlgp.geneml import geneml_joint

    N = sizes["num_train"] + sizes["num_test"]
    K = sizes["num_labels"]
    rng = np.random.default_rng(seed)
    X = sp.random(N, sizes["num_features"], density=0.1, random_state=seed, format="csr")
    X = sp.csr_matrix(X.multiply(1 / np.sqrt(np.asarray(X.multiply(X).sum(axis=1)) + 1e-12)))
    X = sp.hstack([X, np.ones((N, 1))], format="csr")  # the constant feature
    mu = np.array([EXPOSURES[l % 3] for l in range(K)])
    joint = geneml_joint(X, K, sizes["n_components"], **PRIORS)
    prior_draw = joint.sample(value=dict(mu=tf.constant(mu)), seed=(seed, 1))
    W, V = prior_draw["W"].numpy(), prior_draw["V"].numpy()
    W[-1] = 0.0
    W[-1, 0] = SHIFT
    V[:, 0] = -sizes["label_bias"] / SHIFT
    values = joint.sample(value=dict(mu=tf.constant(mu), W=tf.constant(W), V=tf.constant(V)), seed=(seed, 2))
    preference = 1 / (1 + np.exp(-(values["U"].numpy() @ values["V"].numpy().T)))
    everything = (rng.random(preference.shape) < preference).astype(np.float64)  # every label exposed
    n = sizes["num_train"]
    return X[:n], sp.csr_matrix(values["Y"].numpy()[:n].astype(np.float64)), X[n:], sp.csr_matrix(everything[n:]), mu


def main(argv: list[str] | None = None) -> None:
    from mlgp.experiment import add_argparse_args

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_argparse_args(parser)
    args = parser.parse_args(argv)
    run(args, QUICK if args.quick else FULL)


def run(args: argparse.Namespace, sizes: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from mlgp.baselines import LabelFrequency
    from mlgp.experiment import Experiment
    from mlgp.geneml import GenEML
    from mlgp.metrics import precision_at_k

    seeds = args.seeds or [0]
    methods = {
        "GenEML, exposure, batch EM": dict(exposure="global", inference="em", max_iter=sizes["iterations"]),
        "GenEML, exposure, online EM": dict(exposure="global", inference="online-em", max_iter=sizes["epochs"],
                                            batch_size=sizes["batch_size"]),
        "GenEML, exposure, Gibbs": dict(exposure="global", inference="gibbs", num_results=sizes["num_results"],
                                        num_burnin_steps=sizes["num_burnin_steps"]),
        "GenEML, no exposure (LEML-like)": dict(exposure=None, inference="em", max_iter=sizes["iterations"]),
    }
    with Experiment("geneml_synthetic", quick=args.quick, settings=dict(sizes=sizes, exposures=EXPOSURES, **PRIORS),
                    seeds=seeds, out=args.out) as exp:
        rows, inferred = [], {}
        for seed in seeds:
            Xtr, Ytr, Xte, Yte, mu = draw(sizes, seed)
            for name, params in methods.items():
                t = time.perf_counter()
                est = GenEML(n_components=sizes["n_components"], random_state=seed, **PRIORS, **params).fit(Xtr, Ytr)
                seconds = time.perf_counter() - t
                top = est.predict_topk(Xte, 5)
                corr = np.corrcoef(est.exposure_, mu)[0, 1] if est.exposure_ is not None else np.nan
                rows.append(dict(method=name, seed=seed, **{f"P@{k}": 100 * precision_at_k(Yte, top, k) for k in (1, 3, 5)},
                                 **{"corr(μ, true μ)": corr, "train s": seconds}))
                if est.exposure_ is not None:
                    inferred.setdefault(name, []).append((mu, est.exposure_))
            base = LabelFrequency().fit(Xtr, Ytr).predict_topk(Xte, 5)
            rows.append(dict(method="LabelFrequency", seed=seed, **{f"P@{k}": 100 * precision_at_k(Yte, base, k) for k in (1, 3, 5)},
                             **{"corr(μ, true μ)": np.nan, "train s": np.nan}))
            exp.table("precision", pd.DataFrame(rows))
        fig, ax = plt.subplots(figsize=(5, 4))
        for name, pairs in inferred.items():
            true = np.concatenate([p[0] for p in pairs])
            got = np.concatenate([p[1] for p in pairs])
            ax.scatter(true + np.random.default_rng(0).normal(0, 0.01, true.shape), got, s=10, label=name, alpha=0.6)
        ax.plot([0, 1], [0, 1], "k:", lw=1)
        ax.set_xlabel("true exposure μ_l")
        ax.set_ylabel("inferred exposure")
        ax.legend(fontsize="small")
        exp.figure("exposure", fig)


if __name__ == "__main__":
    main()
