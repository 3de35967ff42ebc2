"""The reference interpreter: the meaning of every op, written in NumPy.

Each op has one rule in `eval_rules`, `rule(instr, *operand_values) -> ndarray`,
returning an array of exactly `instr.shape` and `instr.dtype`. Where NumPy has
the op, the rule IS eager NumPy, so a traced program equals the eager one to
the bit wherever NumPy itself is deterministic. Every other backend is checked
against these rules.

Arithmetic happens in the operand dtype: float16 through NumPy's float16 loops,
bfloat16 through ml_dtypes' loops (which compute in float32 and round each
result to bfloat16). Overflow, division by zero and NaN are values, not
errors, so NumPy's floating-point warnings are silenced while evaluating.

Where NumPy has no answer, the rules below define one: integer div/rem are C's
(x/0 == x%0 == 0, INT_MIN/-1 == INT_MIN); a signed integer to a negative power
is the integer part of 1/x**n; empty max/min reductions give the identity;
bfloat16 dot accumulates in float32 and rounds once; a gather from an empty
axis with indices to take is an error.

A fusion's value is its body's result evaluated on the fusion's operands (a tuple
of arrays when the body has several results); get_output picks one.
"""
import numpy as np

from jitlib.errors import InterpretError
from jitlib.hlo import dtypes, fast_sort
from jitlib.hlo import linalg_reference
from jitlib.hlo.ir import is_multi_output, output_types
from jitlib.hlo.ops import COLLECTIVE as O_COLLECTIVE, Op
from jitlib.hlo.printer import print_instr, value_names

eval_rules = {}


def _one(dtype):
    return np.ones((), dtype)


def _zero(dtype):
    return np.zeros((), dtype)


def _ufunc(fn):
    """A rule that is exactly the NumPy ufunc `fn` on the operand values."""
    def rule(instr, *xs):
        return fn(*xs)
    rule.__name__ = f"_{fn.__name__}"
    return rule


# -- leaves

def _parameter(instr):
    raise ValueError("a parameter has a value only as an argument of the module that "
                     "lists it in its params")


eval_rules[Op.PARAMETER] = _parameter


def _constant(instr):
    return instr.attrs["value"].array


eval_rules[Op.CONSTANT] = _constant


def _iota(instr):
    if not instr.shape:
        return _zero(instr.dtype)
    dim = instr.attrs["dimension"]
    n = instr.shape[dim]
    # Count in int64, then convert: np.arange has no bool loop.
    line = np.arange(n, dtype=np.int64).astype(instr.dtype)
    axis_shape = [1] * len(instr.shape)
    axis_shape[dim] = n
    return np.broadcast_to(line.reshape(axis_shape), instr.shape)


eval_rules[Op.IOTA] = _iota


# -- elementwise unary

def _contiguous(x):
    # np.ascontiguousarray would turn 0-d arrays into 1-d ones
    x = np.asarray(x)
    return x if x.flags.c_contiguous else np.array(x, order="C")


def _layout_free(fn):
    """NumPy's SIMD transcendentals round differently on strided and reversed views;
    the specification is the result on contiguous operands, whatever their layout."""
    def rule(instr, *xs):
        return fn(*[_contiguous(x) for x in xs])
    return rule


eval_rules[Op.NEG] = _ufunc(np.negative)
eval_rules[Op.ABS] = _ufunc(np.absolute)       # INT_MIN stays INT_MIN, as NumPy
eval_rules[Op.SIGN] = _ufunc(np.sign)
eval_rules[Op.EXP] = _layout_free(np.exp)
eval_rules[Op.EXPM1] = _layout_free(np.expm1)
eval_rules[Op.LOG] = _layout_free(np.log)
eval_rules[Op.LOG1P] = _layout_free(np.log1p)
eval_rules[Op.SQRT] = _layout_free(np.sqrt)


def _rsqrt(instr, x):
    return np.divide(_one(x.dtype), np.sqrt(x))


eval_rules[Op.RSQRT] = _rsqrt
eval_rules[Op.TANH] = _layout_free(np.tanh)


