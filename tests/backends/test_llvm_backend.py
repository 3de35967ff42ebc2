"""The LLVM CPU backend against the reference interpreter.

Each case builds a small module with `jitlib.hlo.build` (or traces a NumPy function),
compiles it with `LLVMBackend`, and compares with `jitlib.hlo.interpreter.evaluate`:
exact ops bit for bit (any NaN equals any NaN; the sign of zero counts), float math
from libm and float accumulations within per-dtype tolerances. Tests also assert which
kernels run as compiled code: the anchor workloads must not touch the interpreter.
"""
import math
import re

import numpy as np
import pytest
from hypothesis import given

import jitlib
import anchors
import programs
from ir_strategies import programs as random_programs
from rounding_cases import ROUND_ONCE_PAIRS, round_once_inputs
from jitlib.backends.llvm import LLVMBackend, kernels
from jitlib.backends.llvm.compiler import get_compiler
from jitlib.backends.llvm.emitter import index_rules, scalar_rules
from jitlib.backends.llvm.executable import InterpretedRunner, make_runner
from jitlib.fusion import optimize
from jitlib.hlo import Module, Op, build as B, dtypes, ops
from jitlib.hlo.interpreter import evaluate
from jitlib.testing import TOLERANCES, assert_allclose_tree, module_inputs

LLVM = LLVMBackend()

DT = {name: dtypes.from_name(name) for name in
      ("bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32",
       "f64")}
INTS = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]
FLOATS = ["f16", "bf16", "f32", "f64"]
ALL = ["bool"] + INTS + FLOATS
SHAPES = [(), (0,), (37,), (3, 5)]

# float results that depend on the math library or on the order of accumulation
APPROX = {Op.EXP, Op.EXPM1, Op.LOG, Op.LOG1P, Op.TANH, Op.LOGISTIC, Op.SIN, Op.COS, Op.TAN,
          Op.POW, Op.ATAN2, Op.REDUCE_SUM, Op.REDUCE_PROD, Op.DOT_GENERAL}
# f16 math rounds each libm result once more: allow a few f16 ulps
RTOL = {"f16": 4e-3, "bf16": 2e-2, "f32": 2e-5, "f64": 1e-12}


# -- helpers

def sample(name, shape, seed=0):
    """Values of dtype `name`, with extremes, zeros of both signs, NaN and inf mixed in."""
    dt, rng, n = DT[name], np.random.default_rng(seed), math.prod(shape)
    if name == "bool":
        return (rng.random(n) < 0.5).reshape(shape)
    if dtypes.is_integer(dt):
        info = np.iinfo(dt)
        special = [info.min, info.max, 0, 1, 2, 7] + ([-1, -7] if info.min < 0 else [])
        common = rng.integers(max(info.min, -50), min(info.max, 50), n, endpoint=True)
        pick = rng.random(n) < 0.3
        values = [special[rng.integers(len(special))] if p else int(c)
                  for c, p in zip(common, pick)]
        wide = np.int64 if info.min < 0 else np.uint64
        return np.array(values, dtype=wide).astype(dt).reshape(shape)
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, 2.5, -2.5, 1e-3,
                        60000.0, 1e30])
    values = np.where(rng.random(n) < 0.3, rng.choice(special, n), rng.normal(0, 3, n))
    with np.errstate(over="ignore"):
        return values.astype(dt).reshape(shape)


def tame(name, shape, seed=0):
    """Finite values near +-1: for sums, products and dots."""
    rng = np.random.default_rng(seed)
    if dtypes.is_float(DT[name]):
        mag = rng.uniform(0.8, 1.25, shape) * rng.choice([-1, 1], shape)
        return mag.astype(DT[name])
    return sample(name, shape, seed)


def run(module, *args, native=True):
    """(llvm results, interpreter results); with `native`, no kernel may fall back."""
    exe = LLVM.compile(module)
    if native:
        assert not exe.fallbacks, exe.fallbacks
    return exe(*args), evaluate(module, list(args))


def assert_exact(got, want, what=""):
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, got.shape)
    if not dtypes.is_float(got.dtype):
        np.testing.assert_array_equal(got, want, err_msg=str(what), strict=True)
        return
    g, w = got.astype(np.float64), want.astype(np.float64)
    np.testing.assert_array_equal(g, w, err_msg=str(what))
    zero = w == 0
    np.testing.assert_array_equal(np.signbit(g[zero]), np.signbit(w[zero]),
                                  err_msg=f"{what}: sign of zero")


def assert_close(got, want, name, what=""):
    assert got.dtype == want.dtype and got.shape == want.shape, what
    g, w = got.astype(np.float64), want.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=f"{what}: NaNs")
    inf = np.isinf(g) | np.isinf(w)
    np.testing.assert_array_equal(g[inf], w[inf], err_msg=f"{what}: infinities")
    finite = ~inf & ~np.isnan(w)
    np.testing.assert_allclose(g[finite], w[finite], rtol=RTOL[name], atol=RTOL[name] * 1e-3,
                               err_msg=str(what))


