"""The reference interpreter against eager NumPy, op by op and dtype by dtype.

Each case builds a one-op module with `jitlib.hlo.build`, runs `evaluate`, and
compares with a NumPy expression bit for bit (dtype included). Ops the spec
defines beyond NumPy (C-style integer division, negative integer powers, empty
reductions, scatter duplicates, clamped windows) get reference implementations
written independently, in plain Python where that is clearest.
"""
import math
import weakref

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jitlib.errors import InterpretError, SourceLocation
from jitlib.hlo import Instr, Module, Op, build as B, dtypes, ops
from jitlib.hlo.interpreter import eval_rules, evaluate, evaluate_instr

D = {name: dtypes.from_name(name)
     for name in ("bool", "i8", "i32", "i64", "u8", "u32", "f16", "bf16", "f32", "f64")}
BOOL = ["bool"]
SIGNED = ["i8", "i32", "i64"]
UNSIGNED = ["u8", "u32"]
INTS = SIGNED + UNSIGNED
FLOATS = ["f16", "bf16", "f32", "f64"]
NUMERIC = INTS + FLOATS
ALL = BOOL + NUMERIC
SHAPES = [(), (0,), (7,), (3, 5)]

COVERED = set()   # every op some test below exercises; checked by test_every_op_is_tested


def covers(*op_list):
    COVERED.update(op_list)
    return op_list


# -- helpers

def sample(name, shape, seed=0):
    """Values of dtype `name` with the awkward ones mixed in: extremes, 0, -0, NaN, inf."""
    dt, rng = D[name], np.random.default_rng(seed)
    n = math.prod(shape)
    if name == "bool":
        return (rng.random(n) < 0.5).reshape(shape)
    if name in INTS:
        info = np.iinfo(dt)
        special = np.array([info.min, info.max, 0, 1, 2, 7] + ([-1, -7] if name in SIGNED else []),
                           dtype=np.int64 if name in SIGNED else np.uint64)
        common = rng.integers(max(info.min, -50), min(info.max, 50), n, endpoint=True)
        values = np.where(rng.random(n) < 0.3, rng.choice(special, n), common)
        return values.astype(dt).reshape(shape)
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, 2.5, -2.5, 1e-3,
                        60000.0, 1e30])
    common = rng.normal(0, 3, n)
    values = np.where(rng.random(n) < 0.3, rng.choice(special, n), common)
    with np.errstate(over="ignore"):      # 1e30 becomes inf in the narrow floats
        return values.astype(dt).reshape(shape)


def _case_id(value):
    """Test ids: op names and dtype names; functions stay anonymous."""
    return getattr(value, "value", value if isinstance(value, str) else "")


def run(make, *arrays):
    """Evaluate the op `make(*params)` on `arrays`; returns the single result."""
    params = [B.parameter(i, a.shape, a.dtype) for i, a in enumerate(arrays)]
    (out,) = evaluate(Module("case", params, [make(*params)]), arrays)
    return out


def assert_bitwise(got, want):
    """Same dtype, shape and bytes (so -0.0 and NaN payloads count)."""
    want = np.asarray(want)
    assert isinstance(got, np.ndarray)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.tobytes() == want.tobytes(), f"\ngot  {got!r}\nwant {want!r}"


def assert_values(got, want):
    """Like assert_bitwise, but any NaN equals any NaN: for hand-written expectations,
    since a computed NaN's sign bit is the hardware's choice."""
    want = np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    if not dtypes.is_float(got.dtype):
        assert_bitwise(got, want)
        return
    g, w = got.astype(np.float64), want.astype(np.float64)
    assert np.array_equal(np.isnan(g), np.isnan(w)), (got, want)
    ok = ~np.isnan(g)
    assert np.array_equal(g[ok], w[ok]), (got, want)
    assert np.array_equal(np.signbit(g[ok]), np.signbit(w[ok])), (got, want)


def wrap(value, name):
    """A Python int wrapped into dtype `name`, as two's-complement hardware does."""
    info = np.iinfo(D[name])
    return (value - info.min) % (1 << info.bits) + info.min


def elementwise(fn, name, *arrays):
    """Apply the Python function `fn` element by element, giving dtype `name`."""
    flat = [fn(*(int(v) for v in vals)) for vals in zip(*(a.flat for a in arrays))]
    return np.array(flat, dtype=np.int64 if name in SIGNED else np.uint64) \
        .astype(D[name]).reshape(arrays[0].shape)


# -- elementwise unary

def _rsqrt(x):
    return np.ones((), x.dtype) / np.sqrt(x)


UNARY = [
    (Op.NEG, np.negative, NUMERIC), (Op.ABS, np.abs, NUMERIC), (Op.SIGN, np.sign, NUMERIC),
    (Op.EXP, np.exp, FLOATS), (Op.EXPM1, np.expm1, FLOATS), (Op.LOG, np.log, FLOATS),
    (Op.LOG1P, np.log1p, FLOATS), (Op.SQRT, np.sqrt, FLOATS), (Op.RSQRT, _rsqrt, FLOATS),
    (Op.TANH, np.tanh, FLOATS), (Op.SIN, np.sin, FLOATS), (Op.COS, np.cos, FLOATS),
    (Op.TAN, np.tan, FLOATS), (Op.FLOOR, np.floor, FLOATS), (Op.CEIL, np.ceil, FLOATS),
    (Op.ROUND, np.round, FLOATS), (Op.NOT, np.invert, BOOL + INTS),
    (Op.IS_FINITE, np.isfinite, FLOATS),
]
covers(*(op for op, _, _ in UNARY))


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("op,fn,name", [(op, fn, n) for op, fn, names in UNARY for n in names],
                         ids=_case_id)
def test_unary(op, fn, name, shape):
    x = sample(name, shape)
    with np.errstate(all="ignore"):
        want = fn(x)
    assert_bitwise(run(lambda p: B.unary(op, p), x), want)


def test_unary_special_values():
    x = np.array([-2.5, -0.5, 0.5, 1.5, 2.5, -0.0, np.nan], np.float32)
    assert_values(run(lambda p: B.unary(Op.ROUND, p), x),
                  np.array([-2, -0.0, 0, 2, 2, -0.0, np.nan], np.float32))
    assert_values(run(lambda p: B.unary(Op.SIGN, p), np.array([-3.0, -0.0, np.nan, 4.0])),
                  np.sign(np.array([-3.0, -0.0, np.nan, 4.0])))
    i8 = np.array([-128, -1, 0, 127], np.int8)
    assert_values(run(lambda p: B.unary(Op.ABS, p), i8), np.array([-128, 1, 0, 127], np.int8))
    assert_values(run(lambda p: B.unary(Op.NEG, p), i8), np.array([-128, 1, 0, -127], np.int8))
    assert_values(run(lambda p: B.unary(Op.SIGN, p), np.array([0, 5, 255], np.uint8)),
                  np.array([0, 1, 1], np.uint8))
    assert_values(run(lambda p: B.unary(Op.NOT, p), np.array([True, False])),
                  np.array([False, True]))
    assert_values(run(lambda p: B.unary(Op.NOT, p), np.array([0, 5], np.uint8)),
                  np.array([255, 250], np.uint8))
    assert_values(run(lambda p: B.unary(Op.RSQRT, p), np.array([4.0, 0.0, -1.0, np.inf])),
                  np.array([0.5, np.inf, np.nan, 0.0]))


covers(Op.LOGISTIC)