def _logistic(instr, x):
    # exp(-|x|) lies in (0, 1], so neither branch overflows: 1/(1+e) for x >= 0,
    # e/(1+e) for x < 0 (and NaN, which propagates through e).
    e = np.exp(_contiguous(np.negative(np.absolute(x))))
    one = _one(x.dtype)
    denom = np.add(one, e)
    return np.where(x >= 0, np.divide(one, denom), np.divide(e, denom))


eval_rules[Op.LOGISTIC] = _logistic
eval_rules[Op.SIN] = _layout_free(np.sin)
eval_rules[Op.COS] = _layout_free(np.cos)
eval_rules[Op.TAN] = _layout_free(np.tan)
eval_rules[Op.FLOOR] = _ufunc(np.floor)
eval_rules[Op.CEIL] = _ufunc(np.ceil)
eval_rules[Op.ROUND] = _ufunc(np.round)        # half to even
eval_rules[Op.NOT] = _ufunc(np.invert)         # logical on bool, bitwise on integers
eval_rules[Op.IS_FINITE] = _ufunc(np.isfinite)


def _convert(instr, x):
    if instr.dtype == dtypes.BOOL:
        return x != 0          # NaN converts to True
    if dtypes.is_complex(x.dtype) and not dtypes.is_complex(instr.dtype):
        x = x.real             # as NumPy's astype (which warns), the imaginary part goes
    if dtypes.is_float(x.dtype) and dtypes.is_integer(instr.dtype):
        return float_to_int(x, instr.dtype)
    return x.astype(instr.dtype)


def float_to_int(x, dtype):
    """Float -> integer for every value, NaN and out-of-range included, as NumPy gives it
    on x86-64 (its C casts): int64 and int32 truncate as cvtt does (NaN and out-of-range
    give the type's minimum); narrower types keep the low bits of the int32 conversion,
    uint32 those of the int64 one; uint64 converts x - 2**63 for x >= 2**63 and sets the
    top bit back. bfloat16 follows ml_dtypes. Written out rather than left to astype:
    NumPy's contiguous float -> uint32 loop (AVX-512) differs from its scalar cast on
    NaN and out-of-range values, so astype's answer depends on the layout."""
    dt = np.dtype(dtype)
    x = np.asarray(x)
    if dtypes.is_bfloat16(x.dtype):
        return _bfloat16_to_int(x.astype(np.float32), dt)
    if x.dtype.itemsize < 4:
        x = x.astype(np.float32)      # exact; NumPy converts half through float
    if dt == np.uint64:
        top = x.dtype.type(2.0 ** 63)
        with np.errstate(invalid="ignore"):
            high = x >= top
            bits = _truncate(np.where(high, x - top, x), 64).view(np.uint64)
        return np.where(high, bits ^ np.uint64(1 << 63), bits)
    wide = 64 if dt.itemsize == 8 or dt == np.uint32 else 32
    return _truncate(x, wide).astype(dt)   # integer narrowing keeps the low bits


def _truncate(x, bits):
    """cvtt* on x86: toward zero; NaN and anything outside the signed `bits`-bit range
    give the "integer indefinite", the type's minimum."""
    limit = 2.0 ** (bits - 1)
    itype = np.dtype(np.int64 if bits == 64 else np.int32)
    with np.errstate(invalid="ignore"):
        inside = (x >= -limit) & (x < limit)
        fitted = np.where(inside, x, _zero(x.dtype)).astype(itype)
    return np.where(inside, fitted, itype.type(np.iinfo(itype).min))


def _bfloat16_to_int(x, dt):
    """ml_dtypes' bfloat16 casts: toward zero where the result fits `dt`, else 0 (NaN
    too)."""
    lo, hi = int_cast_bounds(dt)
    t = np.trunc(x)
    with np.errstate(invalid="ignore"):
        fits = (t >= lo) & (t < hi)
        return np.where(fits, np.where(fits, t, 0).astype(dt), dt.type(0))


def int_cast_bounds(dtype):
    """(lo, hi): integer `dtype` holds the integers n with lo <= n < hi (powers of two or
    zero, so exact in every float type)."""
    info = np.iinfo(dtype)
    return float(info.min), float(info.max) + 1.0


