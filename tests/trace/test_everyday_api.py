"""The everyday NumPy API inside jit (issue 23, part 7) equals eager NumPy.

Each case runs through `check_backends` on the interpreter, cpu and jax backends:
values, dtype and shape, and what the call leaves in its arguments (np.put and
np.place write into them). Bad arguments raise NumPy's exception types as jitlib
errors that name the user's line.
"""
import warnings

import numpy as np
import pytest

import jitlib
from jitlib import errors
from jitlib.testing import check_backends

BACKENDS = ("interpreter", "cpu", "jax")
F32, F64, I8, I32, I64 = np.float32, np.float64, np.int8, np.int32, np.int64


def check(fn, *args, **kwargs):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")   # NumPy warns on all-NaN slices; jit does not
        return check_backends(fn, *args, backends=BACKENDS, **kwargs)


def rand(*shape, dtype=F64, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * 3).astype(dtype)


def with_nans(*shape, dtype=F64, seed=0):
    x = rand(*shape, dtype=dtype, seed=seed)
    x.flat[::4] = np.nan
    return x


def raises_like_numpy(fn, *args, match=None):
    """`fn` raises the same exception type eagerly and under jit, and jit's names this
    file (the user's line)."""
    with pytest.raises(Exception) as eager:
        fn(*args)
    with pytest.raises(type(eager.value), match=match) as traced:
        jitlib.jit(fn, backend="interpreter")(*args)
    assert isinstance(traced.value, errors.JitlibError)
    assert "test_everyday_api.py" in str(traced.value)


# -- convolve, correlate

@pytest.mark.parametrize("n,m", [(10, 3), (3, 10), (7, 7), (6, 2), (2, 5), (1, 1),
                                 (50, 40), (40, 50)])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve_and_correlate_every_mode_and_length(n, m, mode):
    a, v = rand(n, dtype=F32), rand(m, seed=1)
    check(lambda a, v: np.convolve(a, v, mode), a, v)
    check(lambda a, v: np.correlate(a, v, mode), a, v)


def test_convolve_dtypes():
    check(lambda a, v: np.convolve(a, v), np.array([1, 2, 3], I8), np.array([100, 100], I8))
    check(lambda a, v: np.correlate(a, v, "full"), np.array([True, False, True]),
          np.array([True, True]))
    check(lambda a: np.convolve(a, [1, 2, 1], "same"), np.arange(6, dtype=np.uint8))
    check(lambda a: np.convolve(a, 0.5), rand(4, dtype=F32))
    check(lambda a: np.correlate(a, [1, -1], mode=1), np.arange(5))


def test_convolve_errors():
    raises_like_numpy(lambda a: np.convolve(a, []), rand(3), match="v cannot be empty")
    raises_like_numpy(lambda a: np.correlate(a[:0], a), rand(3),
                      match="first array argument cannot be empty")
    raises_like_numpy(lambda a: np.convolve(a, a), rand(2, 2), match="too deep")
    raises_like_numpy(lambda a: np.convolve(a, a, "middle"), rand(3), match="mode")


# -- interp

def test_interp():
    rng = np.random.default_rng(0)
    xp = np.sort(rng.uniform(0, 10, 9))
    fp = rng.standard_normal(9)
    x = np.concatenate([rng.uniform(-2, 12, 30), xp, [np.nan, np.inf, -np.inf]])
    check(np.interp, x, xp, fp)
    check(lambda x, xp, fp: np.interp(x, xp, fp, left=-1, right=99.0), x.astype(F32), xp, fp)
    check(lambda x: np.interp(x, [1, 2, 3], [3, 2, 0]), np.arange(5))
    check(lambda x: np.interp(x, [1.0], [3]), np.array([0, 1, 2, np.nan]))
    check(lambda x: np.interp(x, [0, 1, 2], [0, np.inf, 1]), np.linspace(-1, 3, 11))
    check(lambda x: np.interp(x, [0.0, 1.0], [1.0, 2.0]), 0.25)
    check(lambda x: np.interp(x, [0.0, 1.0], [1.0, 2.0]), np.zeros((0, 3)))
    xp_long = np.linspace(0, 1, 300)
    check(lambda x, fp: np.interp(x, xp_long, fp), rng.uniform(-0.1, 1.1, 50),
          np.sin(xp_long * 7))