def check(op, got, want, name, what=""):
    if op in APPROX and dtypes.is_float(DT[name]):
        assert_close(got, want, name, f"{op} {what}")
    else:
        assert_exact(got, want, f"{op} {what}")


def typechecks(make):
    try:
        make()
    except TypeError:
        return False
    return True


# -- coverage of the rule tables

OPAQUE_OPS = ops.CUMULATIVE | {Op.SCATTER, Op.SORT}        # opaque.py, sort_kernel.py
# complex kernels, every fft among them, run on the interpreter (rendered.py says so)
INTERPRETED_OPS = {Op.FFT}
# linear algebra runs on the interpreter (NumPy's and SciPy's LAPACK, linalg_reference.py),
# small LU factors and triangular solves as kernels calling SciPy's (lapack.py)
OPAQUE_OPS |= ops.LINALG
KERNEL_OPS = ops.REDUCE | ops.ARG_REDUCE | {Op.DOT_GENERAL, Op.PARAMETER}   # kernels.py
TOP_LEVEL = ops.KERNEL | ops.CONTROL              # the executable itself (control.py)
# collectives run between compiled stages, by the pmap executor (jitlib/pmap/), never
# inside a kernel
BETWEEN_KERNELS = ops.COLLECTIVE


def test_complex_ops_without_a_real_form_run_on_the_interpreter_with_the_reason():
    z = B.parameter(0, (4,), np.complex64)
    module = Module("c", [z], [B.unary(Op.ABS, B.unary(Op.RSQRT, z))])
    exe = LLVM.compile(module)
    assert list(exe.fallbacks.values()) == ["rsqrt on complex values is not compiled: NumPy "
                                            "computes it"]
    x = (np.arange(4) + 1j).astype(np.complex64)
    assert_allclose_tree(exe(x), evaluate(module, [x]))


def test_every_op_has_a_rule_or_a_documented_fallback():
    handled = (set(scalar_rules) | set(index_rules) | KERNEL_OPS | OPAQUE_OPS | TOP_LEVEL
               | INTERPRETED_OPS | BETWEEN_KERNELS)
    assert handled == set(Op), sorted(set(Op) - handled)


def test_the_gpu_backend_moves_positions_by_the_same_rules():
    # one copy of each index rule (jitlib/backends/elemental.py): a fix reaches both
    from jitlib.backends.elemental import INDEX_RULES
    from jitlib.backends.triton.elemental import index_rules as triton_rules
    assert set(index_rules) == set(triton_rules) == set(INDEX_RULES) | {Op.IOTA}
    for op, rule in INDEX_RULES.items():
        assert index_rules[op] is rule and triton_rules[op] is rule, op


# -- elementwise

@pytest.mark.parametrize("name", ALL)
def test_unary(name):
    xs = [B.parameter(i, shape, DT[name]) for i, shape in enumerate(SHAPES)]
    cases = [(op, x) for x in xs for op in sorted(ops.UNARY - {Op.CONVERT})
             if typechecks(lambda op=op, x=x: B.unary(op, x))]
    module = Module("unary", xs, [B.unary(op, x) for op, x in cases])
    got, want = run(module, *(sample(name, s, i) for i, s in enumerate(SHAPES)))
    for (op, x), g, w in zip(cases, got, want):
        check(op, g, w, name, x.type_str)


def test_unary_special_values():
    x = np.array([-2.5, -0.5, 0.5, 1.5, 2.5, -0.0, np.nan, np.inf], np.float32)
    p = B.parameter(0, x.shape, x.dtype)
    (got,), _ = run(Module("round", [p], [B.unary(Op.ROUND, p)]), x)
    assert_exact(got, np.array([-2, -0.0, 0, 2, 2, -0.0, np.nan, np.inf], np.float32))
    for name in ("f16", "f32", "f64", "bf16"):
        x = np.array([-3.0, -0.0, 0.0, np.nan], DT[name])
        p = B.parameter(0, x.shape, x.dtype)
        got, want = run(Module("sign", [p], [B.unary(Op.SIGN, p)]), x)
        assert_exact(got[0], want[0], name)   # -0 -> +0, except ml_dtypes keeps -0


@pytest.mark.parametrize("name", ALL)
def test_binary(name):
    xs = [B.parameter(i, shape, DT[name]) for i, shape in enumerate(SHAPES * 2)]
    cases = []
    for x, y in zip(xs, xs[len(SHAPES):]):
        cases += [(op, x, lambda op=op, x=x, y=y: B.binary(op, x, y))
                  for op in sorted(ops.BINARY - {Op.COMPARE, Op.COMPLEX})]
        cases += [(Op.COMPARE, x, lambda d=d, x=x, y=y: B.compare(x, y, d))
                  for d in ops.COMPARE_DIRECTIONS]
    cases = [case for case in cases if typechecks(case[2])]
    module = Module("binary", xs, [make() for _, _, make in cases])
    got, want = run(module, *(sample(name, s, i) for i, s in enumerate(SHAPES * 2)))
    for (op, x, _), g, w in zip(cases, got, want):
        check(op, g, w, name, x.type_str)


