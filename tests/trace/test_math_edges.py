"""Math on edge values equals eager NumPy on every backend (issue 21): hypot's range,
log2/log10 at exact powers, float -> int casts of NaN/inf/out-of-range values, integer
powers with negative exponents, integer reciprocal of 0, byte-swapped arguments, and the
compositions the tracer builds (tools/measure_compositions.py measures them all)."""
import warnings

import ml_dtypes
import numpy as np
import pytest

import jitlib
from jitlib import errors
from jitlib.testing import assert_allclose_tree

BACKENDS = ("interpreter", "cpu", "jax")
INTS = (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)
FLOATS = (np.float16, ml_dtypes.bfloat16, np.float32, np.float64)


def _quiet(fn, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*args)


def _ulps(got, want):
    """Distance in ulps between finite floats of one type (-0.0 and 0.0 are one value)."""
    it = {2: np.int16, 4: np.int32, 8: np.int64}[want.dtype.itemsize]
    order = []
    for x in (got, want):
        i = x.view(it).astype(np.int64)
        order.append(np.where(i < 0, -(i & np.iinfo(it).max), i))
    return np.abs(order[0] - order[1])


def assert_close_ulps(got, want, max_ulps, label=""):
    """Same dtype and shape, NaN/inf/zero signs where NumPy has them, finite values within
    `max_ulps`."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, f"{label}: dtype {got.dtype} != {want.dtype}"
    assert got.shape == want.shape, label
    finite = np.isfinite(want)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=label)
    np.testing.assert_array_equal(got[~finite & ~np.isnan(want)],
                                  want[~finite & ~np.isnan(want)], err_msg=label)
    zero = want == 0
    np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(want[zero]), err_msg=label)
    assert np.isfinite(got[finite]).all(), label
    worst = _ulps(got[finite], want[finite]).max(initial=0)
    assert worst <= max_ulps, f"{label}: {worst} ulps from NumPy"


def _run(fn, backend, *args):
    return _quiet(jitlib.jit(fn, backend=backend), *args)


# -- hypot: no overflow or underflow in the squares

@pytest.mark.parametrize("backend", BACKENDS)
def test_hypot_does_not_overflow_or_underflow(backend):
    a = np.array([1e200, -1e200, 1e-200, 3e-300, 1e308, 3.0, 0.0, -0.0, np.inf, np.nan, 2e-160])
    b = np.array([1e200, 1e190, 1e-200, 4e-300, 1e308, -4.0, -0.0, 0.0, np.nan, -np.inf, 1e-165])
    got = _run(np.hypot, backend, a, b)
    assert got[0] == pytest.approx(1.4142135623730951e200, rel=1e-15)
    assert 0 < got[2] and 0 < got[3]
    assert_close_ulps(got, np.hypot(a, b), 1, f"hypot f64 {backend}")
    a32, b32 = np.array([1e30, 1e-30, 3e38, 1e-20, 3.0], np.float32), np.array(
        [1e30, -1e-30, 3e38, 1e-21, 4.0], np.float32)
    assert_close_ulps(_run(np.hypot, backend, a32, b32), _quiet(np.hypot, a32, b32), 0,
                      f"hypot f32 {backend}")


@pytest.mark.parametrize("backend", ("interpreter", "cpu"))   # XLA flushes subnormals
def test_hypot_of_subnormals(backend):
    a = np.array([5e-324, 1e-310, 2.0 ** -1060])
    b = np.array([5e-324, 3e-310, 2.0 ** -1070])
    assert_close_ulps(_run(np.hypot, backend, a, b), np.hypot(a, b), 1, "subnormal hypot")


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_half_hypot_rounds_once_from_float32(dtype):
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(2000) * 100).astype(dtype), rng.standard_normal(2000).astype(dtype)
    for backend in BACKENDS:
        got = _run(np.hypot, backend, a, b)
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(got, np.hypot(a, b), err_msg=backend)


# -- log2 / log10: exact at powers of the base

def _powers(base, dtype):
    """Every normal power of `base` in `dtype` (powers of 10 rounded once from their
    decimal text), and its exponent."""
    info = np.finfo(dtype)
    if base == 2:
        ks = np.arange(info.minexp, info.maxexp)
        return np.ldexp(1.0, ks).astype(dtype), ks.astype(dtype)
    ks = np.arange(int(np.ceil(np.log10(float(info.tiny)))),
                   int(np.floor(np.log10(float(info.max)))) + 1)
    values = [dtype(f"1e{k}") for k in ks]
    return np.array(values, dtype), ks.astype(dtype)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn,base", [(np.log10, 10), (np.log2, 2)])
def test_log_base_is_exact_at_powers_of_the_base(fn, base, dtype, backend):
    x, k = _powers(base, dtype)
    got = _run(fn, backend, x)
    np.testing.assert_array_equal(got, k)
    assert got.dtype == np.dtype(dtype)
    if dtype == np.float64:    # NumPy's libm is exact there too
        np.testing.assert_array_equal(got, fn(x))
    assert _run(fn, backend, np.array([1000.0]))[0] == (3.0 if base == 10 else np.log2(1000.0))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", [np.log10, np.log2])
def test_log_base_within_numpys_ulps(fn, dtype, backend):
    rng = np.random.default_rng(1)
    info = np.finfo(dtype)
    x = np.exp2(rng.uniform(info.minexp + 1, info.maxexp - 1, 20000)).astype(dtype)
    x = np.concatenate([x, rng.uniform(0.6, 1.5, 5000).astype(dtype),
                        np.array([0.0, -0.0, -1.0, np.inf, -np.inf, np.nan, 1.0], dtype)])
    # NumPy's own error: float64 is its (correctly rounded) libm; float32 log10 on an
    # AVX-512 host is its SVML loop, up to 2 ulps from the correctly rounded value
    assert_close_ulps(_run(fn, backend, x), _quiet(fn, x), 2, f"{fn.__name__} {backend}")


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.int32, np.uint8])
def test_log_base_loop_types(dtype):
    x = np.array([1, 2, 8, 10, 100, 3, 7], dtype)
    for fn in (np.log10, np.log2):
        want = fn(x)
        for backend in BACKENDS:
            assert_close_ulps(_run(fn, backend, x), want, 1, f"{fn.__name__}({x.dtype})")


# -- float -> int casts: NumPy's values on x86-64

def _cast_values():
    v = [np.nan, np.inf, -np.inf, 0.0, -0.0, -0.5, 0.9, -1.0, 127.0, 127.9, 128.0, -129.0,
         255.5, 256.0, 300.0, -300.0, 65535.0, 7e4, -7e4, 2.0 ** 31, -2.0 ** 31, 4e9,
         -3e9, 2.0 ** 32, 2.0 ** 63, -2.0 ** 63, 1.5 * 2.0 ** 63, 2.0 ** 64, -2.0 ** 64,
         1.9e19, 1e30, -1e30]
    rng = np.random.default_rng(2)
    return np.concatenate([v, rng.standard_normal(200) * 10.0 ** rng.integers(0, 21, 200)])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("src", FLOATS, ids=lambda t: np.dtype(t).name)
def test_float_to_int_cast_of_any_value_is_numpys(src, backend):
    x = _quiet(_cast_values().astype, src)
    for dst in INTS:
        # NumPy's scalar cast (its strided loop); see docs/numpy_support.md on uint32
        want = _quiet(np.repeat(x, 2)[::2].astype, dst)
        got = _run(lambda a: a.astype(dst), backend, x)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want, err_msg=f"{x.dtype} -> {np.dtype(dst)}")


@pytest.mark.parametrize("backend", BACKENDS)
def test_documented_cast_values(backend):
    x = np.array([np.nan, np.inf, -np.inf, 2.0 ** 64, 300.0])
    cast = lambda t: _run(lambda a: a.astype(t), backend, x).tolist()  # noqa: E731
    assert cast(np.int32) == [-2 ** 31] * 4 + [300]
    assert cast(np.int64) == [-2 ** 63] * 4 + [300]
    assert cast(np.uint64) == [2 ** 63, 0, 2 ** 63, 0, 300]
    assert cast(np.int8) == [0, 0, 0, 0, 44]


@pytest.mark.parametrize("backend", BACKENDS)
def test_casts_inside_fused_vectorized_kernels(backend):
    # long enough for the cpu backend's vector loop, fused behind arithmetic
    x = np.tile(_cast_values(), 8)
    fn = lambda a: ((a * 1.0).astype(np.int32), (a + 0.0).astype(np.uint64),  # noqa: E731
                    (a * 2.0).astype(np.int16), a.astype(np.float32).astype(np.uint8))
    want = _quiet(fn, x)   # no uint32 here: NumPy's contiguous loop is layout-dependent
    for got, w in zip(_run(fn, backend, x), want):
        assert got.dtype == w.dtype
        np.testing.assert_array_equal(got, w)


# -- integer ** negative integer

def _raises_value_error(fn, *args, match):
    with pytest.raises(ValueError, match=match) as info:
        jitlib.jit(fn, backend="interpreter")(*args)
    assert isinstance(info.value, errors.JitlibValueError)
    return str(info.value)


def test_integer_power_by_a_concrete_negative_raises_at_the_users_line():
    x = np.arange(1, 4, dtype=np.int32)
    with pytest.raises(ValueError, match="Integers to negative integer powers"):
        x ** -1   # NumPy's own error
    text = _raises_value_error(lambda x: x ** -1, x, match="Integers to negative integer")
    assert "test_math_edges.py" in text and "x ** -1" in text
    _raises_value_error(lambda x: np.power(x, np.array([2, -1, 0])), x,
                        match="negative integer")
    _raises_value_error(lambda x, n: x ** n, x, -3, match="negative integer")
    _raises_value_error(lambda x, n: x ** (n - 5), x, 3, match="negative integer")


def test_integer_power_by_a_traced_signed_exponent_says_what_to_do():
    x, n = np.arange(1, 4, dtype=np.int32), np.array([0, 1, 2])
    text = _raises_value_error(lambda x, n: x ** n, x, n, match="traced int64 exponent")
    assert "np.maximum(n, 0)" in text
    _raises_value_error(lambda x: 2 ** x, x, match="traced int32 exponent")


@pytest.mark.parametrize("backend", BACKENDS)
def test_integer_powers_jit_can_prove_non_negative(backend):
    x, n = np.arange(-2, 4, dtype=np.int32), np.array([0, 1, 2, 3, 4, 5])
    cases = [(lambda x, n: x ** np.maximum(n, 0), (x, n)),
             (lambda x, n: x ** n.astype(np.uint8), (x, n)),
             (lambda x, n: x ** n, (x, 3)),
             (lambda x: x ** np.arange(6), (x,)),
             (lambda x: np.power(x, np.array([0, 1, 2, 3, 2, 1])), (x,)),
             (lambda x, n: x ** (n > 1), (x, n))]
    for fn, args in cases:
        want, got = fn(*args), _run(fn, backend, *args)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_float_powers_stay_allowed():
    x = np.arange(1, 4, dtype=np.int32)
    for fn in (lambda x: x ** -1.0, lambda x: np.float_power(x, -2), lambda x: 2.0 ** -x):
        for backend in BACKENDS:
            np.testing.assert_allclose(_run(fn, backend, x), fn(x), rtol=1e-15)


# -- reciprocal of integers (0 included)

@pytest.mark.parametrize("backend", BACKENDS)
def test_integer_reciprocal_of_zero_is_numpys(backend):
    for dt in INTS + (np.bool_,):
        x = np.array([0, 1, 2, 3, 0, 1] if np.dtype(dt).kind != "i" else [0, 1, -1, 2, -3, 0],
                     dt)
        want = _quiet(np.reciprocal, x)
        got = _run(np.reciprocal, backend, x)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want, err_msg=str(np.dtype(dt)))


# -- byte-swapped arguments and constants

@pytest.mark.parametrize("backend", BACKENDS)
def test_byte_swapped_arguments_are_converted_on_entry(backend):
    a = np.array([1.5, -2.0, 3.25, np.inf], ">f8")
    i = np.array([1, -7, 300, 2 ** 30], ">i4")
    s = np.array([4.0, 5.0, 6.0, 7.0], ">f4")
    const = np.array([0.5, 1.0, 2.0, 4.0], ">f8")
    cases = [(lambda x, y: x + y, (a, a)), (lambda x, y: x * y, (i, a)),
             (lambda x, y: np.sin(x) + y, (a, s)), (lambda x: x * const, (a,)),
             (lambda x, y: (x.sum(), y.max()), (i, s)), (lambda x: x // 3, (i,))]
    f = None
    for fn, args in cases:
        f = jitlib.jit(fn, backend=backend)
        for _ in range(2):   # the second call takes the fast path of the cache
            got, want = f(*args), fn(*args)
            assert_allclose_tree(got, want, rtol=0, atol=0)
    # where NumPy returns the argument itself, jitlib returns its values natively
    out = jitlib.jit(lambda x: x.T, backend=backend)(i)
    assert out.dtype == np.dtype("=i4")
    np.testing.assert_array_equal(out, i)


# -- compositions: shifts, angle conversions, base-2 log-add

@pytest.mark.parametrize("backend", BACKENDS)
def test_shifts_by_negative_and_oversized_counts(backend):
    for dt in (np.int8, np.int32, np.int64):
        info = np.iinfo(dt)
        x = np.repeat(np.array([info.min, -5, 7, info.max, 0], dt), 8)
        n = np.resize(np.array([-1, -40, 0, 1, 7, 8, 63, 100], dt), x.shape)
        for fn in (np.left_shift, np.right_shift):
            want, got = fn(x, n), _run(fn, backend, x, n)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want, err_msg=f"{fn.__name__} {x.dtype}")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.float32, np.float64])
def test_angle_conversions_use_numpys_constants(dtype, backend):
    x = (np.random.default_rng(3).standard_normal(5000) * 500).astype(dtype)
    for fn in (np.deg2rad, np.rad2deg):
        got, want = _run(fn, backend, x), fn(x)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want, err_msg=fn.__name__)


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_half_log_add_computes_in_float32(dtype):
    rng = np.random.default_rng(4)
    a, b = (rng.standard_normal(3000) * 4).astype(dtype), (rng.standard_normal(3000) * 4).astype(dtype)
    for fn in (np.logaddexp, np.logaddexp2, np.log10, np.log2):
        args = (a, b) if fn.nin == 2 else (np.abs(a),)
        want = fn(*args)
        for backend in BACKENDS:
            assert_close_ulps(_run(fn, backend, *args), want, 1, f"{fn.__name__} {backend}")
