"""Complex kernels compiled as real ones (backends/complex_lowering.py): each lowered op
against NumPy's complex loops in ulps, special values included, on the cpu backend; which
kernels stay on the interpreter, and why; buffers the lowering must not mistake (views,
0-d values, arguments written in place)."""
import numpy as np
import pytest

import jitlib
from jitlib.backends import complex_lowering
from jitlib.hlo import build as B
from jitlib.hlo.ir import Module
from jitlib.hlo.ops import Op
from jitlib.testing import check_backends

PART = {np.complex64: np.float32, np.complex128: np.float64}
SPECIAL = np.array([0.0, -0.0, 1.0, -1.5, np.inf, -np.inf, np.nan, 1e300, 1e-310])


def cpu(f):
    return jitlib.jit(f, backend="cpu")


def interpreted(f):
    return jitlib.jit(f, backend="interpreter")


def pairs(dtype, n=3000, seed=23):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dtype)
            for _ in range(2)]


def grid(values, dtype):
    """Every complex number with parts from `values` (built part by part: `x + 1j * y`
    would turn an infinite y's real part into NaN)."""
    z = np.empty(len(values) ** 2, dtype)
    z.real, z.imag = np.repeat(values, len(values)), np.tile(values, len(values))
    return z


def ulps(got, want):
    """Per element, the larger of the parts' distances in units in the last place."""
    part = np.dtype(PART.get(want.dtype.type, want.dtype))
    ints = np.dtype(f"i{part.itemsize}")
    g, w = (np.ascontiguousarray(v).view(part).view(ints).astype(np.int64) for v in (got, want))
    d = np.abs(g - w)
    return d.reshape(want.shape + (-1,)).max(axis=-1) if want.dtype.kind == "c" else d


