"""The JAX backend (the oracle) against the reference interpreter, and the backend registry.

Each case builds a small module with `jitlib.hlo.build`, runs it on both, and compares:
exact ops bit for bit (dtype, NaN placement and the sign of zero included), float
transcendentals and float accumulations within per-dtype tolerances.

XLA on the CPU flushes subnormal f32, f64 and bf16 values to zero, which no lowering can
undo: inputs here are never subnormal, and an expected subnormal result counts as a zero.
"""
import math
import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import jitlib.backends as backends
from jitlib import errors
from rounding_cases import ROUND_ONCE_PAIRS, round_once_inputs
from triton_marks import triton_installed
from jitlib.backends.jax import lower_rules
from jitlib.errors import JitlibTypeError, UnsupportedError
from jitlib.hlo import Module, Op, build as B, dtypes, ops
from jitlib.hlo.ir import is_multi_output
from jitlib.hlo.interpreter import evaluate

JAX = backends.get_backend("jax")

DT = {name: dtypes.from_name(name) for name in
      ("bool", "i8", "i32", "i64", "u8", "u32", "u64", "f16", "bf16", "f32", "f64")}
SIGNED = ["i8", "i32", "i64"]
UNSIGNED = ["u8", "u32"]
INTS = SIGNED + UNSIGNED
FLOATS = ["f16", "bf16", "f32", "f64"]
ALL = ["bool"] + INTS + FLOATS
SHAPES = [(), (0,), (24,)]   # every elementwise op runs on each, in one module per dtype
RTOL = {"f16": 1e-2, "bf16": 1e-2, "f32": 1e-5, "f64": 1e-12}

# Float ops whose results depend on the implementation (or the order of accumulation).
APPROX = {Op.EXP, Op.EXPM1, Op.LOG, Op.LOG1P, Op.RSQRT, Op.TANH, Op.LOGISTIC, Op.SIN,
          Op.COS, Op.TAN, Op.POW, Op.ATAN2, Op.REDUCE_SUM, Op.REDUCE_PROD, Op.DOT_GENERAL}

COVERED = set()   # ops some test below runs; checked by test_every_op_is_tested


def covers(*op_list):
    COVERED.update(op_list)


# -- helpers

def sample(name, shape, seed=0):
    """Values of dtype `name` with the awkward ones mixed in: extremes, 0, -0, NaN, inf."""
    dt, rng, n = DT[name], np.random.default_rng(seed), math.prod(shape)
    if name == "bool":
        return (rng.random(n) < 0.5).reshape(shape)
    if dtypes.is_integer(dt):
        info = np.iinfo(dt)
        special = [info.min, info.max, 0, 1, 2, 7] + ([-1, -7] if info.min < 0 else [])
        common = rng.integers(max(info.min, -50), min(info.max, 50), n, endpoint=True)
        values = [int(c) if r >= 0.3 else special[rng.integers(len(special))]
                  for c, r in zip(common, rng.random(n))]
        return np.array(values, dtype=np.int64 if info.min else np.uint64).astype(dt) \
            .reshape(shape)
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, 2.5, -2.5, 1e-3,
                        60000.0, 1e30])
    values = np.where(rng.random(n) < 0.3, rng.choice(special, n), rng.normal(0, 3, n))
    with np.errstate(over="ignore"):
        return values.astype(dt).reshape(shape)


def tame(name, shape, seed=0):
    """Finite values of moderate size, signs mixed: for sums, products and dots."""
    rng = np.random.default_rng(seed)
    mag = rng.uniform(0.8, 1.25, shape) * rng.choice([-1, 1], shape)
    if dtypes.is_float(DT[name]):
        return mag.astype(DT[name])
    return sample(name, shape, seed)


def run(module, *args):
    """(jax results, interpreter results) of `module` on `args`."""
    return JAX.compile(module)(*args), evaluate(module, list(args))


def one(make, *arrays):
    """(jax, interpreter) result of the one-result module `make(*params)` on `arrays`."""
    params = [B.parameter(i, a.shape, a.dtype) for i, a in enumerate(arrays)]
    (got,), (want,) = run(Module("case", params, [make(*params)]), *arrays)
    return got, want


_FTZ = {DT["f32"], DT["f64"], dtypes.bfloat16}


def flushed(x):
    """`x` with subnormals replaced by zeros of their sign, as XLA's CPU code makes them."""
    if x.dtype not in _FTZ:
        return x
    tiny = float(dtypes.finfo(x.dtype).tiny)
    wide = x.astype(np.float64)
    return np.where(np.abs(wide) < tiny, np.copysign(0.0, wide), wide).astype(x.dtype)


def assert_exact(got, want, what="", zero_sign=True):
    """Same dtype and shape, equal values (any NaN equals any NaN), and, with
    `zero_sign`, the same sign on every zero."""
    assert isinstance(got, np.ndarray) and got.dtype == want.dtype, (what, got.dtype, want.dtype)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    if not dtypes.is_float(got.dtype):
        np.testing.assert_array_equal(got, want, err_msg=str(what), strict=True)
        return
    g, w = got.astype(np.float64), flushed(want).astype(np.float64)
    np.testing.assert_array_equal(g, w, err_msg=str(what))
    if zero_sign:
        zero = w == 0
        np.testing.assert_array_equal(np.signbit(g[zero]), np.signbit(w[zero]),
                                      err_msg=f"{what}: sign of zero")


