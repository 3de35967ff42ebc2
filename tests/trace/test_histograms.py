"""Histograms and scatters inside jit (issue 23, part 4) equal eager NumPy.

ufunc.at, bincount, digitize, histogram and histogram2d run through `check_backends`
on the interpreter, cpu and jax backends. Counts are integers and must be exact; float
sums follow NumPy's order (index order) on the interpreter and cpu, so those are
compared exactly too; jax's scatter keeps no promised order, so it gets a tolerance.
"""
import warnings

import numpy as np
import pytest

import jitlib
import jitlib.numpy as jnp
from jitlib import errors
from jitlib.testing import check_backends

F32, F64, I8, I32, I64 = np.float32, np.float64, np.int8, np.int32, np.int64


def check(fn, *args, exact=True, **kwargs):
    """Every backend against eager NumPy; interpreter and cpu bit for bit when `exact`."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        tol = dict(rtol=0, atol=0) if exact else {}
        expected = check_backends(fn, *args, backends=("interpreter", "cpu"), **tol, **kwargs)
        check_backends(fn, *map(flush_subnormals, args), backends=("jax",), **kwargs)
    return expected


def flush_subnormals(x):
    """XLA on the CPU flushes subnormals to zero (-5e-324 >= 0.0 there), so the jax
    backend gets them as zeros."""
    if not (isinstance(x, np.ndarray) and x.dtype.kind == "f"):
        return x
    return np.where(np.abs(x) < np.finfo(x.dtype).tiny, np.zeros_like(x), x)


def rand(*shape, dtype=F64, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * 3).astype(dtype)


def ints(n, high, low=0, seed=1, dtype=I64):
    return np.random.default_rng(seed).integers(low, high, n).astype(dtype)


def raises_like_numpy(fn, *args, match=None):
    """`fn` raises the same exception type eagerly and under jit, and jit's names this
    file (the user's line)."""
    with pytest.raises(Exception) as eager:
        fn(*args)
    with pytest.raises(type(eager.value), match=match) as traced:
        jitlib.jit(fn, backend="interpreter")(*args)
    assert isinstance(traced.value, errors.JitlibError)
    assert "test_histograms.py" in str(traced.value)


def refused(fn, *args, match=None):
    with pytest.raises(errors.UnsupportedError, match=match) as info:
        jitlib.jit(fn, backend="interpreter")(*args)
    assert "test_histograms.py" in str(info.value) and "hint:" in str(info.value)
    return info.value


# -- ufunc.at: each index in order, repeated indices combine

AT_UFUNCS = [np.add, np.subtract, np.multiply, np.maximum, np.minimum]


@pytest.mark.parametrize("ufunc", AT_UFUNCS, ids=lambda u: u.__name__)
@pytest.mark.parametrize("dtype", [F64, F32, I64, I32, I8, np.uint8])
def test_ufunc_at_with_repeated_and_negative_indices(ufunc, dtype):
    def f(x, i, v):
        ufunc.at(x, i, v)
        return x
    x = (rand(7, seed=2) * 5).astype(dtype)
    v = (rand(40, seed=3) * 5).astype(dtype)
    check(f, x, ints(40, 7, low=-7), v)


@pytest.mark.parametrize("ufunc", [np.add, np.maximum, np.minimum], ids=lambda u: u.__name__)
def test_ufunc_at_nan_and_signed_zero_combine_as_numpy(ufunc):
    def f(x, i, v):
        ufunc.at(x, i, v)
        return x
    v = np.array([np.nan, -0.0, 1.0, -np.inf, 0.0, np.nan, 2.0])
    check(f, np.array([0.0, -0.0, np.nan]), np.array([0, 1, 1, 2, 1, 2, 0]), v)


def test_ufunc_at_on_bool_and_rows():
    def f(b, m, i, r):
        np.add.at(b, i, True)           # logical or
        np.multiply.at(m, i, r)         # whole rows, repeated
        return b, m
    check(f, np.zeros(4, bool), rand(4, 3), np.array([3, 0, 3]), rand(3, 3, seed=5))


def test_ufunc_at_float_sums_follow_index_order_bit_for_bit():
    # 1e16 + 1 + 1 != 1e16 + 2: the order of the additions shows in the result
    def f(x, i, v):
        np.add.at(x, i, v)
        return x
    v = np.array([1e16, 1.0, 1.0, -1e16, 1.0] * 20)
    check(f, np.zeros(3), np.array([0, 0, 0, 0, 1] * 20), v)


def test_ufunc_at_with_a_scalar_and_a_2d_index():
    def f(x, i):
        np.add.at(x, (i, 1), 1)
        np.subtract.at(x, i, 0.5)
        return x
    check(f, np.zeros((4, 3)), np.array([[0, 2], [2, 2]]))


def test_ufunc_at_drops_traced_indices_out_of_range():
    # NumPy raises IndexError; jit cannot raise on traced values, so (like JAX's
    # mode="drop") the update is left out: docs/semantics.md says so
    def f(x, i):
        np.add.at(x, i, 1.0)
        return x
    got = jitlib.jit(f, backend="cpu")(np.zeros(3), np.array([0, 3, -4, 2, -1]))
    assert got.tolist() == [1.0, 0.0, 2.0]


def test_ufunc_at_with_concrete_indices_out_of_range_raises_as_numpy():
    def f(x):
        np.add.at(x, [0, 5], 1.0)
        return x
    raises_like_numpy(f, np.zeros(3), match="out of bounds")


def test_ufunc_at_refuses_a_wider_loop_than_the_array():
    def f(x, v):
        np.add.at(x, [0, 0], v)
        return x
    err = refused(f, np.zeros(2, F32), np.ones(2), match="float64")
    assert "astype" in str(err)
    check(lambda x, v: f(x, v.astype(x.dtype)), np.zeros(2, F32), np.full(2, 0.1))


def test_ufunc_at_of_other_ufuncs_is_refused_with_what_works():
    def f(x):
        np.divide.at(x, [0], 2.0)
        return x
    assert "x.at[i].divide" in str(refused(f, np.ones(2), match="np.divide.at"))


# -- bincount

def test_bincount_of_a_traced_array_needs_a_static_length():
    err = refused(lambda x: np.bincount(x, minlength=4), ints(10, 4), match="length")
    assert "jitlib.numpy.bincount(x, length=N)" in str(err)


@pytest.mark.parametrize("dtype", [I64, I32, np.uint8, bool])
def test_bincount_with_length_counts_exactly(dtype):
    x = ints(300, 9).astype(dtype)
    check(lambda x: jnp.bincount(x, length=9), x)
    check(lambda x: jnp.bincount(x, minlength=3, length=12), x)


def test_bincount_with_length_drops_values_outside_it():
    x = np.array([0, 1, 1, 7, 9, -1, 2])
    for backend in ("interpreter", "cpu", "jax"):
        got = jitlib.jit(lambda x: jnp.bincount(x, length=3), backend=backend)(x)
        assert got.tolist() == [1, 2, 1] and got.dtype == np.intp
    assert jnp.bincount(x, length=3).tolist() == [1, 2, 1]   # eagerly the same


@pytest.mark.parametrize("wdtype", [F64, F32, I32, bool])
def test_bincount_weights_sum_in_float64_in_order(wdtype):
    x = ints(500, 6)
    w = (rand(500, seed=4) * 10).astype(wdtype)
    check(lambda x, w: jnp.bincount(x, w, length=6), x, w)
    check(lambda w: np.bincount(np.array([0, 2, 2]), w[:3]), w)   # known x: known length


def test_bincount_of_concrete_values_and_of_nothing():
    check(lambda w: np.bincount(np.array([3, 0, 3]), w, minlength=6), np.ones(3))
    check(lambda x: jnp.bincount(x, length=4), np.zeros(0, I64))
    # NumPy's quirk: weights of an empty x still give int64 zeros
    check(lambda x, w: jnp.bincount(x, w, length=3), np.zeros(0, I64), np.zeros(0))
    assert jnp.bincount(np.array([7]), np.ones(1), length=3).dtype == np.float64


def test_bincount_refuses_float_values_and_mismatched_weights():
    raises_like_numpy(lambda x: jnp.bincount(x.astype(F64), length=3), np.arange(3))
    raises_like_numpy(lambda x, w: jnp.bincount(x, w, length=3), np.arange(3), np.ones(2))


# -- digitize

EDGE_VALUES = np.array([np.nan, -np.inf, -1.0, 0.0, 0.5, 1.0, 2.5, 3.0, np.inf, -0.0, 2.4999])


@pytest.mark.parametrize("right", [False, True])
@pytest.mark.parametrize("bins", [[0.0, 1.0, 2.5], [2.5, 1.0, 0.0], [0.0, 1.0, 1.0, 2.5], [1.0]])
def test_digitize_on_and_between_edges(bins, right):
    check(lambda x: np.digitize(x, bins, right=right), EDGE_VALUES)
    check(lambda x: np.digitize(x, np.array(bins), right), rand(50, dtype=F32))


def test_digitize_with_traced_bins_and_int_data():
    check(lambda x, b: np.digitize(x, b), ints(40, 10), np.array([2, 4, 4, 8]))


def test_digitize_refuses_unsorted_bins_as_numpy():
    raises_like_numpy(lambda x: np.digitize(x, [0.0, 2.0, 1.0]), EDGE_VALUES, match="monoton")


# -- histogram

ON_EDGES = np.array([0.0, 0.1, 0.2, 0.30000000000000004, 0.3, 0.7, 0.9999999999999999, 1.0,
                     -0.0, 1.0000000000000002, -1e-300, np.nan, np.inf, -np.inf, 0.5, 0.6])


def on_edges(n, lo, hi, dtype=F64):
    """Values exactly on each of NumPy's n equal-bin edges, one ulp either side, NaN,
    infinities and values past the range."""
    edges = np.histogram_bin_edges(np.zeros(0, dtype), n, (lo, hi)).astype(dtype)
    near = np.concatenate([edges, np.nextafter(edges, -np.inf), np.nextafter(edges, np.inf)])
    extra = np.array([np.nan, np.inf, -np.inf, lo - 1, hi + 1], dtype)
    return np.concatenate([near.astype(dtype), extra, ON_EDGES.astype(dtype)])


@pytest.mark.parametrize("n,lo,hi", [(10, 0.0, 1.0), (7, -1.0, 2.5), (3, 0.1, 0.7),
                                     (5, 0.0, 0.3)])
@pytest.mark.parametrize("dtype", [F64, F32])
def test_histogram_values_on_equal_bin_edges_land_where_numpy_puts_them(n, lo, hi, dtype):
    x = on_edges(n, lo, hi, dtype)
    check(lambda x: np.histogram(x, n, range=(lo, hi)), x)
    # a traced range: the same edges, computed in the trace
    check(lambda x, r: np.histogram(x, n, range=(r[0], r[1])), x, np.array([lo, hi], dtype))


@pytest.mark.parametrize("dtype", [F64, F32, I64, I8, np.uint8, bool])
def test_histogram_of_the_data_range(dtype):
    x = (rand(400, seed=7) * 20).astype(dtype)
    check(lambda x: np.histogram(x), x)
    check(lambda x: np.histogram(x, 13), x)
    check(lambda x: np.histogram(x, 4, density=True), x, exact=False)


def test_histogram_of_constant_and_empty_data():
    check(lambda x: np.histogram(x, 4), np.full(9, 3.0))
    check(lambda x: np.histogram(x, 4), np.full(9, 3, I32))
    check(lambda x: np.histogram(x, 3), np.zeros(0))
    check(lambda x: np.histogram(x, 3, range=(1, 2)), np.zeros(0, I64))


@pytest.mark.parametrize("bins", [[-1.0, 0.0, 0.5, 2.5], [0, 1, 1, 2], [0.3], [-2.0, 2.0]])
def test_histogram_with_edges(bins):
    x = np.concatenate([on_edges(4, -1.0, 2.5), rand(100)])
    check(lambda x: np.histogram(x, bins), x)
    check(lambda x, b: np.histogram(x, b), x, np.array(bins, F64))   # traced edges
    check(lambda x: np.histogram(x.astype(F32), np.array(bins)), x)


@pytest.mark.parametrize("wdtype", [F64, F32, I64, I32])
def test_histogram_weights(wdtype):
    x = np.concatenate([on_edges(6, -2.0, 2.0), rand(200)])
    w = (rand(x.size, seed=9) * 10).astype(wdtype)
    check(lambda x, w: np.histogram(x, 6, range=(-2.0, 2.0), weights=w), x, w)
    check(lambda x, w: np.histogram(x, 6, weights=w), rand(200), w[:200])
    check(lambda x, w: np.histogram(x, [-2.0, -1.0, 0.5, 2.0], weights=w), x, w)


def test_histogram_weights_past_numpys_block_sum_block_by_block():
    # NumPy bincounts 65536 values at a time and adds the blocks: 1e16 shows the order
    x = np.random.default_rng(3).uniform(0, 1, 65536 * 2 + 5)
    w = np.where(np.arange(x.size) % 3 == 0, 1e16, 1.0)
    w[::7] = -1e16
    check(lambda x, w: np.histogram(x, 4, range=(0.0, 1.0), weights=w), x, w)
    check(lambda x, w: np.histogram(x, 4, range=(0.0, 1.0), weights=w.astype(F32)), x, w)


def test_histogram_density():
    x = rand(300)
    check(lambda x: np.histogram(x, 8, density=True), x, exact=False)
    check(lambda x, w: np.histogram(x, [-3.0, 0.0, 1.0, 4.0], density=True, weights=w),
          x, rand(300, seed=2) ** 2, exact=False)


def test_histogram_bin_edges():
    check(lambda x: np.histogram_bin_edges(x, 6), rand(30, dtype=F32))
    check(lambda x: np.histogram_bin_edges(x, 6, range=(0, 1)), rand(30, dtype=F32))


def test_histogram_refuses_data_chosen_bin_counts_and_bad_arguments():
    assert "int" in str(refused(lambda x: np.histogram(x, "auto"), rand(10),
                                match="number of bins"))
    raises_like_numpy(lambda x: np.histogram(x, 4, range=(2.0, 1.0)), rand(10), match="max")
    raises_like_numpy(lambda x: np.histogram(x, [0.0, 2.0, 1.0]), rand(10), match="monoton")
    raises_like_numpy(lambda x: np.histogram(x, 0), rand(10), match="positive")
    raises_like_numpy(lambda x, w: np.histogram(x, weights=w), rand(10), rand(9))


# -- histogram2d, histogramdd

@pytest.mark.parametrize("bins", [4, (3, 5), [[-1.0, 0.0, 1.0], 3], [-2.0, 0.0, 2.0, 4.0]])
def test_histogram2d(bins):
    x, y = rand(200), rand(200, seed=5)
    x[:8] = [0.0, 1.0, -1.0, np.nan, np.inf, 2.0, 4.0, -2.0]
    y[:8] = [1.0, 0.0, -1.0, 0.0, 0.0, 4.0, 2.0, np.nan]
    check(lambda x, y: np.histogram2d(x[8:], y[8:], bins), x, y)
    check(lambda x, y: np.histogram2d(x, y, bins, range=[(-2, 4), (-1, 1)]), x, y)


def test_histogram2d_weights_density_and_int_data():
    x, y, w = rand(300, dtype=F32), ints(300, 5, dtype=I32), rand(300, seed=4)
    check(lambda x, y, w: np.histogram2d(x, y, (4, 5), weights=w), x, y, w)
    check(lambda x, y: np.histogram2d(x, y, 3, density=True), x, y, exact=False)
    check(lambda x, y: np.histogram2d(x, y, [2, [0, 2, 4]], range=[(-1, 1), None]), x, y)


def test_histogramdd_of_a_sample():
    s = rand(100, 3)
    check(lambda s: np.histogramdd(s, (2, 3, 4)), s)
    check(lambda s: np.histogramdd(s, 2, range=[(0, 1), (-1, 1), None]), s)


# -- transforms see through them (the scatter op's jvp, vjp and vmap rules)

def test_vmap_of_histogram_and_bincount_equals_a_loop():
    xs = np.random.default_rng(0).uniform(0, 1, (3, 50))
    for f in (lambda x: np.histogram(x, 5, range=(0, 1)), lambda x: np.histogram(x, 5)):
        got = jitlib.vmap(f)(xs)
        for k, leaf in enumerate(got):
            np.testing.assert_array_equal(leaf, np.stack([f(x)[k] for x in xs]))
    i, w = ints(60, 4).reshape(3, 20), rand(3, 20)
    got = jitlib.vmap(lambda i, w: jnp.bincount(i, w, length=4))(i, w)
    np.testing.assert_allclose(got, [np.bincount(a, b, minlength=4) for a, b in zip(i, w)])


def test_grad_of_histogram_weights_and_of_ufunc_at():
    x = rand(40)
    g = jitlib.grad(lambda w: (np.histogram(x, 4, weights=w)[0] ** 2).sum())(np.ones(40))
    counts, edges = np.histogram(x, 4)
    bin_of = np.clip(np.searchsorted(edges, x, "right") - 1, 0, 3)
    np.testing.assert_allclose(g, 2 * counts[bin_of])

    def maxed(v):
        out = np.zeros(3)
        np.maximum.at(out, np.array([0, 0, 1, 2, 2]), v)
        return out.sum()
    # the largest update wins; x's own 0 wins at 1; a tie splits the slope (as JAX)
    got = jitlib.grad(maxed)(np.array([1.0, 2.0, -1.0, 3.0, 3.0]))
    assert got.tolist() == [0.0, 1.0, 0.0, 0.5, 0.5]

    def subtracted(v):
        out = np.ones(3)
        np.subtract.at(out, np.array([0, 0, 1]), v)
        return (out ** 2).sum()
    assert jitlib.grad(subtracted)(np.array([1.0, 2.0, 3.0])).tolist() == [4.0, 4.0, 4.0]


def test_histogram_of_data_with_nan_and_no_range_counts_nothing():
    # NumPy raises ("autodetected range of [nan, nan] is not finite"); a traced min/max
    # cannot raise, so the edges are NaN and no value lands in a bin (docs/semantics.md)
    hist, edges = jitlib.jit(lambda x: np.histogram(x, 3), backend="cpu")(np.array([1.0, np.nan]))
    assert hist.tolist() == [0, 0, 0] and np.isnan(edges).all()