eval_rules[Op.CONVERT] = _convert
for _op, _fn in ((Op.SINH, np.sinh), (Op.COSH, np.cosh), (Op.ASIN, np.arcsin),
                 (Op.ACOS, np.arccos), (Op.ATAN, np.arctan), (Op.ASINH, np.arcsinh),
                 (Op.ACOSH, np.arccosh), (Op.ATANH, np.arctanh)):
    eval_rules[_op] = _layout_free(_fn)
eval_rules[Op.REAL] = _ufunc(np.real)
eval_rules[Op.IMAG] = _ufunc(np.imag)
eval_rules[Op.CONJ] = _ufunc(np.conjugate)


def _complex(instr, re, im):
    out = np.empty(re.shape, instr.dtype)
    out.real, out.imag = re, im     # not re + 1j*im: that turns (inf, 0) into (inf, nan)
    return out


eval_rules[Op.COMPLEX] = _complex


# -- elementwise binary

eval_rules[Op.ADD] = _ufunc(np.add)            # bool: logical or
eval_rules[Op.SUB] = _ufunc(np.subtract)
eval_rules[Op.MUL] = _ufunc(np.multiply)       # bool: logical and


def _div(instr, x, y):
    if dtypes.is_inexact(x.dtype):
        return np.divide(x, y)
    # Integers: C division, truncating toward zero; x/0 == 0; INT_MIN/-1 wraps.
    # Divisors 0 and -1 are answered directly so NumPy never sees them.
    special = (y == 0) | (y == -1) if dtypes.is_signed(x.dtype) else (y == 0)
    safe = np.where(special, _one(y.dtype), y)
    # x - fmod(x, y) is an exact multiple of y, so floor division is truncation.
    quotient = np.floor_divide(np.subtract(x, np.fmod(x, safe)), safe)
    quotient = np.where(y == 0, _zero(x.dtype), quotient)
    if dtypes.is_signed(x.dtype):
        quotient = np.where(y == -1, np.negative(x), quotient)
    return quotient


eval_rules[Op.DIV] = _div


def _rem(instr, x, y):
    if dtypes.is_float(x.dtype):
        return np.fmod(x, y)
    # Integers: the dividend's sign; x%0 == 0 and x%-1 == 0. Both are x%1,
    # which also keeps INT_MIN % -1 away from the hardware.
    special = (y == 0) | (y == -1) if dtypes.is_signed(x.dtype) else (y == 0)
    return np.fmod(x, np.where(special, _one(y.dtype), y))


eval_rules[Op.REM] = _rem


def _pow(instr, x, y):
    if dtypes.is_inexact(x.dtype):
        return _float_pow(x, y)
    if not dtypes.is_signed(x.dtype):
        return np.power(x, y)          # unsigned: wraps on overflow
    # Signed integers: NumPy raises on negative exponents; we define x**-n as the
    # integer part of 1/x**n: 1 for x == 1, +-1 for x == -1 by parity, else 0.
    negative = y < 0
    positive_part = np.power(x, np.where(negative, _zero(y.dtype), y))
    one, zero = _one(x.dtype), _zero(x.dtype)
    minus_one = np.negative(one)
    odd = np.bitwise_and(y, _one(y.dtype)) == 1
    reciprocal = np.where(x == 1, one,
                          np.where(x == -1, np.where(odd, minus_one, one), zero))
    return np.where(negative, reciprocal, positive_part)


eval_rules[Op.POW] = _pow


def _float_pow(x, y):
    """pow as eager NumPy computes `x ** c` for a scalar c: exponents 2, 1, 0.5, -1
    are x*x, x, sqrt(x), 1/x exactly (NumPy's fast paths), any other is np.power on
    contiguous operands. Complex x has the fast paths of `z ** 2`, `z ** 0.5` and
    `z ** -1` (np.reciprocal). Defined per element, so no layout can change a bit."""
    x, y = _contiguous(x), _contiguous(y)
    out = np.power(x, y)
    one = _one(x.dtype)
    if dtypes.is_complex(x.dtype):
        paths = ((2, lambda: np.multiply(x, x)), (0.5, lambda: np.sqrt(x)),
                 (-1, lambda: np.reciprocal(x)))
    else:
        paths = ((2, lambda: np.multiply(x, x)), (1, lambda: x),
                 (0.5, lambda: np.sqrt(x)), (-1, lambda: np.divide(one, x)))
    for exponent, value in paths:
        hit = y == exponent
        if hit.any():
            out = np.where(hit, value(), out)
    return out