def same_or_both_nan(got, want):
    parts = (lambda v: (v.real, v.imag)) if want.dtype.kind == "c" else (lambda v: (v,))
    return all(np.array_equal(g, w, equal_nan=True) for g, w in zip(parts(got), parts(want)))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("name, f, bound", [
    ("add", lambda a, b: a + b, 0), ("sub", lambda a, b: a - b, 0),
    ("neg_conj", lambda a, b: -np.conj(a), 0), ("div", lambda a, b: a / b, 0),
    ("parts", lambda a, b: a.real * 2 + a.imag, 0), ("compare", lambda a, b: a != b * 1, 0),
    ("abs", lambda a, b: np.abs(a), 2), ("exp", lambda a, b: np.exp(a), 4),
    ("sign", lambda a, b: np.sign(a), 3), ("log", lambda a, b: np.log(a), 4),
    ("log10", lambda a, b: np.log10(a), 4), ("sin", lambda a, b: np.sin(a * 3), 4),
    ("cos", lambda a, b: np.cos(a * 3), 4), ("sinh", lambda a, b: np.sinh(a * 3), 4),
    ("cosh", lambda a, b: np.cosh(a * 3), 4), ("tan", lambda a, b: np.tan(a * 3), 8),
    ("tanh", lambda a, b: np.tanh(a * 3), 8), ("reciprocal", lambda a, b: a ** -1, 0),
    ("arcsinh", lambda a, b: np.arcsinh(a), 5), ("arcsin", lambda a, b: np.arcsin(a), 5),
    ("arccos", lambda a, b: np.arccos(a), 5), ("arccosh", lambda a, b: np.arccosh(a), 5),
    ("arctanh", lambda a, b: np.arctanh(a), 5), ("arctan", lambda a, b: np.arctan(a), 5),
    # (b = -1 is the IR's np.reciprocal path, not np.power's Smith division: left out)
    ("integer_power", lambda a, b: a ** np.where(np.round(b.real * 20) == -1, -2,
                                                 np.round(b.real * 20)), 0),
])
def test_each_lowered_op_against_numpys_loops(dtype, name, f, bound):
    a, b = pairs(dtype)
    f_cpu = cpu(f)
    got, want = f_cpu(a, b), f(a, b)
    assert got.dtype == want.dtype and not f_cpu.lower(a, b).compile().fallbacks
    assert ulps(got, want).max() <= bound


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_products_round_each_term_as_written(dtype):
    # NumPy's x86 loops fuse one product of each part into an fma, the IR has none: the
    # difference is within an ulp of the larger term, never more
    a, b = pairs(dtype)
    got, want = cpu(lambda a, b: a * b)(a, b), a * b
    eps = np.finfo(PART[dtype]).eps
    for g, w, terms in ((got.real, want.real, np.abs(a.real * b.real) + np.abs(a.imag * b.imag)),
                        (got.imag, want.imag, np.abs(a.real * b.imag) + np.abs(a.imag * b.real))):
        assert np.all(np.abs(g - w) <= eps * terms)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("name, f", [
    ("div", lambda a, b: a / b), ("abs", lambda a, b: np.abs(a)), ("exp", lambda a, b: np.exp(a)),
    ("log", lambda a, b: np.log(a)), ("log1p", lambda a, b: np.log1p(a)),
    ("expm1", lambda a, b: np.expm1(a)), ("sign", lambda a, b: np.sign(a)),
    ("sin", lambda a, b: np.sin(a)), ("cos", lambda a, b: np.cos(a)),
    ("tan", lambda a, b: np.tan(a)), ("sinh", lambda a, b: np.sinh(a)),
    ("cosh", lambda a, b: np.cosh(a)), ("tanh", lambda a, b: np.tanh(a)),
    ("pow", lambda a, b: a ** 2.5), ("pow_i", lambda a, b: a ** (0.5 - 2j)),
    ("inverse_powers", lambda a, b: (a ** -1, a ** -2, a ** -5)),
    ("arcsinh", lambda a, b: np.arcsinh(a)), ("arcsin", lambda a, b: np.arcsin(a)),
    ("arccos", lambda a, b: np.arccos(a)), ("arccosh", lambda a, b: np.arccosh(a)),
    ("arctanh", lambda a, b: np.arctanh(a)), ("arctan", lambda a, b: np.arctan(a)),
])
def test_special_values_as_numpy_gives_them(dtype, name, f):
    # every pair of special parts (and beside ordinary ones): NumPy's infinities, NaNs
    # and zeros exactly, finite values within a relative 1e-4 (the ulp bounds are above)
    z = grid(np.concatenate([SPECIAL, [0.75, 3.0, 800.0, -30.0]]), dtype)
    a, b = (np.repeat(z, z.size), np.tile(z, z.size)) if name == "div" else (z, z)
    f_cpu = cpu(f)
    with np.errstate(all="ignore"):
        want = f(a, b)
        got = f_cpu(a, b)
    assert not f_cpu.lower(a, b).compile().fallbacks
    for g, w in zip(*(v if isinstance(v, tuple) else (v,) for v in (got, want))):
        parts = (lambda v: (v.real, v.imag)) if w.dtype.kind == "c" else (lambda v: (v,))
        for gp, wp in zip(parts(g), parts(w)):
            exact = ~np.isfinite(wp) | (wp == 0)
            assert np.array_equal(gp[exact], wp[exact], equal_nan=True), \
                (a[exact][gp[exact] != wp[exact]][:4], gp[exact][gp[exact] != wp[exact]][:4])
            np.testing.assert_allclose(gp[~exact], wp[~exact], rtol=1e-4)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_log1p_and_expm1_follow_numpys_formulas(dtype):
    # NumPy's own nc_log1p (log|z + 1| + i atan2) and nc_expm1 (expm1(x) cos y -
    # 2 sin^2(y/2) + i exp(x) sin y) cancel near their zeros, where the parts' last ulps
    # (jitlib's real functions against NumPy's) are magnified: bounded by the terms' size
    a, _ = pairs(dtype)
    eps = np.finfo(PART[dtype]).eps
    for fn in (np.log1p, np.expm1):
        f = cpu(fn)
        assert not f.lower(a).compile().fallbacks
        got, want = f(a), fn(a)
        assert ulps(got.imag, want.imag).max() <= 4
        x, y = a.real, a.imag
        if fn is np.log1p:
            size = 1
        else:
            size = np.abs(np.expm1(x) * np.cos(y)) + 2 * np.sin(y / 2) ** 2
        assert np.all(np.abs(got.real - want.real) <= 8 * eps * size)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("exponent", [0.5, 2.5, -1.3, 1j, 0.5 - 2j, 1e-3, 40.0])
def test_constant_powers_are_glibcs_cpow(dtype, exponent):
    # exp(b log a): log a's last ulp is magnified by |b log a| in the result, in NumPy's
    # own (glibc's) as in jitlib's
    a, _ = pairs(dtype)
    a[:2] = 0, 0j
    f = cpu(lambda a: a ** exponent)
    assert not f.lower(a).compile().fallbacks
    with np.errstate(all="ignore"):
        got, want = f(a), a ** exponent
    assert same_or_both_nan(got[:2], want[:2])
    eps = np.finfo(PART[dtype]).eps
    size = 1 + np.abs(exponent * np.log(a[2:].astype(np.complex128)))
    assert np.all(np.abs(got[2:] - want[2:]) <= 16 * eps * size * np.abs(want[2:]))