def test_interp_periodic_with_traced_and_known_sample_points():
    rng = np.random.default_rng(1)
    xp = rng.uniform(-180, 180, 7)   # unsorted: NumPy sorts them modulo the period
    fp = rng.standard_normal(7)
    x = rng.uniform(-400, 400, 20)
    check(lambda x, xp, fp: np.interp(x, xp, fp, period=360), x, xp, fp)
    check(lambda x, fp: np.interp(x, xp, fp, period=-360.0), x, fp)


def test_interp_errors():
    raises_like_numpy(lambda x: np.interp(x, [1, 2], [1, 2, 3]), rand(3),
                      match="same length")
    raises_like_numpy(lambda x: np.interp(x, [], []), rand(3), match="empty")
    raises_like_numpy(lambda x: np.interp(x, [1, 2], [1, 2], period=0), rand(3),
                      match="period")


# -- gradient, trapezoid

@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient(edge_order):
    f = rand(5, 7)
    xs = np.cumsum(np.random.default_rng(2).uniform(0.5, 1.5, 7))
    kw = {"edge_order": edge_order}
    check(lambda f: np.gradient(f, **kw), f)
    check(lambda f: np.gradient(f, 0.5, **kw), f.astype(F32))
    check(lambda f: np.gradient(f, 2, 3.0, **kw), f)
    check(lambda f, x: np.gradient(f, x, axis=1, **kw), f, xs)
    check(lambda f, x: np.gradient(f, x, axis=-1, **kw), f.astype(F32), xs)
    check(lambda f: np.gradient(f, np.arange(5) * 2, xs, **kw), f)
    check(lambda f: np.gradient(f, axis=(1, 0), **kw), f)
    check(lambda f: np.gradient(f, **kw), np.array([1, 4, 9, 16], I32))
    check(lambda f, h: np.gradient(f, h, **kw), f[0], np.float32(0.3))


def test_gradient_edges():
    check(np.gradient, rand(2))
    raises_like_numpy(lambda f: np.gradient(f, edge_order=2), rand(2), match="too small")
    raises_like_numpy(lambda f: np.gradient(f, edge_order=3), rand(5), match="edge_order")
    raises_like_numpy(lambda f: np.gradient(f, 1.0, 2.0), rand(5), match="arguments")
    raises_like_numpy(lambda f: np.gradient(f, np.arange(4.0)), rand(5), match="match")


def test_trapezoid():
    y = rand(3, 6)
    check(np.trapezoid, y)
    check(lambda y: np.trapezoid(y, dx=0.5, axis=0), y)
    check(lambda y, x: np.trapezoid(y, x), y, np.cumsum(rand(6) ** 2))
    check(lambda y, x: np.trapezoid(y, x, axis=0), y, rand(3, 6, seed=3))
    check(np.trapezoid, np.arange(6, dtype=I32))
    check(np.trapezoid, np.ones((2, 0), F32))
    check(lambda y: np.trapezoid(y, dx=2), rand(4, dtype=F32))


# -- nan statistics

@pytest.mark.parametrize("fn", [np.nanvar, np.nanstd])
@pytest.mark.parametrize("kw", [{}, {"axis": 0}, {"axis": 1, "ddof": 1},
                                {"axis": 1, "keepdims": True}, {"ddof": 4, "axis": 0},
                                {"axis": (0, 1), "dtype": F64}])
def test_nanvar_nanstd(fn, kw):
    x = with_nans(4, 5)
    x[2] = np.nan   # an all-NaN row
    check(lambda x: fn(x, **kw), x)
    check(lambda x: fn(x, **kw), x.astype(F32))


def test_nanvar_other_dtypes_and_where():
    check(lambda x: np.nanvar(x, axis=0), np.arange(12, dtype=I32).reshape(3, 4))
    check(lambda x: np.nanstd(x, axis=1, where=x > -1), with_nans(3, 4))
    check(np.nanvar, np.zeros((0,), F32))
    check(lambda x: np.nanstd(x, correction=1), with_nans(6))


