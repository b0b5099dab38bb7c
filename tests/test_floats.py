"""The float policy: the dtypes mlgp computes in, their jitter and variance floor, one check."""

from __future__ import annotations

import numpy as np
import pytest

from mlgp.errors import ArgumentError
from mlgp.floats import FLOAT_POLICIES, float_policy


@pytest.mark.parametrize("given, name", [("float64", "float64"), (np.float64, "float64"), (np.dtype("float32"), "float32"),
                                         ("float32", "float32")])
def test_names_and_numpy_types_give_the_policy(given, name):
    policy = float_policy(given)
    assert policy is FLOAT_POLICIES[name] and policy.dtype == np.dtype(name)


def test_the_safeguards_of_each_precision():
    f64, f32 = float_policy("float64"), float_policy("float32")
    assert (f64.jitter, f64.variance_floor) == (1e-6, 1e-6)  # the MLGPF paper's
    assert (f32.jitter, f32.variance_floor) == (1e-4, 1e-4)
    # the jitter must stay well above float32's resolution of a unit-scale kernel matrix
    assert f32.jitter > 100 * np.finfo(np.float32).eps


@pytest.mark.parametrize("bad", ["float16", np.float16, "double", None, 3])
def test_anything_else_is_an_argument_error_naming_the_choices(bad):
    with pytest.raises(ArgumentError, match=r"dtype must be one of 'float64', 'float32'; got"):
        float_policy(bad)