eval_rules[Op.MAX] = _ufunc(np.maximum)        # NaN-propagating
eval_rules[Op.MIN] = _ufunc(np.minimum)
eval_rules[Op.ATAN2] = _layout_free(np.arctan2)
eval_rules[Op.AND] = _ufunc(np.bitwise_and)    # logical on bool
eval_rules[Op.OR] = _ufunc(np.bitwise_or)
eval_rules[Op.XOR] = _ufunc(np.bitwise_xor)

_COMPARE_UFUNCS = {"EQ": np.equal, "NE": np.not_equal, "LT": np.less,
                   "LE": np.less_equal, "GT": np.greater, "GE": np.greater_equal}


def _compare(instr, x, y):
    return _COMPARE_UFUNCS[instr.attrs["direction"]](x, y)


eval_rules[Op.COMPARE] = _compare


# -- elementwise n-ary

def _select(instr, pred, on_true, on_false):
    return np.where(pred, on_true, on_false)


eval_rules[Op.SELECT] = _select


def _clamp(instr, lo, x, hi):
    return np.minimum(np.maximum(x, lo), hi)


eval_rules[Op.CLAMP] = _clamp


# -- data movement

def _broadcast_in_dim(instr, x):
    shape, dims = instr.attrs["shape"], instr.attrs["dims"]
    placed = [1] * len(shape)
    for size, out_dim in zip(x.shape, dims):
        placed[out_dim] = size
    return np.broadcast_to(x.reshape(placed), shape)


eval_rules[Op.BROADCAST_IN_DIM] = _broadcast_in_dim


def _reshape(instr, x):
    return np.reshape(x, instr.attrs["shape"])


eval_rules[Op.RESHAPE] = _reshape


def _transpose(instr, x):
    return np.transpose(x, instr.attrs["perm"])


eval_rules[Op.TRANSPOSE] = _transpose


def _slice(instr, x):
    a = instr.attrs
    return x[tuple(slice(*bounds) for bounds in zip(a["start"], a["limit"], a["strides"]))]


eval_rules[Op.SLICE] = _slice


def _pad(instr, x, value):
    a = instr.attrs
    # Pad by the positive parts of low/high, then crop by the negative parts.
    grow_lo = [max(lo, 0) for lo in a["low"]]
    grow_hi = [max(hi, 0) for hi in a["high"]]
    spread = [d + max(d - 1, 0) * it for d, it in zip(x.shape, a["interior"])]
    full_shape = [lo + n + hi for lo, n, hi in zip(grow_lo, spread, grow_hi)]
    full = np.full(full_shape, value, dtype=x.dtype)
    full[tuple(slice(lo, lo + n, it + 1)
               for lo, n, it in zip(grow_lo, spread, a["interior"]))] = x
    return full[tuple(slice(max(-lo, 0), size - max(-hi, 0))
                      for lo, hi, size in zip(a["low"], a["high"], full_shape))]


eval_rules[Op.PAD] = _pad


def _concatenate(instr, *xs):
    return np.concatenate(xs, axis=instr.attrs["dim"])


eval_rules[Op.CONCATENATE] = _concatenate


def _reverse(instr, x):
    return np.flip(x, axis=instr.attrs["dims"])


eval_rules[Op.REVERSE] = _reverse


def _clamped_window(starts, sizes, shape):
    """Slices for a window of `sizes` at `starts`, moved so it fits in `shape`."""
    return tuple(slice(b, b + n) for b, n in (
        (min(max(int(s), 0), d - n), n) for s, n, d in zip(starts, sizes, shape)))


def _dynamic_slice(instr, x, *starts):
    return x[_clamped_window(starts, instr.attrs["sizes"], x.shape)]