@pytest.mark.parametrize("fn", [np.nanargmax, np.nanargmin])
def test_nanargmax_nanargmin(fn):
    x = with_nans(4, 5)
    x[1, 2] = np.inf
    check(lambda x: fn(x, axis=1), x)
    check(fn, x)
    check(lambda x: fn(x, axis=0, keepdims=True), x)
    check(lambda x: fn(x, axis=1), np.arange(12).reshape(3, 4) % 5)
    check(fn, np.array([np.nan, -np.inf, np.nan], F32))


@pytest.mark.parametrize("fn", [np.nanargmax, np.nanargmin])
def test_all_nan_slice_gives_minus_one_like_jax(fn):
    x = np.array([[1.0, np.nan], [np.nan, np.nan]])
    with pytest.raises(ValueError, match="All-NaN"):
        fn(x, axis=1)
    for backend in BACKENDS:
        out = jitlib.jit(lambda x: fn(x, axis=1), backend=backend)(x)
        np.testing.assert_array_equal(out, [0, -1])


@pytest.mark.parametrize("fn", [np.nancumsum, np.nancumprod])
def test_nancumsum_nancumprod(fn):
    check(fn, with_nans(4, 5))
    check(lambda x: fn(x, axis=0, dtype=F32), with_nans(4, 5))
    check(lambda x: fn(x, axis=1), np.arange(6, dtype=I8).reshape(2, 3))
    check(fn, np.ones((0, 2), F32))


# -- average

def test_average():
    y, w = rand(4, 5), np.random.default_rng(4).uniform(size=(4, 5))
    check(np.average, y)
    check(lambda y: np.average(y, axis=1, returned=True), y.astype(F32))
    check(lambda y, w: np.average(y, weights=w), y, w)
    check(lambda y, w: np.average(y, axis=0, weights=w, returned=True, keepdims=True),
          y.astype(F32), w.astype(F32))
    check(lambda y, w: np.average(y, axis=1, weights=w), np.arange(20).reshape(4, 5), w[0])
    check(lambda y, w: np.average(y, axis=(1, 0), weights=w, returned=True), y, w.T)
    check(lambda y: np.average(y, axis=0, weights=[1, 2, 3, 4]), y.astype(F32))
    check(lambda y, w: np.average(y, axis=0, weights=w), np.ones((4, 5), bool),
          w[:, 0].astype(np.float16))
    check(lambda y: np.average(y, axis=1, keepdims=True), np.arange(6, dtype=I32).reshape(2, 3))


def test_average_errors_and_zero_weights():
    raises_like_numpy(lambda y, w: np.average(y, weights=w), rand(4, 5), rand(5),
                      match="Axis must be specified")
    raises_like_numpy(lambda y, w: np.average(y, axis=0, weights=w), rand(4, 5), rand(5),
                      match="consistent")
    out = jitlib.jit(lambda y, w: np.average(y, weights=w))(np.ones(3), np.zeros(3))
    assert np.isnan(out)   # NumPy raises ZeroDivisionError; jit cannot raise on data


# -- put, place

def test_put():
    def put(a, v):
        np.put(a, [0, 2, -1], v)
        return a
    check(put, np.zeros(6), np.array([1.5, 2.5]))
    check(put, np.zeros((2, 3), I32), np.array([1.5, -2.5, 9.9]))

    def modes(a, i):
        np.put(a, i, 7.0, mode="wrap")
        a.put(i + 1, [1, 2, 3], mode="clip")
        return a.sum()
    check(modes, np.zeros(5), np.array([7, -9, 2]))

    def nothing(a):
        np.put(a, [], [1.0])
        np.put(a, [1], [])
    check(nothing, np.ones(3))


def test_put_errors():
    def bad_mode(a):
        np.put(a, [0], 1, mode="bad")
    raises_like_numpy(bad_mode, np.zeros(3), match="clipmode")

    def out_of_range(a):
        np.put(a, [7], 1.0)
    raises_like_numpy(out_of_range, np.zeros(3), match="out of bounds")

    def overflow(a):
        np.put(a, [0], 300)
    raises_like_numpy(overflow, np.zeros(3, np.uint8))