def assert_close(got, want, name, what="", atol=0.0):
    """Same dtype, shape, NaNs and infinities; finite values within RTOL[name]."""
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got, want)
    g, w = got.astype(np.float64), flushed(want).astype(np.float64)
    np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=f"{what}: NaNs")
    inf = np.isinf(g) | np.isinf(w)
    np.testing.assert_array_equal(g[inf], w[inf], err_msg=f"{what}: infinities")
    finite = ~inf & ~np.isnan(w)
    np.testing.assert_allclose(g[finite], w[finite], rtol=RTOL[name], atol=atol,
                               err_msg=str(what))


def check(op, got, want, name, what="", atol=0.0):
    what = f"{op} {what}"
    if op in APPROX and dtypes.is_float(DT[name]):
        assert_close(got, want, name, what, atol)
    else:
        assert_exact(got, want, what)


def typechecks(make):
    try:
        make()
    except TypeError:    # IRTypeError: the op does not take this dtype
        return False
    return True


# -- the rule table and the registry

def test_every_op_has_a_rule():
    assert set(lower_rules) == set(Op) - {Op.PARAMETER}


def test_import_does_not_load_jax():
    code = ("import sys, jitlib, jitlib.backends as b; b.available_backends(); "
            "b.default_backend_name(); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('jax', 'jaxlib', 'triton', 'torch', 'llvmlite')))")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_registry():
    assert backends.get_backend("jax") is JAX and JAX.name == "jax"
    assert backends.get_backend("interpreter").name == "interpreter"
    gpu = {"gpu"} if triton_installed() else set()   # the gpu backend needs Triton
    assert set(backends.available_backends()) == {"interpreter", "jax", "cpu"} | gpu
    if gpu:
        assert backends.get_backend("gpu").name == "gpu"
    else:   # the README's test extra has no Triton: a clear error with the fix
        with pytest.raises(errors.BackendError, match=r'pip install -e "\.\[gpu\]"'):
            backends.get_backend("gpu")
    with pytest.raises(ValueError, match="interpreter, jax, cpu, gpu"):
        backends.get_backend("tpu")


def test_cpu_is_the_llvm_backend_and_cached():
    from jitlib.backends.llvm import LLVMBackend
    first, second = backends.get_backend("cpu"), backends.get_backend("cpu")
    assert first is second and isinstance(first, LLVMBackend) and first.name == "cpu"


def test_backends_check_arguments():
    x = B.parameter(0, (2,), DT["f32"])
    module = Module("neg", [x], [B.unary(Op.NEG, x)])
    for backend in (JAX, backends.get_backend("interpreter")):
        exe = backend.compile(module)
        assert exe.module is module and exe.backend_name == backend.name
        with pytest.raises(JitlibTypeError, match="takes 1 arguments"):
            exe()
        with pytest.raises(JitlibTypeError, match=r"must be f32\[2\], got f64\[2\]"):
            exe(np.zeros(2))
        with pytest.raises(JitlibTypeError, match=r"got f32\[3\]"):
            exe(np.zeros(3, np.float32))


def test_results_are_fresh_writable_arrays():
    x = B.parameter(0, (3,), DT["i32"])
    arg = np.arange(3, dtype=np.int32)
    results = JAX.compile(Module("same", [x], [x, B.unary(Op.NEG, x)]))(arg)
    for r in results:
        assert r.flags.writeable and not np.shares_memory(r, arg)


def test_64_bit_values_stay_64_bit():
    f = B.parameter(0, (), DT["f64"])
    i = B.parameter(1, (), DT["i64"])
    u = B.parameter(2, (), DT["u64"])
    module = Module("wide", [f, i, u], [B.binary(Op.ADD, f, f), B.binary(Op.MUL, i, i),
                                        B.binary(Op.SUB, u, u)])
    got = JAX.compile(module)(np.float64(1 + 2.0 ** -40), np.int64(2 ** 31 + 1),
                              np.uint64(2 ** 64 - 1))
    assert [g.dtype for g in got] == [DT["f64"], DT["i64"], DT["u64"]]
    assert got[0] == 2 + 2.0 ** -39 and got[1] == (2 ** 31 + 1) ** 2 and got[2] == 0


# -- leaves

covers(Op.PARAMETER, Op.CONSTANT, Op.IOTA)


@pytest.mark.parametrize("name", ALL + ["u64"])
def test_leaves(name):
    dt = DT[name]
    consts = [B.constant(sample(name, shape, seed=3)) for shape in ((), (0, 2), (4, 3))]
    iotas = [B.iota(s, dt, d) for s, d in (((), 0), ((0, 3), 1), ((2, 5, 3), 1), ((300,), 0))]
    x = B.parameter(0, (2,), dt)
    got, want = run(Module("leaves", [x], [x] + consts + iotas), sample(name, (2,)))
    for g, w in zip(got, want):
        assert_exact(g, w, name)


# -- elementwise

covers(*ops.UNARY - {Op.CONVERT})