def test_binary_special_values():
    i8 = np.array([-128, -128, 7, -7, 7, -7, 5, 0], np.int8)
    d8 = np.array([-1, 0, 2, 2, -2, -2, 0, 0], np.int8)
    base = np.array([1, -1, -1, 2, 0, -2, 3, 2], np.int32)
    expo = np.array([-5, -3, -4, -1, -2, 31, 4, 40], np.int32)
    a = np.array([np.nan, 1.0, -0.0, 0.0, 2.0])
    b = np.array([1.0, np.nan, 0.0, -0.0, -np.inf])
    params = [B.parameter(i, v.shape, v.dtype) for i, v in enumerate((i8, d8, base, expo, a, b))]
    p8, q8, pb, pe, pa, pbb = params
    module = Module("special", params, [
        B.binary(Op.DIV, p8, q8), B.binary(Op.REM, p8, q8), B.binary(Op.POW, pb, pe),
        B.binary(Op.MAX, pa, pbb), B.binary(Op.MIN, pa, pbb)])
    got, want = run(module, i8, d8, base, expo, a, b)
    assert_exact(got[0], np.array([-128, 0, 3, -3, -3, 3, 0, 0], np.int8))
    assert_exact(got[1], np.array([0, 0, 1, -1, 1, -1, 0, 0], np.int8))
    assert_exact(got[2], np.array([1, -1, 1, 0, 0, -2 ** 31, 81, 0], np.int32))
    for g, w in zip(got[3:], want[3:]):   # NaN wins; on +-0 ties the second operand
        assert_exact(g, w)
        assert np.signbit(g[2:4]).tolist() == [False, True]


def test_float16_ties_keep_the_first_operand():
    a = np.array([0.0, -0.0], np.float16)
    p, q = B.parameter(0, (2,), a.dtype), B.parameter(1, (2,), a.dtype)
    got, want = run(Module("ties", [p, q], [B.binary(Op.MAX, p, q), B.binary(Op.MIN, p, q)]),
                    a, a[::-1].copy())
    for g, w in zip(got, want):
        assert_exact(g, w)


@pytest.mark.parametrize("name", ALL)
def test_select_and_clamp(name):
    dt, shape = DT[name], (4, 6)
    p, x, y = (B.parameter(0, shape, DT["bool"]), B.parameter(1, shape, dt),
               B.parameter(2, shape, dt))
    lo, hi = B.parameter(3, (), dt), B.parameter(4, (), dt)
    results = [B.select(p, x, y), B.clamp(lo, x, hi), B.clamp(hi, x, lo), B.clamp(x, y, x)]
    args = [sample("bool", shape), sample(name, shape, 1), sample(name, shape, 2),
            sample(name, (), 5), sample(name, (), 6)]
    got, want = run(Module("select", [p, x, y, lo, hi], results), *args)
    for g, w in zip(got, want):
        assert_exact(g, w, name)


# -- convert

def _convertible(src, dst, n, seed):
    """Samples of `src`; floats bound for integers stay in range (out of range is
    platform-defined in C, NumPy and LLVM alike)."""
    if not (dtypes.is_float(DT[src]) and dtypes.is_integer(DT[dst])):
        return sample(src, (n,), seed)
    info = np.iinfo(DT[dst])
    lo, hi = max(info.min, -60000), min(info.max, 60000)
    values = np.random.default_rng(seed).uniform(lo, hi, n - 4)
    values = np.concatenate([values, [lo, hi, -0.5, 0.5]]).astype(DT[src])
    wide = values.astype(np.float64)    # rounding into src may have left the range
    return np.where((wide < lo) | (wide > hi), np.zeros_like(values), values)


@pytest.mark.parametrize("src", ALL)
def test_convert(src):
    targets = [d for d in ALL if d != src]
    params = [B.parameter(i, (64,), DT[src]) for i in range(len(targets))]
    results = [B.convert(p, DT[d]) for p, d in zip(params, targets)]
    args = [_convertible(src, d, 64, seed) for seed, d in enumerate(targets)]
    got, want = run(Module("convert", params, results), *args)
    for d, g, w in zip(targets, got, want):
        assert_exact(g, w, f"{src} -> {d}")



@pytest.mark.parametrize("src,dst", ROUND_ONCE_PAIRS)
def test_convert_rounds_once(src, dst):
    # NumPy and ml_dtypes round once; going through f32 would round twice
    x = round_once_inputs(DT[src], DT[dst])
    p = B.parameter(0, x.shape, x.dtype)
    (got,), (want,) = run(Module("convert", [p], [B.convert(p, DT[dst])]), x)
    assert_exact(got, want)