def test_place_with_traced_and_known_masks():
    rng = np.random.default_rng(5)

    def place(a, m, v):
        np.place(a, m, v)
    check(place, np.zeros(7), rng.random(7) < 0.5, np.array([1.0, 2.0, 3.0]))
    check(place, np.zeros((3, 4), np.int16), rng.random((3, 4)) < 0.6,
          np.array([1, 2, 100], I8))
    check(place, np.zeros((2, 3)), np.ones(6, bool), np.array([[1.0, 2.0]]))

    def positive(a):
        np.place(a, a > 0, [10, 20])
        return a
    check(positive, rand(2, 5))

    def empty_vals_no_true(a):
        np.place(a, np.zeros(a.shape, bool), [])
    check(empty_vals_no_true, rand(3))


def test_place_errors():
    def size(a):
        np.place(a, [True], [1.0])
    raises_like_numpy(size, np.zeros(3), match="same size")

    def unsafe(a, v):
        np.place(a, a == 0, v)
    raises_like_numpy(unsafe, np.zeros(3, I8), np.array([1.5]), match="safe")

    def empty(a):
        np.place(a, a > 0, [])
    with pytest.raises(errors.JitlibValueError, match="empty vals"):
        jitlib.jit(empty)(np.ones(3))


# -- piecewise, indices, kron, polyval, isin