eval_rules[Op.DYNAMIC_SLICE] = _dynamic_slice


def _dynamic_update_slice(instr, x, update, *starts):
    out = x.copy()
    out[_clamped_window(starts, update.shape, x.shape)] = update
    return out


eval_rules[Op.DYNAMIC_UPDATE_SLICE] = _dynamic_update_slice


def _as_index(idx):
    """Indices as int64; uint64 values past int64 are out of range anyway."""
    if idx.dtype == np.uint64:
        idx = np.minimum(idx, np.uint64(np.iinfo(np.int64).max))
    return idx.astype(np.int64)


def _gather(instr, x, idx):
    axis = instr.attrs["axis"]
    # An empty axis has no index to clamp to: np.take raises unless idx is empty too.
    clipped = np.clip(_as_index(idx), 0, max(x.shape[axis] - 1, 0))
    return np.take(x, clipped, axis=axis)


eval_rules[Op.GATHER] = _gather

_SCATTER_UFUNCS = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}


def _scatter(instr, x, idx, upd):
    axis, mode = instr.attrs["axis"], instr.attrs["mode"]
    out = x.copy()
    target = np.moveaxis(out, axis, 0)     # a view: writes land in out
    flat = _as_index(idx).reshape(-1)
    rows = np.moveaxis(upd.reshape(x.shape[:axis] + flat.shape + x.shape[axis + 1:]), axis, 0)
    inside = (flat >= 0) & (flat < x.shape[axis])
    flat, rows = flat[inside], rows[inside]
    if mode == "set":
        # NumPy does not promise which duplicate wins a fancy assignment, so pick
        # each index's last update explicitly.
        targets, first_from_end = np.unique(flat[::-1], return_index=True)
        target[targets] = rows[len(flat) - 1 - first_from_end]
    else:
        _SCATTER_UFUNCS[mode].at(target, flat, rows)   # duplicates combine in order
    return out


eval_rules[Op.SCATTER] = _scatter


# -- reductions

def _reduces_empty(x, dims):
    return any(x.shape[d] == 0 for d in dims)


def _reduce_sum(instr, x):
    return np.sum(x, axis=instr.attrs["dims"], dtype=x.dtype)    # pairwise, as NumPy


eval_rules[Op.REDUCE_SUM] = _reduce_sum


def _reduce_prod(instr, x):
    return np.prod(x, axis=instr.attrs["dims"], dtype=x.dtype)


eval_rules[Op.REDUCE_PROD] = _reduce_prod


def _reduce_max(instr, x):
    dims = instr.attrs["dims"]
    # The identity only where needed: an empty max must not raise.
    extra = {"initial": dtypes.lowest(x.dtype)} if _reduces_empty(x, dims) else {}
    return np.max(x, axis=dims, **extra)


eval_rules[Op.REDUCE_MAX] = _reduce_max


def _reduce_min(instr, x):
    dims = instr.attrs["dims"]
    extra = {"initial": dtypes.highest(x.dtype)} if _reduces_empty(x, dims) else {}
    return np.min(x, axis=dims, **extra)


eval_rules[Op.REDUCE_MIN] = _reduce_min


def _reduce_and(instr, x):
    dims = instr.attrs["dims"]
    if dtypes.is_bool(x.dtype):
        return np.all(x, axis=dims)
    return np.bitwise_and.reduce(x, axis=dims, initial=np.invert(_zero(x.dtype))[()])


eval_rules[Op.REDUCE_AND] = _reduce_and


def _reduce_or(instr, x):
    dims = instr.attrs["dims"]
    if dtypes.is_bool(x.dtype):
        return np.any(x, axis=dims)
    return np.bitwise_or.reduce(x, axis=dims, initial=_zero(x.dtype)[()])


eval_rules[Op.REDUCE_OR] = _reduce_or


def _argmax(instr, x):
    return np.argmax(x, axis=instr.attrs["axis"]).astype(instr.dtype)   # first NaN wins


eval_rules[Op.ARGMAX] = _argmax