@pytest.mark.parametrize("name", ALL)
def test_unary(name):
    xs = [B.parameter(i, shape, DT[name]) for i, shape in enumerate(SHAPES)]
    cases = [(op, x) for x in xs for op in sorted(ops.UNARY - {Op.CONVERT})
             if typechecks(lambda op=op: B.unary(op, x))]
    module = Module("unary", xs, [B.unary(op, x) for op, x in cases])
    got, want = run(module, *(sample(name, shape, i) for i, shape in enumerate(SHAPES)))
    for (op, x), g, w in zip(cases, got, want):
        check(op, g, w, name, x.type_str)


def test_unary_special_values():
    x = np.array([-2.5, -0.5, 0.5, 1.5, 2.5, -0.0, np.nan, np.inf], np.float32)
    got, want = one(lambda p: B.unary(Op.ROUND, p), x)
    assert_exact(got, np.array([-2, -0.0, 0, 2, 2, -0.0, np.nan, np.inf], np.float32))
    got, _ = one(lambda p: B.unary(Op.SIGN, p), np.array([-3.0, -0.0, 0.0, np.nan]))
    assert_exact(got, np.array([-1.0, 0.0, 0.0, np.nan]))
    got, _ = one(lambda p: B.unary(Op.RSQRT, p), np.array([4.0, 0.0, -0.0, -1.0, np.inf]))
    assert_exact(got, np.array([0.5, np.inf, -np.inf, np.nan, 0.0]))


covers(*ops.BINARY)


@pytest.mark.parametrize("name", ALL)
def test_binary(name):
    xs = [B.parameter(i, shape, DT[name]) for i, shape in enumerate(SHAPES * 2)]
    cases = []
    for x, y in zip(xs, xs[len(SHAPES):]):
        cases += [(op, x, lambda op=op, x=x, y=y: B.binary(op, x, y))
                  for op in sorted(ops.BINARY - {Op.COMPARE})]
        cases += [(Op.COMPARE, x, lambda d=d, x=x, y=y: B.compare(x, y, d))
                  for d in ops.COMPARE_DIRECTIONS]
    cases = [case for case in cases if typechecks(case[2])]
    module = Module("binary", xs, [make() for _, _, make in cases])
    got, want = run(module, *(sample(name, shape, i) for i, shape in enumerate(SHAPES * 2)))
    for (op, x, _), g, w in zip(cases, got, want):
        check(op, g, w, name, x.type_str)


def test_binary_special_values():
    i8 = np.array([-128, -128, 7, -7, 7, -7, 5, 0], np.int8)
    d8 = np.array([-1, 0, 2, 2, -2, -2, 0, 0], np.int8)
    got, _ = one(lambda a, b: B.binary(Op.DIV, a, b), i8, d8)
    assert_exact(got, np.array([-128, 0, 3, -3, -3, 3, 0, 0], np.int8))
    got, _ = one(lambda a, b: B.binary(Op.REM, a, b), i8, d8)
    assert_exact(got, np.array([0, 0, 1, -1, 1, -1, 0, 0], np.int8))
    base = np.array([1, -1, -1, 2, 0, -2, 3, 2], np.int32)
    expo = np.array([-5, -3, -4, -1, -2, 31, 4, 40], np.int32)
    got, _ = one(lambda a, b: B.binary(Op.POW, a, b), base, expo)
    assert_exact(got, np.array([1, -1, 1, 0, 0, -2 ** 31, 81, 0], np.int32))
    a = np.array([np.nan, 1.0, -0.0, 0.0, 2.0])
    b = np.array([1.0, np.nan, 0.0, -0.0, -np.inf])
    for op in (Op.MAX, Op.MIN):   # NaN wins; on +-0 ties the second operand, as NumPy
        got, want = one(lambda p, q: B.binary(op, p, q), a, b)
        assert_exact(got, want, op)
        assert np.signbit(got[2:4]).tolist() == [False, True]


@pytest.mark.parametrize("name", FLOATS)
def test_division_by_a_broadcast_is_division(name):
    # XLA's simplifier turns x / broadcast(c) into x * broadcast(1 / c) unless kept from it.
    dt = DT[name]
    x = B.parameter(0, (500,), dt)
    c = B.parameter(1, (), dt)
    seven = B.broadcast_to(B.constant(np.array(7.0, dt)), (500,))
    module = Module("div", [x, c], [B.binary(Op.DIV, x, B.broadcast_to(c, (500,))),
                                    B.binary(Op.DIV, x, seven)])
    values = np.random.default_rng(0).normal(0, 3, 500).astype(dt)
    got, want = run(module, values, np.array(3.0, dt))
    for g, w in zip(got, want):
        assert_exact(g, w)


covers(Op.SELECT, Op.CLAMP)