def across_magnitudes(dtype, n=4000, seed=4):
    """Parts from 1e-17 to 1e17 of either sign, ordinary values, parts just off glibc's
    thresholds (an imaginary part of 1, 1.5, 0.999 beside tiny real parts) and values near
    the unit circle."""
    rng = np.random.default_rng(seed)
    parts = rng.choice([-1, 1], (2, n)) * np.exp(rng.uniform(-40, 40, (2, n)))
    near_axis = (rng.choice([-1, 1], n) * np.exp(rng.uniform(-60, 0, n))
                 + 1j * rng.choice([-1, 1, 1.5, 0.999, 1.001, 1 + 1e-7], n))
    circle = np.exp(1j * rng.uniform(-4, 4, n)) * (1 + rng.standard_normal(n) * 1e-3)
    return np.concatenate([parts[0] + 1j * parts[1], 2 * rng.standard_normal(n)
                           + 2j * rng.standard_normal(n), near_axis, circle]).astype(dtype)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("fn", [np.arcsinh, np.arcsin, np.arccos, np.arccosh, np.arctanh,
                                np.arctan])
def test_inverse_functions_are_glibcs_across_magnitudes(dtype, fn):
    # glibc's casinh (its kernel's cases: near the axes, near |Im| = 1, past 1/eps) and
    # catanh, case for case: within 5 ulps of NumPy's (the measured worst, from jitlib's
    # log, log1p, atan2 and hypot against glibc's); on the threshold values themselves
    # and their neighbours within 3
    z = across_magnitudes(dtype)
    info = np.finfo(PART[dtype])
    edges = np.array([0.5, 1.5, 1.0, info.eps / 8, info.eps, info.eps ** 2, 1 / info.eps,
                      16 / info.eps, 0.75, info.max, info.tiny, 1e-3, 0.9999], PART[dtype])
    edges = np.concatenate([edges, np.nextafter(edges, 0), np.nextafter(edges, np.inf)])
    edges = grid(np.concatenate([edges, -edges]), dtype)
    f = cpu(fn)
    assert not f.lower(z).compile().fallbacks
    with np.errstate(all="ignore"):
        assert ulps(f(z), fn(z)).max() <= 5
        got, want = f(edges), fn(edges)
    assert ulps(got, want).max() <= 3


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("fn", [np.arcsinh, np.arcsin, np.arccos, np.arccosh, np.arctanh,
                                np.arctan])
def test_inverse_functions_special_values_keep_the_sign_of_zero(dtype, fn):
    # glibc's special cases (infinite and NaN parts, zeros) exactly, the signs of zero
    # parts included
    z = grid(np.concatenate([SPECIAL, [0.75, 3.0, -30.0, 2.0, -0.5]]), dtype)
    with np.errstate(all="ignore"):
        got, want = cpu(fn)(z), fn(z)
    for g, w in ((got.real, want.real), (got.imag, want.imag)):
        exact = ~np.isfinite(w) | (w == 0)
        assert same_or_both_nan(g[exact], w[exact]), z[exact][g[exact] != w[exact]]
        signed = exact & ~np.isnan(w)
        assert np.array_equal(np.signbit(g[signed]), np.signbit(w[signed])), \
            z[signed][np.signbit(g[signed]) != np.signbit(w[signed])]
    assert ulps(got, want)[np.isfinite(want)].max() <= 3


def test_a_program_of_inverse_functions_and_powers_is_all_compiled():
    # a catalogue program: arcsinh, arctan and a computed power of complex arrays, each
    # compiled on the cpu backend (no kernel left to the interpreter)
    rng = np.random.default_rng(6)
    z = rng.standard_normal(1000) + 1j * rng.standard_normal(1000)
    w = rng.standard_normal(1000) / 4 + 1j * rng.standard_normal(1000) / 4

    def f(z, w):
        u = np.arcsinh(z) * 2 + np.arctan(z / 3)
        return u, np.arccos(u.conj()).imag, (z * 0.5) ** w
    lowered = cpu(f).lower(z, w)
    assert not lowered.compile().fallbacks, lowered.as_text("optimized")
    check_backends(f, z, w, backends=("interpreter", "cpu"))


