"""The JAX backend: lowers a module to `jax.lax` and runs it under `jax.jit` on the CPU.

It is the oracle the native backends are checked against, so every rule reproduces the
reference interpreter's definition (the op comments in `jitlib/hlo/ops.py`) wherever the op is
exact. Where XLA's own op answers differently, the rule forces the interpreter's answer and its
comment says how. Each instruction's value passes through an optimization barrier, so XLA's
simplifier cannot fuse two ops into one that rounds differently. A fusion lowers its body
inline, by the same rules and with the same barriers.

One difference no rule can undo: XLA on the CPU flushes subnormal f32, f64 and bf16 values to
zero, arguments and results alike. Cross-checks keep subnormals out. Another no rule undoes
yet: XLA's complex functions (exp, sin, tanh, division, pow, ...) answer unlike NumPy's
where a part is infinite or NaN; cross-checks of complex values keep to finite ones. Branch
cuts follow NumPy, the sign of a zero imaginary part included (sqrt needs a rule for it).

Importing this module turns on jax's 64-bit mode for the whole process, so f64 and i64 values
stay 64-bit.
"""
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jitlib.backends.base import Backend, Executable
from jitlib.hlo import dtypes
from jitlib.hlo import ops as O
from jitlib.hlo.interpreter import int_cast_bounds
from jitlib.hlo.ir import is_multi_output, output_types
from jitlib.hlo.ops import Op

jax.config.update("jax_enable_x64", True)

_CPU = jax.devices("cpu")[0]

# op -> rule(instr, *operand_values) -> value. Parameters are bound by `_lower`, not a rule.
lower_rules = {}


def _lowers(*ops):
    def register(rule):
        for op in ops:
            lower_rules[Op(op)] = rule
        return rule
    return register


def _full(x, value):
    """An array like `x` filled with `value` cast (wrapping, as NumPy's astype) to x's dtype."""
    return lax.full_like(x, np.array(value).astype(x.dtype))


def _isnan(x):
    return lax.ne(x, x)


def _any(x):
    return lax.reduce_or(x, tuple(range(x.ndim)))


# -- leaves

@_lowers(Op.CONSTANT)
def _constant(instr):
    return jnp.asarray(instr.attrs["value"].array)


@_lowers(Op.IOTA)
def _iota(instr):
    # Counted in i64 and converted, as np.arange(n).astype(dtype): lax has no bool iota, and
    # narrow integer iotas then wrap the same way.
    shape, dim = instr.shape, instr.attrs["dimension"]
    index = lax.broadcasted_iota(np.int64, shape, dim) if shape else np.int64(0)
    return _convert(jnp.asarray(index), instr.dtype)


# -- elementwise binary: each a function of two jax values, reused as combiners below

def _add(a, b):
    return lax.bitwise_or(a, b) if a.dtype == dtypes.BOOL else lax.add(a, b)


def _mul(a, b):
    return lax.bitwise_and(a, b) if a.dtype == dtypes.BOOL else lax.mul(a, b)


def _safe_divisor(a, b):
    """b with 0 (and -1 for signed types) replaced by 1, and the masks of where.

    XLA has its own answers for x/0 (-1) and leaves INT_MIN/-1 to the target; dividing by 1
    instead makes rem come out 0 there, and div is patched by the caller.
    """
    by_zero = lax.eq(b, _full(b, 0))
    by_minus_one = lax.eq(b, _full(b, -1)) if dtypes.is_signed(b.dtype) else None
    bad = by_zero if by_minus_one is None else lax.bitwise_or(by_zero, by_minus_one)
    return lax.select(bad, _full(b, 1), b), by_zero, by_minus_one


def _div(a, b):
    if dtypes.is_inexact(a.dtype):
        return lax.div(a, b)
    safe, by_zero, by_minus_one = _safe_divisor(a, b)
    q = lax.div(a, safe)   # truncates toward zero, as C
    if by_minus_one is not None:
        q = lax.select(by_minus_one, lax.neg(a), q)   # INT_MIN / -1 wraps to INT_MIN
    return lax.select(by_zero, _full(a, 0), q)


