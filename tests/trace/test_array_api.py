"""Code written against the Python Array API standard traces through __array_namespace__."""
import numpy as np

import jitlib
import jitlib.numpy as jnp
from jitlib.testing import check_backends


def softmax_array_api(x):
    xp = x.__array_namespace__()
    m = xp.max(x, axis=-1, keepdims=True)
    e = xp.exp(x - m)
    return e / xp.sum(e, axis=-1, keepdims=True)


def standardize_array_api(x):
    xp = x.__array_namespace__()
    z = xp.permute_dims(x, (1, 0))
    z = xp.astype(z, xp.float64)
    return xp.concat([z - xp.mean(z, axis=0), xp.matrix_transpose(x)], axis=0)


def test_tracer_namespace_is_jitlib_numpy():
    seen = []

    def f(x):
        seen.append(x.__array_namespace__())
        return x
    jitlib.jit(f, backend="interpreter")(np.ones(2))
    assert seen == [jnp]


def test_array_api_code_matches_numpy():
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    for fn in (softmax_array_api, standardize_array_api):
        # NumPy 2 arrays implement the same protocol, so the eager run is the reference
        check_backends(fn, x, backends=("interpreter", "jax"))