def test_a_program_of_lowered_ops_is_all_compiled_and_fast_paths_keep_values():
    rng = np.random.default_rng(5)
    x = rng.standard_normal(1000)
    z = rng.standard_normal(1000) + 1j * rng.standard_normal(1000)

    def f(z, x):
        wave = np.exp(1j * x) * z + z / 3
        return np.abs(wave) ** 2, wave.conj(), (wave == z).any()
    f_cpu = cpu(f)
    lowered = f_cpu.lower(z, x)
    assert not lowered.compile().fallbacks, lowered.as_text("optimized")
    check_backends(f, z, x, backends=("interpreter", "cpu"))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_views_scalars_and_conversions(dtype):
    a, b = pairs(dtype, n=64)
    check_backends(lambda a, b: (a[::2] * b[1::2], a.reshape(8, 8).T * b[0],
                                 (a * b).astype(np.complex128 if dtype is np.complex64
                                                else np.complex64),
                                 a.real.astype(np.int32), a.astype(bool), a[3] / b[5]),
                   a, b, backends=("interpreter", "cpu"))


def test_an_argument_written_in_place_keeps_numpys_values():
    def f(z, w):
        z *= w
        z[:4] = z[:4].conj() / 2
        return z.sum()
    a, b = pairs(np.complex128, n=16)
    check_backends(f, a, b, backends=("interpreter", "cpu"))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_a_kernel_written_over_its_complex_argument_reads_each_pair_first(dtype):
    # the parts swapped in place: the kernel's output is the argument's own memory, and
    # the imaginary part is computed from the real part the first store replaces
    def swap(z, w):
        z[...] = z.imag + 1j * z.real
        w *= np.exp(1j * w.real)
    a, b = pairs(dtype, n=1000)
    f = cpu(swap)
    lowered = f.lower(a.copy(), b.copy())
    assert "overwrites" in lowered.as_text("optimized")
    assert not lowered.compile().fallbacks
    got, want = (a.copy(), b.copy()), (a.copy(), b.copy())
    f(*got)
    swap(*want)
    assert np.array_equal(got[0], want[0])
    # the product in place has the bits of the same product into a new array
    assert np.array_equal(got[1], cpu(lambda w: w * np.exp(1j * w.real))(b))


def test_a_complex_kernel_loads_every_part_before_it_stores_one():
    # in place, a store of one part may land on memory the other part still has to read:
    # the rendered loop (conj's real part alone reads the real half) loads both first
    def conj_in_place(z):
        np.conjugate(z, out=z)
    z = pairs(np.complex128, n=64)[0]
    text = cpu(conj_in_place).lower(z).as_text("kernels")
    body = text[text.index("loop1:"):text.index("latch2:")].splitlines()
    loads = [k for k, line in enumerate(body) if " = load " in line]
    stores = [k for k, line in enumerate(body) if line.strip().startswith("store ")]
    assert loads and stores and max(loads) < min(stores), text


def test_ops_without_a_real_form_are_named():
    z = B.parameter(0, (4,), np.complex128)
    for op, value in ((Op.RSQRT, B.unary(Op.RSQRT, z)),
                      (Op.REDUCE_PROD, B.reduce(Op.REDUCE_PROD, z, (0,))),
                      (Op.CUMSUM, B.cumulative(Op.CUMSUM, z, 0))):
        with pytest.raises(complex_lowering.NotLowered, match=op.value):
            complex_lowering.lower(Module("c", [z], [value]))


def test_the_lowered_body_reads_and_writes_the_complex_buffers_bytes():
    z = B.parameter(0, (3,), np.complex64)
    body = complex_lowering.lower(Module("c", [z], [B.unary(Op.CONJ, z)]))
    (param,), (result,) = body.params, body.results
    assert (param.shape, param.dtype, result.shape, result.dtype) == \
        ((3, 2), np.float32, (3, 2), np.float32)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("axis", [None, 0, -1])
def test_complex_sums_compile_as_sums_of_real_pairs(dtype, axis):
    a, b = (x.reshape(60, 50) for x in pairs(dtype))
    f = lambda a, b: (a * b.conj()).sum(axis=axis)   # noqa: E731
    assert not cpu(f).lower(a, b).compile().fallbacks
    check_backends(f, a, b, backends=("interpreter", "cpu"))


