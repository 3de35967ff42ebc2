"""Sorting and selection against eager NumPy on the interpreter, cpu and jax backends.

Results must be NumPy's exactly: same dtype and shape, equal values (NaN equals NaN),
and the same zero signs. NumPy's default sort is not stable, so sorts are compared
with kind="stable" (jitlib's sort is always stable); partition only by what NumPy
promises (the kth element and the partition property).
"""
import numpy as np
import pytest

import jitlib
import jitlib.numpy as jnp
from jitlib import errors

BACKENDS = ("interpreter", "cpu", "jax")


def exact(got, want, zero_sign=True):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    assert np.array_equal(got, want, equal_nan=True), (got, want)
    if not zero_sign:
        return
    zeros = (want == 0) if want.dtype.kind == "f" else np.zeros(want.shape, bool)
    assert np.array_equal(np.signbit(got[zeros]), np.signbit(want[zeros])), (got, want)


def check(fn, *args, want=None, backends=BACKENDS, zero_sign=True):
    """jit(fn) on each backend equals `want(*args)` (default: eager fn) exactly; without
    `zero_sign`, a zero may differ in sign (NumPy's partition picks one of -0.0 and 0.0
    in an order of its own)."""
    expected = (want or fn)(*args)
    for backend in backends:
        got = jitlib.jit(fn, backend=backend)(*args)
        if isinstance(expected, tuple):
            assert len(got) == len(expected)
            for g, w in zip(got, expected):
                exact(g, w, zero_sign)
        else:
            exact(got, expected, zero_sign)