def _rem(a, b):
    if dtypes.is_float(a.dtype):
        return lax.rem(a, b)   # C fmod: the sign of the dividend
    safe, _, _ = _safe_divisor(a, b)
    return lax.rem(a, safe)


def _int_pow(x, y):
    """x**y with wrapping: square-and-multiply over y's bits, by selects as y is an array.

    A negative exponent gives 1/x truncated: 1 for x == 1, +-1 for x == -1 by y's parity,
    0 otherwise.
    """
    one, zero = _full(x, 1), _full(x, 0)
    signed = dtypes.is_signed(x.dtype)
    exponent = lax.max(y, zero) if signed else y

    def body(state):
        acc, base, e = state
        odd = lax.ne(lax.bitwise_and(e, one), zero)
        return (lax.select(odd, lax.mul(acc, base), acc), lax.mul(base, base),
                lax.shift_right_logical(e, one))

    acc, _, _ = lax.while_loop(lambda s: _any(lax.ne(s[2], zero)), body, (one, x, exponent))
    if not signed:
        return acc
    minus_one = _full(x, -1)
    odd_y = lax.ne(lax.bitwise_and(y, one), zero)
    inverse = lax.select(lax.eq(x, one), one,
                         lax.select(lax.eq(x, minus_one),
                                    lax.select(odd_y, minus_one, one), zero))
    return lax.select(lax.lt(y, zero), inverse, acc)


def _pow(x, y):
    if not dtypes.is_inexact(x.dtype):
        return _int_pow(x, y)
    # the IR's exact exponents (ops.py): 2, 1, 0.5, -1 are x*x, x, sqrt(x), 1/x (complex
    # x: not 1, as NumPy's fast paths)
    out = lax.pow(x, y)
    paths = [(2, lax.mul(x, x)), (0.5, lax.sqrt(x)), (-1, lax.div(lax.full_like(x, 1), x))]
    if not dtypes.is_complex(x.dtype):
        paths.append((1, x))
    for exponent, value in paths:
        out = lax.select(lax.eq(y, lax.full_like(y, exponent)), value, out)
    return out


# NumPy's maximum/minimum: the first operand if it wins or is NaN, else the second. XLA's
# max/min propagate NaN too, but pick +0.0 over -0.0 whatever the order, so select instead.
def _max(a, b):
    if not dtypes.is_float(a.dtype):
        return lax.max(a, b)
    return lax.select(lax.bitwise_or(lax.gt(a, b), _isnan(a)), a, b)


def _min(a, b):
    if not dtypes.is_float(a.dtype):
        return lax.min(a, b)
    return lax.select(lax.bitwise_or(lax.lt(a, b), _isnan(a)), a, b)


_BINARY = {
    Op.ADD: _add, Op.SUB: lax.sub, Op.MUL: _mul, Op.DIV: _div, Op.REM: _rem, Op.POW: _pow,
    Op.MAX: _max, Op.MIN: _min, Op.ATAN2: lax.atan2, Op.AND: lax.bitwise_and,
    Op.OR: lax.bitwise_or, Op.XOR: lax.bitwise_xor,
}


@_lowers(*_BINARY)
def _binary(instr, a, b):
    return _BINARY[instr.op](a, b)


_COMPARE = {"EQ": lax.eq, "NE": lax.ne, "LT": lax.lt, "LE": lax.le, "GT": lax.gt, "GE": lax.ge}


@_lowers(Op.COMPARE)
def _compare(instr, a, b):
    return _COMPARE[instr.attrs["direction"]](a, b)


# -- elementwise unary

def _abs(x):
    return x if dtypes.is_unsigned(x.dtype) else lax.abs(x)   # lax.abs rejects unsigned