def test_work_on_a_complex_sum_and_complex_outputs_leave_the_reduction_kernel():
    # a reduction kernel computes each output element alone, so it cannot read both
    # parts of one sum (a mean's division, abs), write a complex value of its full shape,
    # or sum complex pairs beside real rows: fusion puts those in kernels of their own,
    # and every kernel compiles
    a, b = pairs(np.complex128)
    f = lambda a, b: ((a / b).mean(), np.abs(a.sum()), a * 2, (a * 2).real.max(),   # noqa: E731
                      b.imag.min())
    lowered = cpu(f).lower(a, b)
    assert not lowered.compile().fallbacks, lowered.as_text("optimized")
    check_backends(f, a, b, backends=("interpreter", "cpu"))


@pytest.mark.parametrize("n", [0, 3, 5, 13, -2, -7])
def test_integer_powers_as_numpys_repeated_squaring(n):
    a, _ = pairs(np.complex128, n=200)
    a[:2] = 0                                  # 0 ** n: 0, or nan+nanj for negative n
    f = cpu(lambda a: a ** n)
    assert not f.lower(a).compile().fallbacks
    with np.errstate(all="ignore"):
        want = a ** n
    got = f(a)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=0, equal_nan=True)
    assert same_or_both_nan(got[:2], want[:2])


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_computed_exponents_compile_as_numpys_npy_cpow(dtype):
    # the IR's pow (the interpreter's): at b = 2, 0.5, -1 eager NumPy's scalar paths (z*z,
    # sqrt, reciprocal), elsewhere element by element NumPy's npy_cpow (np.power's loop):
    # b = 0 gives 1, a = 0 gives 0
    # or nan+nanj, an integral real b (|b| < 100) repeated squaring, the same bits; any
    # other b glibc's cpow, exp(b log a), within 16 ulps of |a ** b| times 1 + |b log a|
    # (measured: 1.6 of those units), as for a constant exponent
    a, b = pairs(dtype)
    rng = np.random.default_rng(8)
    b[:1200] = rng.integers(-99, 100, 1200)
    b[1200:1300] = rng.choice([100, -100, 99.5, 0.5, -1, 2, 1, 3, 1e-3, 0], 100)
    a[:30], b[:10] = 0, 0
    f = cpu(lambda a, b: a ** b)
    assert not f.lower(a, b).compile().fallbacks
    with np.errstate(all="ignore"):
        got, want = f(a, b), interpreted(lambda a, b: a ** b)(a, b)
    # (z * z at b = 2 rounds each product term, where NumPy's multiply fuses an fma:
    # within an ulp of the larger term, so among the approximate ones)
    direct = (a == 0) | (b == 0) | ((b.imag == 0) & (np.abs(b.real) < 100)
                                    & (b.real == np.round(b.real)) & (b != 2))
    assert direct.sum() > 1000 and same_or_both_nan(got[direct], want[direct])
    rest = ~direct & np.isfinite(want)
    eps = np.finfo(PART[dtype]).eps
    size = 1 + np.abs(b[rest] * np.log(a[rest].astype(np.complex128)))
    assert np.all(np.abs(got[rest] - want[rest]) <= 16 * eps * size * np.abs(want[rest]))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_computed_exponents_special_values(dtype):
    # every special base against every special exponent: NumPy's infinities, NaNs and
    # zeros exactly; finite values as above. Exponents of 1e300 are left out: there the
    # imaginary part of b log a has an ulp of many turns, and an infinite result's sign
    # is the cosine of a rounding difference in log a
    a = grid(np.concatenate([SPECIAL, [0.75, 3.0, 800.0, -30.0]]), dtype)
    b = grid([0.0, -0.0, 1.0, -1.5, np.inf, -np.inf, np.nan, 1e-310, 0.75, 3.0, 2.0, -30.0],
             dtype)
    a, b = np.repeat(a, b.size), np.tile(b, a.size)
    with np.errstate(all="ignore"):
        got, want = cpu(lambda a, b: a ** b)(a, b), interpreted(lambda a, b: a ** b)(a, b)
    # (z * z at b = 2 rounds each product term, where NumPy's multiply fuses an fma:
    # within an ulp of the larger term, so among the approximate ones)
    direct = (a == 0) | (b == 0) | ((b.imag == 0) & (np.abs(b.real) < 100)
                                    & (b.real == np.round(b.real)) & (b != 2))
    assert same_or_both_nan(got[direct], want[direct])
    for g, w in ((got.real, want.real), (got.imag, want.imag)):
        # (at b = 2 an overflowing product term is where NumPy's fma and the rounded
        # terms part: NumPy's (1e300+infj)**2 is -inf+infj, the terms' nan+infj)
        exact = (~np.isfinite(w) | (w == 0)) & (b != 2)
        assert same_or_both_nan(g[exact], w[exact])
    finite = np.isfinite(want) & (want != 0) & ~direct
    eps = np.finfo(PART[dtype]).eps
    size = 1 + np.abs(b[finite] * np.log(a[finite].astype(np.complex128)))
    assert np.all(np.abs(got[finite] - want[finite]) <= 16 * eps * size * np.abs(want[finite]))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("divisor", [3, -0.5j, 2 - 7j, 1e-30 + 4e20j, 0, np.inf, np.nan,
                                     complex(np.inf, 1), complex(0.0, -0.0)])