def _argmin(instr, x):
    return np.argmin(x, axis=instr.attrs["axis"]).astype(instr.dtype)


eval_rules[Op.ARGMIN] = _argmin


def _scan(accumulate):
    """A cumulative rule from `accumulate(x, axis)`; `reverse` scans from the end."""
    def rule(instr, x):
        axis = instr.attrs["axis"]
        if instr.attrs["reverse"]:
            return np.flip(accumulate(np.flip(x, axis), axis), axis)
        return accumulate(x, axis)
    return rule


eval_rules[Op.CUMSUM] = _scan(lambda x, axis: np.cumsum(x, axis=axis, dtype=x.dtype))
eval_rules[Op.CUMPROD] = _scan(lambda x, axis: np.cumprod(x, axis=axis, dtype=x.dtype))
eval_rules[Op.CUMMAX] = _scan(lambda x, axis: np.maximum.accumulate(x, axis=axis))
eval_rules[Op.CUMMIN] = _scan(lambda x, axis: np.minimum.accumulate(x, axis=axis))


# -- sorting

def _sort_key(x):
    # every float widens exactly to f64, where NumPy's sort already puts NaN last (bf16's
    # own comparisons are ml_dtypes', so they are not trusted with NaN)
    return x.astype(np.float64) if dtypes.is_float(x.dtype) else x


def _sort(instr, *keys):
    """Stable lexicographic sort: stable passes from the least significant key to the
    most, each reordering the permutation found so far (np.lexsort's method)."""
    axis = instr.attrs["dimension"]
    if len(keys) == 1 and keys[0].size:
        # the same answer from NumPy's unstable vectorized sort, where it covers the key
        fast = (fast_sort.stable_argsort if instr.attrs["indices"]
                else fast_sort.sorted_values)(keys[0], axis)
        if fast is not None:
            return fast
    return lexsort(keys, axis, instr.attrs["indices"])


def lexsort(keys, axis, indices):
    """The sort op's definition: permutation (`indices`) or sorted first key."""
    shape = keys[0].shape
    order = np.arange(shape[axis]).reshape([-1 if d == axis else 1 for d in range(len(shape))])
    perm = np.broadcast_to(order, shape).astype(np.int64)
    for key in reversed(keys):
        arranged = np.take_along_axis(_sort_key(key), perm, axis)
        perm = np.take_along_axis(perm, np.argsort(arranged, axis, kind="stable"), axis)
    if indices:
        return perm
    return np.take_along_axis(keys[0], perm, axis)


eval_rules[Op.SORT] = _sort


# -- contraction

def _dot_general(instr, lhs, rhs):
    a = instr.attrs
    lc, rc, lb, rb = a["lhs_contract"], a["rhs_contract"], a["lhs_batch"], a["rhs_batch"]
    lfree = tuple(i for i in range(lhs.ndim) if i not in lc + lb)
    rfree = tuple(i for i in range(rhs.ndim) if i not in rc + rb)
    batch = [lhs.shape[i] for i in lb]
    m = int(np.prod([lhs.shape[i] for i in lfree], dtype=np.int64))
    n = int(np.prod([rhs.shape[i] for i in rfree], dtype=np.int64))
    k = int(np.prod([lhs.shape[i] for i in lc], dtype=np.int64))
    # [batch, free, contract] @ [batch, contract, free] as one np.matmul: for plain
    # `a @ b` these are views of the operands, so BLAS sees what eager NumPy gives it.
    left = np.transpose(lhs, lb + lfree + lc).reshape(batch + [m, k])
    right = np.transpose(rhs, rb + rc + rfree).reshape(batch + [k, n])
    # a stride-0 operand (a broadcast, or a constant the folder made one) is not a layout
    # BLAS takes, so np.matmul would run its own loop and round otherwise: laid out, the
    # product rounds as for the array eager NumPy had there (`np.ones(n) / c @ A`)
    left, right = (np.ascontiguousarray(x) if 0 in x.strides and x.size > 1 else x
                   for x in (left, right))
    if dtypes.is_bfloat16(lhs.dtype):
        # NumPy's bfloat16 matmul returns float32; we round that to bfloat16.
        left, right = left.astype(np.float32), right.astype(np.float32)
    # Integers accumulate (and wrap) in their own type; bool is an or of ands.
    return np.matmul(left, right).reshape(instr.shape).astype(instr.dtype, copy=False)


