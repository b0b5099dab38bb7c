"""mlgp.distributions.PolyaGamma against the ``polyagamma`` package (an independent C
implementation): moments to Monte Carlo precision, two-sample Kolmogorov–Smirnov tests, the
density; and TFP's conventions (batch shapes, dtypes, seeds, ``tf.function``, ``validate_args``)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_probability as tfp
from _rounding import FLOAT32
from scipy import stats

from mlgp.distributions import PolyaGamma

polyagamma = pytest.importorskip("polyagamma", reason="polyagamma is in the test extra")

CASES = [(1, 0.0), (1, 0.5), (1, 2.0), (1, 20.0), (2, 0.0), (3, 1.0), (4, 20.0)]


@pytest.mark.parametrize("b, c", CASES)
def test_draws_match_the_polyagamma_package(b, c):
    n = 20_000
    dist = PolyaGamma(tf.constant(float(b), tf.float64), tf.constant(c, tf.float64))
    ours = dist.sample(n, seed=(b, int(c * 10))).numpy()
    ref = polyagamma.random_polyagamma(b, c, size=n, random_state=int(c * 10) + b)
    assert ours.shape == (n,) and ours.dtype == np.float64 and np.all(ours > 0)
    mean, var = dist.mean().numpy(), dist.variance().numpy()
    # moments: the sample mean within 4 standard errors; the sample variance within 5 % (its SE is ~1–3 %)
    assert abs(ours.mean() - mean) < 4 * np.sqrt(var / n), (ours.mean(), mean)
    assert abs(ours.var() / var - 1) < 0.05
    assert stats.ks_2samp(ours, ref).pvalue > 1e-3


@pytest.mark.parametrize("b, c", CASES)
def test_moments_are_the_closed_forms(b, c):
    dist = PolyaGamma(tf.constant(float(b), tf.float64), tf.constant(c, tf.float64))
    if c == 0:
        mean, var = b / 4, b / 24
    else:
        mean = b * np.tanh(c / 2) / (2 * c)
        var = b * (np.sinh(c) - c) / (4 * c ** 3 * np.cosh(c / 2) ** 2)
    np.testing.assert_allclose(dist.mean().numpy(), mean, rtol=1e-12)
    np.testing.assert_allclose(dist.variance().numpy(), var, rtol=1e-10)


def test_moments_near_c_zero_match_the_closed_forms_in_extended_precision():
    """Near c = 0 the closed forms cancel (sinh c − c); the series used there agree with them
    evaluated in long double, on both sides of the switch at c = 1e-2."""
    c = np.array([1e-3, 9.99e-3, 1.001e-2, 0.05])
    dist = PolyaGamma(tf.constant(2.0, tf.float64), tf.constant(c))
    cl = c.astype(np.longdouble)
    var = 2 * (np.sinh(cl) - cl) / (4 * cl ** 3 * np.cosh(cl / 2) ** 2)
    np.testing.assert_allclose(dist.variance().numpy(), var.astype(np.float64), rtol=1e-10)
    np.testing.assert_allclose(dist.mean().numpy(), (2 * np.tanh(cl / 2) / (2 * cl)).astype(np.float64), rtol=1e-12)
    zero = PolyaGamma(tf.constant(2.0, tf.float64), tf.constant(0.0, tf.float64))
    assert zero.mean().numpy() == 0.5 and abs(zero.variance().numpy() - 2 / 24) < 1e-16


@pytest.mark.parametrize("b, c", [(1, 0.0), (1, 2.0), (1, 20.0), (2, 0.0), (3, 1.0), (4, 20.0)])
def test_the_density_is_polyagammas_and_integrates_to_one(b, c):
    dist = PolyaGamma(tf.constant(float(b), tf.float64), tf.constant(c, tf.float64))
    m = dist.mean().numpy()
    grid = np.linspace(m / 50, 3 * m, 40)
    ours = np.exp(dist.log_prob(grid).numpy())
    np.testing.assert_allclose(ours, polyagamma.polyagamma_pdf(grid, b, c), rtol=1e-8)
    x = np.linspace(1e-4 * m, 12 * m, 20_001)
    p = np.exp(dist.log_prob(x).numpy())
    p = np.where(np.isfinite(p), p, 0.0)
    assert abs(np.trapz(p, x) - 1) < 2e-3


def test_the_density_of_b_one_far_in_the_tail():
    dist = PolyaGamma(tf.constant(1.0, tf.float64), tf.constant(0.0, tf.float64))
    x = np.array([0.5, 1.0, 2.0, 4.0])
    np.testing.assert_allclose(np.exp(dist.log_prob(x).numpy()), polyagamma.polyagamma_pdf(x, 1, 0.0), rtol=1e-8)
    assert dist.log_prob(-1.0).numpy() == -np.inf and dist.log_prob(0.0).numpy() == -np.inf


def test_batch_shapes_broadcast_and_draws_follow_each_parameter():
    b = tf.constant([[1.0], [3.0]], tf.float64)  # (2, 1)
    c = tf.constant([0.0, 5.0, 20.0], tf.float64)  # (3,)
    dist = PolyaGamma(b, c)
    assert dist.batch_shape == (2, 3) and dist.event_shape == ()
    x = dist.sample(4000, seed=(3, 4)).numpy()
    assert x.shape == (4000, 2, 3)
    mean, sd = dist.mean().numpy(), np.sqrt(dist.variance().numpy())
    assert np.all(np.abs(x.mean(axis=0) - mean) < 4 * sd / np.sqrt(4000))
    assert dist.log_prob(x[:2]).shape == (2, 2, 3)


def test_float32_parameters_give_float32_draws_and_the_same_seed_the_same_draws():
    dist = PolyaGamma(1.0, 2.0)
    assert dist.dtype == tf.float32
    x = dist.sample(5, seed=(7, 8))
    assert x.dtype == tf.float32
    np.testing.assert_array_equal(x.numpy(), dist.sample(5, seed=(7, 8)).numpy())
    assert not np.array_equal(x.numpy(), dist.sample(5, seed=(7, 9)).numpy())


def test_it_samples_inside_tf_function_and_in_a_joint_distribution():
    @tf.function
    def draw(c, seed):
        return PolyaGamma(tf.ones_like(c), c).sample(seed=seed)

    c = tf.constant([0.0, 1.0, 30.0], tf.float64)
    x = draw(c, tf.constant([1, 2], tf.int32)).numpy()
    assert x.shape == (3,) and np.all(x > 0)
    joint = tfp.distributions.JointDistributionSequential([
        tfp.distributions.Normal(tf.constant(0.0, tf.float64), 1.0),
        lambda psi: PolyaGamma(tf.constant(1.0, tf.float64), psi),
    ])
    psi, omega = joint.sample(seed=(5, 6))
    assert np.isfinite(joint.log_prob([psi, omega]).numpy())


def test_validate_args_refuses_non_positive_and_non_integer_b():
    with pytest.raises(tf.errors.InvalidArgumentError, match="PolyaGamma needs b > 0"):
        PolyaGamma(tf.constant(0.0), tf.constant(1.0), validate_args=True)
    dist = PolyaGamma(tf.constant(1.5), tf.constant(1.0), validate_args=True)
    # moments for any b > 0; float32 (TensorFlow's tanh an approximation a few ulp off) against
    # float64 numpy: equal to float32 rounding
    np.testing.assert_allclose(dist.mean().numpy(), 1.5 * np.tanh(0.5) / 2, **FLOAT32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="PolyaGamma samples only integer b"):
        dist.sample(3, seed=(1, 1))


def test_moments_stay_finite_for_very_large_c():
    dist = PolyaGamma(tf.constant(1.0, tf.float64), tf.constant([700.0, 800.0, 1e4], tf.float64))
    c = np.array([700.0, 800.0, 1e4])
    np.testing.assert_allclose(dist.mean().numpy(), 1 / (2 * c), rtol=1e-12)  # tanh(c/2) = 1
    np.testing.assert_allclose(dist.variance().numpy(), (2 - c / np.cosh(np.minimum(c / 2, 350)) ** 2) / (4 * c ** 3),
                               rtol=1e-12)
    assert np.all(np.isfinite(dist.variance().numpy()))