@pytest.mark.parametrize("name", FLOATS)
def test_logistic(name):
    dt = D[name]
    x = np.concatenate([sample(name, (200,)), np.array([-1e4, 1e4, -80, 80], dt)]).astype(dt)
    with np.errstate(all="ignore"):
        got = run(lambda p: B.unary(Op.LOGISTIC, p), x)
        want = (1 / (1 + np.exp(-x.astype(np.float64)))).astype(dt).astype(np.float64)
        assert got.dtype == dt
        info = dtypes.finfo(dt)
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=4 * float(info.eps),
                                   atol=2 * float(info.smallest_subnormal))
        # For x >= 0 it is literally 1/(1+exp(-x)) in the operand dtype.
        one = np.ones((), dt)
        ok = x >= 0
        assert_bitwise(got[ok], (one / (one + np.exp(-x)))[ok])
    tail = run(lambda p: B.unary(Op.LOGISTIC, p), np.array([-1e4, 1e4, np.nan], dt))
    assert_values(tail, np.array([0.0, 1.0, np.nan], dt))


# -- convert

covers(Op.CONVERT)


@pytest.mark.parametrize("src", ALL)
@pytest.mark.parametrize("dst", ALL)
def test_convert(src, dst):
    x = sample(src, (40,), seed=1)
    with np.errstate(all="ignore"):
        # NaN/out-of-range float -> int: NumPy's scalar C cast, which its strided loop runs
        # (its contiguous float -> uint32 loop answers differently: see float_to_int)
        want = np.repeat(x, 2)[::2].astype(D[dst])
    # B.make, not B.convert, which drops same-dtype converts (a parsed module may have them).
    assert_bitwise(run(lambda p: B.make(Op.CONVERT, (p,), {"dtype": dst}), x), want)


def test_convert_to_bool_is_nonzero():
    x = np.array([np.nan, 0.0, -0.0, 1e-30, -np.inf])
    assert_bitwise(run(lambda p: B.convert(p, D["bool"]), x),
                   np.array([True, False, False, True, True]))


# -- elementwise binary

BINARY = [
    (Op.ADD, np.add, ALL), (Op.SUB, np.subtract, NUMERIC), (Op.MUL, np.multiply, ALL),
    (Op.DIV, np.divide, FLOATS), (Op.REM, np.fmod, FLOATS), (Op.POW, np.power, FLOATS),
    (Op.POW, np.power, UNSIGNED),
    (Op.MAX, np.maximum, ALL), (Op.MIN, np.minimum, ALL), (Op.ATAN2, np.arctan2, FLOATS),
    (Op.AND, np.bitwise_and, BOOL + INTS), (Op.OR, np.bitwise_or, BOOL + INTS),
    (Op.XOR, np.bitwise_xor, BOOL + INTS),
]
covers(*(op for op, _, _ in BINARY))


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("op,fn,name", [(op, fn, n) for op, fn, names in BINARY for n in names],
                         ids=_case_id)
def test_binary(op, fn, name, shape):
    x, y = sample(name, shape, seed=2), sample(name, shape, seed=3)
    if op is Op.POW and name in UNSIGNED:
        y = y % np.array(9, y.dtype)
    with np.errstate(all="ignore"):
        want = fn(x, y)
    assert_bitwise(run(lambda a, b: B.binary(op, a, b), x, y), want)


@pytest.mark.parametrize("name", ["i8", "f32", "bf16"])
def test_binary_with_broadcast_in_dim(name):
    x, row = sample(name, (4, 6), seed=4), sample(name, (6,), seed=5)

    def make(a, b):
        return B.binary(Op.MUL, a, B.broadcast_in_dim(b, (4, 6), (1,)))

    with np.errstate(all="ignore"):
        assert_bitwise(run(make, x, row), x * row[None, :])
    col = sample(name, (4, 1), seed=6)
    with np.errstate(all="ignore"):
        assert_bitwise(run(lambda a, b: B.binary(Op.SUB, a, B.broadcast_to(b, (4, 6))), x, col),
                       x - col)


def _c_div(a, b):
    if b == 0:
        return 0
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _c_rem(a, b):
    return 0 if b == 0 else a - b * _c_div(a, b)


def _int_pow(a, b):
    if b >= 0:
        return a ** b
    return 1 if a == 1 else ((-1) ** (-b) if a == -1 else 0)


@pytest.mark.parametrize("name", INTS)
@pytest.mark.parametrize("op,ref", [(Op.DIV, _c_div), (Op.REM, _c_rem), (Op.POW, _int_pow)])
def test_integer_div_rem_pow(op, ref, name):
    x, y = sample(name, (300,), seed=7), sample(name, (300,), seed=8)
    if op is Op.POW:
        y = (y % np.array(12, y.dtype)) - (np.array(4, y.dtype) if name in SIGNED else 0)
    want = elementwise(lambda a, b: wrap(ref(a, b), name), name, x, y)
    assert_bitwise(run(lambda a, b: B.binary(op, a, b), x, y), want)


@pytest.mark.parametrize("name", SIGNED)
def test_integer_division_corner_cases(name):
    lo = np.iinfo(D[name]).min
    x = np.array([lo, lo, 7, -7, 7, -7, 0, 5, -5], D[name])
    y = np.array([-1, 1, 2, 2, -2, -2, 0, 0, 0], D[name])
    div = run(lambda a, b: B.binary(Op.DIV, a, b), x, y)
    rem = run(lambda a, b: B.binary(Op.REM, a, b), x, y)
    assert_bitwise(div, np.array([lo, lo, 3, -3, -3, 3, 0, 0, 0], D[name]))
    assert_bitwise(rem, np.array([0, 0, 1, -1, 1, -1, 0, 0, 0], D[name]))


def test_unsigned_division_and_zero_divisor():
    x, y = np.array([7, 255, 0, 9], np.uint8), np.array([2, 0, 0, 255], np.uint8)
    assert_bitwise(run(lambda a, b: B.binary(Op.DIV, a, b), x, y), np.array([3, 0, 0, 0], np.uint8))
    assert_bitwise(run(lambda a, b: B.binary(Op.REM, a, b), x, y), np.array([1, 0, 0, 9], np.uint8))


def test_integer_pow_negative_exponent_and_wrap():
    x = np.array([1, -1, -1, 2, 0, -3, 3], np.int32)
    y = np.array([-5, -3, -4, -1, -2, -1, 40], np.int32)
    want = np.array([1, -1, 1, 0, 0, 0, wrap(3 ** 40, "i32")], np.int32)
    assert_bitwise(run(lambda a, b: B.binary(Op.POW, a, b), x, y), want)


def test_float_div_rem_are_ieee_and_fmod():
    x, y = np.array([1.0, -1.0, 0.0, 5.5, -5.5, np.inf]), np.array([0.0, 0.0, 0.0, 2, 2, 2])
    assert_values(run(lambda a, b: B.binary(Op.DIV, a, b), x, y),
                  np.array([np.inf, -np.inf, np.nan, 2.75, -2.75, np.inf]))
    assert_values(run(lambda a, b: B.binary(Op.REM, a, b), x, y),
                  np.array([np.nan, np.nan, np.nan, 1.5, -1.5, np.nan]))


def test_max_min_propagate_nan():
    x, y = np.array([np.nan, 1.0, 2.0]), np.array([1.0, np.nan, 3.0])
    assert_values(run(lambda a, b: B.binary(Op.MAX, a, b), x, y), np.array([np.nan, np.nan, 3.0]))
    assert_values(run(lambda a, b: B.binary(Op.MIN, a, b), x, y), np.array([np.nan, np.nan, 2.0]))


COMPARE = {"EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal,
           "GT": np.greater, "GE": np.greater_equal}


covers(Op.COMPARE)


@pytest.mark.parametrize("direction", ops.COMPARE_DIRECTIONS)
@pytest.mark.parametrize("name", ALL)
def test_compare(direction, name):
    x, y = sample(name, (3, 5), seed=9), sample(name, (3, 5), seed=10)
    x[0] = y[0]    # some equal pairs
    assert_bitwise(run(lambda a, b: B.compare(a, b, direction), x, y),
                   COMPARE[direction](x, y))


