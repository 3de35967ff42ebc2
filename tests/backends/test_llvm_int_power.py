"""x**n with a constant integer n on the cpu backend: products instead of pow.

The reference is the exact power rounded once to the dtype (Python's rationals: int / int
rounds correctly, subnormals included). NumPy's own float32 and float64 powers are up to
1 ulp off it (which ulp depends on the host's SIMD loops), so NumPy is the reference
only for zeros, infinities and NaN.
"""
from fractions import Fraction

import numpy as np
import pytest

import jitlib

pytest.importorskip("llvmlite.binding")

EXPONENTS = (-64, -7, -3, -2, -1, 2, 3, 4, 5, 13, 64)
SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.0, -0.5, 1e-30, -1e30]


def _power(n):
    return jitlib.jit(lambda x: x ** n, backend="cpu")


def _samples(dtype):
    rng = np.random.default_rng(7)
    spread = 30.0 if dtype == np.float32 else 300.0
    x = np.exp(rng.uniform(-spread, spread, 1000) / 10) * rng.choice([-1.0, 1.0], 1000)
    return np.concatenate([rng.standard_normal(1000), x]).astype(dtype)


def _exact(x, n):
    """x**n rounded once to x's dtype (to nearest, ties to even)."""
    out = np.empty_like(x)
    for i, v in enumerate(x):
        p = Fraction(float(v)) ** n
        try:
            with np.errstate(over="ignore"):
                guess = x.dtype.type(p.numerator / p.denominator)   # within an ulp
        except OverflowError:
            guess = x.dtype.type(np.inf if p > 0 else -np.inf)
        if not np.isfinite(guess):       # past the largest finite value and its half ulp
            out[i] = guess
            continue
        best = None
        with np.errstate(over="ignore"):
            near = [np.nextafter(guess, x.dtype.type(-np.inf)), guess,
                    np.nextafter(guess, x.dtype.type(np.inf))]
        for c in near:
            if not np.isfinite(c):
                continue
            key = (abs(Fraction(float(c)) - p), int(c.view(f"u{x.itemsize}")) & 1)
            if best is None or key < best[0]:
                best = (key, c)
        out[i] = best[1]
    return out


def _ulps(got, want):
    """|got - want| in units of want's last place (0 where both are equal or NaN)."""
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    gap = np.abs(got.astype(np.float64) - want.astype(np.float64))
    return np.where(same, 0, gap / np.spacing(np.abs(want)).astype(np.float64))


@pytest.mark.parametrize("n", EXPONENTS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_integer_power_is_within_half_an_ulp_of_the_exact_power(dtype, n):
    x = _samples(dtype)
    want = _exact(x, n)
    got = _power(n)(x)
    ulps = _ulps(got, want)
    if dtype == np.float32:
        # float runs in double, so each result is the correctly rounded one
        assert ulps.max() == 0, (x[ulps > 0][:5], got[ulps > 0][:5], want[ulps > 0][:5])
    else:
        # double-double: correctly rounded but for the odd result in the subnormal range
        off = ulps > 0
        assert ulps.max() <= 1 and (np.abs(want[off]) < 1e-300).all(), (x[off], got[off])


@pytest.mark.parametrize("n", EXPONENTS)
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_integer_power_special_values_are_numpys(dtype, n):
    x = np.array(SPECIAL, dtype)
    with np.errstate(all="ignore"):
        want = x ** dtype(n)
    if dtype != np.float16:
        # NumPy's SIMD float64 pow on AVX-512 hosts is 1 ulp off for 1e-30**-7: the
        # finite values are held to the exact power, as in the test above
        finite = np.isfinite(x) & (x != 0)
        want[finite] = _exact(x[finite], n)
    got = _power(n)(x)
    np.testing.assert_array_equal(got, want)
    assert (np.signbit(got) == np.signbit(want)).all(), (x, got, want)


@pytest.mark.parametrize("n", [3, -3])
def test_integer_power_kernel_calls_no_pow(n):
    x = np.ones(256, np.float32)
    text = _power(n).lower(x).as_text("kernels")
    assert "fmul double" in text and "jl_pow" not in text, text


def test_non_integer_exponent_still_calls_pow():
    x = np.ones(256, np.float32)
    assert "jl_pow" in _power(2.5).lower(x).as_text("kernels")