eval_rules[Op.DOT_GENERAL] = _dot_general


# -- spectral: NumPy's pocketfft, over the trailing dims, the last transformed first
# for FFT/IFFT/RFFT and last for IRFFT (np.fft.*fftn's order), float32 kept float32

_FFTN = {"FFT": np.fft.fftn, "IFFT": np.fft.ifftn, "RFFT": np.fft.rfftn,
         "IRFFT": np.fft.irfftn}


def _fft(instr, x):
    lengths = instr.attrs["fft_length"]
    axes = tuple(range(x.ndim - len(lengths), x.ndim))
    out = _FFTN[instr.attrs["fft_type"]](x, s=lengths, axes=axes)
    return out.astype(instr.dtype, copy=False)


eval_rules[Op.FFT] = _fft


# -- kernels

def _fusion(instr, *xs):
    # The value of a multi-output fusion is the tuple of its body's results.
    body = instr.attrs["body"]
    results = _run(body, _check_args(body, list(xs)))
    return tuple(results) if len(results) > 1 else results[0]


eval_rules[Op.FUSION] = _fusion


def _get_output(instr, value):
    return value[instr.attrs["index"]] if is_multi_output(instr.operands[0]) else value


eval_rules[Op.GET_OUTPUT] = _get_output


# -- control flow

def _while(instr, *carry):
    # The carry's arrays are only read by the regions (results are fresh or views of the
    # arguments), so passing last iteration's results on costs no copies.
    cond, body = instr.attrs["cond"], instr.attrs["body"]
    carry = list(carry)
    while bool(_run(cond, carry)[0]):
        carry = _run(body, carry)
    return tuple(carry) if len(carry) > 1 else carry[0]


def _conditional(instr, index, *args):
    branches = instr.attrs["branches"]
    # as lax.switch: an index out of range runs the nearest branch
    k = min(max(int(index), 0), len(branches) - 1)
    results = _run(branches[k], list(args))
    return tuple(results) if len(results) > 1 else results[0]


eval_rules[Op.WHILE] = _while
eval_rules[Op.CONDITIONAL] = _conditional


# -- collectives: one device alone cannot give them a value; hlo/collectives.py runs
#    a module over all the devices of its axis at once

def _unbound_axis(instr, *values):
    name = instr.attrs["axis_name"]
    raise InterpretError(f"unbound axis name: {name!r}: {instr.op} combines the values "
                         f"of the {instr.attrs['axis_size']} devices along axis {name!r}, "
                         "and a single-device evaluation has only one",
                         hint="run the module under jitlib.pmap (hlo.collectives.evaluate)")


for _op in O_COLLECTIVE:
    eval_rules[_op] = _unbound_axis


eval_rules.update(linalg_reference.RULES)
assert set(eval_rules) == set(Op), sorted(set(Op) - set(eval_rules))


# -- evaluation

def _instr_text(instr, module=None):
    """The instruction's IR line, named as in `module`'s text when there is one."""
    if module is not None:
        names = value_names(module)
    else:
        names = {operand: str(i) for i, operand in enumerate(instr.operands)}
        names[instr] = "out"
    return print_instr(instr, names, short_locs=True)


def _type_of(value):
    dt = value.dtype
    name = dtypes.name(dt) if dtypes.is_supported(dt) else str(dt)
    return f"{name}[{','.join(map(str, value.shape))}]"