# -- select and clamp

covers(Op.SELECT)


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_select(name, shape):
    p, a, b = sample("bool", shape, 11), sample(name, shape, 12), sample(name, shape, 13)
    assert_bitwise(run(B.select, p, a, b), np.where(p, a, b))


covers(Op.CLAMP)


@pytest.mark.parametrize("name", NUMERIC)
def test_clamp(name):
    x, lo, hi = sample(name, (4, 5), 14), sample(name, (), 15), sample(name, (4, 5), 16)
    with np.errstate(all="ignore"):
        assert_bitwise(run(B.clamp, lo, x, hi), np.minimum(np.maximum(x, lo), hi))


def test_clamp_nan_bounds():
    x = np.array([np.nan, -5.0, 0.5, 5.0])
    assert_values(run(B.clamp, np.array(0.0), x, np.array(1.0)), np.array([np.nan, 0, 0.5, 1]))
    assert_values(run(B.clamp, np.array(np.nan), x, np.array(1.0)), np.full(4, np.nan))


# -- leaves

covers(Op.IOTA)


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("shape,dim", [((), 0), ((5,), 0), ((3, 4), 1), ((2, 0, 3), 2),
                                       ((300,), 0)])
def test_iota(name, shape, dim):
    line = np.arange(shape[dim] if shape else 1).astype(D[name])
    axis_shape = [1] * len(shape)
    if shape:
        axis_shape[dim] = shape[dim]
    want = np.broadcast_to(line.reshape(axis_shape), shape)
    (got,) = evaluate(Module("iota", [], [B.iota(shape, D[name], dim)]), [])
    assert_bitwise(got, want)


covers(Op.CONSTANT, Op.PARAMETER)


@pytest.mark.parametrize("name", ALL)
def test_constant_result_is_a_writable_copy(name):
    value = sample(name, (2, 3), seed=17)
    c = B.constant(value)
    (got,) = evaluate(Module("c", [], [c]), [])
    assert_bitwise(got, value)
    got[...] = 0
    assert_bitwise(c.attrs["value"].array, value)


# -- data movement

MOVEMENT_CASES = [
    ("broadcast_scalar", (), lambda p: B.broadcast_in_dim(p, (2, 3), ()),
     lambda x: np.broadcast_to(x, (2, 3))),
    ("broadcast_size1", (3, 1), lambda p: B.broadcast_in_dim(p, (2, 3, 4), (1, 2)),
     lambda x: np.broadcast_to(x[None], (2, 3, 4))),
    ("broadcast_empty", (0,), lambda p: B.broadcast_in_dim(p, (0, 2), (0,)),
     lambda x: np.broadcast_to(x[:, None], (0, 2))),
    ("reshape", (3, 4), lambda p: B.reshape(p, (2, 6)), lambda x: x.reshape(2, 6)),
    ("reshape_0d", (1, 1), lambda p: B.reshape(p, ()), lambda x: x.reshape(())),
    ("reshape_empty", (0, 4), lambda p: B.reshape(p, (2, 0, 3)), lambda x: x.reshape(2, 0, 3)),
    ("transpose", (2, 3, 4), lambda p: B.transpose(p, (2, 0, 1)),
     lambda x: x.transpose(2, 0, 1)),
    ("slice", (7, 6), lambda p: B.slice(p, (1, 0), (6, 5), (2, 3)), lambda x: x[1:6:2, 0:5:3]),
    ("slice_empty", (7,), lambda p: B.slice(p, (3,), (3,)), lambda x: x[3:3]),
    ("reverse", (3, 4), lambda p: B.reverse(p, (0, 1)), lambda x: x[::-1, ::-1]),
    ("reverse_empty", (0, 2), lambda p: B.reverse(p, (1,)), lambda x: x[:, ::-1]),
    ("concatenate", (2, 3), lambda p: B.concatenate([p, B.reverse(p, (0,)), p], 0),
     lambda x: np.concatenate([x, x[::-1], x], 0)),
    ("concatenate_empty", (0, 3), lambda p: B.concatenate([p, p], 1),
     lambda x: np.zeros((0, 6), x.dtype)),
]
covers(Op.BROADCAST_IN_DIM, Op.RESHAPE, Op.TRANSPOSE, Op.SLICE, Op.REVERSE, Op.CONCATENATE)


@pytest.mark.parametrize("name", ["bool", "i8", "u32", "f16", "bf16", "f64"])
@pytest.mark.parametrize("case", MOVEMENT_CASES, ids=lambda c: c[0])
def test_movement(case, name):
    _, shape, make, ref = case
    x = sample(name, shape, seed=18)
    got = run(make, x)
    assert_bitwise(got, ref(x))


def _pad_reference(x, value, low, high, interior):
    """Element by element: where each output position reads from."""
    shape = [lo + hi + d + max(d - 1, 0) * it
             for d, lo, hi, it in zip(x.shape, low, high, interior)]
    out = np.full(shape, value, x.dtype)
    for j in np.ndindex(*shape):
        src = []
        for pos, lo, it, d in zip(j, low, interior, x.shape):
            p = pos - lo
            if p < 0 or p % (it + 1) or p // (it + 1) >= d:
                break
            src.append(p // (it + 1))
        else:
            out[j] = x[tuple(src)]
    return out


covers(Op.PAD)


@pytest.mark.parametrize("name", ["bool", "i32", "bf16", "f32"])
@pytest.mark.parametrize("shape,low,high,interior", [
    ((3,), (2,), (1,), (0,)), ((3,), (1,), (2,), (2,)), ((4,), (-1,), (-2,), (0,)),
    ((4,), (-3,), (2,), (1,)), ((3, 2), (1, -1), (-2, 3), (1, 0)), ((0,), (2,), (1,), (3,)),
    ((2, 0), (0, 1), (1, 1), (0, 2)), ((), (), (), ()), ((5,), (-5,), (0,), (0,)),
])
def test_pad(name, shape, low, high, interior):
    x, value = sample(name, shape, seed=19), sample(name, (), seed=20)
    got = run(lambda a, v: B.pad(a, v, low, high, interior), x, value)
    assert_bitwise(got, _pad_reference(x, value, low, high, interior))
    if shape and all(v >= 0 for v in low + high) and not any(interior):
        assert_bitwise(got, np.pad(x, list(zip(low, high)), constant_values=value))


covers(Op.DYNAMIC_SLICE)


@pytest.mark.parametrize("index_name", ["i8", "i32", "u8", "i64"])
def test_dynamic_slice_clamps_starts(index_name):
    x = np.arange(30, dtype=np.float32).reshape(5, 6)
    idt = D[index_name]
    for s0, s1 in [(0, 0), (1, 2), (4, 5), (-3, 100), (127, -128)]:
        if index_name.startswith("u") and min(s0, s1) < 0:
            continue
        starts = [np.array(s0).astype(idt), np.array(s1).astype(idt)]
        got = run(lambda a, i, j: B.dynamic_slice(a, [i, j], (2, 3)), x, *starts)
        b0, b1 = min(max(int(starts[0]), 0), 3), min(max(int(starts[1]), 0), 3)
        assert_bitwise(got, x[b0:b0 + 2, b1:b1 + 3])


def test_dynamic_slice_scalar_and_empty():
    x = np.array(3.5, np.float32)
    assert_bitwise(run(lambda a: B.dynamic_slice(a, [], ()), x), x)
    y = np.arange(4, dtype=np.int8)
    assert_bitwise(run(lambda a, i: B.dynamic_slice(a, [i], (0,)), y, np.array(9)),
                   np.zeros(0, np.int8))


covers(Op.DYNAMIC_UPDATE_SLICE)


@pytest.mark.parametrize("name", ["bool", "u8", "f16", "f64"])
def test_dynamic_update_slice_clamps_starts(name):
    x, upd = sample(name, (4, 5), seed=21), sample(name, (2, 3), seed=22)
    for s0, s1 in [(0, 0), (2, 2), (3, 4), (-9, 99)]:
        got = run(lambda a, u, i, j: B.dynamic_update_slice(a, u, [i, j]),
                  x, upd, np.array(s0), np.array(s1, np.int32))
        want = x.copy()
        b0, b1 = min(max(s0, 0), 2), min(max(s1, 0), 2)
        want[b0:b0 + 2, b1:b1 + 3] = upd
        assert_bitwise(got, want)


covers(Op.GATHER)


@pytest.mark.parametrize("name", ["bool", "i32", "bf16", "f32"])
@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("index_name", ["i8", "i64", "u8", "u32"])
def test_gather_clips_indices(name, axis, index_name):
    x = sample(name, (3, 4, 5), seed=23)
    n = x.shape[axis]
    raw = np.array([[0, 1, -1, n - 1], [n, 100, -100, 2]])
    if index_name.startswith("u"):
        raw = np.abs(raw)
    idx = raw.astype(D[index_name])
    want = x[(slice(None),) * axis + (np.clip(raw, 0, n - 1),)]
    assert_bitwise(run(lambda a, i: B.gather(a, i, axis), x, idx), want)


def test_gather_scalar_and_empty_indices():
    x = np.arange(6, dtype=np.float64).reshape(2, 3)
    assert_bitwise(run(lambda a, i: B.gather(a, i, 1), x, np.array(7)), x[:, 2])
    assert_bitwise(run(lambda a, i: B.gather(a, i, 0), x, np.zeros((0, 2), np.int32)),
                   np.zeros((0, 2, 3)))
    assert_bitwise(run(lambda a, i: B.gather(a, i, 0), np.zeros((0,), np.int8),
                       np.zeros((0,), np.int64)), np.zeros(0, np.int8))
    big = np.array([np.iinfo(np.uint64).max], np.uint64)
    assert_bitwise(run(lambda a, i: B.gather(a, i, 0), x, big), x[1:])


def _scatter_reference(x, idx, upd, axis, mode):
    """Updates applied one at a time, in index order."""
    out = np.moveaxis(x.copy(), axis, 0)
    rows = np.moveaxis(upd.reshape(x.shape[:axis] + (idx.size,) + x.shape[axis + 1:]), axis, 0)
    combine = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum,
               "set": lambda old, new: new}[mode]
    for k, i in enumerate(idx.reshape(-1).tolist()):
        if 0 <= i < out.shape[0]:
            out[i] = combine(out[i], rows[k])
    return np.moveaxis(out, 0, axis)