@pytest.mark.parametrize("name", ALL)
def test_select_and_clamp(name):
    dt, shape = DT[name], (4, 6)
    p, x, y = (B.parameter(0, shape, DT["bool"]), B.parameter(1, shape, dt),
               B.parameter(2, shape, dt))
    lo, hi = B.parameter(3, (), dt), B.parameter(4, (), dt)
    results = [B.select(p, x, y), B.clamp(lo, x, hi), B.clamp(hi, x, lo), B.clamp(x, y, x),
               B.clamp(lo, y, x)]
    args = [sample("bool", shape), sample(name, shape, 1), sample(name, shape, 2),
            sample(name, (), 5), sample(name, (), 6)]
    got, want = run(Module("select", [p, x, y, lo, hi], results), *args)
    for g, w in zip(got, want):
        assert_exact(g, w, name)


# -- convert

covers(Op.CONVERT)


def _convertible(src, dst, shape, seed):
    """Samples of `src` that convert to `dst` defined: floats bound for integers in range."""
    if not (dtypes.is_float(DT[src]) and dtypes.is_integer(DT[dst])):
        return sample(src, shape, seed)
    info = np.iinfo(DT[dst])
    lo, hi = max(info.min, -60000), min(info.max, 60000)
    rng = np.random.default_rng(seed)
    values = np.concatenate([rng.uniform(lo, hi, shape[0] - 4), [lo, hi, -0.5, 0.5]])
    return np.clip(values.astype(DT[src]), lo, hi).astype(DT[src])


@pytest.mark.parametrize("src", ALL + ["u64"])
def test_convert(src):
    targets = [d for d in ALL + ["u64"] if d != src]
    params = [B.parameter(i, (64,), DT[src]) for i in range(len(targets))]
    # B.make: B.convert drops a same-dtype convert, which a parsed module may still hold.
    same = B.make(Op.CONVERT, (params[0],), {"dtype": src})
    results = [B.convert(p, DT[d]) for p, d in zip(params, targets)] + [same]
    args = [_convertible(src, d, (64,), seed) for seed, d in enumerate(targets)]
    got, want = run(Module("convert", params, results), *args)
    for d, g, w in zip(targets + [src], got, want):
        assert_exact(g, w, f"{src} -> {d}")



# Integers past f32's 24 bits only reach bf16: f16 overflows long before.
@pytest.mark.parametrize("src,dst", ROUND_ONCE_PAIRS)
def test_convert_rounds_once(src, dst):
    # XLA goes through f32 and rounds twice; NumPy and ml_dtypes round once.
    x = round_once_inputs(DT[src], DT[dst])
    got, want = one(lambda p: B.convert(p, DT[dst]), x)
    assert_exact(got, want)
    assert_exact(got, x.astype(DT[dst]))


def test_convert_f64_to_bf16_single_rounding():
    x = np.array([1 + 2.0 ** -8 + 2.0 ** -30, -(1 + 2.0 ** -8 + 2.0 ** -30)])
    got, _ = one(lambda p: B.convert(p, dtypes.bfloat16), x)
    assert got.astype(np.float64).tolist() == [1 + 2.0 ** -7, -(1 + 2.0 ** -7)]


# -- data movement

covers(*ops.MOVEMENT)


@pytest.mark.parametrize("name", ALL)
def test_movement(name):
    dt = DT[name]
    x = B.parameter(0, (3, 4), dt)
    col = B.parameter(1, (3, 1), dt)
    v = B.parameter(2, (), dt)
    e = B.parameter(3, (0, 4), dt)
    results = [
        B.broadcast_in_dim(col, (2, 3, 5), (1, 2)), B.broadcast_in_dim(v, (2, 3), ()),
        B.reshape(x, (2, 6)), B.reshape(x, (12,)), B.reshape(e, (2, 0, 3)),
        B.transpose(x, (1, 0)), B.slice(x, (0, 1), (3, 4), (2, 2)), B.slice(e, (0, 1), (0, 3)),
        B.pad(x, v, (1, -1), (-2, 2), (1, 0)), B.pad(x, v, (0, -3), (0, -1), (2, 1)),
        B.pad(e, v, (1, 0), (1, 0), (3, 0)),
        B.concatenate([x, e, x], 0), B.concatenate([col, x], 1), B.reverse(x, (0, 1)),
    ]
    args = [sample(name, (3, 4)), sample(name, (3, 1), 1), sample(name, (), 2),
            sample(name, (0, 4))]
    got, want = run(Module("movement", [x, col, v, e], results), *args)
    for i, (g, w) in enumerate(zip(got, want)):
        assert_exact(g, w, f"result {i}")


# Start and index values, by dtype: in range, negative, past the end, huge.
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
        results += [B.dynamic_slice(x, (s0, s1), (2, 3)), B.dynamic_slice(x, (s1, s0), (4, 0)),
                    B.dynamic_update_slice(x, upd, (s0, s1)),
                    B.dynamic_update_slice(x, upd, (s1, s0))]
    module = Module("dyn", params, results)
    exe = JAX.compile(module)
    for a in range(5):
        for b in range(0, 5, 2):
            args = [sample(name, (4, 5)), sample(name, (2, 3), 1)]
            for iname, values in INDEX_CASES:
                args += [np.array(values[a], DT[iname]), np.array(values[b], DT[iname])]
            for i, (g, w) in enumerate(zip(exe(*args), evaluate(module, args))):
                assert_exact(g, w, (i, a, b))