def edge(dtype, shape, seed=0):
    """Values with ties, and for floats NaN, -NaN, +-inf, 0.0 and -0.0 mixed in."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        vals = rng.integers(max(info.min, -4), min(info.max, 4), n, endpoint=True)
        vals[:2] = [info.min, info.max]
        return rng.permutation(vals.astype(dtype)).reshape(shape)
    if np.dtype(dtype).kind == "b":
        return (rng.random(n) < 0.5).reshape(shape)
    special = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, 1.0, -2.5])
    vals = np.where(rng.random(n) < 0.5, rng.choice(special, n), rng.integers(-3, 3, n))
    return vals.astype(dtype).reshape(shape)


DTYPES = [np.float32, np.float64, np.float16, np.int32, np.uint8, np.int64, np.bool_]


# -- sort, argsort, lexsort, partition

@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("axis", [-1, 0, None])
def test_sort_and_argsort_are_numpys_stable_sort(dtype, axis):
    x = edge(dtype, (5, 8), seed=1)
    check(lambda a: np.sort(a, axis=axis), x,
          want=lambda a: np.sort(a, axis=axis, kind="stable"))
    check(lambda a: np.argsort(a, axis=axis, kind="quicksort"), x,
          want=lambda a: np.argsort(a, axis=axis, kind="stable"))
    check(lambda a: a.argsort(), x, want=lambda a: a.argsort(kind="stable"))


def test_sort_keeps_equal_zeros_and_nans_in_input_order():
    x = np.array([0.0, np.nan, -0.0, -np.inf, -np.nan, 0.0, 1.0, -0.0], np.float32)
    check(np.sort, x, want=lambda a: np.sort(a, kind="stable"))
    check(np.argsort, x, want=lambda a: np.argsort(a, kind="stable"))


@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 4)])
def test_sorts_of_empty_arrays(shape):
    x = np.zeros(shape, np.float32)
    check(np.sort, x)
    check(np.argsort, x)


def test_sort_of_a_middle_axis():
    x = edge(np.float32, (3, 6, 4), seed=2)
    check(lambda a: np.sort(a, axis=1), x, want=lambda a: np.sort(a, axis=1, kind="stable"))


def test_lexsort_last_key_major():
    k1 = edge(np.float64, (4, 7), seed=3)
    k2 = edge(np.int8, (4, 7), seed=4)
    check(lambda a, b: np.lexsort((a, b)), k1, k2)
    check(lambda a, b: np.lexsort((a, b), axis=0), k1, k2)
    check(lambda a: np.lexsort(a), np.stack([k1[0], k1[1]]))


@pytest.mark.parametrize("kth", [0, 3, -1, (1, 5)])
def test_partition_puts_the_kth_element_in_place(kth):
    x = edge(np.float32, (3, 7), seed=5)
    want = np.partition(x, kth)
    for backend in BACKENDS:
        got = jitlib.jit(lambda a: np.partition(a, kth), backend=backend)(x)
        idx = jitlib.jit(lambda a: np.argpartition(a, kth), backend=backend)(x)
        exact(np.take_along_axis(x, idx, -1), got)
        for k in np.atleast_1d(kth) % x.shape[-1]:
            exact(got[:, k], want[:, k])
            assert np.all(~(got[:, :k] > got[:, k:k + 1])), got   # nothing bigger before
            assert np.all(~(got[:, k:] < got[:, k:k + 1])), got   # nothing smaller after


def test_partition_refuses_kth_out_of_range():
    with pytest.raises(errors.ShapeError, match="out of bounds"):
        jitlib.jit(lambda a: np.partition(a, 9))(np.zeros(3))


# -- median, percentile, quantile

@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32, np.uint8])
@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2)])
def test_median_matches_numpy(dtype, axis):
    x = edge(dtype, (4, 5, 3), seed=6)
    if np.dtype(dtype).kind == "f":
        x[1] = np.abs(np.nan_to_num(x[1])) + 1   # some slices without NaN
    check(lambda a: np.median(a, axis=axis), x, zero_sign=False)
    check(lambda a: np.median(a, axis=axis, keepdims=True), x, zero_sign=False)


@pytest.mark.parametrize("fn,q", [
    (np.quantile, 0.3), (np.quantile, [0.0, 0.25, 0.5, 0.9, 1.0]), (np.quantile, 1),
    (np.percentile, 50), (np.percentile, [10.0, 37.5, 99.0]),
    (np.quantile, np.float32(0.7)), (np.quantile, np.array([[0.1, 0.6], [0.5, 1.0]])),
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int16])
@pytest.mark.parametrize("axis", [None, 0, -1])
def test_quantile_and_percentile_match_numpy(fn, q, dtype, axis):
    x = edge(dtype, (6, 5), seed=7)
    if np.dtype(dtype).kind == "f":
        x[:, :3] = np.nan_to_num(x[:, :3], posinf=7.0, neginf=-7.0)
    check(lambda a: fn(a, q, axis=axis), x, zero_sign=False)
    check(lambda a: fn(a, q, axis=axis, keepdims=True), x, zero_sign=False)


def test_quantile_refuses_a_traced_q_and_other_methods():
    with pytest.raises(errors.UnsupportedError, match="traced q"):
        jitlib.jit(lambda a, q: np.quantile(a, q))(np.ones(3), 0.5)
    with pytest.raises(errors.UnsupportedError, match="method='nearest'"):
        jitlib.jit(lambda a: np.quantile(a, 0.5, method="nearest"))(np.ones(3))


# -- searchsorted

@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_on_sorted_data_with_ties_and_nan(side):
    a = np.array([-np.inf, -1.0, 0.0, 0.0, 2.0, 2.0, 2.0, np.inf, np.nan, np.nan])
    v = np.array([[-np.inf, 0.0, -0.0, 2.0, 1.5], [np.nan, np.inf, 9.0, -5.0, 2.0]])
    check(lambda s, x: np.searchsorted(s, x, side=side), a, v)
    check(lambda s: np.searchsorted(s, 2.0, side=side), a)
    ints = np.array([1, 3, 3, 7], np.int32)
    check(lambda s, x: np.searchsorted(s, x, side=side), ints, np.array([0, 3, 4, 9]))


def test_searchsorted_with_a_sorter():
    a = np.array([3.0, 1.0, 2.0, 2.0, -1.0])
    sorter = np.argsort(a, kind="stable")
    check(lambda s, x: np.searchsorted(s, x, sorter=sorter), a, np.array([2.0, 0.0, 5.0]))


# -- unique with a static size

@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_unique_with_size_pads_numpys_answer(dtype):
    x = edge(dtype, (4, 6), seed=8)
    want_values, index, inverse, counts = np.unique(x, True, True, True)
    k = want_values.size
    for backend in BACKENDS:
        values = jitlib.jit(lambda a: jnp.unique(a, size=k + 3, fill_value=42),
                            backend=backend)(x)
        exact(values[:k], want_values)
        assert np.all(values[k:] == 42)
        got = jitlib.jit(lambda a: jnp.unique(a, return_index=True, return_inverse=True,
                                              return_counts=True, size=k), backend=backend)(x)
        exact(got[0], want_values)
        exact(got[1], index)
        exact(got[2], inverse.reshape(x.shape))
        exact(got[3], counts)
    # the default fill is the smallest value; a smaller size keeps the smallest values
    small = jitlib.jit(lambda a: jnp.unique(a, size=2))(x)
    exact(small, want_values[:2])
    eager = jnp.unique(x, size=k + 1)
    exact(eager[:k], want_values)


def test_plain_np_unique_names_the_users_line():
    def f(a):
        return np.unique(a)   # the line the error must name

    with pytest.raises(errors.UnsupportedError, match="size=") as e:
        jitlib.jit(f)(np.ones(3))
    assert "test_sorting.py" in str(e.value)
    assert "jitlib.numpy.unique" in str(e.value)


# -- top_k

@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.uint16])
def test_top_k_largest_first_ties_by_index(dtype):
    x = edge(dtype, (3, 9), seed=9)

    def want(a):
        values, indices = jnp.top_k(a, 4)   # outside jit: NumPy
        return values, indices
    check(lambda a: jnp.top_k(a, 4), x, want=want)
    values, indices = want(x)
    wide = x.astype(float)
    order = np.lexsort((np.broadcast_to(np.arange(9), x.shape),
                        -np.where(np.isnan(wide), np.inf, wide)), axis=-1)[:, :4]
    exact(indices, order)


def test_top_k_agrees_with_lax_top_k_without_nans():
    from jax import lax
    x = np.array([[3.0, 1.0, 3.0, -0.0, 0.0, 7.0], [1.0, 1.0, 1.0, 1.0, 2.0, 0.5]], np.float32)
    values, indices = lax.top_k(x, 3)
    got = jitlib.jit(lambda a: jnp.top_k(a, 3), backend="cpu")(x)
    exact(got[0], np.asarray(values))
    exact(got[1], np.asarray(indices).astype(np.int64))


# -- derivatives

def test_grad_of_sort_median_and_top_k():
    x = np.array([[0.3, -1.2, 2.5, 0.7], [1.1, 0.2, -0.4, 3.0]])

    def loss(a):
        w = np.arange(4.0)
        return (np.sort(a, axis=-1) * w).sum() + np.median(a) + jnp.top_k(a, 2)[0].sum()
    import jax
    import jax.numpy as jjnp

    def jax_loss(a):
        w = jjnp.arange(4.0)
        return ((jjnp.sort(a, axis=-1) * w).sum() + jjnp.median(a)
                + jax.lax.top_k(a, 2)[0].sum())
    want = np.asarray(jax.grad(jax_loss)(x))
    for backend in BACKENDS:
        got = jitlib.jit(jitlib.grad(loss), backend=backend)(x)
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_vmap_of_sort():
    x = edge(np.float32, (3, 5), seed=10)
    got = jitlib.vmap(lambda r: np.sort(r))(x)
    exact(got, np.sort(x, axis=-1, kind="stable"))
