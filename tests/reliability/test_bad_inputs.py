"""Bad input gets an :class:`~mlgp.errors.MLGPError` naming the problem, before any work.

One table per entry point: the estimators' ``fit`` and scoring, :func:`mlgpf_from_data`,
:func:`mlgp.training.fit`, :func:`mlgp.recipes.train_mlgpf`, and the data and score files. Each
case asserts the error's type and message.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from mlgp.errors import ArgumentError, DatasetNotFoundError, FileAccessError, MLGPError, ShapeError

from _small import SMALL, data  # tests/estimator, on sys.path by conftest

ESTIMATORS = [name for name in SMALL if name != "LSPC-classes"]
X, Y = data()


def _with(value, row=3, col=1, base=X):
    A = np.array(base, dtype=np.float64)
    A[row, col] = value
    return A


FIT_CASES = {
    "NaN feature": (lambda: (_with(np.nan), Y), ShapeError, r"X contains NaN or inf \(first in row 3\)"),
    "inf in CSR": (lambda: (sp.csr_matrix(_with(np.inf)), Y), ShapeError, r"X contains NaN or inf \(first in row 3\)"),
    "1e200 feature": (lambda: (_with(1e200), Y), ShapeError, r"X has values beyond ±1e\+150 \(first in row 3: 1e\+200\)"),
    "-1e300 in CSR": (lambda: (sp.csr_matrix(_with(-1e300, row=5)), Y), ShapeError, r"beyond ±1e\+150 \(first in row 5"),
    "3-D X": (lambda: (X[None], Y), ShapeError, r"X must be 2-D"),
    "1-D X": (lambda: (X[:, 0], Y), ShapeError, r"X must be 2-D"),
    "text X": (lambda: (np.full(X.shape, "a"), Y), ShapeError, r"X must be a numeric"),
    "Y rows": (lambda: (X, Y[:-1]), ShapeError, r"Y has 39 rows but the features have 40"),
    "Y value 2": (lambda: (X, 2 * Y), ShapeError, r"Y must hold 0/1 labels; found values \[2\.\]"),
    "Y value -1": (lambda: (X, -Y), ShapeError, r"Y must hold 0/1 labels; found values \[-1\.\]"),
    "Y NaN": (lambda: (X, _with(np.nan, col=0, base=Y)), ShapeError, r"Y must hold 0/1 labels; found values \[nan\]"),
    "Y 1-D": (lambda: (X, Y[:, 0]), ShapeError, r"Y must be a 2-D \(N, K\) 0/1 label matrix"),
    "Y None": (lambda: (X, None), ShapeError, r"requires y to be passed"),
    "Y no columns": (lambda: (X, np.zeros((40, 0))), ShapeError, r"K ≥ 1"),
}


@pytest.mark.parametrize("name, case", [(n, c) for n in ESTIMATORS for c in FIT_CASES
                                         if (n, c) != ("LSPC", "Y 1-D")])  # LSPC takes 1-D class labels
def test_fit_refuses_bad_data(name, case):
    make, error, message = FIT_CASES[case]
    with pytest.raises(error, match=message):
        SMALL[name]().fit(*make())


SCORE_CASES = {
    "wrong D": (lambda est: est.decision_function(X[:, :4]), ShapeError, r"X has 4 features, but \w+ is expecting 6"),
    "NaN": (lambda est: est.decision_function(_with(np.nan)), ShapeError, r"X contains NaN or inf \(first in row 3\)"),
    "1e300": (lambda est: est.predict_topk(_with(1e300), 2), ShapeError, r"beyond ±1e\+150"),
    "k > K": (lambda est: est.predict_topk(X, 5), ShapeError, r"top_k=5 exceeds the number of labels K=4"),
    "k = 0": (lambda est: est.predict_topk(X, 0), ArgumentError, r"k must be a positive integer, got 0"),
    "batch_size 0": (lambda est: est.decision_function(X, batch_size=0), ArgumentError, r"batch_size must be a positive integer"),
}


@pytest.fixture(scope="module")
def fitted_small():
    return {name: SMALL[name]().fit(X, Y) for name in ESTIMATORS}


@pytest.mark.parametrize("case", SCORE_CASES)
@pytest.mark.parametrize("name", ESTIMATORS)
def test_scoring_refuses_bad_data(fitted_small, name, case):
    call, error, message = SCORE_CASES[case]
    with pytest.raises(error, match=message):
        call(fitted_small[name])


# ------------------------------------------------------------------------------ mlgpf_from_data
FROM_DATA_CASES = {
    "seed text": (dict(seed="abc"), r"seed must be an integer from 0 to 2147483647, got 'abc'"),
    "seed -1": (dict(seed=-1), r"seed must be an integer from 0 to 2147483647, got -1"),
    "seed 2**40": (dict(seed=2**40), r"seed must be an integer from 0 to 2147483647"),
    "seed 1.5": (dict(seed=1.5), r"seed must be an integer"),
    "kmeans_iterations -1": (dict(kmeans_iterations=-1), r"kmeans_iterations must be a positive integer, got -1"),
    "kmeans_iterations 0": (dict(kmeans_iterations=0), r"kmeans_iterations must be a positive integer, got 0"),
    "q_sqrt_init 0": (dict(q_sqrt_init=0.0), r"q_sqrt_init must be a positive finite number, got 0\.0"),
    "q_sqrt_init -1": (dict(q_sqrt_init=-1.0), r"q_sqrt_init must be a positive finite number"),
    "q_sqrt_init inf": (dict(q_sqrt_init=np.inf), r"q_sqrt_init must be a positive finite number, got inf"),
    "q_mu_init nan": (dict(q_mu_init=np.nan), r"q_mu_init must be a finite number, got nan"),
    "q_mu_init text": (dict(q_mu_init="0.5"), r"q_mu_init must be a finite number, got '0\.5'"),
    "quadrature 0": (dict(num_gauss_hermite_points=0), r"num_gauss_hermite_points must be a positive integer"),
    "fixed_inducing text": (dict(fixed_inducing="no"), r"fixed_inducing must be True or False, got 'no'"),
    "warm_start None": (dict(warm_start=None), r"warm_start must be True or False, got None"),
    "unit_sphere 0.5": (dict(unit_sphere_inducing=0.5), r"unit_sphere_inducing must be True or False"),
}


@pytest.mark.parametrize("case", FROM_DATA_CASES)
def test_from_data_refuses_bad_arguments(case):
    from mlgp.models import mlgpf_from_data

    kwargs, message = FROM_DATA_CASES[case]
    with pytest.raises(ArgumentError, match=message):
        mlgpf_from_data(X, Y, **dict(dict(num_latent_gps=2, num_inducing=5), **kwargs))


@pytest.mark.parametrize("data_, message", [
    ((_with(1e300), Y), r"X has values beyond ±1e\+150 \(first in row 3: 1e\+300\)"),
    ((sp.csr_matrix(_with(-1e200)), Y), r"X has values beyond ±1e\+150"),
    ((X, Y[:10]), r"Y has 10 rows but the features have 40"),
], ids=["1e300", "-1e200 CSR", "Y rows"])
def test_from_data_refuses_bad_data(data_, message):
    from mlgp.models import mlgpf_from_data

    with pytest.raises(ShapeError, match=message):
        mlgpf_from_data(*data_, num_latent_gps=2, num_inducing=5)


def test_a_float32_model_refuses_features_that_overflow_float32():
    from mlgp.models import mlgpf_from_data
    from mlgp.recipes import MLGPFClassifier

    with pytest.raises(ShapeError, match=r"X has values beyond ±1e\+18 \(first in row 3: 1e\+20\)"):
        mlgpf_from_data(_with(1e20), Y, num_latent_gps=2, num_inducing=5, dtype="float32")
    model = mlgpf_from_data(_with(1e20), Y, num_latent_gps=2, num_inducing=5, dtype="float64")  # fine in float64
    small = MLGPFClassifier.from_model(mlgpf_from_data(X, Y, num_latent_gps=2, num_inducing=5, dtype="float32"))
    for call in (lambda: small.predict_topk(_with(1e20), 2), lambda: small.decision_function(_with(-1e19)),
                 lambda: small.predict_proba(_with(1e20)), lambda: small.model_.model_inputs(_with(1e20))):
        with pytest.raises(ShapeError, match=r"X has values beyond ±1e\+18 \(first in row 3"):
            call()  # scoring a float32 model: the same bound
    MLGPFClassifier.from_model(model).predict_topk(_with(1e20), 2)  # a float64 model scores them


# ---------------------------------------------------------------------------- training.fit
FIT_ARGUMENT_CASES = {
    "learning_rate -1": (dict(learning_rate=-1.0), r"learning_rate must be a positive finite number, got -1\.0"),
    "learning_rate 0": (dict(learning_rate=0), r"learning_rate must be a positive finite number, got 0"),
    "learning_rate nan": (dict(learning_rate=np.nan), r"learning_rate must be a positive finite number, got nan"),
    "learning_rate inf": (dict(learning_rate=np.inf), r"learning_rate must be a positive finite number, got inf"),
    "learning_rate True": (dict(learning_rate=True), r"learning_rate must be a positive finite number, got True"),
    "epochs 0": (dict(epochs=0), r"epochs must be a positive integer, got 0"),
    "epochs 1.5": (dict(epochs=1.5), r"epochs must be a positive integer, got 1\.5"),
    "batch_size 0": (dict(batch_size=0), r"batch_size must be a positive integer, got 0"),
    "negatives 0": (dict(negatives=0), r"negatives must be a positive integer or None, got 0"),
    "checkpoint_every 0": (dict(checkpoint_every=0), r"checkpoint_every must be a positive integer, got 0"),
    "seed -1": (dict(seed=-1), r"seed must be an integer from 0 to 2147483647, got -1"),
    "seed text": (dict(seed="1"), r"seed must be an integer from 0 to 2147483647, got '1'"),
    "max_seconds 0": (dict(max_seconds=0), r"max_seconds must be a positive number"),
    "natgrad_gamma nan": (dict(optimizer="natgrad", natgrad_gamma=np.nan), r"natgrad_gamma"),
}


@pytest.fixture(scope="module")
def small_model():
    from mlgp.models import mlgpf_from_data

    return mlgpf_from_data(X, Y, num_latent_gps=2, num_inducing=5)


@pytest.mark.parametrize("case", FIT_ARGUMENT_CASES)
def test_fit_refuses_bad_arguments_before_any_step(small_model, case):
    from mlgp.training import fit

    before = [v.numpy().copy() for v in small_model.trainable_variables]
    kwargs, message = FIT_ARGUMENT_CASES[case]
    with pytest.raises(ArgumentError, match=message):
        fit(small_model, (X, Y), **dict(dict(epochs=1, progress=False), **kwargs))
    for v, b in zip(small_model.trainable_variables, before):
        np.testing.assert_array_equal(v.numpy(), b)


def test_train_mlgpf_refuses_a_given_m_above_n_like_from_data():
    from mlgp.data import mlgpf_prior
    from mlgp.recipes import train_mlgpf

    ds = mlgpf_prior(num_train=30, num_test=10, num_features=4, num_labels=5, num_latent=2, seed=0)
    with pytest.raises(ShapeError, match=r"num_inducing M must be in \[1, N=30\] \(the training points used\), got 1000000"):
        train_mlgpf(ds, num_inducing=10**6, num_latent_gps=2, epochs=1, progress=False)


# ---------------------------------------------------------------------------------- files
def test_write_xc_never_drops_a_small_value(tmp_path):
    from mlgp.data import read_xc, write_xc

    Xs = sp.csr_matrix(np.array([[1e-7, 1.0, 0.0], [0.0, 2.5e-12, 1 / 3]]))
    Ys = sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 1.0]]))
    write_xc(tmp_path / "a.txt", Xs, Ys)
    X2, _ = read_xc(tmp_path / "a.txt")
    np.testing.assert_array_equal(X2.toarray(), Xs.toarray())  # every value exactly, none vanished
    with pytest.raises(ArgumentError, match=r"decimals=6 would write 1e-07 as 0"):
        write_xc(tmp_path / "b.txt", Xs, Ys, decimals=6)
    assert not (tmp_path / "b.txt").exists()


FILE_CASES = {
    "read_xc missing": (lambda p: __import__("mlgp.data", fromlist=["read_xc"]).read_xc(p / "none.txt"),
                        DatasetNotFoundError, r"none\.txt: no such file"),
    "read_xc a folder": (lambda p: __import__("mlgp.data", fromlist=["read_xc"]).read_xc(p),
                         FileAccessError, r"cannot read"),
    "write_xc no folder": (lambda p: __import__("mlgp.data", fromlist=["write_xc"]).write_xc(p / "no" / "a.txt", X, Y),
                           FileAccessError, r"cannot write .*a\.txt: No such file or directory"),
    "write_xc decimals -1": (lambda p: __import__("mlgp.data", fromlist=["write_xc"]).write_xc(p / "a.txt", X, Y, decimals=-1),
                             ArgumentError, r"decimals must be a non-negative integer, got -1"),
    "write_xc decimals 1.5": (lambda p: __import__("mlgp.data", fromlist=["write_xc"]).write_xc(p / "a.txt", X, Y, decimals=1.5),
                              ArgumentError, r"decimals must be a non-negative integer, got 1\.5"),
    "save_scores under a file": (lambda p: (p.joinpath("f").write_text("x"), __import__(
        "mlgp.scores", fromlist=["save_scores"]).save_scores(p / "f" / "s.npy", X)), MLGPError, r"s\.npy.*is a file, not a folder"),
}


@pytest.mark.parametrize("case", FILE_CASES)
def test_file_functions_raise_mlgp_errors(tmp_path, case):
    call, error, message = FILE_CASES[case]
    with pytest.raises(error, match=message):
        call(tmp_path)


def test_fit_of_a_float32_model_refuses_features_that_overflow_float32():
    from mlgp.models import mlgpf_from_data
    from mlgp.training import fit

    model = mlgpf_from_data(X, Y, num_latent_gps=2, num_inducing=5, dtype="float32")
    with pytest.raises(ShapeError, match=r"X has values beyond ±1e\+18 \(first in row 3: 1e\+20\)"):
        fit(model, (_with(1e20), Y), epochs=1, progress=False)


@pytest.mark.parametrize("kwargs, message", [
    (dict(num_latent_gps=None), r"num_latent_gps must be a positive integer, got None"),
    (dict(num_inducing=None), r"num_inducing must be a positive integer, got None"),
    (dict(num_inducing=np.inf), r"num_inducing must be a positive integer, got inf"),
    (dict(num_inducing=np.nan), r"num_inducing must be a positive integer, got nan"),
    (dict(num_inducing=3.0), r"num_inducing must be a positive integer, got 3\.0"),
    (dict(num_gauss_hermite_points=1001), r"num_gauss_hermite_points must be at most 1000, got 1001"),
    (dict(q_sqrt_init=10**400), r"q_sqrt_init must be a positive finite number"),
], ids=["P None", "M None", "M inf", "M nan", "M 3.0", "quadrature 1001", "q_sqrt_init 10**400"])
def test_from_data_checks_p_m_and_sizes_through_the_shared_check(kwargs, message):
    from mlgp.models import mlgpf_from_data

    with pytest.raises(ArgumentError, match=message):
        mlgpf_from_data(X, Y, **dict(dict(num_latent_gps=2, num_inducing=5), **kwargs))


def test_write_xc_sums_duplicates_before_checking_finiteness(tmp_path):
    from mlgp.data import write_xc

    big = sp.csr_matrix((np.array([1e308, 1e308]), np.array([0, 0]), np.array([0, 2])), shape=(1, 2))
    with pytest.raises(ShapeError, match=r"X has non-finite values"):
        write_xc(tmp_path / "a.txt", big, np.ones((1, 1)))
    assert not (tmp_path / "a.txt").exists()


@pytest.mark.parametrize("kwargs, message", [
    (dict(progress="no"), r"progress must be True or False, got 'no'"),
    (dict(batch_growth=(10.0, 20.0)), r"batch_growth must be a pair \(every ≥ 1, increment ≥ 0\) of whole numbers"),
], ids=["progress text", "batch_growth floats"])
def test_fit_checks_flags_and_pairs_like_the_settings(small_model, kwargs, message):
    from mlgp.recipes import MLGPFSettings
    from mlgp.training import fit

    with pytest.raises(ArgumentError, match=message):
        fit(small_model, (X, Y), **dict(dict(epochs=1, progress=False), **kwargs))
    if "batch_growth" in kwargs:  # the settings refuse the same pair, with the same words
        with pytest.raises(ArgumentError, match=message):
            MLGPFSettings(**kwargs)