def _index_arrays(iname, values):
    """Indices with duplicates and out-of-range values: a vector and a (2, 4) matrix."""
    idx = np.array(values + values[1:3] + [values[2]], dtype=np.uint64 if iname[0] == "u"
                   else np.int64).astype(DT[iname])
    return idx, np.random.default_rng(0).permutation(idx).reshape(2, 4)


def _indexing(x, i1, i2, u0, u1, modes=ops.SCATTER_MODES):
    """Gathers along both axes, and scatters in each of `modes` along both axes."""
    results = [B.gather(x, i1, 0), B.gather(x, i2, 1)]
    for mode in modes:
        results += [B.scatter(x, i2, u0, 0, mode), B.scatter(x, i1, u1, 1, mode)]
    return results


def _check_indexing(name, got, want, per_case=12):
    for i, (g, w) in enumerate(zip(got, want)):
        # The sign of a zero from max/min of +0 and -0 depends on the combining order.
        assert_exact(g, w, f"{name} result {i}", zero_sign=i % per_case < 2)


@pytest.mark.parametrize("name", ALL)
def test_gather_and_scatter(name):
    dt = DT[name]
    idx, idx2 = _index_arrays(*INDEX_CASES[2])
    x = B.parameter(0, (4, 5), dt)
    i1, i2 = B.parameter(1, idx.shape, idx.dtype), B.parameter(2, idx2.shape, idx.dtype)
    u0, u1 = B.parameter(3, (2, 4, 5), dt), B.parameter(4, (4, 8), dt)
    module = Module("indexing", [x, i1, i2, u0, u1], _indexing(x, i1, i2, u0, u1))
    got, want = run(module, sample(name, (4, 5)), idx, idx2, sample(name, (2, 4, 5), 1),
                    sample(name, (4, 8), 2))
    _check_indexing(name, got, want)


def test_index_dtypes():
    dt = DT["f32"]
    x = B.parameter(0, (4, 5), dt)
    u0, u1 = B.parameter(1, (2, 4, 5), dt), B.parameter(2, (4, 8), dt)
    params, results, args = [x, u0, u1], [], [sample("f32", (4, 5)), sample("f32", (2, 4, 5), 1),
                                               sample("f32", (4, 8), 2)]
    for iname, values in INDEX_CASES:
        idx, idx2 = _index_arrays(iname, values)
        i1 = B.parameter(len(params), idx.shape, idx.dtype)
        i2 = B.parameter(len(params) + 1, idx2.shape, idx.dtype)
        params += [i1, i2]
        args += [idx, idx2]
        # Index handling differs between dropping (any scatter) and last-wins ("set") only.
        results += _indexing(x, i1, i2, u0, u1, ("add", "set"))
    _check_indexing("f32", *run(Module("indices", params, results), *args), per_case=6)


def test_scatter_drops_negative_indices_and_last_set_wins():
    x = np.zeros(4)
    idx = np.array([-1, 4, 1, -5, 2, 2, 1])
    upd = np.arange(1.0, 8.0)
    got, _ = one(lambda a, i, u: B.scatter(a, i, u, 0, "add"), x, idx, upd)
    assert_exact(got, np.array([0.0, 10.0, 11.0, 0.0]))
    got, _ = one(lambda a, i, u: B.scatter(a, i, u, 0, "set"), x, idx, upd)
    assert_exact(got, np.array([0.0, 7.0, 6.0, 0.0]))


def test_scatter_into_an_empty_axis():
    for idx in (np.array(0, np.int8), np.array([0, -1, 3])):
        for mode in ops.SCATTER_MODES:
            got, want = one(lambda a, i, u: B.scatter(a, i, u, 0, mode), np.zeros((0, 2)), idx,
                            np.ones(idx.shape + (2,)))
            assert_exact(got, want, mode)


# -- reductions

covers(*ops.REDUCE, *ops.ARG_REDUCE, *ops.CUMULATIVE)


def _reduce_cases(x, dim_sets, scans):
    """(op, make) for every reduction of `x` over each of `dim_sets` and every scan along
    each (axis, reverse) of `scans`, where they type-check."""
    cases = [(op, lambda op=op, dims=dims: B.reduce(op, x, dims))
             for op in sorted(ops.REDUCE) for dims in dim_sets]
    cases += [(op, lambda op=op, a=axis, r=rev: B.cumulative(op, x, a, r))
              for op in sorted(ops.CUMULATIVE) for axis, rev in scans]
    return [(op, make) for op, make in cases if typechecks(make)]


@pytest.mark.parametrize("name", ALL)
def test_reductions(name):
    dt = DT[name]
    x, t, e = (B.parameter(0, (3, 4, 5), dt), B.parameter(1, (3, 4, 5), dt),
               B.parameter(2, (2, 0, 3), dt))
    everywhere = ([(), (0, 2), (0, 1, 2)], [(0, False), (2, True)])
    # Accumulating float ops get tame values, whose sums cannot overflow in any order.
    cases = [(op, make) for op, make in _reduce_cases(x, *everywhere) if op not in APPROX]
    cases += [(op, make) for op, make in _reduce_cases(t, *everywhere) if op in APPROX]
    cases += _reduce_cases(e, [(1,)], [(1, True)])
    module = Module("reduce", [x, t, e], [make() for _, make in cases])
    got, want = run(module, sample(name, (3, 4, 5)), tame(name, (3, 4, 5), 1),
                    sample(name, (2, 0, 3)))
    for (op, _), g, w in zip(cases, got, want):
        if op in APPROX and dtypes.is_float(dt):
            assert_close(g, w, name, op, atol=RTOL[name] * 60)
        else:
            # Zero signs of max/min reductions depend on the combining order.
            assert_exact(g, w, op, zero_sign=op not in ops.REDUCE)