covers(Op.SCATTER)


@pytest.mark.parametrize("mode", ops.SCATTER_MODES)
@pytest.mark.parametrize("name", ["bool", "i8", "u32", "bf16", "f16", "f32"])
@pytest.mark.parametrize("axis", [0, 1])
def test_scatter_duplicates_and_out_of_bounds(mode, name, axis):
    x = sample(name, (4, 3), seed=24)
    n = x.shape[axis]
    idx = np.array([[1, 0, 1], [n, -1, 1], [0, 2, 99]], np.int32)
    upd_shape = x.shape[:axis] + idx.shape + x.shape[axis + 1:]
    upd = sample(name, upd_shape, seed=25)
    with np.errstate(all="ignore"):
        want = _scatter_reference(x, idx, upd, axis, mode)
    got = run(lambda a, i, u: B.scatter(a, i, u, axis, mode), x, idx, upd)
    assert_bitwise(got, want)


def test_scatter_set_last_write_wins():
    x = np.zeros(3, np.int32)
    idx = np.array([2, 0, 2, 2, 5, -1, 0], np.int64)
    upd = np.array([1, 2, 3, 4, 5, 6, 7], np.int32)
    got = run(lambda a, i, u: B.scatter(a, i, u, 0, "set"), x, idx, upd)
    assert_bitwise(got, np.array([7, 0, 4], np.int32))
    got = run(lambda a, i, u: B.scatter(a, i, u, 0, "add"), x, idx, upd)
    assert_bitwise(got, np.array([9, 0, 8], np.int32))
    huge = np.array([2 ** 64 - 1, 1], np.uint64)
    got = run(lambda a, i, u: B.scatter(a, i, u, 0, "set"), x, huge, upd[:2])
    assert_bitwise(got, np.array([0, 2, 0], np.int32))


def test_scatter_empty():
    x = np.ones((2, 3), np.float32)
    got = run(lambda a, i, u: B.scatter(a, i, u, 1, "add"), x, np.zeros(0, np.int8),
              np.zeros((2, 0), np.float32))
    assert_bitwise(got, x)


# -- reductions

REDUCTIONS = [
    (Op.REDUCE_SUM, lambda x, d: np.sum(x, axis=d, dtype=x.dtype), ALL),
    (Op.REDUCE_PROD, lambda x, d: np.prod(x, axis=d, dtype=x.dtype), ALL),
    (Op.REDUCE_MAX, lambda x, d: np.max(x, axis=d), ALL),
    (Op.REDUCE_MIN, lambda x, d: np.min(x, axis=d), ALL),
    (Op.REDUCE_AND, lambda x, d: np.bitwise_and.reduce(x, axis=d), BOOL + INTS),
    (Op.REDUCE_OR, lambda x, d: np.bitwise_or.reduce(x, axis=d), BOOL + INTS),
]
covers(*(op for op, _, _ in REDUCTIONS))


@pytest.mark.parametrize("dims", [(), (0,), (1,), (0, 2), (0, 1, 2)], ids=str)
@pytest.mark.parametrize("op,fn,name", [(op, fn, n) for op, fn, names in REDUCTIONS
                                        for n in names],
                         ids=_case_id)
def test_reduce(op, fn, name, dims):
    x = sample(name, (3, 4, 5), seed=26)
    with np.errstate(all="ignore"):
        want = fn(x, dims)
    assert_bitwise(run(lambda p: B.reduce(op, p, dims), x), want)


def test_reduce_sum_is_numpys_pairwise_sum():
    x = np.random.default_rng(27).random(10_000).astype(np.float32)
    assert_bitwise(run(lambda p: B.reduce(Op.REDUCE_SUM, p, (0,)), x), x.sum())
    h = x.astype(np.float16)
    assert_bitwise(run(lambda p: B.reduce(Op.REDUCE_SUM, p, (0,)), h), h.sum())


IDENTITY = {
    Op.REDUCE_SUM: lambda dt: 0, Op.REDUCE_PROD: lambda dt: 1,
    Op.REDUCE_MAX: dtypes.lowest, Op.REDUCE_MIN: dtypes.highest,
    Op.REDUCE_AND: lambda dt: True if dt == dtypes.BOOL else -1 if dtypes.is_signed(dt)
    else np.iinfo(dt).max,
    Op.REDUCE_OR: lambda dt: 0,
}


@pytest.mark.parametrize("op,name", [(op, n) for op, _, names in REDUCTIONS for n in names],
                         ids=_case_id)
def test_empty_reduction_gives_identity(op, name):
    x = np.zeros((2, 0, 3), D[name])
    want = np.full((2, 3), IDENTITY[op](D[name]), D[name])
    assert_bitwise(run(lambda p: B.reduce(op, p, (1,)), x), want)
    assert_bitwise(run(lambda p: B.reduce(op, p, (0, 2)), x), np.zeros((0,), D[name]))


