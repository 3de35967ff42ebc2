"""Bugs the differential fuzzer found in the generated Triton, each as a program run under
Triton's interpreter (against jitlib's interpreter) and compiled for sm_90: both paths
go through Triton's own type rules and checks, which is where these went wrong.

- `x[k]` with a traced scalar `k`: every lane reads one address, computed from data;
  tl.load refused the tile's block mask on that scalar pointer. Also inside a row picked
  by `k` (`(m + v[:, None])[k]` reads `v[k]`, uniform, beside a varying column).
- the same through a dynamic_slice whose window is one element.
- max/min rows of 8/16-bit integers: Triton reduces them in int32, so `-max(u8)` became
  a negative int32 and compared as one, instead of wrapping in uint8.
- float negation: Triton's unary minus is `0 - x`, so -(+0.0) came out +0.0.
- a -0.0 literal: tl.full turns any value equal to 0 into a null (+0.0) constant.
- a reduction over a 1x1 input that also stores its row: one address, a block mask.
- f16 arithmetic rounded only its last operand: `a + b.to(f16)` for `(a + b).to(f16)`.
- an f64 dot of a widened f16 operand does not lower in Triton 3.6 (sm_90): not generated.
- np.sign(-0.0) is +0.0 in NumPy (bf16's ml_dtypes keeps -0.0); the kernel returned -0.0.
- a fused module holding a dot that sums nothing (the optimizer rewrites those first).
- a dot operand that is one broadcast element filled its whole tile, contraction padding
  included: a 1x1 @ 1x1 product summed the square BK times; and one broadcast from a
  loaded element reached tl.dot as a scalar.
- shapes with a zero extent: working out an index divided by the zero stride.
- np.maximum(0.5, x) in f64: the NaN test of the literal, `0.5 != 0.5`, failed in
  Triton's interpreter on a 0-d value; a literal is never NaN, so no test is written.
"""
import numpy as np
import pytest

from test_triton_aot import compile_sm90
from triton_cases import rendered, traced
from jitlib.backends.triton import TritonBackend
from jitlib.backends.triton.host import HostDevice
from jitlib.hlo import build as B
from jitlib.hlo.interpreter import evaluate
from jitlib.hlo.ir import Module
from jitlib.hlo.ops import Op

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
GPU = TritonBackend(HostDevice())


def _agrees(fn, *args):
    _agrees_module(traced(fn, args), *args)


def _agrees_module(module, *args):
    for fusion, kernel in rendered(module):
        assert not isinstance(kernel, str), f"{fusion.attrs['name']}: {kernel}"
        compile_sm90(kernel)
    exe = GPU.compile(module)
    assert exe.device.interpreted
    got, want = exe(*args), evaluate(module, list(args))
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == w.dtype
        # exact, but for the float sum, whose order is the kernel's
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-6, atol=1e-6,
                                   err_msg=exe.kernel_sources())


@pytest.mark.parametrize("k", [3, -2, 9, -40])
def test_a_traced_scalar_index_reads_one_address_for_the_whole_tile(k):
    x, y = np.arange(5.0, dtype=np.float32), np.linspace(-1, 1, 7, dtype=np.float32)
    _agrees(lambda x, y, k: (x[k] * y, x[k], np.sum(x[k] * y), x.reshape(5, 1)[k] + y,
                             (x > 2)[k], np.maximum(x[:, None], y)[k]), x, y, np.int64(k))


def test_a_scalar_dynamic_slice_reads_one_address():
    x = B.parameter(0, (3, 4), np.float64, "x")
    i = B.parameter(1, (), np.int32, "i")
    y = B.parameter(2, (1, 5), np.float64, "y")
    window = B.dynamic_slice(x, [i, i], (1, 1))
    spread = B.broadcast_in_dim(B.reshape(window, ()), (1, 5), ())
    module = Module("f", [x, i, y], [B.binary(Op.MUL, spread, y)])
    for start in (2, -1, 7):
        _agrees_module(module, np.arange(12.0).reshape(3, 4), np.int32(start),
                       np.linspace(1, 2, 5).reshape(1, 5))


@pytest.mark.parametrize("dt", [np.uint8, np.int8, np.uint16, np.int16])
def test_small_integer_row_extremes_keep_their_type(dt):
    info = np.iinfo(dt)
    a = np.array([[info.max, 3, info.min + 1], [5, info.min, 2]], dt)
    _agrees(lambda a: (np.maximum(dt(2), -a.max(axis=1)), -a.min(axis=1), a.argmax(axis=1),
                       a.max(axis=1) + a.min(axis=1)), a)


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64])
def test_negating_zero_flips_its_sign(dt):
    x = np.array([0.0, -0.0, 1.5, -np.inf, np.nan], dt)
    module = traced(lambda x: (-x, np.negative(x) * 2), (x,))
    exe = GPU.compile(module)
    for g, w in zip(exe(x), evaluate(module, [x])):
        g = np.asarray(g)
        np.testing.assert_array_equal(g, w)   # NaN's sign is left to the hardware
        np.testing.assert_array_equal(np.signbit(g[:4]), np.signbit(w[:4]))