@pytest.mark.parametrize("name", ALL + ["u64"])
def test_arg_reductions(name):
    dt = DT[name]
    x = B.parameter(0, (3, 40), dt)
    results = [B.arg_reduce(op, x, axis, DT[idx]) for op in sorted(ops.ARG_REDUCE)
               for axis in (0, 1) for idx in ("i64", "u8", "i8")]
    values = sample(name, (3, 40))
    if dtypes.is_float(dt):
        values[1, [3, 9, 30]] = np.nan   # the first NaN wins
        values[2] = np.round(values[2])  # ties: the first occurrence wins
    got, want = run(Module("arg", [x], results), values)
    for g, w in zip(got, want):
        assert_exact(g, w)


def test_argmax_picks_the_first_nan():
    x = np.zeros(1000)
    x[[999, 500, 37, 38]] = np.nan
    x[5] = np.inf
    for op in ops.ARG_REDUCE:
        got, _ = one(lambda p: B.arg_reduce(op, p, 0), x)
        assert got == 37


# -- contraction

covers(Op.DOT_GENERAL)


@pytest.mark.parametrize("name", ALL)
def test_dot_general(name):
    dt = DT[name]
    shapes = [(3, 4), (4, 5), (2, 3, 4), (2, 4, 5), (3, 0), (0, 5), (), (6,)]
    ps = [B.parameter(i, s, dt) for i, s in enumerate(shapes)]
    a, b, ba, bb, k0, k1, s, v = ps
    results = [
        B.dot_general(a, b, (1,), (0,)),                      # matmul
        B.dot_general(ba, bb, (2,), (1,), (0,), (0,)),        # batched
        B.dot_general(ba, ba, (1, 2), (1, 2), (0,), (0,)),    # two contracting dims
        B.dot_general(b, a, (0,), (1,)),                      # free dims in operand order
        B.dot_general(a, v, (), ()),                          # outer product
        B.dot_general(k0, k1, (1,), (0,)),                    # k == 0: zeros
        B.dot_general(s, s, (), ()),
    ]
    args = [tame(name, shape, i) for i, shape in enumerate(shapes)]
    got, want = run(Module("dot", ps, results), *args)
    for g, w in zip(got, want):
        # Sums of up to 8 terms near 1 in size: cancellation needs an absolute tolerance.
        check(Op.DOT_GENERAL, g, w, name, atol=RTOL.get(name, 0) * 8)


# -- linear algebra: jax.lax.linalg against the interpreter's LAPACK calls, up to rounding
#    and the signs of singular and eigen vectors (only their squares are compared)

covers(*ops.LINALG)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_linalg_ops_agree_with_the_interpreter(dtype):
    rng = np.random.default_rng(7)
    g = rng.normal(size=(2, 4, 4))
    a = (g @ np.swapaxes(g, -1, -2) + 4 * np.eye(4)).astype(dtype)
    r = rng.normal(size=(2, 5, 3)).astype(dtype)
    tol = dict(rtol=2e-4, atol=2e-4) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)

    def close(make, *args):
        got, want = one(make, *args)
        np.testing.assert_allclose(got, want, **tol)

    def square(x):
        return B.binary(Op.MUL, x, x)

    close(B.cholesky, a)
    close(lambda x: B.triangular_solve(x, x, False, True, True, False), a)
    for output in ("lu", "pivots", "permutation"):
        close(lambda x: B.lu(x, output), a)
    close(lambda x: B.eigh(x, "values"), a)
    close(lambda x: B.svd(x, "s"), r)
    close(lambda x: square(B.eigh(x, "vectors")), a)
    close(lambda x: square(B.qr(x, "q")), r)
    close(lambda x: square(B.qr(x, "r", True)), r)
    close(lambda x: square(B.svd(x, "u", True)), r)
    close(lambda x: square(B.svd(x, "vh")), r)


# -- kernels

covers(Op.SORT)


@pytest.mark.parametrize("name", ["bool", "i8", "u32", "i64", "f16", "bf16", "f32", "f64"])
@pytest.mark.parametrize("axis", [0, 1])
def test_sort_orders_zeros_and_nans_as_numpy(name, axis):
    # lax's own float order puts -0.0 before 0.0 and negative NaNs first
    x = sample(name, (9, 8), seed=5)
    if dtypes.is_float(DT[name]):
        x[:4, :4] = np.array([0.0, -0.0, np.nan, -np.nan], np.float64).astype(x.dtype)
    for indices in (False, True):
        got, want = one(lambda p: B.sort([p], axis, indices), x)
        assert got.tobytes() == want.tobytes(), (got, want)
    got, want = one(lambda p, q: B.sort([p, q], axis, True), x, sample("i8", x.shape, 6))
    assert_exact(got, want)