def _sign(x):
    if not dtypes.is_float(x.dtype) or dtypes.is_bfloat16(x.dtype):
        return lax.sign(x)
    # NumPy's sign(-0.0) is +0.0 (ml_dtypes' bf16 sign keeps -0.0, as XLA's does).
    return lax.select(lax.eq(x, _full(x, 0)), _full(x, 0), lax.sign(x))


def _round(x):
    return lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)


def _sqrt(x):
    if not dtypes.is_complex(x.dtype):
        return lax.sqrt(x)
    # csqrt's imaginary part has the sign of x's, -0.0 included (XLA gives +0.0's side)
    r = lax.sqrt(x)
    im = lax.imag(r)
    flip = lax.ne(lax.lt(im, _full(im, 0)), lax.lt(_copysign_one(lax.imag(x)), _full(im, 0)))
    return lax.complex(lax.real(r), lax.select(flip, lax.neg(im), im))


def _copysign_one(v):
    """+-1 with the sign of `v`, -0.0 counting as negative."""
    return lax.div(_full(v, 1), lax.select(lax.eq(v, _full(v, 0)), v, lax.sign(v)))


_UNARY = {
    Op.NEG: lax.neg, Op.ABS: _abs, Op.SIGN: _sign, Op.EXP: lax.exp, Op.EXPM1: lax.expm1,
    Op.LOG: lax.log, Op.LOG1P: lax.log1p, Op.SQRT: _sqrt, Op.RSQRT: lax.rsqrt,
    Op.TANH: lax.tanh, Op.LOGISTIC: lax.logistic, Op.SIN: lax.sin, Op.COS: lax.cos,
    Op.TAN: lax.tan, Op.FLOOR: lax.floor, Op.CEIL: lax.ceil, Op.ROUND: _round,
    Op.NOT: lax.bitwise_not, Op.IS_FINITE: lax.is_finite,
}


@_lowers(*_UNARY)
def _unary(instr, x):
    return _UNARY[instr.op](x)


# Sources an f32 cannot hold exactly: XLA converts them to f16/bf16 through f32 with two
# round-to-nearest steps, which double-rounds; NumPy and ml_dtypes round once.
_WIDER_THAN_F32 = frozenset(np.dtype(t) for t in (
    np.float64, np.int32, np.int64, np.uint32, np.uint64))


def _to_f32_round_to_odd(x):
    """x in f32, rounded to odd: truncated, with the last bit set if inexact.

    Rounding that to f16 or bf16 (at least two bits shorter) then equals rounding x directly.
    """
    f32 = np.dtype(np.float32)
    r = lax.convert_element_type(x, f32)
    if dtypes.is_float(x.dtype):
        back = lax.convert_element_type(r, x.dtype)
        inexact = lax.bitwise_and(lax.ne(back, x), lax.eq(x, x))
        away = lax.gt(lax.abs(back), lax.abs(x))
    else:
        # f32 -> int saturates, so a value rounded up to 2**bits cannot be converted back.
        bits = 8 * x.dtype.itemsize - dtypes.is_signed(x.dtype)
        over = lax.ge(r, lax.full_like(r, 2.0 ** bits))
        back = lax.convert_element_type(lax.select(over, lax.full_like(r, 0), r), x.dtype)
        above = lax.select(lax.ge(x, _full(x, 0)), lax.gt(back, x), lax.lt(back, x))
        inexact = lax.bitwise_or(over, lax.ne(back, x))
        away = lax.bitwise_or(over, above)
    truncated = lax.select(away, lax.nextafter(r, lax.full_like(r, 0)), r)
    as_bits = lax.bitcast_convert_type(truncated, np.uint32)
    as_bits = lax.select(inexact, lax.bitwise_or(as_bits, np.uint32(1)), as_bits)
    return lax.bitcast_convert_type(as_bits, f32)


def _cvtt(x, bits):
    """x86's cvtt to a `bits`-bit integer: NaN and out-of-range give the minimum (XLA's
    convert saturates and sends NaN to 0)."""
    itype = np.dtype(f"int{bits}")
    limit = 2.0 ** (bits - 1)
    inside = lax.bitwise_and(lax.ge(x, _full(x, -limit)), lax.lt(x, _full(x, limit)))
    fitted = lax.convert_element_type(lax.select(inside, x, _full(x, 0)), itype)
    return lax.select(inside, fitted, lax.full_like(fitted, np.iinfo(itype).min))


