"""Reductions on the LLVM backend: the vectorized float max/min and the order of sums.

Float max/min run in vector lanes (llvm.maximum/minimum) and fold the row again in order
only when the result is NaN or a zero (kernels.py, `float_extreme`). These tests use rows
long enough for the vector loop and put NaNs, infinities and zeros of both signs where
each path is taken. The interpreter (np.max) is the reference wherever its answer does
not depend on NumPy's own SIMD layout; where the row's extreme is a zero of both signs,
the documented rule is the left fold of np.maximum / np.minimum.
"""
import functools

import numpy as np
import pytest

from jitlib.backends.llvm import LLVMBackend
from jitlib.hlo import Module, Op, build as B, dtypes
from jitlib.hlo.interpreter import evaluate

LLVM = LLVMBackend()
FLOATS = {"f16": np.dtype(np.float16), "bf16": dtypes.bfloat16,
          "f32": np.dtype(np.float32), "f64": np.dtype(np.float64)}
EXTREMES = {Op.REDUCE_MAX: np.maximum, Op.REDUCE_MIN: np.minimum}


def _bits_equal(got, want, what):
    g, w = got.astype(np.float64), want.astype(np.float64)
    np.testing.assert_array_equal(g, w, err_msg=what)      # NaN equals NaN here
    zero = w == 0
    np.testing.assert_array_equal(np.signbit(g[zero]), np.signbit(w[zero]),
                                  err_msg=f"{what}: sign of zero")


def _rows(dt, cols, seed):
    """One row per case the two paths must get right, `cols` long."""
    rng = np.random.default_rng(seed)
    rows = rng.normal(0, 3, (10, cols))
    rows[1, cols // 2] = np.nan                    # one NaN in the middle
    rows[2, [min(3, cols - 1), cols - 1]] = np.nan  # NaN near both ends
    rows[3, 0] = np.inf                            # infinities at the edges
    rows[3, -1] = -np.inf
    rows[4] = -np.abs(rows[4])                     # max is a +0 (min is some negative)
    rows[4, cols // 3] = 0.0
    rows[5] = np.abs(rows[5])                      # min is a -0
    rows[5, cols // 4] = -0.0
    rows[6] = -np.inf                              # all infinite: the identity's edge
    rows[7, :] = 7.0                               # all equal
    rows[8, -3:] = 1e30                            # the extreme in the unrolled tail
    rows[9, :] = rows[9, ::-1]
    with np.errstate(over="ignore"):
        return rows.astype(dt)


@pytest.mark.parametrize("name", list(FLOATS))
@pytest.mark.parametrize("cols", [1, 7, 1000, 4099])
def test_float_max_min_match_the_interpreter(name, cols):
    x = _rows(FLOATS[name], cols, cols)
    p = B.parameter(0, x.shape, x.dtype)
    module = Module("extremes", [p], [B.reduce(op, p, (1,)) for op in EXTREMES])
    exe = LLVM.compile(module)
    assert not exe.fallbacks
    for op, got, want in zip(EXTREMES, exe(x), evaluate(module, [x])):
        _bits_equal(got, want, f"{op} of {name}[10, {cols}]")


@pytest.mark.parametrize("name", list(FLOATS))
def test_zeros_of_both_signs_follow_the_left_fold(name):
    # the extreme of every row is a zero of both signs, in varying order
    rng = np.random.default_rng(7)
    signs = rng.random((16, 513)) < 0.5
    x = np.where(signs, -0.0, 0.0)
    x[:, ::5] = -1.5
    x[::2] = -x[::2]                   # even rows: min is the zero, odd rows: max is
    x[0, :] = x[0, ::-1]
    x = x.astype(FLOATS[name])
    p = B.parameter(0, x.shape, x.dtype)
    module = Module("zeros", [p], [B.reduce(op, p, (1,)) for op in EXTREMES])
    for (op, rule), got in zip(EXTREMES.items(), LLVM.compile(module)(x)):
        want = np.array([functools.reduce(rule, row) for row in x], x.dtype)
        _bits_equal(got, want, f"{op} of {name}")


def test_extremes_inside_a_fused_row_kernel():
    # softmax's max feeds the exp of the same kernel; NaN rows stay NaN rows
    x = _rows(np.float32, 777, 3)

    def softmax(x):
        e = np.exp(x - np.max(x, axis=-1, keepdims=True))
        return e / np.sum(e, axis=-1, keepdims=True)

    import jitlib
    module = jitlib.make_ir(softmax)(x)
    exe = LLVM.compile(module)
    assert not exe.fallbacks
    (got,), (want,) = exe(x), evaluate(module, [x])
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-30)