def _apply(instr, values, module=None):
    """Run `instr`'s rule on operand values; errors quote the instruction's IR line.

    The value of a multi-output fusion is a tuple of arrays, one per body result.
    """
    try:
        out = eval_rules[instr.op](instr, *values)
    except InterpretError:
        raise   # from inside a fusion body: it already names the body's line
    except Exception as e:
        raise InterpretError(f"evaluating `{_instr_text(instr, module)}` failed: "
                             f"{type(e).__name__}: {e}", location=instr.loc) from e
    multi = is_multi_output(instr)
    outs = [np.asarray(o) for o in (out if multi else [out])]
    for o, (shape, dtype) in zip(outs, output_types(instr)):
        if o.shape != shape or o.dtype != dtype:
            raise InterpretError(f"the {instr.op} rule returned {_type_of(o)} for "
                                 f"`{_instr_text(instr, module)}`", location=instr.loc,
                                 hint="this is a bug in the reference interpreter")
    return tuple(outs) if multi else outs[0]


def evaluate_instr(instr, values):
    """Evaluate one instruction on concrete operand values (as constant folding does).

    `values` holds one array per operand, of the operand's shape and dtype. The
    result may be a read-only view of an operand or of a constant: copy it
    before writing into it.
    """
    values = list(values)
    if len(values) != len(instr.operands):
        raise InterpretError(f"`{_instr_text(instr)}` has {len(instr.operands)} operands, "
                             f"got {len(values)} values", location=instr.loc)
    for i, operand in enumerate(instr.operands):
        values[i] = _operand_value(instr, i, operand, values[i])
    with np.errstate(all="ignore"):
        return _apply(instr, values)


def _operand_value(instr, i, operand, value):
    """`value` as operand `i` of `instr`: an array, or a tuple for a multi-output fusion."""
    types = output_types(operand)
    multi = is_multi_output(operand)
    parts = list(value) if multi and isinstance(value, (tuple, list)) else [value]
    parts = [np.asarray(v) for v in parts]
    got = [(v.shape, v.dtype) for v in parts]
    if got != types:
        want = ", ".join(f"{dtypes.name(d)}[{','.join(map(str, s))}]" for s, d in types)
        raise InterpretError(f"operand {i} of `{_instr_text(instr)}` is "
                             f"{f'({want})' if multi else want}, got a value of "
                             f"{', '.join(map(_type_of, parts))}", location=instr.loc)
    return tuple(parts) if multi else parts[0]


def _check_args(module, args):
    if len(args) != len(module.params):
        want = ", ".join(p.type_str for p in module.params)
        raise InterpretError(f"module {module.name!r} takes {len(module.params)} "
                             f"arguments ({want}), got {len(args)}")
    values = []
    for param, arg in zip(module.params, args):
        value = np.asarray(arg)
        if value.shape != param.shape or value.dtype != param.dtype:
            raise InterpretError(
                f"argument {param.attrs['index']} ({param.attrs['name']}) of module "
                f"{module.name!r} must be {param.type_str}, got {_type_of(value)}",
                hint="convert or reshape the argument; evaluate() does not promote")
        values.append(value)
    return values


def _needs_copy(value, args):
    # A result must not alias an argument or a constant's read-only array, nor be
    # a read-only broadcast view: the caller may write into it.
    return (not value.flags.owndata or not value.flags.writeable
            or any(value is a for a in args))


def evaluate(module, args):
    """Run `module` on `args` (one array per parameter); returns its results as arrays.

    Arguments must match the parameters' shapes and dtypes exactly. Each
    intermediate value is dropped after its last use. Results are fresh,
    writable arrays. A fusion evaluates its body the same way.
    """
    args = _check_args(module, list(args))
    with np.errstate(all="ignore"):
        results = _run(module, args)
    return [np.array(r, order="C") if _needs_copy(r, args) else r for r in results]


def _run(module, args):
    """`module`'s results on checked `args`; they may alias the arguments and constants."""
    order = module.instructions
    last_use = {}
    for step, instr in enumerate(order):
        for operand in instr.operands:
            last_use[operand] = step
    for result in module.results:
        last_use[result] = len(order)
    dead_after = [[] for _ in order]
    for step, instr in enumerate(order):
        end = last_use.get(instr, step)
        if end < len(order):
            dead_after[end].append(instr)

    env = dict(zip(module.params, args))
    for step, instr in enumerate(order):
        if instr not in env:
            env[instr] = _apply(instr, [env[o] for o in instr.operands], module)
        for instr_done in dead_after[step]:
            del env[instr_done]
    return [env[r] for r in module.results]