def _float_to_int(x, dtype):
    """The interpreter's float_to_int: x86's C casts (ml_dtypes' for bfloat16)."""
    if dtypes.is_bfloat16(x.dtype):
        t = lax.convert_element_type(x, np.float32)
        t = lax.select(lax.lt(t, _full(t, 0)), lax.ceil(t), lax.floor(t))
        lo, hi = int_cast_bounds(dtype)
        fits = lax.bitwise_and(lax.ge(t, _full(t, lo)), lax.lt(t, _full(t, hi)))
        return lax.convert_element_type(lax.select(fits, t, _full(t, 0)), dtype)
    if x.dtype.itemsize < 4:
        x = lax.convert_element_type(x, np.float32)
    if dtype == np.uint64:
        top = _full(x, 2.0 ** 63)
        high = lax.ge(x, top)
        bits = lax.bitcast_convert_type(_cvtt(lax.select(high, lax.sub(x, top), x), 64),
                                        np.uint64)
        flipped = lax.bitwise_xor(bits, lax.full_like(bits, 1 << 63))
        return lax.select(high, flipped, bits)
    wide = 64 if dtype.itemsize == 8 or dtype == np.uint32 else 32
    return lax.convert_element_type(_cvtt(x, wide), dtype)   # keeps the low bits


def _convert(x, dtype):
    if x.dtype == dtype:
        return x
    if dtype == dtypes.BOOL:
        return lax.ne(x, _full(x, 0))
    if dtypes.is_complex(x.dtype) and not dtypes.is_complex(dtype):
        x = lax.real(x)   # as NumPy's astype: the imaginary part goes
    if dtypes.is_float(x.dtype) and dtypes.is_integer(dtype):
        return _float_to_int(x, np.dtype(dtype))
    if dtype in (dtypes.from_name("f16"), dtypes.bfloat16) and x.dtype in _WIDER_THAN_F32:
        x = _to_f32_round_to_odd(x)
    return lax.convert_element_type(x, dtype)


@_lowers(Op.CONVERT)
def _convert_rule(instr, x):
    return _convert(x, instr.dtype)


_PARTS = {Op.REAL: lax.real, Op.IMAG: lax.imag, Op.CONJ: lax.conj, Op.SINH: lax.sinh,
          Op.COSH: lax.cosh, Op.ASIN: lax.asin, Op.ACOS: lax.acos, Op.ATAN: lax.atan,
          Op.ASINH: lax.asinh, Op.ACOSH: lax.acosh, Op.ATANH: lax.atanh}


@_lowers(*_PARTS)
def _part(instr, x):
    return _PARTS[instr.op](x)


@_lowers(Op.COMPLEX)
def _complex(instr, re, im):
    return lax.complex(re, im)


# -- elementwise n-ary

@_lowers(Op.SELECT)
def _select(instr, pred, on_true, on_false):
    return lax.select(pred, on_true, on_false)


@_lowers(Op.CLAMP)
def _clamp(instr, lo, x, hi):
    # As np.clip: minimum(maximum(x, lo), hi), so NaN anywhere gives NaN.
    lo, hi = (lax.broadcast_in_dim(b, x.shape, ()) if b.shape != x.shape else b
              for b in (lo, hi))
    return _min(_max(x, lo), hi)


# -- data movement

@_lowers(Op.BROADCAST_IN_DIM)
def _broadcast_in_dim(instr, x):
    return lax.broadcast_in_dim(x, instr.shape, instr.attrs["dims"])


@_lowers(Op.RESHAPE)
def _reshape(instr, x):
    return lax.reshape(x, instr.shape)


@_lowers(Op.TRANSPOSE)
def _transpose(instr, x):
    return lax.transpose(x, instr.attrs["perm"])


