"""The four training loops share one step recorder (:mod:`mlgp.estimator.recorder`): MLGPF's epochs
(:func:`mlgp.training.fit`), batch EM, online EM and the Gibbs sampler call their callback with one
signature ``callback(step, state, row)`` and stop when it asks; the validation P@k of MLGPF and of
GenEML is one function's value; and every entry that takes a validation pair refuses a bad one with
the same error."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import scipy.sparse as sp
from _training_problem import build, small_problem

from mlgp.geneml import GenEML
from mlgp.geneml.em import EMState, Priors, batch_em
from mlgp.geneml.gibbs import GibbsOptions, gibbs
from mlgp.geneml.online_em import online_em
from mlgp.training import fit


@pytest.fixture(scope="module")
def problem():
    return small_problem()


@pytest.fixture(scope="module")
def sparse_problem():
    """CSR features (80, 6) and 0/1 labels (80, 5), and a validation pair of 20 rows."""
    rng = np.random.default_rng(0)
    X = sp.random(100, 6, density=0.5, random_state=1, format="csr")
    Y = sp.csr_matrix((rng.random((100, 5)) < 0.35).astype(np.float64))
    return X[:80], Y[:80], X[80:], Y[80:]


def _start(X, Y, k=2, seed=0):
    rng = np.random.default_rng(seed)
    return EMState(np.zeros((X.shape[1], k)), 0.1 * rng.standard_normal((X.shape[0], k)),
                   0.1 * rng.standard_normal((Y.shape[1], k)), np.full(Y.shape[1], 0.9))


#: Each loop run with a callback: (its trace, the column counting its steps, what its state is).
def _run(loop, callback, problem, data):
    X, Y, _, _ = data
    if loop == "mlgpf":
        model = build(problem)
        trace = fit(model, (problem.train.X, problem.train.Y), epochs=3, batch_size=30, progress=False,
                    callback=callback)
        return trace, "epoch", lambda state: state is model
    if loop == "em":
        return batch_em(X, Y, _start(X, Y), Priors(), 3, callback=callback)[1], "iteration", \
            lambda state: isinstance(state, EMState) and state.U is not None
    if loop == "online-em":
        return online_em(X, Y, _start(X, Y), Priors(), 2, 40, callback=callback, final_passes=1)[1], "epoch", \
            lambda state: isinstance(state, EMState) and state.U is None
    trace = gibbs(X, Y, _start(X, Y), Priors(), GibbsOptions(2, 1, block_rows=40), num_chains=1, callback=callback)[1]
    return trace, "sweep", lambda state: isinstance(state, EMState) and state.U is not None


LOOPS = ["mlgpf", "em", "online-em", "gibbs"]


@pytest.mark.parametrize("loop", LOOPS)
def test_every_loop_calls_back_with_its_step_its_state_and_the_traced_row(loop, problem, sparse_problem) -> None:
    """One call per trace row, as ``callback(step, state, row)``: ``step`` the row's count of the
    loop's steps, ``state`` what the loop trains, ``row`` the row as traced (``elapsed`` and
    ``objective`` or ``elbo`` in it); a column the callback adds is in the trace."""
    calls = []

    def callback(*args, **kwargs):
        assert not kwargs and len(args) == 3
        step, state, row = args
        calls.append((step, state, dict(row)))
        row["added"] = 1000 + step

    trace, step_column, is_state = _run(loop, callback, problem, sparse_problem)
    assert len(calls) == len(trace) >= 3
    for (step, state, row), (_, traced) in zip(calls, trace.iterrows()):
        assert isinstance(step, (int, np.integer)) and step == row[step_column] == traced[step_column]
        assert is_state(state) and "elapsed" in row and traced["added"] == 1000 + step
        assert ("elbo" if loop == "mlgpf" else "objective") in row


@pytest.mark.parametrize("loop", LOOPS)
def test_a_true_return_stops_every_loop_after_that_step(loop, problem, sparse_problem) -> None:
    trace, _, _ = _run(loop, lambda step, state, row: True, problem, sparse_problem)
    assert len(trace) == 1


def test_a_callback_stopping_the_gibbs_sampler_ends_it_as_a_spent_budget_does(sparse_problem) -> None:
    """Chains run one after another; chain 0 stopped at its 2nd sweep (its first kept draw) is the
    only one."""
    X, Y, _, _ = sparse_problem
    samples, trace, _ = gibbs(X, Y, _start(X, Y), Priors(), GibbsOptions(3, 1, block_rows=40), num_chains=3,
                              callback=lambda step, state, row: row["chain"] == 0 and step == 2)
    assert trace["chain"].tolist() == [0, 0] and samples["V"].shape[:2] == (1, 1)


def _sentinel_precision(calls):
    def precision(Y, ranking, ks):
        calls.append((Y.shape, ranking.k, tuple(ks)))
        return {f"P@{k}": 40.0 + k for k in ks}

    return precision


def test_validation_precision_is_one_functions_value_in_mlgpf_and_geneml(problem, sparse_problem, monkeypatch) -> None:
    """The P@k columns of MLGPF's trace and of GenEML's (EM and online EM) are what
    :func:`mlgp.estimator.recorder.validation_precision` returns, once per row."""
    recorder_module = importlib.import_module("mlgp.estimator.recorder")
    calls = []
    monkeypatch.setattr(recorder_module, "validation_precision", _sentinel_precision(calls))
    trace = fit(build(problem), (problem.train.X, problem.train.Y), epochs=2, batch_size=30, progress=False,
                validation=(problem.test.X, problem.test.Y))
    assert trace[["P@1", "P@3", "P@5"]].values.tolist() == [[41.0, 43.0, 45.0]] * 2 and len(calls) == 2
    X, Y, Xv, Yv = sparse_problem
    for inference in ("em", "online-em"):
        calls.clear()
        est = GenEML(n_components=2, inference=inference, max_iter=3, batch_size=40, tol=None, calibration=None,
                     random_state=0).fit(X, Y, validation=(Xv, Yv))
        assert len(calls) == len(est.trace_) and set(calls) == {((20, 5), 5, (1, 3, 5))}
        assert (est.trace_[["P@1", "P@3", "P@5"]].to_numpy() == [41.0, 43.0, 45.0]).all()


def test_the_recorded_precision_is_that_of_the_final_state(problem, sparse_problem) -> None:
    """Unpatched, the last row's P@k is :func:`validation_precision` of the trained model's (MLGPF:
    its mean utilities; GenEML: ψ = (x W) Vᵀ) ranking of the validation rows."""
    from mlgp.estimator.recorder import validation_precision
    from mlgp.scores import topk
    from mlgp.training.epoch_report import ranking

    model = build(problem)
    trace = fit(model, (problem.train.X, problem.train.Y), epochs=2, batch_size=30, progress=False,
                validation=(problem.test.X, problem.test.Y), validation_ks=(1, 2))
    expected = validation_precision(problem.test.Y, ranking(model, problem.test.X.toarray(), 2), (1, 2))
    assert trace[["P@1", "P@2"]].iloc[-1].tolist() == list(expected.values())
    X, Y, Xv, Yv = sparse_problem
    est = GenEML(n_components=2, max_iter=3, tol=None, calibration=None, random_state=0).fit(X, Y, validation=(Xv, Yv))
    scores = np.asarray(est._rows(Xv) @ est.W_) @ est.V_.T
    assert est.trace_[["P@1", "P@3", "P@5"]].iloc[-1].tolist() == list(validation_precision(Yv, topk(scores, 5),
                                                                                            (1, 3, 5)).values())


def _entries(problem, data):
    """Every entry of the GP and GenEML families that takes a validation pair, as ``f(validation)``."""
    X, Y, _, _ = data
    gp = (problem.train.X, problem.train.Y)

    def geneml(inference):
        return lambda v: GenEML(n_components=2, inference=inference, max_iter=1, num_results=1, num_burnin_steps=0,
                                num_chains=1, calibration=None).fit(X, Y, validation=v)

    def classifier(v):
        from mlgp.recipes import MLGPFClassifier

        return MLGPFClassifier(epochs=1, num_inducing=5, validation_fraction=0, progress=False).fit(*gp, validation=v)

    return {"fit": lambda v: fit(build(problem), gp, epochs=1, progress=False, validation=v),
            "MLGPFClassifier": classifier,
            "GenEML em": geneml("em"), "GenEML online-em": geneml("online-em"), "GenEML gibbs": geneml("gibbs"),
            "batch_em": lambda v: batch_em(X, Y, _start(X, Y), Priors(), 1, validation=v),
            "online_em": lambda v: online_em(X, Y, _start(X, Y), Priors(), 1, 40, validation=v)}


def _bad_pairs(problem, data):
    """Bad pairs as ``name: (for the GP problem, for the GenEML problem)``."""
    _, _, Xv, Yv = data
    Xg, Yg = problem.test.X, problem.test.Y
    return {"three things": ((Xg, Yg, Yg), (Xv, Yv, Yv)), "one array": (Xg, Xv),
            "one column short": ((Xg[:, :-1], Yg), (Xv[:, :-1], Yv)),
            "one label too many": ((Xg, sp.hstack([Yg, Yg[:, :1]]).tocsr()), (Xv, sp.hstack([Yv, Yv[:, :1]]).tocsr())),
            "rows apart": ((Xg, Yg[:-1]), (Xv, Yv[:-1]))}


@pytest.mark.parametrize("bad", ["three things", "one array", "one column short", "one label too many", "rows apart"])
def test_a_bad_validation_pair_is_refused_with_the_same_error_by_every_entry(bad, problem, sparse_problem) -> None:
    """The same error class and the same message, from the one check, whichever entry is given the
    pair (sizes made to match across the two problems: D and K differ, so the GP and GenEML
    problems each have their own pair, and their messages are compared with the sizes taken out)."""
    import re

    pair_gp, pair_geneml = _bad_pairs(problem, sparse_problem)[bad]
    errors = {}
    for name, entry in _entries(problem, sparse_problem).items():
        with pytest.raises(ValueError, match="validation") as info:
            entry(pair_gp if name in ("fit", "MLGPFClassifier") else pair_geneml)
        errors[name] = (type(info.value).__name__, re.sub(r"\d+", "#", str(info.value)))
    assert len(set(errors.values())) == 1, errors
    assert "validation" in next(iter(errors.values()))[1]
