"""The GenEML estimator: scikit-learn's estimator checks, ranking on data drawn from the model
against the label-frequency baseline, save / load, the TFP model it hands out, bad input."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from _sklearn_checks import LABEL_MATRIX_EXPECTED, estimator_check_tests

from mlgp.baselines import LabelFrequency
from mlgp.errors import ArgumentError, ShapeError
from mlgp.geneml import GenEML
from mlgp.metrics import precision_at_k

EXPECTED_FAILED_CHECKS = {
    **LABEL_MATRIX_EXPECTED,
    "check_classifier_multioutput": "wants decision_function to rank points as predict_proba does; ψ ranks by "
                                    "the mean logit alone, μ E[σ(ψ)] also by the logit's variance and the exposure",
}

test_sklearn_estimator_checks, test_skipped_checks_are_exactly_the_failing_ones = estimator_check_tests(
    [GenEML(n_components=2, max_iter=1)], EXPECTED_FAILED_CHECKS)


@pytest.fixture(scope="module")
def drawn():
    """Train and test data drawn from GenEML itself (global exposure)."""
    from mlgp.geneml import geneml_joint

    N, D, K = 700, 40, 25
    X = sp.random(N, D, density=0.25, random_state=4, format="csr")
    X = sp.csr_matrix(X.multiply(1 / np.sqrt(np.asarray(X.multiply(X).sum(axis=1)) + 1e-12)))
    values = geneml_joint(X, K, 4, lambda_v=0.2, lambda_w=0.1, alpha=2.0, beta=2.0).sample(seed=(4, 5))
    Y = sp.csr_matrix(values["Y"].numpy().astype(np.float64))
    return X[:500], Y[:500], X[500:], Y[500:], values


def test_it_ranks_better_than_label_frequency_and_infers_the_exposures(drawn):
    Xtr, Ytr, Xte, Yte, values = drawn
    est = GenEML(n_components=4, max_iter=30, lambda_v=0.2, lambda_w=0.1, alpha=2.0, beta=2.0).fit(Xtr, Ytr)
    ours = precision_at_k(Yte, est.predict_topk(Xte, 3), 3)
    base = precision_at_k(Yte, LabelFrequency().fit(Xtr, Ytr).predict_topk(Xte, 3), 3)
    assert ours > base + 0.02, (ours, base)
    assert np.corrcoef(est.exposure_, values["mu"].numpy())[0, 1] > 0.5
    assert np.all(np.diff(est.trace_["objective"]) >= -1e-8 * np.abs(est.trace_["objective"][1:]))


def test_save_and_load_give_the_same_scores(drawn, tmp_path):
    Xtr, Ytr, Xte, _, _ = drawn
    for exposure in ("global", None):
        est = GenEML(n_components=3, max_iter=3, exposure=exposure).fit(Xtr, Ytr)
        loaded = GenEML.load(est.save(tmp_path / f"geneml_{exposure}"))
        np.testing.assert_array_equal(loaded.decision_function(Xte), est.decision_function(Xte))
        assert (loaded.exposure_ is None) == (exposure is None)


def test_the_joint_distribution_has_the_fitted_shape(drawn):
    Xtr, Ytr, _, _, _ = drawn
    est = GenEML(n_components=3, max_iter=1).fit(Xtr, Ytr)
    values = est.joint_distribution(Xtr).sample(seed=(1, 1))
    assert values["V"].shape == (Ytr.shape[1], 3) and values["Y"].shape == Ytr.shape


@pytest.mark.parametrize("params, message", [
    (dict(n_components=0), "n_components"), (dict(exposure="sometimes"), "exposure"),
    (dict(inference="variational"), "inference"), (dict(alpha=0.5), "alpha"), (dict(lambda_u=0.0), "lambda_u"),
    (dict(tau=-1.0), "tau"), (dict(batch_size=0), "batch_size"), (dict(exposure_init=1.0), "exposure_init"),
    (dict(exposure_init=0.0), "exposure_init"), (dict(gibbs_start="map"), "gibbs_start"),
    (dict(num_chains=0), "num_chains"), (dict(num_results=0), "num_results"),
    (dict(inference="gibbs", precision_prior=(0.0, 1.0)), "precision_prior"),
    (dict(inference="gibbs", precision_prior=(1.0, float("inf"))), "precision_prior"),
    (dict(inference="gibbs", precision_prior=(1.0, float("nan"))), "precision_prior"),
    (dict(inference="gibbs", precision_prior=(1.0,)), "precision_prior"),
    (dict(inference="em", precision_prior=(1.0, 1.0)), "precision_prior"),
    (dict(inference="gibbs", num_chains=2, n_jobs=0), "n_jobs"), (dict(n_jobs=0), "n_jobs"),
])
def test_bad_parameters_are_refused_before_any_work(drawn, params, message):
    Xtr, Ytr, _, _, _ = drawn
    with pytest.raises(ArgumentError, match=message):
        GenEML(**params).fit(Xtr, Ytr)


@pytest.mark.parametrize("inference", ["em", "gibbs"])
def test_a_validation_pair_of_other_d_or_k_is_refused_before_any_work(drawn, inference, monkeypatch):
    import mlgp.geneml.gibbs as gibbs_module

    Xtr, Ytr, _, _, _ = drawn
    monkeypatch.setattr(gibbs_module, "gibbs", lambda *a, **kw: pytest.fail("the sampler ran"))
    est = GenEML(n_components=2, inference=inference, max_iter=1)
    with pytest.raises(ShapeError, match="validation X"):
        est.fit(Xtr, Ytr, validation=(Xtr[:, :-1], Ytr))
    with pytest.raises(ShapeError, match="validation Y"):
        est.fit(Xtr, Ytr, validation=(Xtr, Ytr[:, :-1]))


def test_bad_data_are_refused(drawn):
    Xtr, Ytr, _, _, _ = drawn
    bad = Ytr.copy()
    bad.data[0] = 2.0
    with pytest.raises(ShapeError, match="0/1"):
        GenEML(max_iter=1).fit(Xtr, bad)
    nan = Xtr.copy()
    nan.data[0] = np.nan
    with pytest.raises(ShapeError, match="NaN"):
        GenEML(max_iter=1).fit(nan, Ytr)


def test_online_em_ranks_better_than_label_frequency_and_infers_the_exposures(drawn):
    Xtr, Ytr, Xte, Yte, values = drawn
    est = GenEML(n_components=4, inference="online-em", max_iter=10, batch_size=100, lambda_v=0.2, lambda_w=0.1,
                 alpha=2.0, beta=2.0).fit(Xtr, Ytr)
    ours = precision_at_k(Yte, est.predict_topk(Xte, 3), 3)
    base = precision_at_k(Yte, LabelFrequency().fit(Xtr, Ytr).predict_topk(Xte, 3), 3)
    assert ours > base + 0.02, (ours, base)
    assert np.corrcoef(est.exposure_, values["mu"].numpy())[0, 1] > 0.5
    assert list(est.trace_.columns) == ["step", "elapsed", "objective", "epoch", "steps", "final", "log_posterior", "seconds"]
    assert est.trace_["steps"].iloc[-1] == 50 and est.trace_["final"].tolist() == [False] * 10 + [True]


@pytest.mark.parametrize("kappa", [0.5, 1.01, 0.2])
def test_online_em_refuses_a_step_schedule_outside_robbins_monro(drawn, kappa):
    Xtr, Ytr, _, _, _ = drawn
    with pytest.raises(ArgumentError, match="kappa"):
        GenEML(inference="online-em", kappa=kappa).fit(Xtr, Ytr)


def test_the_gibbs_sampler_ranks_better_than_label_frequency(drawn, tmp_path):
    Xtr, Ytr, Xte, Yte, values = drawn
    est = GenEML(n_components=4, inference="gibbs", num_results=20, num_burnin_steps=20, lambda_v=0.2,
                 lambda_w=0.1, alpha=2.0, beta=2.0, num_chains=1).fit(Xtr, Ytr)
    ours = precision_at_k(Yte, est.predict_topk(Xte, 3), 3)
    base = precision_at_k(Yte, LabelFrequency().fit(Xtr, Ytr).predict_topk(Xte, 3), 3)
    assert ours > base + 0.02, (ours, base)
    assert est.samples_["mu"].shape == (20, 1, Ytr.shape[1]) and np.corrcoef(est.exposure_, values["mu"].numpy())[0, 1] > 0.5
    loaded = GenEML.load(est.save(tmp_path / "gibbs"))
    np.testing.assert_array_equal(loaded.decision_function(Xte), est.decision_function(Xte))


def test_gibbs_chains_start_where_batch_em_ends_with_gibbs_start_em(drawn, monkeypatch):
    import mlgp.geneml.gibbs as gibbs_module

    Xtr, Ytr, _, _, _ = drawn
    starts = []
    real = gibbs_module.gibbs
    monkeypatch.setattr(gibbs_module, "gibbs", lambda X, Y, start, *a, **kw: starts.append(start) or real(X, Y, start, *a, **kw))
    params = dict(n_components=3, max_iter=4, exposure_init=0.6, random_state=3, calibration=None)
    em = GenEML(inference="em", **params).fit(Xtr, Ytr)
    GenEML(inference="gibbs", gibbs_start="em", num_results=1, num_burnin_steps=0, num_chains=1, **params).fit(Xtr, Ytr)
    GenEML(inference="gibbs", num_results=1, num_burnin_steps=0, num_chains=1, **params).fit(Xtr, Ytr)
    np.testing.assert_array_equal(starts[0].W, em.W_)
    np.testing.assert_array_equal(starts[0].V, em.V_)
    np.testing.assert_array_equal(starts[0].mu, em.exposure_)
    assert np.all(starts[1].W == 0) and np.all(starts[1].mu == 0.6)  # the random start: W = 0, μ = exposure_init


@pytest.fixture(scope="module")
def drawn_with_covariates():
    """Data drawn from GenEML with covariate exposure: η_nl = 1.5 − 2 f_l (one label feature)."""
    from mlgp.geneml import geneml_joint

    N, D, K = 700, 40, 25
    rng = np.random.default_rng(8)
    X = sp.random(N, D, density=0.25, random_state=8, format="csr")
    X = sp.csr_matrix(X.multiply(1 / np.sqrt(np.asarray(X.multiply(X).sum(axis=1)) + 1e-12)))
    feature = rng.standard_normal(K)
    F = np.column_stack([np.ones(K), feature])  # label part only: an intercept and the feature
    joint = geneml_joint(X, K, 4, exposure="covariates", covariates=(F, np.zeros((N, 0))), lambda_v=0.2, lambda_w=0.1)
    values = joint.sample(value=dict(coef=np.array([1.5, -2.0])), seed=(8, 9))
    return X, sp.csr_matrix(values["Y"].numpy().astype(np.float64)), feature, values


@pytest.mark.parametrize("inference", ["em", "online-em", "gibbs"])
def test_covariate_exposure_finds_the_label_feature_that_hides_labels(drawn_with_covariates, inference):
    X, Y, feature, values = drawn_with_covariates
    kw = dict(max_iter=8, batch_size=100) if inference == "online-em" else dict(num_results=10, num_burnin_steps=10, num_chains=1) \
        if inference == "gibbs" else dict(max_iter=25)
    est = GenEML(n_components=4, exposure="covariates", inference=inference, lambda_v=0.2, lambda_w=0.1,
                 **kw).fit(X, Y, label_features=feature[:, None])
    # coefficients: intercept, standardised log frequency, the given feature, the point's label count
    assert est.exposure_coef_.shape == (4,) and est.exposure_coef_[2] < -0.5  # the feature hides labels
    assert est.exposure_.shape == (Y.shape[1],) and np.corrcoef(est.exposure_, -feature)[0, 1] > 0.5
    if inference == "em":
        assert np.all(np.diff(est.trace_["objective"]) >= -1e-8 * np.abs(est.trace_["objective"][1:]))


def test_label_features_need_covariate_exposure(drawn):
    Xtr, Ytr, _, _, _ = drawn
    with pytest.raises(ArgumentError, match="label_features are exposure covariates"):
        GenEML(max_iter=1).fit(Xtr, Ytr, label_features=np.zeros((Ytr.shape[1], 1)))
    with pytest.raises(ShapeError, match=r"label_features must be a finite \(K, C\) array"):
        GenEML(max_iter=1, exposure="covariates").fit(Xtr, Ytr, label_features=np.zeros((3, 1)))


@pytest.mark.parametrize("inference", ["em", "online-em"])
def test_the_trace_records_validation_precision(drawn, inference, capsys):
    Xtr, Ytr, Xte, Yte, _ = drawn
    est = GenEML(n_components=3, max_iter=3, inference=inference, batch_size=250, progress=True)
    est.fit(Xtr, Ytr, validation=(Xte, Yte))
    passes = 1 if inference == "online-em" else 0  # online EM's final streamed batch pass
    assert {"P@1", "P@3", "P@5"} <= set(est.trace_.columns) and len(est.trace_) == 3 + passes
    last = est.trace_.iloc[-1]
    assert last["P@3"] == pytest.approx(100 * precision_at_k(Yte, est.predict_topk(Xte, 3), 3))
    assert "GenEML" in capsys.readouterr().err  # the progress bar
    with pytest.raises(ShapeError, match="validation Y"):
        GenEML(max_iter=1).fit(Xtr, Ytr, validation=(Xte, Yte[:, :3]))


@pytest.mark.parametrize("inference", ["em", "online-em", "gibbs"])
def test_a_fixed_seed_reproduces_the_fit_exactly(drawn, inference):
    Xtr, Ytr, _, _, _ = drawn
    kw = dict(n_components=3, inference=inference, max_iter=3, batch_size=200, num_results=3, num_burnin_steps=2,
              num_chains=2)
    one, two = GenEML(random_state=4, **kw).fit(Xtr, Ytr), GenEML(random_state=4, **kw).fit(Xtr, Ytr)
    other = GenEML(random_state=5, **kw).fit(Xtr, Ytr)
    np.testing.assert_array_equal(one.V_, two.V_)
    np.testing.assert_array_equal(one.exposure_, two.exposure_)
    assert not np.array_equal(one.V_, other.V_)


def test_exposure_gives_a_better_held_out_likelihood_when_labels_were_hidden(drawn):
    """On held-out points of data drawn with exposure, p(y = 1) = μ σ(ψ) of the exposure model
    explains the observed labels better than σ(ψ) of the model without it."""
    from scipy.special import expit

    Xtr, Ytr, Xte, Yte, _ = drawn
    kw = dict(n_components=4, max_iter=30, lambda_v=0.2, lambda_w=0.1)
    with_exposure = GenEML(alpha=2.0, beta=2.0, **kw).fit(Xtr, Ytr)
    without = GenEML(exposure=None, **kw).fit(Xtr, Ytr)
    y = Yte.toarray()

    def mean_log_likelihood(p):
        p = np.clip(p, 1e-12, 1 - 1e-12)
        return np.mean(y * np.log(p) + (1 - y) * np.log1p(-p))

    on = mean_log_likelihood(with_exposure.exposure_ * expit(with_exposure.decision_function(Xte)))
    off = mean_log_likelihood(expit(without.decision_function(Xte)))
    assert on > off + 0.004, (on, off)  # measured: −0.4797 against −0.4876 nats per entry


def test_a_refit_with_other_settings_leaves_nothing_of_the_earlier_fit(drawn):
    Xtr, Ytr, Xte, _, _ = drawn
    est = GenEML(n_components=3, inference="gibbs", num_results=2, num_burnin_steps=1, num_chains=1).fit(Xtr, Ytr)
    assert hasattr(est, "coef_") and hasattr(est, "samples_")
    est.set_params(inference="em", max_iter=2).fit(Xtr, Ytr)
    assert not hasattr(est, "coef_") and not hasattr(est, "samples_")
    np.testing.assert_allclose(est.decision_function(Xte), np.asarray(Xte @ est.W_) @ est.V_.T)


def test_normalize_rows_is_the_fit_on_normalised_rows_and_max_seconds_stops_early() -> None:
    """normalize_rows=True fits and scores as the plain estimator does on L2-normalised rows."""
    import scipy.sparse as sp

    from mlgp.data.preprocessing import normalise_rows

    rng = np.random.default_rng(0)
    X = sp.csr_matrix(rng.random((60, 7)) * (rng.random((60, 7)) < 0.5) * 5.0)
    Y = sp.csr_matrix((rng.random((60, 5)) < 0.3).astype(float))
    ours = GenEML(n_components=2, max_iter=3, normalize_rows=True).fit(X, Y)
    plain = GenEML(n_components=2, max_iter=3, preprocessing=None).fit(normalise_rows(X), Y)
    np.testing.assert_array_equal(ours.W_, plain.W_)
    np.testing.assert_array_equal(ours.decision_function(X), plain.decision_function(normalise_rows(X)))
    assert not np.allclose(ours.decision_function(X), plain.decision_function(X))
    quick = GenEML(n_components=2, max_iter=500, max_seconds=1e-9).fit(X, Y)
    assert quick.n_iter_ == 1