@_lowers(Op.SLICE)
def _slice(instr, x):
    a = instr.attrs
    return lax.slice(x, a["start"], a["limit"], a["strides"])


@_lowers(Op.PAD)
def _pad(instr, x, value):
    a = instr.attrs
    return lax.pad(x, value, list(zip(a["low"], a["high"], a["interior"])))


@_lowers(Op.CONCATENATE)
def _concatenate(instr, *xs):
    return lax.concatenate(xs, instr.attrs["dim"])


@_lowers(Op.REVERSE)
def _reverse(instr, x):
    return lax.rev(x, instr.attrs["dims"])


def _clamp_index(i, hi):
    """Integer index `i` clamped into [0, hi], as i64.

    Clamped in i's own dtype first, so a huge unsigned index does not wrap negative; this also
    lets indices of different dtypes meet in one lax op, which wants them alike.
    """
    if dtypes.is_signed(i.dtype):
        i = lax.max(i, _full(i, 0))
    i = lax.min(i, _full(i, min(hi, int(np.iinfo(i.dtype).max))))
    return lax.convert_element_type(i, np.int64)


@_lowers(Op.DYNAMIC_SLICE)
def _dynamic_slice(instr, x, *starts):
    sizes = instr.attrs["sizes"]
    starts = [_clamp_index(s, d - n) for s, d, n in zip(starts, x.shape, sizes)]
    return lax.dynamic_slice(x, starts, sizes)


@_lowers(Op.DYNAMIC_UPDATE_SLICE)
def _dynamic_update_slice(instr, x, update, *starts):
    starts = [_clamp_index(s, d - n) for s, d, n in zip(starts, x.shape, update.shape)]
    return lax.dynamic_update_slice(x, update, starts)


@_lowers(Op.GATHER)
def _gather(instr, x, idx):
    axis = instr.attrs["axis"]
    idx = _clamp_index(idx, x.shape[axis] - 1)
    return jnp.take(x, idx, axis=axis, mode="clip")


def _drop_index(idx, n):
    """Indices as i64 with those outside [0, n) replaced by n, which mode="drop" drops.

    jax wraps negative indices before dropping, so they must go first.
    """
    out = lax.ge(idx, _full(idx, n)) if n <= np.iinfo(idx.dtype).max else \
        lax.full_like(idx, False, dtype=np.bool_)
    if dtypes.is_signed(idx.dtype):
        out = lax.bitwise_or(out, lax.lt(idx, _full(idx, 0)))
    idx = lax.convert_element_type(idx, np.int64)
    return lax.select(out, lax.full_like(idx, n), idx)


def _last_write_wins(pos, n):
    """Drop every update but the last (in index order) to each position.

    XLA leaves the order of duplicate "set" updates unspecified; the spec says the last wins.
    """
    order = lax.reshape(lax.iota(np.int64, pos.size), pos.shape)
    # Slot n collects the already-dropped updates, so no index here is out of range.
    last = jnp.full((n + 1,), -1, np.int64).at[pos].max(order, mode="promise_in_bounds")
    return lax.select(lax.eq(last[pos], order), pos, lax.full_like(pos, n))


# bool add and mul are or and and: the max and min of False < True.
_SCATTER_BOOL = {"add": "max", "mul": "min"}
_SCATTER_METHOD = {"add": "add", "mul": "multiply", "min": "min", "max": "max", "set": "set"}


@_lowers(Op.SCATTER)
def _scatter(instr, x, idx, updates):
    axis, mode = instr.attrs["axis"], instr.attrs["mode"]
    n = x.shape[axis]
    if n == 0:
        return x   # every update is out of range; jax would refuse to index the empty axis
    pos = _drop_index(idx, n)
    if mode == "set":
        pos = _last_write_wins(pos, n)
    if x.dtype == dtypes.BOOL:
        mode = _SCATTER_BOOL.get(mode, mode)
    target = x.at[(slice(None),) * axis + (pos,)]
    return getattr(target, _SCATTER_METHOD[mode])(updates, mode="drop")