def test_reduce_max_nan():
    x = np.array([[1.0, np.nan, 3.0], [1.0, 2.0, -np.inf]], np.float32)
    assert_values(run(lambda p: B.reduce(Op.REDUCE_MAX, p, (1,)), x),
                  np.array([np.nan, 2.0], np.float32))
    assert_values(run(lambda p: B.reduce(Op.REDUCE_MIN, p, (1,)), x),
                  np.array([np.nan, -np.inf], np.float32))


covers(Op.ARGMAX, Op.ARGMIN)


@pytest.mark.parametrize("op,fn", [(Op.ARGMAX, np.argmax), (Op.ARGMIN, np.argmin)],
                         ids=["argmax", "argmin"])
@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("index_name", ["i64", "i32", "u8"])
def test_arg_reduce(op, fn, name, axis, index_name):
    x = sample(name, (6, 7), seed=28)
    x[2] = x[3]    # ties
    got = run(lambda p: B.arg_reduce(op, p, axis, D[index_name]), x)
    assert_bitwise(got, fn(x, axis=axis).astype(D[index_name]))


def test_arg_reduce_nan_and_ties():
    x = np.array([1.0, np.nan, 5.0, np.nan, 5.0])
    assert_bitwise(run(lambda p: B.arg_reduce(Op.ARGMAX, p, 0), x), np.array(1))
    assert_bitwise(run(lambda p: B.arg_reduce(Op.ARGMIN, p, 0), x), np.array(1))
    y = np.array([[5, 1, 5, 1]], np.int8)
    assert_bitwise(run(lambda p: B.arg_reduce(Op.ARGMAX, p, 1), y), np.array([0]))
    assert_bitwise(run(lambda p: B.arg_reduce(Op.ARGMIN, p, 1), y), np.array([1]))
    assert_bitwise(run(lambda p: B.arg_reduce(Op.ARGMAX, p, 1), np.zeros((0, 3))),
                   np.zeros((0,), np.int64))


SCANS = [
    (Op.CUMSUM, lambda x, a: np.cumsum(x, axis=a, dtype=x.dtype), ALL),
    (Op.CUMPROD, lambda x, a: np.cumprod(x, axis=a, dtype=x.dtype), ALL),
    (Op.CUMMAX, lambda x, a: np.maximum.accumulate(x, axis=a), ALL),
    (Op.CUMMIN, lambda x, a: np.minimum.accumulate(x, axis=a), ALL),
]
covers(*(op for op, _, _ in SCANS))


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("shape,axis", [((9,), 0), ((3, 4), 1), ((3, 4), 0), ((0, 2), 0)],
                         ids=str)
@pytest.mark.parametrize("op,fn,name", [(op, fn, n) for op, fn, names in SCANS for n in names],
                         ids=_case_id)
def test_cumulative(op, fn, name, shape, axis, reverse):
    x = sample(name, shape, seed=29)
    with np.errstate(all="ignore"):
        want = np.flip(fn(np.flip(x, axis), axis), axis) if reverse else fn(x, axis)
    assert_bitwise(run(lambda p: B.cumulative(op, p, axis, reverse), x), want)


def test_cumulative_examples():
    x = np.array([1, 2, 3], np.int32)
    assert_values(run(lambda p: B.cumulative(Op.CUMSUM, p, 0, True), x),
                  np.array([6, 5, 3], np.int32))
    y = np.array([1.0, np.nan, 3.0, 0.0])
    assert_values(run(lambda p: B.cumulative(Op.CUMMAX, p, 0), y),
                  np.array([1.0, np.nan, np.nan, np.nan]))
    assert_values(run(lambda p: B.cumulative(Op.CUMMIN, p, 0, True), y),
                  np.array([np.nan, np.nan, 0.0, 0.0]))


# -- sort

covers(Op.SORT)


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("axis", [0, 1])
def test_sort_is_numpys_stable_sort(name, axis):
    x = sample(name, (6, 7), seed=31)
    x[:, 1] = x[:, 0]   # ties
    assert_bitwise(run(lambda a: B.sort([a], axis), x), np.sort(x, axis, kind="stable"))
    assert_bitwise(run(lambda a: B.sort([a], axis, indices=True), x),
                   np.argsort(x, axis, kind="stable"))


def test_sort_puts_nan_last_and_keeps_zeros_in_order():
    x = np.array([0.0, -np.nan, -0.0, 1.0, np.nan, -np.inf, 0.0, -0.0], np.float32)
    got = run(lambda a: B.sort([a], 0, indices=True), x)
    assert_bitwise(got, np.array([5, 0, 2, 6, 7, 3, 1, 4]))


def test_sort_of_several_keys_is_lexsort():
    major = np.array([[2, 1, 2, 1, 0], [1, 1, 1, 1, 1]], np.int8)
    minor = np.array([[0.5, np.nan, -1.0, 0.5, 3.0], [2.0, 1.0, np.nan, 1.0, 0.0]])
    got = run(lambda a, b: B.sort([a, b], 1, indices=True), major, minor)
    assert_bitwise(got, np.lexsort((minor, major), axis=1))


def test_sort_of_an_empty_axis():
    x = np.zeros((3, 0), np.float32)
    assert_bitwise(run(lambda a: B.sort([a], 1, indices=True), x), np.zeros((3, 0), np.int64))


# -- linear algebra: NumPy's LAPACK where NumPy exposes it, SciPy's for lu and trsm

covers(*ops.LINALG)