covers(Op.REAL, Op.IMAG, Op.CONJ, Op.COMPLEX, Op.FFT, *ops.COMPLEX_ONLY)


def _complex_values(dt, shape, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(0, 2, shape) + 1j * rng.normal(0, 2, shape)).astype(dt)


@pytest.mark.parametrize("dt", [np.complex64, np.complex128], ids=["c64", "c128"])
def test_complex_parts_are_exact_and_math_close(dt):
    # finite values: XLA's complex functions differ from NumPy's on inf/nan parts (jax.py)
    z = _complex_values(dt, (4, 5))
    for op in (Op.REAL, Op.IMAG, Op.CONJ, Op.NEG):
        got, want = one(lambda p: B.unary(op, p), z)
        assert_exact(got, want)
    re, im = z.real.copy(), z.imag.copy()
    re[0, :3] = [np.inf, -0.0, np.nan]
    im[0, :3] = [0.0, -0.0, np.inf]
    got, want = one(lambda a, b: B.binary(Op.COMPLEX, a, b), re, im)
    assert_exact(got, want)
    rtol = 1e-5 if dt == np.complex64 else 1e-12
    for make in (*(lambda p, op=op: B.unary(op, p) for op in ops.COMPLEX_ONLY),
                 lambda p: B.unary(Op.EXP, p), lambda p: B.unary(Op.SQRT, p),
                 lambda p: B.unary(Op.ABS, p), lambda p: B.binary(Op.DIV, p, p),
                 lambda p: B.reduce(Op.REDUCE_SUM, p, (1,)),
                 lambda p: B.dot_general(p, p, (1,), (1,))):
        got, want = one(make, z)
        np.testing.assert_allclose(got, want, rtol=rtol)


@pytest.mark.parametrize("kind, lengths, shape, dt", [
    ("FFT", (8,), (3, 8), np.complex64), ("IFFT", (4, 6), (2, 4, 6), np.complex128),
    ("RFFT", (9,), (2, 9), np.float64), ("IRFFT", (3, 8), (3, 5), np.complex128)])
def test_fft_matches_pocketfft(kind, lengths, shape, dt):
    x = _complex_values(dt, shape) if np.dtype(dt).kind == "c" else \
        np.random.default_rng(1).normal(size=shape).astype(dt)
    got, want = one(lambda p: B.make(Op.FFT, [p], dict(fft_type=kind, fft_length=lengths)), x)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-4 if want.dtype.itemsize <= 8 else 1e-12,
                               atol=1e-5 if want.dtype.itemsize <= 8 else 1e-12)


covers(Op.FUSION, Op.GET_OUTPUT)


def test_fusions():
    x, y = B.parameter(0, (3, 4), DT["f32"]), B.parameter(1, (4,), DT["f32"])
    a, b = B.parameter(0, (3, 4), DT["f32"]), B.parameter(1, (4,), DT["f32"])
    # x / broadcast(y) inside a body must stay a division there too.
    quotient = B.binary(Op.DIV, a, B.broadcast_in_dim(b, (3, 4), (1,)))
    two = Module("two", [a, b], [quotient, B.reduce(Op.REDUCE_MAX, quotient, (0,))])
    one_result = Module("one", [a], [B.unary(Op.NEG, a)])
    multi = B.fusion([x, y], two, "reduction", "div_max")
    single = B.fusion([x], one_result, "loop", "neg")
    module = Module("kernels", [x, y], [*B.outputs(multi), single, B.get_output(single, 0)])
    got, want = run(module, sample("f32", (3, 4)), np.float32([3, 7, -0.1, 6]))
    for g, w in zip(got, want):
        assert_exact(g, w)


# -- random programs

def test_every_op_is_tested():
    assert COVERED == set(Op)


def _has_subnormals(module, inputs):
    """Whether any value `module` computes on `inputs`, in fusion bodies too, is a subnormal
    XLA would flush."""
    values = [i for i in module.instructions if not is_multi_output(i)]
    env = dict(zip(values, evaluate(Module("all", module.params, values), inputs)))
    for v in env.values():
        if v.dtype in _FTZ:
            wide = np.abs(v.astype(np.float64))
            if np.any((wide > 0) & (wide < float(dtypes.finfo(v.dtype).tiny))):
                return True
    return any(_has_subnormals(i.attrs["body"], [env[x] for x in i.operands])
               for i in module.instructions if i.op is Op.FUSION)


# -- control flow

covers(Op.WHILE, Op.CONDITIONAL)