# -- reductions

def _identity(op, dtype):
    """The exact identity of the combiner of the reduction or scan `op`, as a 0-d array.

    Float add's is -0.0, not +0.0: -0.0 + x is x for every x, -0.0 included.
    """
    combiner = O.REDUCE_COMBINER[op]
    if combiner is Op.ADD and dtypes.is_float(dtype):
        return np.array(-0.0, dtype)
    if combiner is Op.ADD and dtypes.is_complex(dtype):
        return np.array(complex(-0.0, -0.0), dtype)
    return _empty_result(op, dtype)


def _empty_result(op, dtype):
    """What reducing nothing gives, as NumPy: 0 (+0.0), 1, the lowest, the highest, all ones."""
    value = {
        Op.ADD: 0, Op.MUL: 1, Op.MAX: dtypes.lowest(dtype), Op.MIN: dtypes.highest(dtype),
        Op.AND: -1, Op.OR: 0,
    }[O.REDUCE_COMBINER[op]]
    return np.array(value).astype(dtype)


@_lowers(*O.REDUCE)
def _reduce(instr, x):
    dims = instr.attrs["dims"]
    if any(x.shape[d] == 0 for d in dims):
        return lax.full(instr.shape, _empty_result(instr.op, x.dtype))
    # The combiner is the binary rule, so NaN and bool behave as in the elementwise op.
    combine = _BINARY[O.REDUCE_COMBINER[instr.op]]
    return lax.reduce(x, _identity(instr.op, x.dtype), combine, dims)


@_lowers(*O.ARG_REDUCE)
def _arg_reduce(instr, x):
    # A reduction over (value, index) pairs: a strict order (NaN beats everything, ties go to
    # the lower index) makes the result independent of the order XLA combines in.
    axis = instr.attrs["axis"]
    beats = lax.gt if instr.op is Op.ARGMAX else lax.lt
    worst = dtypes.lowest(x.dtype) if instr.op is Op.ARGMAX else dtypes.highest(x.dtype)

    def pick(a, b):
        (va, ia), (vb, ib) = a, b
        nan_a, nan_b = _isnan(va), _isnan(vb)
        tie = lax.bitwise_or(lax.eq(va, vb), lax.bitwise_and(nan_a, nan_b))
        a_wins = lax.bitwise_or(
            lax.bitwise_or(beats(va, vb), lax.bitwise_and(nan_a, lax.bitwise_not(nan_b))),
            lax.bitwise_and(tie, lax.lt(ia, ib)))
        return lax.select(a_wins, va, vb), lax.select(a_wins, ia, ib)

    index = lax.broadcasted_iota(np.int64, x.shape, axis)
    init = (np.array(worst).astype(x.dtype), np.array(np.iinfo(np.int64).max))
    _, found = lax.reduce((x, index), init, pick, (axis,))
    return _convert(found, instr.dtype)


@_lowers(*O.CUMULATIVE)
def _cumulative(instr, x):
    # A sequential scan, as NumPy's accumulate: every partial result rounds as the
    # interpreter's does, and it compiles to far less than lax's log-depth scans.
    axis, reverse = instr.attrs["axis"], instr.attrs["reverse"]
    combine = _BINARY[O.REDUCE_COMBINER[instr.op]]

    def step(acc, row):
        acc = combine(acc, row)
        return acc, acc

    rows = jnp.moveaxis(x, axis, 0)
    start = lax.full(rows.shape[1:], _identity(instr.op, x.dtype))
    _, out = lax.scan(step, start, rows, reverse=reverse)
    return jnp.moveaxis(out, 0, axis)


# -- sorting

def _sortable(x):
    """A key lax.sort orders as the interpreter does: lax's float order is total (-0.0
    before 0.0, negative NaNs first), so zeros and NaNs are made one value each."""
    if x.dtype == dtypes.BOOL:
        return _convert(x, np.dtype(np.uint8))
    if not dtypes.is_float(x.dtype):
        return x
    x = lax.select(lax.eq(x, _full(x, 0)), _full(x, 0), x)
    return lax.select(_isnan(x), _full(x, np.nan), x)