def test_division_by_a_constant_is_numpys_to_the_bit(dtype, divisor):
    # the branch, ratio and scale are chosen when the kernel is built: no division left
    a, _ = pairs(dtype, n=400)
    z = grid(SPECIAL, dtype)
    a = np.concatenate([a, z])
    d = dtype(divisor)
    with np.errstate(all="ignore"):
        want = a / d
    assert same_or_both_nan(cpu(lambda a: a / d)(a), want)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_division_by_a_real_array_is_numpys_to_the_bit(dtype):
    a, _ = pairs(dtype, n=400)
    z = grid(SPECIAL, dtype)
    a = np.concatenate([a, z])
    r = np.resize(np.concatenate([SPECIAL, [2.0, -3.0, 1e-20]]), a.size).astype(PART[dtype])
    with np.errstate(all="ignore"):
        want = a / r
    assert same_or_both_nan(cpu(lambda a, r: a / r)(a, r), want)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_square_roots_are_c99s_csqrt(dtype):
    # within 2 ulps of NumPy's (glibc's csqrt) from tiny to huge parts; the special
    # values (zeros with their signs, infinities, NaNs) exactly as C99 gives them
    rng = np.random.default_rng(9)
    scale = np.exp(rng.uniform(-30, 30, (2, 4000)))
    a = (rng.standard_normal(4000) * scale[0] + 1j * rng.standard_normal(4000) * scale[1])
    finfo = np.finfo(PART[dtype])
    a = np.concatenate([a.astype(dtype), (finfo.max * np.array([1, -1, 1j, -0.5 - 1j]))
                        .astype(dtype)])
    f = cpu(np.sqrt)
    assert not f.lower(a).compile().fallbacks
    assert ulps(f(a), np.sqrt(a)).max() <= 2
    z = grid([0.0, -0.0, 2.0, -1.5, np.inf, -np.inf, np.nan, 1e-310, 1e-40], dtype)
    with np.errstate(all="ignore"):
        got, want = f(z), np.sqrt(z)
    exact = (z == 0) | ~np.isfinite(z)   # finite ones: within the ulps above
    for g, w in ((got.real, want.real), (got.imag, want.imag)):
        g, w = g[exact], w[exact]
        assert np.array_equal(np.isnan(g), np.isnan(w))
        keep = ~np.isnan(w)
        assert np.array_equal(g[keep], w[keep]) and \
            np.array_equal(np.signbit(g[keep]), np.signbit(w[keep]))


def test_parts_folded_to_constant_arrays_become_broadcast_scalars():
    # x * 0j: the parts' 0 * 0 over the shape folds to a constant array, which a kernel
    # cannot hold; the lowering broadcasts its one value instead
    rng = np.random.default_rng(2)
    x, z = rng.standard_normal(9), rng.standard_normal(9) + 1j * rng.standard_normal(9)
    f = lambda x, z: x * 0j + z * (1 - 2j)   # noqa: E731
    assert not cpu(f).lower(x, z).compile().fallbacks
    check_backends(f, x, z, backends=("interpreter", "cpu"))


def test_saved_programs_are_keyed_by_every_module_the_cpu_kernels_come_from():
    # a saved program must not outlive a change to the code that rendered it: every
    # jitlib module loaded to render a complex kernel lies under CODEGEN_SOURCES
    import os
    import sys
    from jitlib.backends.llvm.compiler import CODEGEN_SOURCES
    a, b = pairs(np.complex64, n=8)
    cpu(lambda a, b: np.sqrt(a * b) / 3).lower(a, b).compile()
    root = os.path.dirname(jitlib.__file__)
    for name in ("jitlib.backends.complex_lowering", "jitlib.backends.elemental",
                 "jitlib.backends.llvm.kernels", "jitlib.fusion.pipeline"):
        path = os.path.relpath(sys.modules[name].__file__, root)
        assert any(path.startswith(folder + os.sep) for folder in CODEGEN_SOURCES), path
