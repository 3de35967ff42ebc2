"""The ufuncs composed bit by bit (frexp, ldexp, modf, nextafter, spacing, gcd, lcm,
bitwise_count) as generated Triton kernels, run under Triton's interpreter: exactly the
reference interpreter's results, except that the Triton path's bfloat16 conversions
flush subnormals to zero (in these ufuncs as in every other): those are left out."""
import warnings

import numpy as np
import pytest

from triton_cases import traced
from ufunc_edges import BF16, FLOATS, float_edges, int_edges, same_bits
from jitlib.backends.triton import TritonBackend
from jitlib.backends.triton.host import HostDevice
from jitlib.hlo.interpreter import evaluate

GPU = TritonBackend(HostDevice())


def check(fn, *args):
    module = traced(fn, args)
    exe = GPU.compile(module)
    assert exe.device.interpreted and exe.fallbacks == {}, exe.fallbacks
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        got, want = exe(*args), evaluate(module, args)
    for g, w in zip(got, want):
        if w.dtype == BF16:   # where the answer is a bfloat16 subnormal, Triton's is 0
            tiny = (w != 0) & (np.abs(w.astype(np.float64)) < 2.0 ** -126)
            assert (g[tiny] == 0).all()
            g = np.where(tiny, w, g)
        same_bits(g, w, f"{module}")


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_float_parts_match_the_interpreter(dtype):
    x = float_edges(dtype)
    if dtype == BF16:
        x = x[np.isnan(x) | (x == 0) | (np.abs(x.astype(np.float64)) >= 2.0 ** -126)]
    n = (np.arange(len(x)) * 37 % 90 - 45).astype(np.int32)
    check(lambda x, n: (*np.frexp(x), *np.modf(x), np.spacing(x),
                        np.nextafter(x, x[::-1]), np.ldexp(x, n)), x, n)


@pytest.mark.parametrize("dtype", [np.int8, np.uint32, np.int64, np.uint64], ids=str)
def test_integer_ufuncs_match_the_interpreter(dtype):
    v = int_edges(np.dtype(dtype))
    a, b = np.repeat(v, len(v)), np.tile(v, len(v))
    check(lambda a, b: (np.gcd(a, b), np.lcm(a, b), np.bitwise_count(a)), a, b)