@_lowers(Op.SORT)
def _sort(instr, *keys):
    axis = instr.attrs["dimension"]
    if 0 in instr.shape:
        return jnp.zeros(instr.shape, instr.dtype)
    index = lax.broadcasted_iota(np.int64, instr.shape, axis)
    *_, perm = lax.sort([_sortable(k) for k in keys] + [index], dimension=axis,
                        is_stable=True, num_keys=len(keys))
    if instr.attrs["indices"]:
        return perm
    # the key's own bits (a -0.0, a NaN's payload) carried by the permutation
    return jnp.take_along_axis(keys[0], perm, axis)


# -- linear algebra: jax.lax.linalg (LAPACK on the CPU, cuSOLVER/cuBLAS on the GPU)

@_lowers(Op.CHOLESKY)
def _cholesky(instr, x):
    return lax.linalg.cholesky(x, symmetrize_input=False)


@_lowers(Op.TRIANGULAR_SOLVE)
def _triangular_solve(instr, a, b):
    if 0 in b.shape:
        return jnp.zeros(instr.shape, instr.dtype)
    return lax.linalg.triangular_solve(a, b, **instr.attrs)


@_lowers(Op.LU)
def _lu(instr, x):
    packed, pivots, permutation = lax.linalg.lu(x)
    return {"lu": packed, "pivots": pivots.astype(np.int64),
            "permutation": permutation.astype(np.int64)}[instr.attrs["output"]]


@_lowers(Op.QR)
def _qr(instr, x):
    q, r = lax.linalg.qr(x, full_matrices=instr.attrs["full_matrices"])
    return q if instr.attrs["output"] == "q" else r


@_lowers(Op.EIGH)
def _eigh(instr, x):
    vectors, values = lax.linalg.eigh(x, lower=True, symmetrize_input=False)
    return values if instr.attrs["output"] == "values" else vectors


@_lowers(Op.SVD)
def _svd(instr, x):
    u, s, vh = lax.linalg.svd(x, full_matrices=instr.attrs["full_matrices"])
    return {"u": u, "s": s, "vh": vh}[instr.attrs["output"]]


# -- contraction

@_lowers(Op.DOT_GENERAL)
def _dot_general(instr, lhs, rhs):
    a = instr.attrs
    dims = ((a["lhs_contract"], a["rhs_contract"]), (a["lhs_batch"], a["rhs_batch"]))
    precision = _PRECISIONS[a.get("precision", "highest")]
    return lax.dot_general(lhs, rhs, dims, precision=precision,
                           preferred_element_type=instr.dtype)


# jit's matmul_precision names are JAX's own
_PRECISIONS = {"highest": lax.Precision.HIGHEST, "high": lax.Precision.HIGH,
               "default": lax.Precision.DEFAULT}


# -- spectral

@_lowers(Op.FFT)
def _fft(instr, x):
    kind = getattr(lax.FftType, instr.attrs["fft_type"])
    return lax.fft(x, kind, tuple(instr.attrs["fft_length"]))


# -- kernels

@_lowers(Op.FUSION)
def _fusion(instr, *xs):
    # The body lowers inline, op by op with its barriers, like the top level.
    results = _walk(instr.attrs["body"], xs)
    return tuple(results) if len(results) > 1 else results[0]


@_lowers(Op.GET_OUTPUT)
def _get_output(instr, value):
    return value[instr.attrs["index"]] if is_multi_output(instr.operands[0]) else value


# -- control flow: the regions lower as functions of the carry, like the top level

def _tuple_of(module):
    def fn(*values):
        return tuple(_walk(module, values))
    return fn