def _spd(shape, dtype, seed=0):
    a = np.random.default_rng(seed).normal(size=shape)
    return (a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_linalg_factorizations_are_numpys(dtype):
    a = _spd((2, 3, 4, 4), dtype)
    assert_bitwise(run(B.cholesky, a), np.linalg.cholesky(a))
    w, v = np.linalg.eigh(a)
    assert_bitwise(run(lambda x: B.eigh(x, "values"), a), w)
    assert_bitwise(run(lambda x: B.eigh(x, "vectors"), a), v)
    r = np.random.default_rng(1).normal(size=(2, 5, 3)).astype(dtype)
    assert_bitwise(run(lambda x: B.qr(x, "q", True), r), np.linalg.qr(r, "complete")[0])
    assert_bitwise(run(lambda x: B.svd(x, "vh"), r), np.linalg.svd(r, False)[2])


def test_lu_gives_scipys_factors_and_the_row_order():
    import scipy.linalg
    a = np.random.default_rng(2).normal(size=(3, 5, 5))
    perm = run(lambda x: B.lu(x, "permutation"), a)
    packed = run(lambda x: B.lu(x, "lu"), a)
    for k in range(3):
        p, lower, upper = scipy.linalg.lu(a[k])
        assert_bitwise(packed[k], np.tril(lower, -1) + upper)
        np.testing.assert_array_equal(a[k][perm[k]], p.T @ a[k])


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("transpose_a", [True, False])
@pytest.mark.parametrize("unit", [True, False])
def test_triangular_solve_reads_one_triangle(left, lower, transpose_a, unit):
    rng = np.random.default_rng(3)
    a = rng.normal(size=(2, 4, 4)) + 4 * np.eye(4)
    b = rng.normal(size=(2, 4, 3) if left else (2, 3, 4))
    x = run(lambda p, q: B.triangular_solve(p, q, left, lower, transpose_a, unit), a, b)
    t = np.tril(a) if lower else np.triu(a)
    if unit:
        t = t - t * np.eye(4) + np.eye(4)
    t = np.swapaxes(t, -1, -2) if transpose_a else t
    np.testing.assert_allclose(t @ x if left else x @ t, b, rtol=1e-12, atol=1e-12)


def test_linalg_failures_are_nan_per_matrix():
    a = _spd((2, 3, 3), np.float64)
    a[1] = -a[1]
    got = run(B.cholesky, a)
    # NaN on and below the diagonal, zeros above (JAX's convention)
    assert np.isnan(got[1][np.tril_indices(3)]).all() and not np.isnan(got[0]).any()
    assert (got[1][np.triu_indices(3, 1)] == 0).all()


# -- dot_general

def _matmul(a, b):
    return B.dot_general(a, b, (a.ndim - 1,), (max(b.ndim - 2, 0),))


covers(Op.DOT_GENERAL)


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("ls,rs", [((33, 65), (65, 17)), ((5, 8), (8,)), ((8,), (8, 3)),
                                   ((9,), (9,)), ((4, 0), (0, 3)), ((0, 3), (3, 2))], ids=str)
def test_dot_matches_eager_matmul(name, ls, rs):
    a, b = sample(name, ls, seed=30), sample(name, rs, seed=31)
    if name in FLOATS:
        a, b = np.nan_to_num(a, posinf=7, neginf=-7), np.nan_to_num(b, posinf=7, neginf=-7)
    with np.errstate(all="ignore"):
        if name == "bf16":   # NumPy's bf16 matmul returns float32
            want = (a @ b).astype(D[name])
        else:
            want = a @ b
    assert_bitwise(run(_matmul, a, b), want)


def test_dot_transposed_operand_matches_eager():
    rng = np.random.default_rng(32)
    a, b = rng.random((40, 30), np.float32), rng.random((40, 20), np.float32)
    assert_bitwise(run(lambda x, y: B.dot_general(x, y, (0,), (0,)), a, b), a.T @ b)


def test_dot_general_batch_and_scattered_dims():
    rng = np.random.default_rng(33)
    lhs = rng.integers(-9, 9, (3, 4, 2, 5)).astype(np.int32)    # dims: k0 b m k1
    rhs = rng.integers(-9, 9, (5, 4, 6, 3)).astype(np.int32)    # dims: k1 b n k0
    got = run(lambda x, y: B.dot_general(x, y, (0, 3), (3, 0), (1,), (1,)), lhs, rhs)
    assert_bitwise(got, np.einsum("abmc,cbna->bmn", lhs, rhs).astype(np.int32))
    f = lhs.astype(np.float64), rhs.astype(np.float64)
    got = run(lambda x, y: B.dot_general(x, y, (0, 3), (3, 0), (1,), (1,)), *f)
    np.testing.assert_allclose(got, np.einsum("abmc,cbna->bmn", *f))
    batched = rng.random((2, 3, 4), np.float32), rng.random((2, 4, 5), np.float32)
    got = run(lambda x, y: B.dot_general(x, y, (2,), (1,), (0,), (0,)), *batched)
    assert_bitwise(got, np.matmul(*batched))


def test_dot_integer_wraps_and_bool_is_or_of_ands():
    a = np.full((1, 4), 100, np.int8)
    assert_bitwise(run(_matmul, a, a.T.copy()), np.array([[wrap(40000, "i8")]], np.int8))
    p = np.array([[True, False], [False, False]])
    q = np.array([[True, True], [True, True]])
    assert_bitwise(run(_matmul, p, q), np.array([[True, True], [False, False]]))


# -- kernels

covers(Op.FUSION, Op.GET_OUTPUT)


def test_fusion_evaluates_its_body():
    x = B.parameter(0, (3, 4), D["f32"], name="x")
    p = B.parameter(0, (3, 4), D["f32"])
    body = Module("k", [p], [B.unary(Op.EXP, p), B.reduce(Op.REDUCE_SUM, p, (1,)), p])
    kernel = B.fusion([x], body, "reduction", "k")
    single = B.fusion([x], Module("n", [p], [B.unary(Op.NEG, p)]), "loop", "n")
    outs = B.outputs(kernel)
    value = sample("f32", (3, 4))
    e, s, same, neg, neg0 = evaluate(Module("m", [x], [*outs, single,
                                                       B.get_output(single, 0)]), [value])
    assert_bitwise(e, np.exp(value))
    assert_bitwise(s, np.sum(value, axis=1))
    assert_bitwise(same, value)
    assert not np.shares_memory(same, value)
    assert_bitwise(neg, -value)
    assert_bitwise(neg0, -value)
    got = evaluate_instr(kernel, [value])
    assert isinstance(got, tuple) and len(got) == 3
    assert_bitwise(evaluate_instr(outs[1], [got]), np.sum(value, axis=1))
    assert_bitwise(evaluate_instr(single, [value]), -value)
    assert_bitwise(evaluate_instr(B.get_output(single, 0), [-value]), -value)
    with pytest.raises(InterpretError, match=r"is \(f32\[3,4\], f32\[3\], f32\[3,4\]\)"):
        evaluate_instr(outs[1], [got[:2]])


# -- control flow

covers(Op.WHILE, Op.CONDITIONAL)


def test_while_runs_until_its_condition_fails():
    x, i = B.parameter(0, (3,), D["f32"], "x"), B.parameter(1, (), D["i64"], "i")
    cond = Module("c", [x, i], [B.compare(B.reduce(Op.REDUCE_MAX, x, (0,)),
                                          B.constant(np.float32(100)), "LT")])
    body = Module("b", [x, i], [B.binary(Op.MUL, x, x),
                                B.binary(Op.ADD, i, B.constant(np.int64(1)))])
    a = B.parameter(0, (3,), D["f32"], "a")
    loop = B.make(Op.WHILE, [a, B.constant(np.int64(0))], dict(cond=cond, body=body))
    value = np.float32([1.5, 2.0, -1.0])
    squared, trips = evaluate(Module("m", [a], [B.get_output(loop, 0),
                                                B.get_output(loop, 1)]), [value])
    want, n = value.copy(), 0
    while want.max() < 100:
        want, n = want * want, n + 1
    assert_bitwise(squared, want)
    assert int(trips) == n == 3


def test_conditional_picks_a_branch_and_clamps_the_index():
    x = B.parameter(0, (2,), D["f32"], "x")
    k = B.parameter(0, (), D["i64"], "k")
    a = B.parameter(1, (2,), D["f32"], "a")
    branches = (Module("b0", [x], [x]), Module("b1", [x], [B.unary(Op.NEG, x)]),
                Module("b2", [x], [B.unary(Op.EXP, x)]))
    picked = B.make(Op.CONDITIONAL, [k, a], dict(branches=branches))
    module = Module("m", [k, a], [picked])
    value = np.float32([0.5, -2.0])
    for index, want in [(-4, value), (0, value), (1, -value), (2, np.exp(value)),
                        (9, np.exp(value))]:
        assert_bitwise(evaluate(module, [np.int64(index), value])[0], want)


# -- evaluate(): arguments, memory, results

def _module():
    x = B.parameter(0, (2, 3), D["f32"], name="x")
    y = B.parameter(1, (), D["i32"], name="y")
    return Module("two", [x, y], [B.unary(Op.NEG, x), x, B.transpose(x, (1, 0)), y])


def test_evaluate_checks_arguments():
    m = _module()
    good = [np.ones((2, 3), np.float32), np.array(3, np.int32)]
    with pytest.raises(InterpretError, match="takes 2 arguments"):
        evaluate(m, good[:1])
    with pytest.raises(InterpretError, match=r"argument 0 \(x\).*f32\[2,3\], got f64\[2,3\]"):
        evaluate(m, [good[0].astype(np.float64), good[1]])
    with pytest.raises(InterpretError, match=r"argument 1 \(y\).*i32\[\], got i32\[1\]"):
        evaluate(m, [good[0], np.array([3], np.int32)])
    with pytest.raises(InterpretError, match="float128"):
        evaluate(m, [good[0], np.array(1, np.longdouble)])


def test_results_are_fresh_writable_arrays():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.array(4, np.int32)
    neg, same, transposed, y_out = evaluate(_module(), [x, y])
    assert_bitwise(same, x)
    assert_bitwise(transposed, x.T)
    for out in (neg, same, transposed, y_out):
        assert out.flags.writeable and not np.shares_memory(out, x)
        assert not np.shares_memory(out, y)
    (full,) = evaluate(Module("f", [], [B.full(2.0, (3, 3), D["f32"])]), [])
    full[0, 0] = 5.0
    assert full.sum() == 21.0


def test_intermediates_are_freed_after_last_use(monkeypatch):
    alive = []

    def tracking_neg(instr, x):
        out = np.negative(x)
        alive.append(weakref.ref(out))
        assert sum(ref() is not None for ref in alive) <= 3
        return out

    monkeypatch.setitem(eval_rules, Op.NEG, tracking_neg)
    x = B.parameter(0, (1000,), D["f64"])
    y = x
    for _ in range(50):
        y = B.unary(Op.NEG, y)
    (out,) = evaluate(Module("chain", [x], [y]), [np.ones(1000)])
    assert_bitwise(out, np.ones(1000))
    assert len(alive) == 50


def test_shared_operands_and_repeated_results():
    x = B.parameter(0, (3,), D["i32"])
    double = B.binary(Op.ADD, x, x)
    square = B.binary(Op.MUL, double, double)
    a, b, c = evaluate(Module("m", [x], [square, double, square]), [np.arange(3, dtype=np.int32)])
    assert_bitwise(a, np.array([0, 4, 16], np.int32))
    assert_bitwise(b, np.array([0, 2, 4], np.int32))
    assert_bitwise(c, a)


def test_no_floating_point_warnings(recwarn):
    x = np.array([0.0, -1.0, 1e308], np.float64)
    run(lambda p: B.unary(Op.LOG, B.binary(Op.MUL, p, p)), x)
    run(lambda p: B.binary(Op.DIV, p, p), np.array([0, 1], np.int8))
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_parameter_not_in_module_params():
    stray = B.parameter(0, (4,), D["u8"], name="stray")
    with pytest.raises(InterpretError, match="parameter"):
        evaluate(Module("m", [], [B.unary(Op.NOT, stray)]), [])


# -- evaluate_instr and error wrapping

def test_evaluate_instr():
    a = B.constant(np.array([1.5, -2.0], np.float32))
    b = B.constant(np.array([2.0, 0.0], np.float32))
    add = B.binary(Op.DIV, a, b)
    got = evaluate_instr(add, [a.attrs["value"].array, b.attrs["value"].array])
    assert_bitwise(got, np.array([0.75, -np.inf], np.float32))
    assert_bitwise(evaluate_instr(B.iota((3,), D["i8"]), []), np.arange(3, dtype=np.int8))
    with pytest.raises(InterpretError, match="operands, got 1 values"):
        evaluate_instr(add, [np.zeros(2, np.float32)])
    with pytest.raises(InterpretError, match=r"operand 1 .* f32\[2\], got a value of f64\[2\]"):
        evaluate_instr(add, [np.zeros(2, np.float32), np.zeros(2)])


def test_rule_errors_are_wrapped_with_op_text_and_location():
    loc = SourceLocation("model.py", 12, "forward")
    x = B.parameter(0, (0, 13), D["f32"], name="empty")
    # the shape rules refuse this gather; build it raw to reach the rule's own failure
    indices = B.constant(np.array([4, 1], np.int32))
    gather = Instr.make(Op.GATHER, (2, 13), D["f32"], (x, indices), {"axis": 0}, loc)
    with pytest.raises(InterpretError) as info:
        evaluate(Module("g", [x], [gather]), [np.zeros((0, 13), np.float32)])
    err = info.value
    line = next(line for line in str(Module("g", [x], [gather])).splitlines() if "gather" in line)
    assert line.strip() in err.message
    assert "IndexError" in err.message
    assert err.location == gather.loc == loc
    assert isinstance(err.__cause__, IndexError)


def test_wrong_rule_output_is_reported(monkeypatch):
    monkeypatch.setitem(eval_rules, Op.SIN, lambda instr, x: x.astype(np.float64))
    x = B.parameter(0, (2,), D["f32"])
    with pytest.raises(InterpretError, match=r"returned f64\[2\]"):
        evaluate(Module("m", [x], [B.unary(Op.SIN, x)]), [np.zeros(2, np.float32)])


# -- properties

@settings(max_examples=60, deadline=None)
@given(st.sampled_from(SIGNED + UNSIGNED), st.integers(0, 2 ** 32))
def test_division_identity(name, seed):
    """x == div(x, y) * y + rem(x, y) (wrapping) whenever y != 0."""
    x, y = sample(name, (64,), seed), sample(name, (64,), seed + 1)
    q = run(lambda a, b: B.binary(Op.DIV, a, b), x, y)
    r = run(lambda a, b: B.binary(Op.REM, a, b), x, y)
    nonzero = y != 0
    with np.errstate(all="ignore"):
        assert_bitwise((q * y + r)[nonzero], x[nonzero])
    assert not q[~nonzero].any() and not r[~nonzero].any()
    if name in SIGNED:
        assert np.all((r == 0) | ((r < 0) == (x < 0)))


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=3), st.data())
def test_pad_property(dims, data):
    x = np.arange(math.prod(dims), dtype=np.int16).reshape(dims)
    interior = [data.draw(st.integers(0, 2)) for _ in dims]
    low, high = [], []
    for d, it in zip(dims, interior):
        n = d + max(d - 1, 0) * it
        lo = data.draw(st.integers(-n, 3))
        low.append(lo)
        high.append(data.draw(st.integers(-(n + lo), 3)))   # the result keeps >= 0 elements
    value = np.array(-1, np.int16)
    got = run(lambda a, v: B.pad(a, v, low, high, interior), x, value)
    assert_bitwise(got, _pad_reference(x, value, low, high, interior))