@pytest.mark.parametrize("n", [1, 3])
def test_a_broadcast_element_as_a_dot_operand_pads_its_tile_with_zeros(n):
    x = np.array([0.2515], np.float16)
    _agrees(lambda x: x.reshape(1, 1) @ x.reshape(1, 1), x)
    row = np.array([[0.2515, 3.0, -1.0]], np.float16)
    _agrees(lambda r: r.T[:1, :1] @ r.T[:1, :1], row)   # one element through views
    w = np.linspace(-1, 1, 4 * n, dtype=np.float32).reshape(n, 4)
    _agrees(lambda s, w: np.full((2, n), 1.0, np.float32) * s @ w, np.float32(0.75), w)


def test_empty_shapes_compute_no_index():
    a = np.ones((3, 3, 3), bool)
    _agrees(lambda a: np.argmax(~a[:0, :0].reshape(1, 0, 0, 3), axis=0).reshape(1, 0, 0, 3),
            a)
    _agrees(lambda a: (a[:, :0] * 2.0).sum(axis=1), a)


def test_max_against_a_float_literal():
    b = np.array([True, False, True])
    _agrees(lambda b: (np.maximum(0.5, -(2 + b.astype(np.int64)).astype(np.float64)),
                       np.minimum(-np.inf, b * 1.0), np.maximum(np.float32(2.5), b * 3)), b)


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64])
def test_negative_zero_literals_keep_their_sign(dt):
    x = np.array([0.25, -3.0, 0.0], dt)
    module = traced(lambda x: (np.where(x > 0, x, -0.0), np.remainder(x, -x)), (x,))
    exe = GPU.compile(module)
    for g, w in zip(exe(x), evaluate(module, [x])):
        g = np.asarray(g)
        np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(np.signbit(g), np.signbit(w), err_msg=exe.kernel_sources())


def test_a_one_element_row_is_stored_beside_its_sum():
    x = np.array([[2.5]], np.float32)
    _agrees(lambda x: ((x * 2.0) @ x, (x * 2.0).sum(axis=0)), x)


def test_16_bit_arithmetic_rounds_the_whole_expression():
    x = np.array([0.2515, 1.0e-3, 700.3], np.float16)
    _agrees(lambda x: ((2 + x).astype(np.float32), (x * x - x).astype(np.float64)), x)


def test_an_f64_dot_of_widened_f16_runs_on_the_interpreter():
    a = np.linspace(-1, 1, 6).reshape(2, 3)
    h = np.linspace(0, 2, 9, dtype=np.float16).reshape(3, 3)
    module = traced(lambda a, h: a @ h.astype(np.float64), (a, h))
    reasons = [k for _, k in rendered(module) if isinstance(k, str)]
    assert reasons == ["an f64 dot of 16-bit operands widened inside the kernel"]
    exe = GPU.compile(module)
    np.testing.assert_allclose(np.asarray(exe(a, h)[0]), evaluate(module, [a, h])[0],
                               rtol=1e-15)


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64])
def test_sign_of_negative_zero_is_positive_zero(dt):
    x = np.array([-0.2642, -0.0, 0.0, np.nan, 3.0], dt)
    module = traced(lambda x: (np.sign(np.ceil(x)), np.sign(x)), (x,))
    exe = GPU.compile(module)
    for g, w in zip(exe(x), evaluate(module, [x])):
        g = np.asarray(g)
        np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(np.signbit(g[:3]), np.signbit(w[:3]))


def test_a_fused_dot_that_sums_nothing_is_not_generated():
    x = B.parameter(0, (2,), np.float16, "x")
    dot = B.dot_general(x, x, (), (), (0,), (0,))
    body = Module("fused_0", [x], [dot])
    fusion = B.make(Op.FUSION, [x], dict(body=body, kind="dot", name="fused_0"))
    module = Module("f", [x], [fusion])
    a = np.array([1.5, -0.0], np.float16)
    exe = GPU.compile(module)
    assert "fused_0" in exe.fallbacks and "sums nothing" in exe.fallbacks["fused_0"]
    np.testing.assert_array_equal(np.asarray(exe(a)[0]), evaluate(module, [a])[0])