@_lowers(Op.WHILE)
def _while(instr, *carry):
    cond, body = _tuple_of(instr.attrs["cond"]), _tuple_of(instr.attrs["body"])
    trips = instr.attrs.get("trip_count")
    if trips is not None:
        # a counted loop with Python int bounds: jax lowers it to a scan, which
        # jax.grad can reverse (the oracle differentiates lowerings of jitlib programs)
        out = lax.fori_loop(0, trips, lambda _, c: body(*c), tuple(carry))
    else:
        out = lax.while_loop(lambda c: cond(*c)[0], lambda c: body(*c), tuple(carry))
    return tuple(out) if len(out) > 1 else out[0]


@_lowers(Op.CONDITIONAL)
def _conditional(instr, index, *args):
    branches = [_tuple_of(b) for b in instr.attrs["branches"]]
    out = lax.switch(index.astype(jnp.int32), branches, *args)
    return tuple(out) if len(out) > 1 else out[0]


# -- collectives: lax's own, meaningful where JAX binds the axis name (jax.pmap, or
#    jax.vmap(..., axis_name=...) as the tests' oracle); elsewhere JAX's NameError

_PREDUCE = {"sum": lax.psum, "max": lax.pmax, "min": lax.pmin}


@_lowers(Op.ALL_REDUCE)
def _all_reduce(instr, x):
    return _PREDUCE[instr.attrs["reduction"]](x, instr.attrs["axis_name"])


@_lowers(Op.ALL_GATHER)
def _all_gather(instr, x):
    return lax.all_gather(x, instr.attrs["axis_name"], axis=instr.attrs["axis"])


@_lowers(Op.REDUCE_SCATTER)
def _reduce_scatter(instr, x):
    return lax.psum_scatter(x, instr.attrs["axis_name"],
                            scatter_dimension=instr.attrs["axis"])


@_lowers(Op.COLLECTIVE_PERMUTE)
def _collective_permute(instr, x):
    return lax.ppermute(x, instr.attrs["axis_name"], perm=instr.attrs["pairs"])


@_lowers(Op.AXIS_INDEX)
def _axis_index(instr):
    return lax.axis_index(instr.attrs["axis_name"]).astype(np.int32)


assert set(lower_rules) == set(Op) - {Op.PARAMETER}, \
    sorted(set(Op) - {Op.PARAMETER} - set(lower_rules))


# -- compiling and running

def _lower(module):
    """A jax function from the module's parameters to the list of its results."""
    def run(*args):
        return _walk(module, args)
    return run


def _walk(module, args):
    """The jax values of `module`'s results, given jax values for its parameters."""
    env = dict(zip(module.params, args))
    for instr in module.instructions:
        if instr in env:
            continue
        value = lower_rules[instr.op](instr, *(env[x] for x in instr.operands))
        parts = value if is_multi_output(instr) else (value,)
        if [(v.shape, v.dtype) for v in parts] != output_types(instr):
            raise AssertionError(f"jax lowering of {instr!r} gave "
                                 f"{[f'{v.dtype}{list(v.shape)}' for v in parts]}")
        # XLA's simplifier rewrites across ops as if floats were reals (x / broadcast(c)
        # becomes x * broadcast(1 / c), which rounds differently): a barrier after each
        # instruction keeps every op's rounding its own.
        env[instr] = lax.optimization_barrier(value)
    return [env[r] for r in module.results]


class JaxExecutable(Executable):
    def __init__(self, module, backend_name):
        super().__init__(module, backend_name)
        on_cpu = jax.sharding.SingleDeviceSharding(_CPU)
        specs = [jax.ShapeDtypeStruct(p.shape, p.dtype, sharding=on_cpu) for p in module.params]
        with jax.default_device(_CPU):
            self._compiled = jax.jit(_lower(module)).lower(*specs).compile()

    def _execute(self, arrays):
        results = self._compiled(*(jax.device_put(a, _CPU) for a in arrays))
        # Copies: a view of a jax buffer is read-only, and results are the caller's to write.
        return [np.array(r) for r in results]


class JaxBackend(Backend):
    """Lowers each module to jax.lax and compiles it with XLA for the CPU."""

    name = "jax"

    def compile(self, module):
        return JaxExecutable(module, self.name)
