"""The Pólya-Gamma distribution PG(b, c), as a TensorFlow Probability distribution.

X ~ PG(b, c) is (1 / 2π²) Σ_k g_k / ((k − ½)² + c² / 4π²) with g_k ~ Gamma(b, 1) iid; its Laplace
transform is E[exp(−sX)] = cosh^b(c/2) / cosh^b(√((c² / 2 + s) / 2)). It is what makes a logistic
likelihood conditionally Gaussian (Polson, Scott & Windle, 2013), which GenEML's Gibbs sampler and
EM use. Conventions are TFP's (``tfp.distributions.Normal`` is the template): parameters broadcast
to the batch shape, the event is scalar, samples are not reparameterised, ``seed`` is a stateless
seed or an int.

Sampling is exact for integer b: PG(1, c) = J*(1, c/2) / 4 drawn by Devroye's alternating-series
rejection sampler with the truncation point t = 0.64 (Polson, Scott & Windle, appendix), a draw
of PG(b, c) the sum of b draws of PG(1, c). The acceptance test evaluates the alternating series to
:data:`SERIES_TERMS` terms, where it has converged far below float64 resolution (its terms fall like
exp(−(n + ½)² π² t / 2) or faster). Everything runs in TensorFlow (a ``tf.while_loop`` over the draws
not yet accepted), so it works inside ``tf.function``. The density is the series
p(x | b, c) = cosh^b(c/2) e^{−c²x/2} 2^{b−1}/Γ(b) Σ_n (−1)^n Γ(n+b)/Γ(n+1) (2n+b)/√(2πx³) e^{−(2n+b)²/(8x)},
summed in float64 to :data:`DENSITY_TERMS` terms; for b = 1 and x > t / 4 the dual series
4 Σ_n (−1)^n π(n + ½) e^{−(n+½)²π²·4x/2} (times the same tilt) is used instead, which converges
there. For b > 1 the series loses accuracy by cancellation once x is large (where the density is
below about e^{−π² x / 2}); ``log_prob`` is reliable where ``x`` is below a few times the mean.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp

__all__ = ["DENSITY_TERMS", "PolyaGamma", "SERIES_TERMS", "TRUNCATION"]

tfd = tfp.distributions

#: Devroye's truncation point t of the J*(1, z) sampler (Polson, Scott & Windle's choice).
TRUNCATION = 0.64
#: Terms of the alternating series in the sampler's acceptance test.
SERIES_TERMS = 12
#: Terms of the density's series.
DENSITY_TERMS = 200


class PolyaGamma(tfd.Distribution):
    """PG(b, c): b > 0 (an integer to sample), c real.

    Parameters
    ----------
    b
        Shape, > 0; sampling needs integer values (checked with ``validate_args``). Float tensor.
    c
        Tilting parameter, real (the distribution depends on |c|).
    validate_args
        Check b > 0 at construction and integer b when sampling.
    allow_nan_stats
        As in TFP (moments here are always defined).
    name
        Name scope.

    Notes
    -----
    Mean b tanh(c/2) / (2c) (b/4 at c = 0); variance b (sinh c − c) / (4c³ cosh²(c/2)) (b/24 at
    c = 0). Both are computed with series near c = 0, where the closed forms cancel.
    """

    def __init__(self, b, c, validate_args: bool = False, allow_nan_stats: bool = True, name: str = "PolyaGamma"):
        parameters = dict(locals())
        with tf.name_scope(name) as name:
            dtype = _common_dtype(b, c)
            self._b = _as_parameter(b, dtype, "b")
            self._c = _as_parameter(c, dtype, "c")
            super().__init__(dtype=dtype, reparameterization_type=tfd.NOT_REPARAMETERIZED,
                             validate_args=validate_args, allow_nan_stats=allow_nan_stats, parameters=parameters,
                             name=name)

    @classmethod
    def _parameter_properties(cls, dtype, num_classes=None):
        return dict(b=tfp.util.ParameterProperties(
                        default_constraining_bijector_fn=lambda: tfp.bijectors.Softplus(
                            low=np.finfo(tf.as_dtype(dtype).as_numpy_dtype).eps)),
                    c=tfp.util.ParameterProperties())

    @property
    def b(self):
        """Shape parameter b."""
        return self._b

    @property
    def c(self):
        """Tilting parameter c."""
        return self._c

    def _event_shape_tensor(self):
        return tf.constant([], dtype=tf.int32)

    def _event_shape(self):
        return tf.TensorShape([])

    # ------------------------------------------------------------------ sampling
    def _sample_n(self, n, seed=None):
        b = tf.convert_to_tensor(self.b)
        c = tf.convert_to_tensor(self.c)
        shape = tf.concat([[n], self._batch_shape_tensor(b=b, c=c)], axis=0)
        counts = tf.broadcast_to(tf.cast(tf.round(b), tf.int32), shape)
        assertions = []
        if self.validate_args:
            assertions.append(tf.debugging.assert_equal(
                b, tf.round(b), message="PolyaGamma samples only integer b"))
        with tf.control_dependencies(assertions):
            z = tf.broadcast_to(tf.abs(tf.cast(c, tf.float64)) / 2.0, shape)
            most = tf.reduce_max(counts)
            draws = _sample_j_star(tf.concat([[most], shape], axis=0), tf.broadcast_to(z, tf.concat([[most], shape], 0)),
                                   seed)  # (b_max, n, *batch)
            keep = tf.range(most)[:, tf.newaxis] < tf.reshape(counts, [1, -1])
            keep = tf.reshape(keep, tf.shape(draws))
            total = tf.reduce_sum(tf.where(keep, draws, tf.zeros_like(draws)), axis=0) / 4.0
        return tf.cast(total, self.dtype)

    # ------------------------------------------------------------------ moments
    def _mean(self):
        b, c = _broadcast(self.b, self.c)
        c64 = tf.abs(tf.cast(c, tf.float64))
        small = c64 < 1e-4
        safe = tf.where(small, tf.ones_like(c64), c64)
        ratio = tf.where(small, 0.25 - c64 ** 2 / 48.0, tf.math.tanh(safe / 2.0) / (2.0 * safe))
        return tf.cast(tf.cast(b, tf.float64) * ratio, self.dtype)

    def _variance(self):
        b, c = _broadcast(self.b, self.c)
        c64 = tf.abs(tf.cast(c, tf.float64))
        small = c64 < 1e-2
        safe = tf.where(small, tf.ones_like(c64), c64)
        # (sinh c − c) / (4 c³ cosh²(c/2)) written without sinh / cosh, which overflow past |c| ≈ 710
        closed = (2.0 * tf.math.tanh(safe / 2.0) - safe / tf.math.cosh(tf.minimum(safe / 2.0, 350.0)) ** 2) / (4.0 * safe ** 3)
        series = 1.0 / 24.0 - c64 ** 2 / 120.0 + 17.0 * c64 ** 4 / 13440.0  # Taylor series of the closed form
        return tf.cast(tf.cast(b, tf.float64) * tf.where(small, series, closed), self.dtype)

    # ------------------------------------------------------------------ density
    def _log_prob(self, x):
        x64 = tf.cast(x, tf.float64)
        b, c = _broadcast(tf.cast(self.b, tf.float64), tf.cast(self.c, tf.float64))
        b, c, x64 = _broadcast3(b, c, x64)
        positive = x64 > 0
        xs = tf.where(positive, x64, tf.ones_like(x64))
        tilt = b * _log_cosh(c / 2.0) - c ** 2 * xs / 2.0
        log_p = tf.where((b == 1.0) & (xs > TRUNCATION / 4.0), _log_pg1_dual(xs), _log_pg_series(xs, b)) + tilt
        return tf.cast(tf.where(positive, log_p, tf.fill(tf.shape(log_p), tf.constant(-np.inf, tf.float64))),
                       self.dtype)

    def _default_event_space_bijector(self):
        return tfp.bijectors.Softplus(validate_args=self.validate_args)

    def _parameter_control_dependencies(self, is_init):
        if not self.validate_args:
            return []
        return [tf.debugging.assert_positive(self._b, message="PolyaGamma needs b > 0")]


# ---------------------------------------------------------------------- helpers
def _common_dtype(b, c):
    for value in (b, c):
        dtype = getattr(value, "dtype", None)
        if dtype is not None and tf.as_dtype(dtype).is_floating:
            return tf.as_dtype(dtype)
    return tf.float32


def _as_parameter(value, dtype, name):
    if isinstance(value, (tf.Variable, tfp.util.DeferredTensor)):
        return value
    return tf.convert_to_tensor(value, dtype=dtype, name=name)


def _broadcast(b, c):
    b, c = tf.convert_to_tensor(b), tf.convert_to_tensor(c)
    shape = tf.broadcast_dynamic_shape(tf.shape(b), tf.shape(c))
    return tf.broadcast_to(b, shape), tf.broadcast_to(c, shape)


def _broadcast3(b, c, x):
    shape = tf.broadcast_dynamic_shape(tf.broadcast_dynamic_shape(tf.shape(b), tf.shape(c)), tf.shape(x))
    return tf.broadcast_to(b, shape), tf.broadcast_to(c, shape), tf.broadcast_to(x, shape)


def _log_cosh(x):
    x = tf.abs(x)
    return x + tf.math.log1p(tf.exp(-2.0 * x)) - np.log(2.0)


def _log_pg_series(x, b):
    """log p(x | b, 0) by the series in Γ functions, summed with signs in float64."""
    n = tf.range(DENSITY_TERMS, dtype=tf.float64)[:, tf.newaxis]
    xf, bf = tf.reshape(x, [1, -1]), tf.reshape(b, [1, -1])
    log_terms = (tf.math.lgamma(n + bf) - tf.math.lgamma(n + 1.0) + tf.math.log(2.0 * n + bf)
                 - (2.0 * n + bf) ** 2 / (8.0 * xf))
    top = tf.reduce_max(log_terms, axis=0, keepdims=True)
    signs = tf.where(tf.math.floormod(n, 2.0) == 0.0, tf.constant(1.0, tf.float64), -1.0)
    total = tf.reduce_sum(signs * tf.exp(log_terms - top), axis=0)
    log_p = (tf.squeeze(top, 0) + tf.math.log(tf.maximum(total, 1e-300)) + (bf[0] - 1.0) * np.log(2.0)
             - tf.math.lgamma(bf[0]) - 0.5 * np.log(2.0 * np.pi) - 1.5 * tf.math.log(xf[0]))
    log_p = tf.where(total > 0, log_p, tf.fill(tf.shape(log_p), tf.constant(np.nan, tf.float64)))
    return tf.reshape(log_p, tf.shape(x))


def _log_pg1_dual(x):
    """log p(x | 1, 0) by the series that converges for large x: PG(1, 0) = J*(1, 0) / 4."""
    y = tf.reshape(4.0 * x, [1, -1])
    n = tf.range(SERIES_TERMS, dtype=tf.float64)[:, tf.newaxis] + 0.5
    terms = np.pi * n * tf.exp(-(n ** 2) * np.pi ** 2 * y / 2.0)
    signs = tf.where(tf.math.floormod(n - 0.5, 2.0) == 0.0, tf.constant(1.0, tf.float64), -1.0)
    return tf.reshape(tf.math.log(4.0 * tf.reduce_sum(signs * terms, axis=0)), tf.shape(x))


def _a_n(n, x):
    """Devroye's series coefficients a_n(x) of J*(1, 0)'s density (piecewise at TRUNCATION)."""
    h = n + 0.5
    left = np.pi * h * (2.0 / (np.pi * x)) ** 1.5 * tf.exp(-2.0 * h ** 2 / x)
    right = np.pi * h * tf.exp(-(h ** 2) * np.pi ** 2 * x / 2.0)
    return tf.where(x > TRUNCATION, right, left)


def _normal_cdf(x):
    return 0.5 * tf.math.erfc(-x / np.sqrt(2.0))


def _sample_j_star(shape, z, seed):
    """Draws of J*(1, z) (float64, ``shape``) by Devroye's method; ``z`` ≥ 0 broadcast to ``shape``.

    Each pass of the loop works on the draws not yet accepted only (gathered, then scattered back),
    so the work is proportional to the proposals made, not to the passes times the draws."""
    t = tf.constant(TRUNCATION, tf.float64)
    z = tf.reshape(tf.broadcast_to(z, shape), [-1])
    K = np.pi ** 2 / 8.0 + z ** 2 / 2.0
    p = np.pi / (2.0 * K) * tf.exp(-K * t)
    rt = tf.sqrt(1.0 / t)
    q = 2.0 * (tf.exp(-z) * _normal_cdf(rt * (t * z - 1.0)) + tf.exp(z) * _normal_cdf(-rt * (t * z + 1.0)))
    right_prob = p / (p + q)
    mu = tf.where(z > 0, 1.0 / tf.maximum(z, 1e-300), tf.fill(tf.shape(z), tf.constant(np.inf, tf.float64)))
    terms = tf.range(SERIES_TERMS, dtype=tf.float64)[:, tf.newaxis]
    signs = tf.where(tf.math.floormod(terms, 2.0) == 0.0, tf.constant(1.0, tf.float64), -1.0)
    seed = tfp.random.sanitize_seed(seed, salt="PolyaGamma")

    def attempt(value, done, branch, seed):  # branch: 0 none chosen, 1 right (exponential), 2 left (IG)
        seed, s_branch, s_exp, s_u, s_v, s_e1, s_e2, s_n = tfp.random.split_seed(seed, n=8)
        open_ = tf.where(~done)  # (m, 1): the draws still to accept
        zo, Ko, mo = tf.gather_nd(z, open_), tf.gather_nd(K, open_), tf.gather_nd(mu, open_)
        now = tf.shape(zo)
        uniform = lambda s: tf.random.stateless_uniform(now, s, dtype=tf.float64)  # noqa: E731
        previous = tf.gather_nd(branch, open_)
        chosen = tf.where(previous == 0, tf.where(uniform(s_branch) < tf.gather_nd(right_prob, open_), 1, 2), previous)
        # right of t: t + Exp(1)/K
        right = t - tf.math.log1p(-uniform(s_exp)) / Ko
        # left of t: IG(mu, 1) truncated to (0, t), one attempt of its own rejection step
        e1 = -tf.math.log1p(-uniform(s_e1))
        e2 = -tf.math.log1p(-uniform(s_e2))
        chi = t / (1.0 + t * e1) ** 2  # mu > t: the Lévy proposal, accepted with exp(−z²x/2)
        chi_ok = (e1 ** 2 <= 2.0 * e2 / t) & (uniform(s_u) <= tf.exp(-(zo ** 2) * chi / 2.0))
        y = tf.random.stateless_normal(now, s_n, dtype=tf.float64) ** 2
        mu_f = tf.where(tf.math.is_finite(mo), mo, tf.ones_like(mo))
        ig = mu_f + 0.5 * mu_f ** 2 * y - 0.5 * mu_f * tf.sqrt(4.0 * mu_f * y + (mu_f * y) ** 2)
        ig = tf.where(uniform(s_v) > mu_f / (mu_f + ig), mu_f ** 2 / ig, ig)  # mu ≤ t: IG draw, kept below t
        use_chi = mo > t
        left = tf.where(use_chi, chi, ig)
        left_ok = tf.where(use_chi, chi_ok, ig < t)
        proposal = tf.where(chosen == 1, right, left)
        proposed = (chosen == 1) | left_ok
        # Devroye's test: accept with probability Σ (−1)^n a_n(x) / a_0(x)
        x = tf.where(proposed, proposal, tf.ones_like(proposal))
        coefficients = _a_n(terms, x[tf.newaxis])
        series = tf.reduce_sum(signs * coefficients, axis=0)
        v = uniform(tfp.random.split_seed(s_v, n=2)[1])
        accept = proposed & (v * coefficients[0] <= series)
        value = tf.tensor_scatter_nd_update(value, open_, tf.where(accept, x, tf.gather_nd(value, open_)))
        done = tf.tensor_scatter_nd_update(done, open_, accept)
        # a proposal that was drawn but rejected starts over with a new branch; a failed inner step keeps it
        branch = tf.tensor_scatter_nd_update(branch, open_, tf.where(accept | proposed, 0, chosen))
        return value, done, branch, seed

    size = tf.shape(z)
    state = (tf.zeros(size, tf.float64), tf.zeros(size, tf.bool), tf.zeros(size, tf.int32), seed)
    value, _, _, _ = tf.while_loop(lambda v, done, br, s: ~tf.reduce_all(done), attempt, state)
    return tf.reshape(value, shape)