def test_bf16_rounding_and_nans_match_ml_dtypes():
    x = np.array([0x7F800001, 0xFFC00001, 0x7FBFFFFF, 0x7F7FFFFF, 0x3F808000, 0x3F818000,
                  0x00000001, 0x80008000], np.uint32).view(np.float32)
    p = B.parameter(0, x.shape, x.dtype)
    (got,), _ = run(Module("bf16", [p], [B.convert(p, dtypes.bfloat16)]), x)
    with np.errstate(invalid="ignore"):
        want = x.astype(dtypes.bfloat16)
    assert got.view(np.uint16).tolist() == want.view(np.uint16).tolist()


# -- leaves and data movement

@pytest.mark.parametrize("name", ALL)
def test_leaves(name):
    dt = DT[name]
    iotas = [B.iota(s, dt, d) for s, d in (((), 0), ((0, 3), 1), ((2, 5, 3), 1), ((300,), 0))]
    x = B.parameter(0, (2,), dt)
    scalar = B.constant(sample(name, (), 3))
    results = [x, B.broadcast_in_dim(scalar, (3,), ())] + iotas
    got, want = run(Module("leaves", [x], results), sample(name, (2,)))
    for g, w in zip(got, want):
        assert_exact(g, w, name)


@pytest.mark.parametrize("name", ALL)
def test_movement(name):
    dt = DT[name]
    x = B.parameter(0, (3, 4), dt)
    col = B.parameter(1, (3, 1), dt)
    v = B.parameter(2, (), dt)
    e = B.parameter(3, (0, 4), dt)
    y = B.parameter(4, (2, 3, 4), dt)
    results = [
        B.broadcast_in_dim(col, (2, 3, 5), (1, 2)), B.broadcast_in_dim(v, (2, 3), ()),
        B.broadcast_in_dim(x, (3, 2, 4), (0, 2)),
        B.reshape(x, (2, 6)), B.reshape(x, (12,)), B.reshape(e, (2, 0, 3)),
        B.reshape(y, (4, 6)), B.transpose(x, (1, 0)), B.transpose(y, (2, 0, 1)),
        B.slice(x, (0, 1), (3, 4), (2, 2)), B.slice(e, (0, 1), (0, 3)),
        B.pad(x, v, (1, -1), (-2, 2), (1, 0)), B.pad(x, v, (0, -3), (0, -1), (2, 1)),
        B.pad(e, v, (1, 0), (1, 0), (3, 0)),
        B.concatenate([x, e, x], 0), B.concatenate([col, x], 1), B.reverse(x, (0, 1)),
        B.reverse(y, (1,)),
    ]
    args = [sample(name, (3, 4)), sample(name, (3, 1), 1), sample(name, (), 2),
            sample(name, (0, 4)), sample(name, (2, 3, 4), 3)]
    got, want = run(Module("movement", [x, col, v, e, y], results), *args)
    for i, (g, w) in enumerate(zip(got, want)):
        assert_exact(g, w, f"result {i}")


# start and index values by dtype: in range, negative, past the end, huge
INDEX_CASES = [("i8", [-128, -1, 0, 2, 127]), ("i32", [-5, 1, 3, 4, 2 ** 31 - 1]),
               ("i64", [-(2 ** 63), -1, 0, 3, 2 ** 62]), ("u8", [0, 1, 3, 4, 255]),
               ("u64", [0, 2, 4, 2 ** 63, 2 ** 64 - 1])]


@pytest.mark.parametrize("name", ["bool", "i32", "u8", "bf16", "f64"])
def test_dynamic_slices(name):
    dt = DT[name]
    x = B.parameter(0, (4, 5), dt)
    upd = B.parameter(1, (2, 3), dt)
    params, results = [x, upd], []
    for iname, _ in INDEX_CASES:
        s0 = B.parameter(len(params), (), DT[iname])
        s1 = B.parameter(len(params) + 1, (), DT[iname])
        params += [s0, s1]
        results += [B.dynamic_slice(x, (s0, s1), (2, 3)),
                    B.dynamic_update_slice(x, upd, (s0, s1)),
                    B.dynamic_update_slice(x, upd, (s1, s0))]
    module = Module("dyn", params, results)
    exe = LLVM.compile(module)
    assert not exe.fallbacks
    for a in range(5):
        for b in range(0, 5, 2):
            args = [sample(name, (4, 5)), sample(name, (2, 3), 1)]
            for iname, values in INDEX_CASES:
                args += [np.array(values[a], DT[iname]), np.array(values[b], DT[iname])]
            for i, (g, w) in enumerate(zip(exe(*args), evaluate(module, args))):
                assert_exact(g, w, (i, a, b))


