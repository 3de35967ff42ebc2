"""Where a derivative is a convention (ties, kinks, zeros, integer values), jitlib's
gradient equals JAX's, checked at exactly those points."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import jitlib
from jitlib.hlo import build
from jitlib.hlo.ir import Module
from jitlib.hlo.ops import Op
from jitlib.transforms import core

jax.config.update("jax_enable_x64", True)

TIES = np.array([[1.0, 3.0, 3.0, -2.0], [0.0, 0.0, 0.0, 0.0], [2.0, -1.0, 2.0, -1.0]])
ZEROS = np.array([[0.0, 2.0, 3.0, 0.5], [0.0, 2.0, 0.0, 3.0], [1.5, -2.0, 3.0, 0.5]])


def grads_match(ours, theirs, *args):
    expected = jax.jit(jax.grad(theirs))(*args)
    np.testing.assert_allclose(jitlib.grad(ours)(*args), np.asarray(expected),
                               rtol=1e-12, atol=1e-15)


# (jitlib function on NumPy, the same function in jax, the point: ties or zeros)
NUMPY_CASES = {
    "maximum_tie": (lambda x: np.maximum(x, 0.0).sum(),
                    lambda x: jnp.maximum(x, 0.0).sum(), TIES),
    "minimum_tie": (lambda x: np.minimum(x, x[::-1]).sum(),
                    lambda x: jnp.minimum(x, x[::-1]).sum(), TIES),
    "max_ties": (lambda x: (np.max(x, axis=1) * np.arange(1.0, 4.0)).sum(),
                 lambda x: (jnp.max(x, axis=1) * jnp.arange(1.0, 4.0)).sum(), TIES),
    "min_all_equal": (lambda x: np.min(x), lambda x: jnp.min(x), TIES[1]),
    "abs_at_zero": (lambda x: np.abs(x).sum(), lambda x: jnp.abs(x).sum(), TIES),
    "clip_at_bounds": (lambda x: np.clip(x, 0.0, 2.0).sum(),
                       lambda x: jnp.clip(x, 0.0, 2.0).sum(), TIES),
    "relu_where": (lambda x: np.where(x > 0, x, 0.0).sum(),
                   lambda x: jnp.where(x > 0, x, 0.0).sum(), TIES),
    "piecewise_constant": (lambda x: (np.floor(x) + np.ceil(x) + np.round(x) + np.sign(x)).sum(),
                           lambda x: (jnp.floor(x) + jnp.ceil(x) + jnp.round(x)
                                      + jnp.sign(x)).sum(), TIES + 0.5),
    "prod_with_zeros": (lambda x: np.prod(x, axis=1).sum(),
                        lambda x: jnp.prod(x, axis=1).sum(), ZEROS),
    "prod_all": (lambda x: np.prod(x[2]) + np.prod(x[:2]),
                 lambda x: jnp.prod(x[2]) + jnp.prod(x[:2]), ZEROS),
    "cumprod_with_zeros": (lambda x: (np.cumprod(x, axis=1) ** 2).sum(),
                           lambda x: (jnp.cumprod(x, axis=1) ** 2).sum(), ZEROS),
    "cube_of_negatives": (lambda x: (x ** 3).sum(), lambda x: (x ** 3).sum(), TIES - 1),
    "argmax_pick": (lambda x: x[np.argmax(x)], lambda x: x[jnp.argmax(x)], TIES[0]),
    "comparison_mask": (lambda x: (x * (x > 1)).sum(), lambda x: (x * (x > 1)).sum(), TIES),
    "integer_round_trip": (lambda x: (x * x.astype(np.int32)).sum(),
                           lambda x: (x * x.astype(jnp.int32)).sum(), TIES + 0.25),
}


@pytest.mark.parametrize("name", NUMPY_CASES)
def test_numpy_code_at_ties_and_zeros(name):
    ours, theirs, x = NUMPY_CASES[name]
    grads_match(ours, theirs, x)


def ir_function(fn, like):
    """A plain function running the Module `fn(param)` builds, for ops NumPy code cannot
    reach directly (cummax, scatter max)."""
    p = build.parameter(0, like.shape, like.dtype, "x_conventions")
    module = Module("ir", [p], [fn(p)])
    return lambda x: core.call(module, [x])[0]


@pytest.mark.parametrize("op, theirs", [(Op.CUMMAX, lax.cummax), (Op.CUMMIN, lax.cummin)])
def test_cumulative_extrema_split_two_way_ties_like_lax(op, theirs):
    x = np.array([1.0, 3.0, 3.0, 2.0, 4.0, -4.0, -4.0, -1.0])
    scan = ir_function(lambda p: build.cumulative(op, p, 0), x)
    weights = np.arange(1.0, 9.0)
    grads_match(lambda x: (scan(x) * weights).sum(), lambda x: (theirs(x) * weights).sum(), x)


@pytest.mark.parametrize("mode", ["max", "min"])
def test_scatter_extrema_split_ties_like_jax(mode):
    idx = np.array([0, 0, 2, 2, 2])
    upd = np.array([1.0, 0.5, 3.0, 3.0, 1.0])

    def ours(x, u):
        p = build.parameter(0, x.shape, x.dtype, "x_scatter")
        q = build.parameter(1, u.shape, u.dtype, "u_scatter")
        out = build.scatter(p, build.constant(idx), q, 0, mode)
        return core.call(Module("s", [p, q], [out]), [x, u])[0]

    def theirs(x, u):
        return getattr(x.at[idx], mode)(u)

    x = np.array([1.0, 2.0, 3.0])
    w = np.array([1.0, 10.0, 100.0])
    ours_g = jitlib.grad(lambda x, u: (ours(x, u) * w).sum(), argnums=(0, 1))(x, upd)
    theirs_g = jax.grad(lambda x, u: (theirs(x, u) * w).sum(), argnums=(0, 1))(x, upd)
    for a, b in zip(ours_g, theirs_g):
        np.testing.assert_allclose(a, np.asarray(b), rtol=1e-12, atol=1e-12)


def test_pow_slope_is_jaxs_even_at_zero_to_the_zero():
    # y * x^(y-1): NaN at 0 ** 0, as jax.grad(lambda x: x ** 0.0)(0.0)
    x = np.array([0.0, 2.0, 1.5])
    grads_match(lambda x: (x ** 0.0 + x ** 2.5).sum(), lambda x: (x ** 0.0 + x ** 2.5).sum(), x)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_gradients_keep_the_input_dtype(dtype):
    x = np.linspace(-1, 1, 5).astype(dtype)
    g = jitlib.grad(lambda x: np.sum(np.tanh(x) * x))(x)
    assert g.dtype == dtype
    expected = jax.grad(lambda x: jnp.sum(jnp.tanh(x) * x))(x)
    np.testing.assert_allclose(g.astype(np.float64), np.asarray(expected, np.float64),
                               rtol=1e-2 if dtype == np.float16 else 1e-5)


def test_cumulative_max_splits_wider_ties_evenly():
    # Three equal running maxima: jitlib shares each result evenly among the prefix
    # elements equal to it; lax.cummax's split follows its associative-scan tree instead.
    x = np.array([4.0, 4.0, 4.0])
    scan = ir_function(lambda p: build.cumulative(Op.CUMMAX, p, 0), x)
    g = jitlib.grad(lambda x: scan(x)[2])(x)
    np.testing.assert_allclose(g, [1 / 3, 1 / 3, 1 / 3])
