"""sin, cos and tan on the CPU backend: mathlib's vectorized code where its reduction is
accurate, libm for the lanes past `wide_math.LIMIT` (jitlib/backends/llvm/wide_math.py).

Checked: the kernel's loop is vectorized and calls the vector form once per vector (no
per-element libm call); results within 1 ulp of a long-double reference over random bit
patterns (huge arguments included), near the bound, and in vectors that mix near and far
lanes; NaN, inf and signed zeros as NumPy; loops LLVM leaves scalar."""
import re

import numpy as np
import pytest

import jitlib
from jitlib.backends.llvm import kernels, wide_math
from jitlib.backends.llvm.compiler import get_compiler
from jitlib.fusion import optimize
from jitlib.hlo import Op

FUNCTIONS = {"sin": np.sin, "cos": np.cos, "tan": np.tan}
DTYPES = (np.float32, np.float64)
_INT = {np.dtype(np.float32): np.int32, np.dtype(np.float64): np.int64}


def _ulps(got, want):
    """Per-element distance in units in the last place; 0 where both are NaN."""
    it = _INT[got.dtype]
    ordered = lambda a: np.where(a.view(it) < 0, np.iinfo(it).min - a.view(it),  # noqa: E731
                                 a.view(it))
    g, w = ordered(got), ordered(want)
    same_side = (g < 0) == (w < 0)
    with np.errstate(over="ignore"):
        within = np.abs(np.where(same_side, g - w, 0)).astype(np.float64)   # rounded if huge
    across = np.abs(g).astype(np.float64) + np.abs(w).astype(np.float64)
    d = np.where(same_side, within, across)
    return np.where(np.isnan(got) & np.isnan(want), 0.0, d)


def _reference(fn, x):
    with np.errstate(invalid="ignore"):
        return fn(x.astype(np.longdouble)).astype(x.dtype)


def _inputs(dt, n=1 << 15, seed=0):
    dt = np.dtype(dt).type
    rng = np.random.default_rng(seed)
    info = np.finfo(dt)
    width = 32 if dt == np.float32 else 64
    bits = rng.integers(0, 1 << (width - 1), size=n, dtype=np.uint64) * 2 + \
        rng.integers(0, 2, size=n, dtype=np.uint64)
    patterns = bits.astype(np.uint32).view(np.float32) if width == 32 else bits.view(np.float64)
    limit = dt(wide_math.LIMIT["float" if dt == np.float32 else "double"])
    edges = [0.0, -0.0, np.inf, -np.inf, np.nan, limit, -limit, np.nextafter(limit, dt(0)),
             np.nextafter(limit, dt(np.inf)), 1e10, info.max, -info.max, info.tiny, 3.0]
    return np.concatenate([patterns.astype(dt), np.array(edges, dt),
                           rng.uniform(-1e4, 1e4, n).astype(dt)])


def _jit(fn):
    return jitlib.jit(fn, backend="cpu")


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@pytest.mark.parametrize("dt", DTYPES)
def test_within_one_ulp_over_the_whole_range(name, dt):
    fn = FUNCTIONS[name]
    x = _inputs(dt)
    got = _jit(fn)(x)
    err = _ulps(got, _reference(fn, x))
    bad = np.argmax(err)
    assert err.max() <= 1, f"{name}({x[bad]!r}) = {got[bad]!r}, want {_reference(fn, x)[bad]!r}"
    with np.errstate(invalid="ignore"):
        want = fn(x)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    zeros = x == 0
    np.testing.assert_array_equal(np.signbit(got[zeros]), np.signbit(want[zeros]))


@pytest.mark.parametrize("dt", DTYPES)
def test_vectors_mixing_near_and_far_lanes_take_each_lane_from_its_own_path(dt):
    # every third element far past the bound: each vector has lanes of both kinds
    x = np.linspace(-3.0, 3.0, 4099).astype(dt)
    x[::3] = (np.arange(x[::3].size) + 1).astype(dt) * dt(1e7 if dt == np.float32 else 1e16)
    for name, fn in FUNCTIONS.items():
        got = _jit(lambda v: fn(v) * 2.0)(x)
        err = _ulps(got, (_reference(fn, x) * 2).astype(dt))
        assert err.max() <= 1, (name, x[np.argmax(err)])


@pytest.mark.parametrize("size", [1, 3, 17])
def test_short_loops_and_remainders_take_the_scalar_form(size):
    x = np.full(size, 1e20, np.float32)
    x[0] = 0.5
    for fn in FUNCTIONS.values():
        got = _jit(fn)(x)
        assert _ulps(got, _reference(fn, x)).max() <= 1


def _kernel_assembly(fn, x):
    module = optimize(jitlib.make_ir(fn)(x))
    (fusion,) = [i for i in module.instructions if i.op is Op.FUSION]
    ir = kernels.render(fusion).ir
    return ir, get_compiler().assembly(ir)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_the_loop_is_vectorized_and_calls_libm_only_through_the_vector_form(name):
    fn = FUNCTIONS[name]
    ir, asm = _kernel_assembly(lambda v: fn(v) * 2.0 + 1.0, np.ones(1 << 12, np.float32))
    assert "vector-function-abi-variant" in ir and "@llvm.compiler.used" in ir, ir
    # the kernel body calls the vector forms (by address: the large code model), and the
    # per-element libm call lives only in the scalar function and the vector forms' lanes
    kernel = asm[asm.index("\nfused_"):]
    kernel = kernel[:kernel.index(".Lfunc_end")]
    assert re.search(rf"\$jl_{name}_f32_wide_v(8|16)\b", kernel), kernel
    assert re.search(r"\bv(fmadd\d+|mul)ps\s+[^\n]*%[yz]mm", kernel), kernel
    assert f"{name}f" not in kernel, kernel


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@pytest.mark.parametrize("dtype", ["f16", "f32", "f64"])
def test_a_constant_argument_keeps_the_call_whole(name, dtype):
    # sin of an empty max: the kernel passes the identity (-inf) as a constant, and LLVM
    # used to strip the scalar form's arguments, leaving a vector-function-abi-variant
    # that names arguments it no longer had: the vectorizer asserted and the process
    # aborted (found by the fuzzer, 2026-12-03)
    from jitlib.backends.llvm import LLVMBackend
    from jitlib.hlo.interpreter import evaluate
    from jitlib.hlo.parser import parse_module
    module = parse_module(f"""module f(%p0: {dtype}[0,3]) {{
  %0 = {dtype}[3] reduce_max(%p0), dims=[0]
  %1 = {dtype}[3] {name}(%0)
  return (%1)
}}""")
    x = np.zeros((0, 3), {"f16": np.float16, "f32": np.float32, "f64": np.float64}[dtype])
    (got,), (want,) = LLVMBackend().compile(module)(x), evaluate(module, [x])
    np.testing.assert_array_equal(got, want)
    assert np.isnan(got).all()