# -- complex values: every rule is NumPy's complex loop, bit for bit

# Edge values around the branch cuts (the negative real axis with +-0 imaginary parts,
# the imaginary axis beyond +-1) and non-finite parts.
_COMPLEX_EDGES = [complex(-2.0, 0.0), complex(-2.0, -0.0), complex(0.0, 0.0),
                  complex(-0.0, -0.0), complex(0.0, 2.0), complex(-0.0, -2.0),
                  complex(np.inf, 0.0), complex(-np.inf, 1.0), complex(1.0, np.inf),
                  complex(np.nan, 0.0), complex(0.0, np.nan), complex(1.5, -0.5)]


def complex_sample(dt, n=64, seed=0):
    rng = np.random.default_rng(seed)
    parts = rng.normal(0, 2, (2, n))
    return np.concatenate([np.array(_COMPLEX_EDGES), parts[0] + 1j * parts[1]]).astype(dt)


@pytest.mark.parametrize("dt", [np.complex64, np.complex128], ids=["c64", "c128"])
@pytest.mark.parametrize("op, fn", [
    (Op.NEG, np.negative), (Op.ABS, np.abs), (Op.SIGN, np.sign), (Op.EXP, np.exp),
    (Op.EXPM1, np.expm1), (Op.LOG, np.log), (Op.LOG1P, np.log1p), (Op.SQRT, np.sqrt),
    (Op.TANH, np.tanh), (Op.SIN, np.sin), (Op.COS, np.cos), (Op.TAN, np.tan),
    (Op.REAL, np.real), (Op.IMAG, np.imag), (Op.CONJ, np.conjugate), (Op.SINH, np.sinh),
    (Op.COSH, np.cosh), (Op.ASIN, np.arcsin), (Op.ACOS, np.arccos), (Op.ATAN, np.arctan),
    (Op.ASINH, np.arcsinh), (Op.ACOSH, np.arccosh), (Op.ATANH, np.arctanh)], ids=_case_id)