def test_loops_and_conditionals():
    f32, i64 = DT["f32"], np.dtype(np.int64)
    x, i = B.parameter(0, (5,), f32, "x"), B.parameter(1, (), i64, "i")
    step = B.binary(Op.ADD, B.binary(Op.MUL, x, x), x)
    cond = Module("cond", [x, i], [B.compare(i, B.constant(np.int64(4)), "LT")])
    body = Module("body", [x, i], [step, B.binary(Op.ADD, i, B.constant(np.int64(1)))])
    a = B.parameter(0, (5,), f32, "a")
    loop = B.make(Op.WHILE, [a, B.constant(np.int64(0))], dict(cond=cond, body=body))
    picked = B.make(Op.CONDITIONAL, [B.compare(B.reduce(Op.REDUCE_MAX, a, (0,)),
                                               B.constant(np.float32(0.5)), "GT"), a],
                    dict(branches=(Module("no", [x], [x]),
                                   Module("yes", [x], [B.unary(Op.NEG, x)]))))
    module = Module("control", [a], [B.get_output(loop, 0), picked])
    got, want = run(module, np.float32([0.5, -0.25, 0.125, 1.0, -1.0]))
    for g, w in zip(got, want):
        assert_exact(g, w)


# linear algebra: XLA's LAPACK calls round differently (test_linalg_ops_agree_... above)
EXACT_OPS = sorted(set(Op) - APPROX - ops.LINALG)


@given(data=st.data(), kind=st.sampled_from(["ints", "floats", "all", "fused"]))
def test_random_exact_programs(data, kind):
    irs = pytest.importorskip("ir_strategies")
    ints = [DT[n] for n in ["bool"] + INTS + ["u64"]]
    floats = [DT[n] for n in FLOATS]
    # Integer programs may use every op; with floats, only ops that round exactly.
    strategy = {"ints": irs.programs(dtypes=ints),
                "floats": irs.programs(ops=EXACT_OPS, dtypes=floats + [DT["bool"]]),
                "all": irs.programs(ops=EXACT_OPS),   # kernels included
                "fused": irs.fused_programs(dtypes=ints)}[kind]
    module, inputs = data.draw(strategy)
    assume(not _has_subnormals(module, inputs))
    got, want = run(module, *inputs)
    for i, (g, w) in enumerate(zip(got, want)):
        # Zero signs from max/min reductions, scans and scatters depend on combining order.
        assert_exact(g, w, f"result {i} of\n{module}", zero_sign=False)


@given(data=st.data(), op=st.sampled_from(sorted(APPROX - ops.REDUCE - ops.CUMULATIVE
                                                 - {Op.DOT_GENERAL})))
def test_random_approximate_ops(data, op):
    irs = pytest.importorskip("ir_strategies")
    floats = [DT[n] for n in FLOATS]
    module, inputs = data.draw(irs.programs(ops=[op], dtypes=floats, max_steps=1))
    assume(not _has_subnormals(module, inputs))
    got, want = run(module, *inputs)
    for g, w in zip(got, want):
        if dtypes.is_float(w.dtype):
            assert_close(g, w, dtypes.name(w.dtype), f"{op} in\n{module}")
        else:
            assert_exact(g, w, f"{op} in\n{module}")


def test_bfloat16_is_ml_dtypes():
    assert DT["bf16"] == np.dtype(ml_dtypes.bfloat16)
    x = np.array([1.5, -2.25], ml_dtypes.bfloat16)
    got, _ = one(lambda p: B.binary(Op.MUL, p, p), x)
    assert got.dtype == DT["bf16"] and got.tolist() == [2.25, 5.0625]


def test_pow_special_exponents_are_exact_like_the_interpreter():
    from jitlib.hlo import Module, build
    from jitlib.hlo.interpreter import evaluate
    from jitlib.backends import get_backend
    x = build.parameter(0, (6,), np.float32, "x")
    y = build.parameter(1, (6,), np.float32, "y")
    module = Module("p", [x, y], [build.binary("pow", x, y)])
    xs = np.array([-0.0, -np.inf, 3.0, 1.7, -2.5, 0.3], np.float32)
    ys = np.array([0.5, 0.5, 2.0, -1.0, 1.0, 0.5], np.float32)
    want = evaluate(module, [xs, ys])[0]
    got = get_backend("jax").compile(module)(xs, ys)[0]
    np.testing.assert_array_equal(want.view(np.uint32), got.view(np.uint32))


# -- collectives: lax's, under jax.vmap(axis_name=...), against hlo/collectives.py

def _collective_module(n):
    x = B.parameter(0, (n, 3), np.float32, "x")
    i = B.axis_index("i", n)
    shifted = B.collective_permute(x, [(k, (k + 1) % n) for k in range(n)], "i", n)
    return Module("spmd", [x], [
        B.all_reduce(x, "sum", "i", n), B.all_reduce(x, "max", "i", n),
        B.all_reduce(x, "min", "i", n), B.all_gather(x, 1, "i", n),
        B.reduce_scatter(x, 0, "i", n), shifted, i])


covers(*ops.COLLECTIVE)   # by the test below (this file's coverage test runs before it)


@pytest.mark.parametrize("n", [1, 2, 4])
def test_collectives_match_the_multi_device_reference(n):
    import jax
    from jitlib.backends.jax import _lower
    from jitlib.hlo import collectives
    module = _collective_module(n)
    xs = np.random.default_rng(n).standard_normal((n, n, 3)).astype(np.float32)
    want = collectives.evaluate(module, [[x] for x in xs], "i")
    got = jax.vmap(_lower(module), axis_name="i")(xs)
    for k in range(n):
        for g, w in zip(got, want[k]):
            np.testing.assert_allclose(np.asarray(g[k]), w, rtol=1e-6)