@pytest.mark.parametrize("iname,values", INDEX_CASES)
def test_gather_clamps_indices(iname, values):
    idx = np.array(values + values[1:3], dtype=np.uint64 if iname[0] == "u" else np.int64)
    idx = idx.astype(DT[iname])
    idx2 = np.random.default_rng(0).permutation(np.resize(idx, 8)).reshape(2, 4)
    x = B.parameter(0, (4, 5), DT["f32"])
    i1, i2 = B.parameter(1, idx.shape, idx.dtype), B.parameter(2, idx2.shape, idx.dtype)
    module = Module("gather", [x, i1, i2], [B.gather(x, i1, 0), B.gather(x, i2, 1)])
    got, want = run(module, sample("f32", (4, 5)), idx, idx2)
    for g, w in zip(got, want):
        assert_exact(g, w)


# -- reductions

REDUCTIONS = sorted(ops.REDUCE, key=str)


@pytest.mark.parametrize("name", ALL)
def test_reductions(name):
    dt = DT[name]
    x = B.parameter(0, (3, 4, 5), dt)
    e = B.parameter(1, (3, 0), dt)
    cases = [(op, B.reduce(op, x, dims)) for op in REDUCTIONS
             for dims in ((2,), (0,), (0, 2), (0, 1, 2), ())
             if typechecks(lambda op=op, dims=dims: B.reduce(op, x, dims))]
    cases += [(op, B.reduce(op, e, (1,))) for op in REDUCTIONS
              if typechecks(lambda op=op: B.reduce(op, e, (1,)))]
    module = Module("reduce", [x, e], [r for _, r in cases])
    maker = sample if name in ("bool",) or dtypes.is_integer(dt) else tame
    got, want = run(module, maker(name, (3, 4, 5)), maker(name, (3, 0), 1))
    for (op, r), g, w in zip(cases, got, want):
        check(op, g, w, name, r.type_str)


@pytest.mark.parametrize("name", ["f16", "bf16", "f32", "f64"])
def test_max_min_reductions_propagate_nan(name):
    x = sample(name, (6, 40), 4)
    p = B.parameter(0, x.shape, x.dtype)
    results = [B.reduce(op, p, (1,)) for op in (Op.REDUCE_MAX, Op.REDUCE_MIN)]
    got, want = run(Module("nan", [p], results), x)
    for g, w in zip(got, want):
        assert_exact(g, w)


@pytest.mark.parametrize("name", ALL)
def test_argmax_argmin(name):
    dt = DT[name]
    x = sample(name, (5, 7), 2)
    if dtypes.is_float(dt):
        x[1, 2:4] = np.nan               # first NaN wins
        x[2] = -np.inf                   # all equal: index 0
    if name != "bool":
        x[3, 1] = x[3, 5] = x[3].max()   # first occurrence of a tie
    p = B.parameter(0, x.shape, dt)
    results = [B.arg_reduce(op, p, axis, index_dtype=idt) for op in ops.ARG_REDUCE
               for axis in (0, 1) for idt in (dtypes.INDEX, DT["i32"])]
    got, want = run(Module("arg", [p], results), x)
    for g, w in zip(got, want):
        assert_exact(g, w, name)