def test_complex_unary_is_numpys(op, fn, dt):
    covers(op)
    x = complex_sample(dt)
    with np.errstate(all="ignore"):
        assert_bitwise(run(lambda a: B.unary(op, a), x), fn(x))


@pytest.mark.parametrize("dt", [np.complex64, np.complex128], ids=["c64", "c128"])
@pytest.mark.parametrize("op, fn", [
    (Op.ADD, np.add), (Op.SUB, np.subtract), (Op.MUL, np.multiply), (Op.DIV, np.divide),
    (Op.POW, np.power)], ids=_case_id)
def test_complex_binary_is_numpys(op, fn, dt):
    x, y = complex_sample(dt, seed=1), complex_sample(dt, seed=2)[::-1]
    with np.errstate(all="ignore"):
        assert_bitwise(run(lambda a, b: B.binary(op, a, b), x, y), fn(x, y))


def test_complex_pow_fast_paths_are_numpys():
    # eager `z ** c` takes NumPy's scalar fast paths: for complex z, those of the int
    # exponents 2, 1, -1 (z*z, z, np.reciprocal) and of 0.5 (sqrt); `z ** 2.0` is np.power,
    # a few ulps away, which the IR (its exponent is a complex value) cannot tell apart
    z = complex_sample(np.complex128)
    for c in (2, 1, 0.5, -1, 3.0):
        with np.errstate(all="ignore"):
            got = run(lambda a, b: B.binary(Op.POW, a, b), z, np.full_like(z, c))
            assert_bitwise(got, z ** c)


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
def test_complex_keeps_its_parts_bitwise(dt):
    covers(Op.COMPLEX)
    re = np.array([np.inf, -0.0, np.nan, 1.0, 0.0], dt)
    im = np.array([0.0, -0.0, 1.0, np.inf, np.nan], dt)
    got = run(lambda a, b: B.binary(Op.COMPLEX, a, b), re, im)
    assert got.dtype == dtypes.complex_type(dt)
    assert_bitwise(got.real.copy(), re)
    assert_bitwise(got.imag.copy(), im)


def test_complex_compare_reduce_and_dot_are_numpys():
    x, y = complex_sample(np.complex64, seed=3), complex_sample(np.complex64, seed=3)
    y[::3] += 1
    assert_bitwise(run(lambda a, b: B.compare(a, b, "EQ"), x, y), x == y)
    assert_bitwise(run(lambda a, b: B.compare(a, b, "NE"), x, y), x != y)
    m = complex_sample(np.complex128, 12 * 5 - len(_COMPLEX_EDGES), seed=4)[12:].reshape(4, 12)
    assert_bitwise(run(lambda a: B.reduce(Op.REDUCE_SUM, a, (1,)), m),
                   np.sum(m, axis=1, dtype=m.dtype))
    assert_bitwise(run(lambda a: B.reduce(Op.REDUCE_PROD, a, (0,)), m),
                   np.prod(m, axis=0, dtype=m.dtype))
    mt = m.T.copy()   # as the interpreter gets it: some BLAS round by operand layout
    assert_bitwise(run(lambda a, b: B.dot_general(a, b, (1,), (0,)), m, mt), m @ mt)


@pytest.mark.parametrize("kind, fn, dt", [
    ("FFT", np.fft.fftn, np.complex64), ("IFFT", np.fft.ifftn, np.complex128),
    ("RFFT", np.fft.rfftn, np.float32), ("IRFFT", np.fft.irfftn, np.complex128)])
def test_fft_is_pocketfft_over_the_trailing_dims(kind, fn, dt):
    covers(Op.FFT)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 4, 6))
    x = (x + 1j * rng.normal(size=x.shape) if np.dtype(dt).kind == "c" else x).astype(dt)
    lengths = (4, 10) if kind == "IRFFT" else (4, 6)
    got = run(lambda p: B.make(Op.FFT, [p], dict(fft_type=kind, fft_length=lengths)), x)
    assert_bitwise(got, fn(x, s=lengths, axes=(1, 2)))


def test_fft_typing():
    from jitlib.hlo.shape_rules import IRTypeError
    x = B.parameter(0, (3, 8), np.float32)
    z = B.parameter(1, (3, 5), np.complex64)
    assert B.make(Op.FFT, [z], dict(fft_type="IRFFT", fft_length=(8,))).type_str == "f32[3,8]"
    assert B.make(Op.FFT, [z], dict(fft_type="IRFFT", fft_length=(9,))).type_str == "f32[3,9]"
    with pytest.raises(IRTypeError, match="needs a complex operand"):
        B.make(Op.FFT, [x], dict(fft_type="FFT", fft_length=(8,)))
    with pytest.raises(IRTypeError, match="trailing dims must be"):
        B.make(Op.FFT, [x], dict(fft_type="RFFT", fft_length=(6,)))


def test_complex_converts_drop_the_imaginary_part_as_astype():
    z = np.array([1.5 - 2j, -0.0 + 1j, np.nan + 0j], np.complex128)
    assert_bitwise(run(lambda a: B.convert(a, np.float32), z), z.real.astype(np.float32))
    assert_bitwise(run(lambda a: B.convert(a, np.bool_), z), z != 0)
    assert_bitwise(run(lambda a: B.convert(a, np.complex64), z), z.astype(np.complex64))
    f = np.array([1.0, -0.0, np.inf], np.float32)
    assert_bitwise(run(lambda a: B.convert(a, np.complex128), f), f.astype(np.complex128))


@pytest.mark.parametrize("make, needle", [
    (lambda z, f: B.binary(Op.MAX, z, z), "max.*not defined on complex"),
    (lambda z, f: B.compare(z, z, "LT"), "only for EQ and NE"),
    (lambda z, f: B.unary(Op.REAL, f), "needs a complex operand"),
    (lambda z, f: B.binary(Op.COMPLEX, z, z), "needs f32 or f64 parts"),
    (lambda z, f: B.unary(Op.FLOOR, z), "not defined on complex"),
    (lambda z, f: B.unary(Op.ASIN, f), "needs a complex operand"),
    (lambda z, f: B.reduce(Op.REDUCE_MAX, z, (0,)), "not defined on complex"),
])
def test_complex_ops_without_meaning_do_not_typecheck(make, needle):
    from jitlib.hlo.shape_rules import IRTypeError
    z = B.parameter(0, (3,), np.complex64)
    f = B.parameter(1, (3,), np.float32)
    with pytest.raises(IRTypeError, match=needle):
        make(z, f)


# -- collectives: one device has no axis to combine over

@pytest.mark.parametrize("make", [
    lambda x: B.all_reduce(x, "sum", "i", 2), lambda x: B.all_gather(x, 0, "i", 2),
    lambda x: B.reduce_scatter(B.broadcast_in_dim(x, (2, 3), (1,)), 0, "i", 2),
    lambda x: B.collective_permute(x, [(0, 1)], "i", 2), lambda x: B.axis_index("i", 2)])
def test_collectives_name_the_unbound_axis(make):
    covers(*ops.COLLECTIVE)
    x = B.parameter(0, (3,), np.float32)
    with pytest.raises(InterpretError, match="unbound axis name: 'i'"):
        evaluate(Module("f", [x], [make(x)]), [np.ones(3, np.float32)])


# -- completeness

def test_every_op_has_a_rule():
    assert set(eval_rules) == set(Op), sorted(set(Op) - set(eval_rules))
    assert all(callable(rule) for rule in eval_rules.values())


def test_every_op_is_tested():
    assert not set(Op) - COVERED, sorted(set(Op) - COVERED)