def test_piecewise():
    x = rand(10)
    check(lambda x: np.piecewise(x, [x < 0, x >= 0], [lambda v: -v, lambda v: v ** 2]), x)
    check(lambda x: np.piecewise(x, [x < -1, x > 1], [0, lambda v: v * 2, 7.5]), x)
    check(lambda x: np.piecewise(x, x > 0, [lambda v: v + 1]), x.astype(F32))
    check(lambda x: np.piecewise(x, [x > 2, x > 4], [1.7, lambda v: v // 2, -1]),
          np.arange(8))
    check(lambda x, k: np.piecewise(x, [x < 0], [lambda v, k: v * k, lambda v, k: v - k], k),
          x, 3.0)
    check(lambda x: np.piecewise(x, [x < 0], [lambda v: -v, 0]), np.float64(-2.0))
    raises_like_numpy(lambda x: np.piecewise(x, [x < 0], [1, 2, 3]), x, match="functions")


def test_indices():
    check(lambda x: np.indices((2, 3)) + x, 1)
    check(lambda x: [i * x for i in np.indices((2, 3, 4), sparse=True)], 2.0)
    check(lambda x: np.indices((3, 2), dtype=F32) * x, np.float32(2))
    check(lambda x: np.indices((2, 0)) * x, 1.5)

    def written(x):
        grid = np.indices((2, 3))
        assert int(grid[1, 1, 2]) == 2   # a known value, as for np.arange
        grid[0, 0, 0] = x
        return grid
    check(written, 7)


@pytest.mark.parametrize("a,b", [((2, 3), (3, 2)), ((3,), (2, 2)), ((2, 2), (3,)),
                                 ((), (3,)), ((2, 1, 2), (2, 2)), ((2, 0), (3, 1))])
def test_kron(a, b):
    check(np.kron, rand(*a), np.random.default_rng(6).integers(0, 5, b).astype(I32))


def test_kron_and_polyval_dtypes():
    check(lambda a: np.kron(a, np.eye(2)), np.arange(4).reshape(2, 2))
    check(lambda p, x: np.polyval(p, x), np.array([3.0, -2, 1]), rand(10))
    check(lambda x: np.polyval([1, 2, 3], x), np.arange(5, dtype=I32))
    check(lambda x: np.polyval([1.5, 2], x), np.arange(5, dtype=F32))
    check(lambda p: np.polyval(p, 2.0), np.array([1.0, 0.5]))
    check(lambda x: np.polyval([], x), rand(3, dtype=F32))


def test_isin():
    e = np.random.default_rng(7).integers(0, 200, (4, 5))
    check(lambda e: np.isin(e, [1, 3, 5, 7]), e)
    check(lambda e, t: np.isin(e, t, invert=True), e, np.arange(0, 200, 7))
    check(lambda e: np.isin(e, np.arange(0, 200, 3)), e)   # known and large: searched
    check(lambda e: np.isin(e, np.arange(0, 100, 0.5)), e.astype(F32) / 2)
    check(lambda e: np.isin(e, [np.nan, 1.0]), np.array([np.nan, 1.0, 2.0]))
    check(lambda e: np.isin(e, np.array([np.nan] * 70 + [2.0])), np.array([np.nan, 2.0, 3.0]))
    check(lambda e: np.isin(e, []), e)
    check(lambda e, t: np.isin(e, t, assume_unique=True), 3, np.array([1, 3]))
    check(lambda e: np.isin(e, [True]), np.array([True, False]))
    check(lambda e: np.isin(e, [1, 2]), np.zeros((0, 2)))
    raises_like_numpy(lambda e: np.isin(e, [1], kind="hash"), e, match="kind")


# -- apply_along_axis, vectorize

def test_apply_along_axis():
    x = rand(3, 4, 5)
    check(lambda x: np.apply_along_axis(np.sum, 1, x), x)
    check(lambda x: np.apply_along_axis(lambda r: r[::-1] * 2, 0, x), x)
    check(lambda x: np.apply_along_axis(lambda r: np.outer(r, r), -1, x), x)
    check(lambda x, w: np.apply_along_axis(lambda r, w, s: np.dot(r, w) * s, 2, x, w, s=2.0),
          x, np.arange(5.0))
    check(lambda x: np.apply_along_axis(lambda r: np.convolve(r, [1, 2, 1], "same"), 1, x),
          x[0].astype(F32))
    check(lambda x: np.apply_along_axis(lambda r: r.max() - r.min(), 0, x),
          np.arange(6, dtype=I32))
    raises_like_numpy(lambda x: np.apply_along_axis(np.sum, 0, x), np.ones((3, 0)),
                      match="iteration dimensions")


def _clip_square(v, limit):
    return np.where(v > limit, limit, v) ** 2


def test_vectorize_objects_called_on_tracers():
    x = rand(3, 4, 5)
    clip_square = np.vectorize(_clip_square)
    check(lambda x: clip_square(x, 0.5), x)
    check(lambda x, limit: clip_square(x, limit), x[0], rand(5, seed=1))
    typed = np.vectorize(lambda a, b: a * b + 1, otypes=[F32])
    check(typed, np.arange(4)[:, None], np.arange(3))
    pair = np.vectorize(lambda a, b: (a + b, a - b))
    check(pair, np.arange(4.0), 2.5)
    power = np.vectorize(lambda a, n: a ** n, excluded={1})
    check(lambda a: power(a, 3), np.arange(4.0))
    keyword = np.vectorize(lambda a, b=1: a + b)
    check(lambda a: keyword(a, b=np.arange(5)), x.astype(F32))
    assert np.allclose(clip_square(np.array([1.0, 0.2]), 0.5), [0.25, 0.04])   # eager


def test_vectorize_with_signature_and_as_decorator():
    x = rand(3, 4, 5)
    dot = np.vectorize(lambda r, w: np.sum(r * w), signature="(n),(n)->()")
    check(dot, x, np.arange(5.0))
    both = np.vectorize(lambda m: (m.T, m.sum()), signature="(i,j)->(j,i),()")
    check(both, x)

    @np.vectorize
    def relu(v):
        return np.maximum(v, 0)
    check(relu, x)
    import jitlib.numpy as jnp
    check(jnp.vectorize(lambda v: v * 2), np.arange(3))


def test_vectorize_branching_on_values_is_a_clear_error():
    sign = np.vectorize(lambda v: 1.0 if v > 0 else -1.0)
    with pytest.raises(errors.TracerConversionError):
        jitlib.jit(sign)(rand(3))


# -- existing functions the issue asks about

def test_round_with_decimals_and_cumsum_with_dtype():
    check(lambda x: np.round(x, 2), np.array([1.2345, -2.5, 3.14159, 0.5], F32))
    check(lambda x: np.round(x, -1), np.arange(30, dtype=I32))
    check(lambda x: x.round(3), rand(5))
    check(lambda x: np.cumsum(x, dtype=F32), np.arange(6, dtype=I32))
    check(lambda x: np.cumsum(x, dtype=I8), np.arange(60, dtype=I32))
    check(lambda x: x.cumsum(axis=0, dtype=F64), np.ones((3, 4), bool))