def test_sum_of_many_floats_is_close():
    x = np.random.default_rng(3).standard_normal((8, 100003)).astype(np.float32)
    p = B.parameter(0, x.shape, x.dtype)
    (got,), (want,) = run(Module("sum", [p], [B.reduce(Op.REDUCE_SUM, p, (1,))]), x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


def test_multi_output_kernels():
    def stats(x, y):
        return x.sum(axis=1), (x * x).max(axis=1, keepdims=True), x - x.mean(), np.exp(y), -y
    args = [tame("f32", (6, 9)), tame("f64", (6, 9), 1)]
    module = jitlib.make_ir(stats)(*args)
    exe = LLVM.compile(module)
    assert not exe.fallbacks
    assert any(k.op is Op.FUSION and len(k.attrs["body"].results) > 1
               for k in exe.optimized.instructions)
    assert_allclose_tree(exe(*args), evaluate(module, args))


# -- contraction

@pytest.mark.parametrize("name", ["bool", "i32", "u8", "bf16", "f16", "f32", "f64"])
def test_dot_general(name):
    dt = DT[name]
    a, b = B.parameter(0, (2, 3, 4), dt), B.parameter(1, (2, 4, 5), dt)
    c = B.parameter(2, (2, 3, 5), dt)
    dot = B.dot_general(a, b, (2,), (1,), (0,), (0,))
    results = [dot, B.binary(Op.ADD, B.dot_general(a, b, (2,), (1,), (0,), (0,)), c)]
    got, want = run(Module("dot", [a, b, c], results), tame(name, (2, 3, 4)),
                    tame(name, (2, 4, 5), 1), tame(name, (2, 3, 5), 2))
    for g, w in zip(got, want):
        check(Op.DOT_GENERAL, g, w, name)


@pytest.mark.parametrize("name", ["f16", "bf16"])
def test_half_products_run_on_the_blas_in_f32(name, monkeypatch):
    """f16/bf16 dots widen to f32 (exact), multiply on the BLAS and round once, as
    NumPy's float16 loop (which sums in f32 too) and the interpreter do: the same up to
    the sum's order, overflow past the 16-bit range included."""
    from jitlib.backends.llvm import blas_library
    seen = []
    real = blas_library.matmul
    monkeypatch.setattr(blas_library, "matmul",
                        lambda l, r, o, n: seen.append((l.dtype, o.dtype)) or real(l, r, o, n))
    a, b = B.parameter(0, (33, 300), DT[name]), B.parameter(1, (300, 17), DT[name])
    module = Module("half", [a, b], [B.dot_general(a, b, (1,), (0,))])
    x, y = tame(name, (33, 300)), np.abs(tame(name, (300, 17), 1))
    x[0] = 300.0                                    # row 0: its sums pass f16's 65504
    (got,), (want,) = run(module, x, y)
    assert seen == [(np.float32, np.float32)]
    assert got.dtype == DT[name] and np.isinf(got[0]).any() == (name == "f16")
    check(Op.DOT_GENERAL, got, want, name)


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("name", ["bool", "i8", "u16", "i32", "i64", "u64"])
def test_integer_products_are_compiled_and_exact(name, threads, monkeypatch):
    """Integer sums wrap (every order gives the same bits) and bool products are an or
    of ands: int_products.py must give NumPy's exact results, batched, with empty
    contractions, and shared out by rows between threads."""
    from jitlib.backends.llvm import int_products, parallel
    monkeypatch.setattr(parallel, "_pool", parallel.Pool(threads))
    monkeypatch.setattr(int_products, "PARALLEL_MIN_MULTIPLY_ADDS", 0)
    dt = DT[name]
    cases = [((2, 37, 70), (2, 70, 29), ((2,), (1,), (0,), (0,))),   # batched
             ((5, 0), (0, 3), ((1,), (0,), (), ())),                  # k = 0: zeros
             ((70, 9), (70, 11), ((0,), (0,), (), ()))]               # a^T b, big values
    params, results, args = [], [], []
    for i, (sa, sb, dims) in enumerate(cases):
        a, b = B.parameter(2 * i, sa, dt), B.parameter(2 * i + 1, sb, dt)
        params += [a, b]
        results.append(B.dot_general(a, b, *dims))
        args += [sample(name, sa, 2 * i), sample(name, sb, 2 * i + 1)]
    got, want = run(Module("ints", params, results), *args)
    for g, w in zip(got, want):
        assert_exact(g, w, name)
    assert int_products._compiled.get(dt), "the product did not run compiled"


# -- scans and scatters (opaque.py): sequential, in NumPy's order, so exact

SCAN_SHAPES = [(37,), (3, 5), (2, 3, 4)]


@pytest.mark.parametrize("name", ALL)
def test_scans_are_exact(name):
    cases = [(op, s, axis, rev) for op in sorted(ops.CUMULATIVE) for s in SCAN_SHAPES
             for axis in range(len(s)) for rev in (False, True)]
    xs = [B.parameter(i, s, DT[name]) for i, s in enumerate(SCAN_SHAPES)]
    by_shape = dict(zip(SCAN_SHAPES, xs))
    module = Module("scans", xs, [B.cumulative(op, by_shape[s], axis, rev)
                                  for op, s, axis, rev in cases])
    args = [sample(name, s, i) for i, s in enumerate(SCAN_SHAPES)]
    got, want = run(module, *args)
    for case, g, w in zip(cases, got, want):
        assert_exact(g, w, f"{name} {case}")


SCATTER_CASES = [((6,), 0, (5,)), ((4, 5), 0, (3,)), ((4, 5), 1, (2, 3)), ((2, 3, 4), 1, (5,))]


@pytest.mark.parametrize("index_name", ["i8", "i64", "u8", "u64"])
@pytest.mark.parametrize("name", ["bool", "i32", "u16", "f16", "bf16", "f32", "f64"])
def test_scatters_are_exact(name, index_name):
    """Every mode: duplicate indices combine in order (the last "set" wins), indices
    outside [0, n) are skipped, NaN and -0.0 land as the interpreter puts them."""
    rng = np.random.default_rng(5)
    params, results, labels, args = [], [], [], []
    for shape, axis, idx_shape in SCATTER_CASES:
        n = shape[axis]
        idx = rng.integers(0, n, idx_shape).astype(DT[index_name])
        idx.flat[0] = idx.flat[-1]                      # a duplicate
        if idx.size > 2:
            idx.flat[1] = n                             # past the end
            idx.flat[2] = -1 if DT[index_name].kind == "i" else np.iinfo(DT[index_name]).max
        upd_shape = shape[:axis] + idx_shape + shape[axis + 1:]
        x, i, u = (B.parameter(len(params) + k, s, dt) for k, (s, dt) in enumerate(
            [(shape, DT[name]), (idx_shape, DT[index_name]), (upd_shape, DT[name])]))
        params += [x, i, u]
        args += [sample(name, shape, len(args)), idx, sample(name, upd_shape, len(args) + 1)]
        for mode in ops.SCATTER_MODES:
            results.append(B.scatter(x, i, u, axis, mode))
            labels.append((shape, axis, idx_shape, mode))
    got, want = run(Module("scatters", params, results), *args)
    for label, g, w in zip(labels, got, want):
        assert_exact(g, w, f"{name}[{index_name}] {label}")


@pytest.mark.parametrize("shape, axis", [((37, 129), 1), ((37, 129), 0), ((5000,), 0)])
def test_scans_and_scatters_split_without_changing_bits(shape, axis, monkeypatch):
    """Split by the dims before the axis, else by those after it, else not at all:
    each scan and each scattered element stays whole in one thread."""
    from jitlib.backends.llvm import parallel
    x = B.parameter(0, shape, DT["f32"])
    idx = B.parameter(1, (7,), DT["i32"])
    upd = B.parameter(2, shape[:axis] + (7,) + shape[axis + 1:], DT["f32"])
    module = Module("split", [x, idx, upd], [
        B.cumulative(Op.CUMSUM, x, axis), B.cumulative(Op.CUMMAX, x, axis, reverse=True),
        B.scatter(x, idx, upd, axis, "add"), B.scatter(x, idx, upd, axis, "set")])
    args = [tame("f32", shape, 1), np.array([3, 0, 3, 9, 1, 3, 2], np.int32),
            tame("f32", upd.shape, 2)]
    monkeypatch.setattr(parallel, "MIN_PARALLEL_BYTES", 0)
    results = []
    for threads in (1, 2, 3):
        monkeypatch.setattr(parallel, "_pool", parallel.Pool(threads))
        exe = LLVMBackend().compile(module)
        assert not exe.fallbacks
        results.append(exe(*args))
    for got in results[1:]:
        for g, w in zip(got, results[0]):
            assert g.tobytes() == w.tobytes(), module
    for g, w in zip(results[0], evaluate(module, args)):
        assert_exact(g, w, module)


def test_kernel_names_become_plain_llvm_identifiers():
    x = B.parameter(0, (4,), DT["i32"])
    inner = B.parameter(0, (4,), DT["i32"])
    body = Module("k", [inner], [B.unary(Op.NEG, inner)])
    for name in ("two words", "", 'q"uote'):
        runner, reason = make_runner(B.fusion([x], body, "loop", name))
        assert reason is None
        arg = np.arange(4, dtype=np.int32)
        assert runner([arg])[0].tolist() == [0, -1, -2, -3]


def test_an_unsupported_body_falls_back_instead_of_guessing():
    x = B.parameter(0, (4,), DT["f32"])
    inner = B.parameter(0, (4,), DT["f32"])
    table = B.constant(np.arange(4, dtype=np.float32))   # constants live outside kernels
    body = Module("k", [inner], [B.binary(Op.ADD, inner, table)])
    fusion = B.fusion([x], body, "loop", "k")
    runner, reason = make_runner(fusion)
    assert isinstance(runner, InterpretedRunner) and "constant" in reason


# -- the anchor workloads and the program catalogue

ANCHORS = anchors.ARGS


def _module_tolerance(module):
    """The loosest default tolerance of any float dtype the module computes in: f32 math
    inside an f64 program carries f32 rounding into the f64 result."""
    floats = {i.dtype for i in module.instructions if dtypes.is_float(i.dtype)}
    tols = [TOLERANCES[d] for d in floats] or [(0.0, 0.0)]
    return max(t[0] for t in tols), max(t[1] for t in tols)


@pytest.mark.parametrize("fn", list(ANCHORS), ids=lambda f: f.__name__)
def test_anchor_workloads_run_natively(fn):
    args = ANCHORS[fn](np.random.default_rng(0))
    module = jitlib.make_ir(fn)(*args)
    exe = LLVM.compile(module)
    assert exe.fallbacks == {} and exe.native, exe.fallbacks
    assert_allclose_tree(exe(*args), evaluate(module, args))


@pytest.mark.parametrize("program", programs.PROGRAMS, ids=lambda p: p.name)
def test_every_program_matches_the_interpreter(program):
    args = program.make_args(np.random.default_rng(0))
    module = jitlib.make_ir(program.fn, static_argnums=program.static_argnums)(*args)
    flat = module_inputs(module, args, program.static_argnums)
    rtol, atol = _module_tolerance(module)
    rtol, atol = max(rtol, program.rtol or 0.0), max(atol, program.atol or 0.0)
    exe = LLVM.compile(module)
    assert_allclose_tree(exe(*flat), evaluate(module, flat), rtol=rtol, atol=atol)
    # every kernel, scans and scatters too; most linear algebra is LAPACK on the interpreter
    rest = {k: why for k, why in exe.fallbacks.items() if "linear algebra" not in why}
    assert not rest, exe.fallbacks


EXACT_OPS = [op for op in Op if op not in APPROX | ops.KERNEL | ops.COLLECTIVE]


@given(random_programs(ops=EXACT_OPS))
def test_random_programs_of_exact_ops_are_bit_equal(case):
    module, inputs = case
    got, want = run(module, *inputs, native=False)
    for g, w in zip(got, want):
        assert_exact(g, w, module)


@given(random_programs())
def test_random_programs_are_close(case):
    module, inputs = case
    got, want = run(module, *inputs, native=False)
    assert_allclose_tree(got, want, rtol=1e-3, atol=1e-3, err_msg=str(module))


# -- the compiled code itself

def _kernel(fn, *args):
    (fusion,) = [i for i in optimize(jitlib.make_ir(fn)(*args)).instructions
                 if i.op is Op.FUSION]
    return kernels.render(fusion)


def test_ew_chain_kernel_is_vectorized():
    kernel = _kernel(anchors.ew_chain, *[np.ones(1 << 12, np.float32)] * 3)
    asm = get_compiler().assembly(kernel.ir)
    # packed single-precision multiplies: the loop body runs on vector registers
    assert re.search(r"\bv?mulps\s+[^\n]*%[xyz]mm", asm), asm[:2000]


def test_mathlib_functions_plug_in(monkeypatch):
    from jitlib.backends.llvm import emitter
    monkeypatch.setattr(emitter, "MATHLIB", frozenset({"exp", "log"}))
    args = ANCHORS[anchors.logsumexp_rows](np.random.default_rng(1))
    module = jitlib.make_ir(anchors.logsumexp_rows)(*args)
    (fusion,) = [i for i in optimize(module).instructions if i.op is Op.FUSION]
    assert "@jl_exp_f32" in kernels.render(fusion).ir
    exe = LLVM.compile(module)
    assert not exe.fallbacks
    assert_allclose_tree(exe(*args), evaluate(module, args))


def test_kernel_text_is_compiled_once():
    x = B.parameter(0, (5,), DT["f32"])
    module = Module("neg", [x], [B.unary(Op.NEG, x)])
    LLVM.compile(module)
    before = get_compiler().compiled
    exe = LLVM.compile(module)
    assert get_compiler().compiled == before and exe.native


def test_arguments_are_read_in_any_layout_and_results_are_fresh():
    x = B.parameter(0, (3, 4), DT["f64"])
    module = Module("same", [x], [x, B.unary(Op.NEG, x)])
    arg = np.arange(12.0).reshape(4, 3).T          # not C-contiguous
    got = LLVM.compile(module)(arg)
    assert_exact(got[0], arg)
    assert_exact(got[1], -arg)
    for g in got:
        assert g.flags.writeable and not np.shares_memory(g, arg)


def test_as_text_shows_each_kernels_llvm_ir_and_assembly():
    """`as_text("kernels")` on the cpu backend: every kernel's LLVM IR as rendered, a dot
    kernel's product named as the BLAS's; `as_text("assembly")`: the O3 host code of the
    same kernels, where a float loop is vectorized."""
    x, w = np.ones((8, 64), np.float32), np.ones((64, 32), np.float32)
    lowered = jitlib.jit(lambda x, w: np.tanh(np.maximum(x @ w + 1.0, 0.0)),
                         backend="cpu").lower(x, w)
    kernels_text = lowered.as_text("kernels")
    optimized = lowered.optimized()
    names = [i.attrs["name"] for i in optimized.instructions if i.op is Op.FUSION]
    heads = [line for line in kernels_text.splitlines() if line.startswith("; ---- ")]
    assert [h.split()[2].rstrip(":") for h in heads] == names, kernels_text
    assert "dot_general on the BLAS, then" in heads[0]
    assert kernels_text.count("define void @") == len(names)
    assembly = lowered.as_text("assembly")
    assert [line for line in assembly.splitlines() if line.startswith("; ---- ")] == [
        h.replace("LLVM IR as rendered", f"host assembly at O3 for {get_compiler().cpu}")
        for h in heads]
    assert "define void" not in assembly and re.search(r"\b[xyz]mm\d+\b", assembly)


def test_as_text_assembly_needs_the_cpu_backend():
    lowered = jitlib.jit(lambda x: x + 1.0, backend="interpreter").lower(np.ones(3))
    with pytest.raises(ValueError, match="no kernel assembly; use backend=cpu"):
        lowered.as_text("assembly")
