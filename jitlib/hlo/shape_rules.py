"""Typing rules: for each op, the result (shape, dtype) from operands and attributes.

The builder runs these to construct instructions; the verifier runs them again
to check a parsed or rewritten module. A rule raises `IRTypeError` naming the op
and the offending operand types.
"""
import numpy as np

from jitlib.hlo import dtypes
from jitlib.hlo import ops as O
from jitlib.hlo.ir import Module, all_ints, is_multi_output, result_module
from jitlib.hlo.ops import Op


class IRTypeError(TypeError):
    """An op's operands or attributes do not type-check."""


def _type(x):
    if is_multi_output(x):
        return "(" + ", ".join(r.type_str for r in result_module(x).results) + ")"
    return x.type_str


def _fail(op, operands, why):
    types = ", ".join(_type(x) for x in operands)
    raise IRTypeError(f"{Op(op).value}({types}): {why}")


def _check_axes(op, operands, axes, ndim, what="dims"):
    if len(set(axes)) != len(axes) or any(not 0 <= a < ndim for a in axes):
        _fail(op, operands, f"{what}={tuple(axes)} must be distinct and in [0, {ndim})")


def _typed(op, operands, attrs):
    # parameter, constant, iota: the type is an attribute.
    if op is Op.CONSTANT:
        lit = attrs["value"]
        return lit.shape, lit.dtype
    shape = tuple(attrs["shape"])
    if any(d < 0 for d in shape):
        _fail(op, operands, f"negative dimension in {shape}")
    if op is Op.IOTA and not 0 <= attrs["dimension"] < max(len(shape), 1):
        _fail(op, operands, f"iota dimension {attrs['dimension']} out of range")
    return shape, dtypes.canonicalize(attrs["dtype"])


def _unary(op, operands, attrs):
    (x,) = operands
    if op is Op.CONVERT:
        return x.shape, dtypes.canonicalize(attrs["dtype"])
    if op in O.COMPLEX_ONLY and not dtypes.is_complex(x.dtype):
        _fail(op, operands, "needs a complex operand (real ones are composed of other ops)")
    if op in (Op.REAL, Op.IMAG, Op.CONJ):
        if not dtypes.is_complex(x.dtype):
            _fail(op, operands, "needs a complex operand")
        return x.shape, x.dtype if op is Op.CONJ else dtypes.part_type(x.dtype)
    if dtypes.is_complex(x.dtype):
        if op in O.FLOAT_ONLY and op not in O.COMPLEX_TOO:
            _fail(op, operands, "is not defined on complex operands")
        if op is Op.ABS:
            return x.shape, dtypes.part_type(x.dtype)
    elif op in O.FLOAT_ONLY and not dtypes.is_float(x.dtype):
        _fail(op, operands, "needs a floating-point operand")
    if op in O.BITWISE and dtypes.is_inexact(x.dtype):
        _fail(op, operands, "needs a bool or integer operand")
    if op in (Op.NEG, Op.ABS, Op.SIGN) and dtypes.is_bool(x.dtype):
        _fail(op, operands, "is not defined on bool")
    if op is Op.IS_FINITE:
        return x.shape, dtypes.BOOL
    return x.shape, x.dtype


def _binary(op, operands, attrs):
    x, y = operands
    if x.shape != y.shape or x.dtype != y.dtype:
        _fail(op, operands, "operands must have the same shape and dtype "
              "(broadcast and convert explicitly)")
    if op is Op.COMPARE:
        if attrs.get("direction") not in O.COMPARE_DIRECTIONS:
            _fail(op, operands, f"direction must be one of {O.COMPARE_DIRECTIONS}")
        if dtypes.is_complex(x.dtype) and attrs["direction"] not in ("EQ", "NE"):
            _fail(op, operands, "complex values compare only for EQ and NE")
        return x.shape, dtypes.BOOL
    if op is Op.COMPLEX:
        if x.dtype not in (np.float32, np.float64):
            _fail(op, operands, "needs f32 or f64 parts")
        return x.shape, dtypes.complex_type(x.dtype)
    if dtypes.is_complex(x.dtype) and op in O.REAL_ONLY:
        _fail(op, operands, "is not defined on complex operands")
    if op in O.BITWISE and dtypes.is_inexact(x.dtype):
        _fail(op, operands, "needs bool or integer operands")
    if op is Op.ATAN2 and not dtypes.is_float(x.dtype):
        _fail(op, operands, "needs floating-point operands")
    if op in (Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.REM, Op.POW) and dtypes.is_bool(x.dtype) \
            and op not in (Op.ADD, Op.MUL):
        _fail(op, operands, "is not defined on bool")
    return x.shape, x.dtype


def _select(op, operands, attrs):
    pred, a, b = operands
    if pred.dtype != dtypes.BOOL:
        _fail(op, operands, "predicate must be bool")
    if not (pred.shape == a.shape == b.shape) or a.dtype != b.dtype:
        _fail(op, operands, "operands must have the same shape, branches the same dtype")
    return a.shape, a.dtype


def _clamp(op, operands, attrs):
    lo, x, hi = operands
    if dtypes.is_complex(x.dtype):
        _fail(op, operands, "is not defined on complex operands")
    for bound in (lo, hi):
        if bound.dtype != x.dtype or bound.shape not in ((), x.shape):
            _fail(op, operands, "bounds must be scalars or match the operand's shape and dtype")
    return x.shape, x.dtype


def _broadcast_in_dim(op, operands, attrs):
    (x,) = operands
    shape, dims = tuple(attrs["shape"]), tuple(attrs["dims"])
    if len(dims) != x.ndim:
        _fail(op, operands, f"dims={dims} must name one output dim per operand dim")
    _check_axes(op, operands, dims, len(shape))
    if list(dims) != sorted(dims):
        _fail(op, operands, f"dims={dims} must be increasing")
    for d, out_d in zip(x.shape, dims):
        if d != 1 and d != shape[out_d]:
            _fail(op, operands, f"operand dim of size {d} cannot broadcast to {shape[out_d]}")
    return shape, x.dtype


def _reshape(op, operands, attrs):
    (x,) = operands
    shape = tuple(attrs["shape"])
    if any(d < 0 for d in shape) or int(np.prod(shape, dtype=np.int64)) != x.size:
        _fail(op, operands, f"cannot reshape {x.size} elements to {shape}")
    return shape, x.dtype


def _transpose(op, operands, attrs):
    (x,) = operands
    perm = tuple(attrs["perm"])
    if sorted(perm) != list(range(x.ndim)):
        _fail(op, operands, f"perm={perm} is not a permutation of {x.ndim} dims")
    return tuple(x.shape[p] for p in perm), x.dtype


def _slice(op, operands, attrs):
    (x,) = operands
    start, limit, strides = (tuple(attrs[k]) for k in ("start", "limit", "strides"))
    if not len(start) == len(limit) == len(strides) == x.ndim:
        _fail(op, operands, "start, limit and strides need one entry per dim")
    out = []
    for d, s, l, st in zip(x.shape, start, limit, strides):
        if not (0 <= s <= l <= d) or st < 1:
            _fail(op, operands, f"bad slice start={start} limit={limit} strides={strides}")
        out.append(-(-(l - s) // st))
    return tuple(out), x.dtype


def _pad(op, operands, attrs):
    x, value = operands
    low, high, interior = (tuple(attrs[k]) for k in ("low", "high", "interior"))
    if value.shape != () or value.dtype != x.dtype:
        _fail(op, operands, "padding value must be a scalar of the operand's dtype")
    if not len(low) == len(high) == len(interior) == x.ndim or any(i < 0 for i in interior):
        _fail(op, operands, "low, high, interior need one entry per dim; interior >= 0")
    out = []
    for d, lo, hi, it in zip(x.shape, low, high, interior):
        n = lo + hi + d + max(d - 1, 0) * it
        if n < 0:
            _fail(op, operands, "padding removes more than the whole dimension")
        out.append(n)
    return tuple(out), x.dtype


def _concatenate(op, operands, attrs):
    dim = attrs["dim"]
    if not operands:
        _fail(op, operands, "needs at least one operand")
    first = operands[0]
    _check_axes(op, operands, (dim,), first.ndim, "dim")
    for x in operands[1:]:
        if x.dtype != first.dtype or x.ndim != first.ndim or any(
                a != b for i, (a, b) in enumerate(zip(x.shape, first.shape)) if i != dim):
            _fail(op, operands, "operands must agree in dtype and in every dim but dim")
    shape = list(first.shape)
    shape[dim] = sum(x.shape[dim] for x in operands)
    return tuple(shape), first.dtype


def _reverse(op, operands, attrs):
    (x,) = operands
    _check_axes(op, operands, tuple(attrs["dims"]), x.ndim)
    return x.shape, x.dtype


def _check_starts(op, operands, starts):
    for s in starts:
        if s.shape != () or not dtypes.is_integer(s.dtype):
            _fail(op, operands, "start indices must be integer scalars")


def _dynamic_slice(op, operands, attrs):
    x, *starts = operands
    sizes = tuple(attrs["sizes"])
    if len(starts) != x.ndim or len(sizes) != x.ndim:
        _fail(op, operands, "needs one start index and one size per dim")
    _check_starts(op, operands, starts)
    if any(not 0 <= s <= d for s, d in zip(sizes, x.shape)):
        _fail(op, operands, f"sizes={sizes} exceed the operand")
    return sizes, x.dtype


def _dynamic_update_slice(op, operands, attrs):
    x, update, *starts = operands
    if len(starts) != x.ndim or update.ndim != x.ndim or update.dtype != x.dtype:
        _fail(op, operands, "needs an update of the same rank and dtype, one start per dim")
    _check_starts(op, operands, starts)
    if any(u > d for u, d in zip(update.shape, x.shape)):
        _fail(op, operands, "update is larger than the operand")
    return x.shape, x.dtype


def _gather(op, operands, attrs):
    x, idx = operands
    axis = attrs["axis"]
    _check_axes(op, operands, (axis,), x.ndim, "axis")
    if not dtypes.is_integer(idx.dtype):
        _fail(op, operands, "indices must be integers")
    if x.shape[axis] == 0 and idx.size:
        _fail(op, operands, "cannot gather from an empty axis")
    return x.shape[:axis] + idx.shape + x.shape[axis + 1:], x.dtype


def _scatter(op, operands, attrs):
    x, idx, upd = operands
    axis = attrs["axis"]
    _check_axes(op, operands, (axis,), x.ndim, "axis")
    if attrs.get("mode") not in O.SCATTER_MODES:
        _fail(op, operands, f"mode must be one of {O.SCATTER_MODES}")
    if not dtypes.is_integer(idx.dtype):
        _fail(op, operands, "indices must be integers")
    want = x.shape[:axis] + idx.shape + x.shape[axis + 1:]
    if upd.shape != want or upd.dtype != x.dtype:
        _fail(op, operands, f"updates must be {dtypes.name(x.dtype)}{list(want)}")
    return x.shape, x.dtype


def _refuse_complex_order(op, operands, x):
    # complex numbers have no order in the IR; the tracer spells NumPy's lexicographic one
    if dtypes.is_complex(x.dtype) and op in _ORDERED:
        _fail(op, operands, "is not defined on complex operands")


_ORDERED = frozenset({Op.REDUCE_MAX, Op.REDUCE_MIN, Op.ARGMAX, Op.ARGMIN, Op.CUMMAX,
                      Op.CUMMIN, Op.SORT})


def _reduce(op, operands, attrs):
    (x,) = operands
    dims = tuple(attrs["dims"])
    _check_axes(op, operands, dims, x.ndim)
    if op in (Op.REDUCE_AND, Op.REDUCE_OR) and dtypes.is_inexact(x.dtype):
        _fail(op, operands, "needs a bool or integer operand")
    _refuse_complex_order(op, operands, x)
    return tuple(d for i, d in enumerate(x.shape) if i not in dims), x.dtype


def _arg_reduce(op, operands, attrs):
    (x,) = operands
    axis = attrs["axis"]
    _check_axes(op, operands, (axis,), x.ndim, "axis")
    _refuse_complex_order(op, operands, x)
    if x.shape[axis] == 0:
        _fail(op, operands, "attempt to get argmax/argmin of an empty sequence")
    index_dtype = dtypes.canonicalize(attrs["dtype"])
    if not dtypes.is_integer(index_dtype):
        _fail(op, operands, "index dtype must be an integer type")
    return x.shape[:axis] + x.shape[axis + 1:], index_dtype


def _cumulative(op, operands, attrs):
    (x,) = operands
    _check_axes(op, operands, (attrs["axis"],), x.ndim, "axis")
    _refuse_complex_order(op, operands, x)
    return x.shape, x.dtype


def _sort(op, operands, attrs):
    if not operands:
        _fail(op, operands, "sorts at least one key")
    first = operands[0]
    if any(k.shape != first.shape for k in operands):
        _fail(op, operands, "every key must have the same shape")
    _check_axes(op, operands, (attrs["dimension"],), first.ndim, "dimension")
    for k in operands:
        _refuse_complex_order(op, operands, k)
    if attrs["indices"]:
        return first.shape, dtypes.INDEX
    if len(operands) != 1:
        _fail(op, operands, "sorted values come from one key; several give indices=true")
    return first.shape, first.dtype


# -- linear algebra: batch dims lead, the matrix is the last two dims

def _matrix(op, operands, x, square=True):
    if x.dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        _fail(op, operands, "works on f32 or f64 matrices")
    if x.ndim < 2 or (square and x.shape[-1] != x.shape[-2]):
        _fail(op, operands, "needs a " + ("square " if square else "") + "matrix in the "
              "last two dims")
    return x.shape[:-2], x.shape[-2], x.shape[-1]


def _cholesky(op, operands, attrs):
    (x,) = operands
    _matrix(op, operands, x)
    return x.shape, x.dtype


def _triangular_solve(op, operands, attrs):
    a, b = operands
    batch, m, _ = _matrix(op, operands, a)
    _matrix(op, operands, b, square=False)
    if b.dtype != a.dtype or b.shape[:-2] != batch:
        _fail(op, operands, "a and b must have the same dtype and batch dims")
    if b.shape[-2 if attrs["left_side"] else -1] != m:
        _fail(op, operands, "b's " + ("rows" if attrs["left_side"] else "columns")
              + " must match a's order")
    return b.shape, b.dtype


def _decomposition(op, operands, attrs):
    (x,) = operands
    output = attrs["output"]
    batch, m, n = _matrix(op, operands, x, square=op in (Op.LU, Op.EIGH))
    k = min(m, n)
    full = attrs.get("full_matrices", False)
    shapes = {
        Op.LU: dict(lu=x.shape, pivots=batch + (n,), permutation=batch + (n,)),
        Op.QR: dict(q=batch + (m, m if full else k), r=batch + (m if full else k, n)),
        Op.EIGH: dict(values=batch + (n,), vectors=x.shape),
        Op.SVD: dict(u=batch + (m, m if full else k), s=batch + (k,),
                     vh=batch + (n if full else k, n)),
    }[op]
    if output not in shapes:
        _fail(op, operands, f"output={output} is not one of {', '.join(shapes)}")
    return shapes[output], dtypes.INDEX if output in ("pivots", "permutation") else x.dtype


def _dot_general(op, operands, attrs):
    lhs, rhs = operands
    lc, rc = tuple(attrs["lhs_contract"]), tuple(attrs["rhs_contract"])
    lb, rb = tuple(attrs["lhs_batch"]), tuple(attrs["rhs_batch"])
    if lhs.dtype != rhs.dtype:
        _fail(op, operands, "operands must have the same dtype")
    if len(lc) != len(rc) or len(lb) != len(rb):
        _fail(op, operands, "contracting and batch dims must pair up")
    _check_axes(op, operands, lc + lb, lhs.ndim, "lhs dims")
    _check_axes(op, operands, rc + rb, rhs.ndim, "rhs dims")
    for a, b in zip(lc + lb, rc + rb):
        if lhs.shape[a] != rhs.shape[b]:
            _fail(op, operands, f"lhs dim {a} (size {lhs.shape[a]}) does not match "
                                f"rhs dim {b} (size {rhs.shape[b]})")
    lfree = [d for i, d in enumerate(lhs.shape) if i not in lc + lb]
    rfree = [d for i, d in enumerate(rhs.shape) if i not in rc + rb]
    return tuple([lhs.shape[i] for i in lb] + lfree + rfree), lhs.dtype


def _fft(op, operands, attrs):
    (x,) = operands
    kind, lengths = attrs.get("fft_type"), tuple(attrs["fft_length"])
    if kind not in O.FFT_TYPES:
        _fail(op, operands, f"fft_type must be one of {O.FFT_TYPES}")
    if not 1 <= len(lengths) <= min(3, x.ndim) or any(n < 1 for n in lengths):
        _fail(op, operands, f"fft_length={list(lengths)} must give 1 to 3 positive lengths "
                            "of trailing dims")
    k = len(lengths)
    lead, trail = x.shape[:-k], x.shape[-k:]
    real_in = kind == "RFFT"
    if real_in and x.dtype not in (np.float32, np.float64):
        _fail(op, operands, "RFFT needs an f32 or f64 operand")
    if not real_in and not dtypes.is_complex(x.dtype):
        _fail(op, operands, f"{kind} needs a complex operand")
    want = lengths if kind != "IRFFT" else lengths[:-1] + (lengths[-1] // 2 + 1,)
    if trail != want:
        _fail(op, operands, f"the trailing dims must be {list(want)} for {kind} of "
                            f"fft_length={list(lengths)}")
    if kind == "RFFT":
        return lead + lengths[:-1] + (lengths[-1] // 2 + 1,), dtypes.complex_type(x.dtype)
    if kind == "IRFFT":
        return lead + lengths, dtypes.part_type(x.dtype)
    return x.shape, x.dtype


def _fusion(op, operands, attrs):
    body, kind, name = attrs.get("body"), attrs.get("kind"), attrs.get("name")
    if not isinstance(body, Module):
        _fail(op, operands, f"body must be a Module, not {type(body).__name__}")
    if kind not in O.FUSION_KINDS:
        _fail(op, operands, f"kind={kind!r} must be one of {O.FUSION_KINDS}")
    if not isinstance(name, str):
        _fail(op, operands, f"name={name!r} must be a str")
    if len(operands) != len(body.params):
        _fail(op, operands, f"its body takes {len(body.params)} parameters")
    for i, (x, p) in enumerate(zip(operands, body.params)):
        if x.shape != p.shape or x.dtype != p.dtype:
            _fail(op, operands, f"operand {i} is {x.type_str} but body parameter {i} "
                                f"is {p.type_str}")
    if not body.results:
        _fail(op, operands, "its body has no results")
    for i in body.instructions:
        if i.op in O.KERNEL:
            _fail(op, operands, "its body holds a fusion; fusions do not nest")
        if i.op in O.CONTROL:
            _fail(op, operands, f"its body holds a {i.op}; a fusion is straight-line code")
    first = body.results[0]
    return first.shape, first.dtype


def _get_output(op, operands, attrs):
    (f,) = operands
    index = attrs.get("index")
    module = result_module(f)
    if module is None:
        _fail(op, operands, f"operand must be a fusion, loop or conditional, not a {f.op}")
    results = module.results
    if not isinstance(index, int) or not 0 <= index < len(results):
        _fail(op, operands, f"index={index!r} is out of range for {len(results)} result(s)")
    return results[index].shape, results[index].dtype


def _region_takes(op, operands, module, what, types):
    """Fail unless `module` (a region) takes parameters of `types` [(shape, dtype)]."""
    if not isinstance(module, Module):
        _fail(op, operands, f"{what} must be a Module, not {type(module).__name__}")
    got = [(p.shape, p.dtype) for p in module.params]
    if got != list(types):
        _fail(op, operands, f"its {what} takes ({_types(got)}), but it is given "
                            f"({_types(types)})")


def _types(types):
    return ", ".join(f"{dtypes.name(d)}[{','.join(map(str, s))}]" for s, d in types)


def _while(op, operands, attrs):
    cond, body = attrs.get("cond"), attrs.get("body")
    if not operands:
        _fail(op, operands, "a loop carries at least one value")
    carry = [(x.shape, x.dtype) for x in operands]
    _region_takes(op, operands, cond, "cond", carry)
    _region_takes(op, operands, body, "body", carry)
    if len(cond.results) != 1 or cond.results[0].shape != () \
            or cond.results[0].dtype != dtypes.BOOL:
        _fail(op, operands, "its cond must return one bool[]")
    out = [(r.shape, r.dtype) for r in body.results]
    if out != carry:
        _fail(op, operands, f"its body returns ({_types(out)}), not the carry's types "
                            f"({_types(carry)})")
    trip = attrs.get("trip_count")
    if trip is not None and (not isinstance(trip, int) or trip < 0):
        _fail(op, operands, f"trip_count={trip!r} must be an int >= 0")
    return carry[0]


def _conditional(op, operands, attrs):
    branches = attrs.get("branches")
    if not operands or operands[0].shape != () or not (
            operands[0].dtype == dtypes.BOOL or operands[0].dtype == dtypes.INDEX):
        _fail(op, operands, "its first operand, the branch index, must be bool[] or i64[]")
    if not isinstance(branches, tuple) or not branches:
        _fail(op, operands, "branches must be a non-empty tuple of Modules")
    if operands[0].dtype == dtypes.BOOL and len(branches) != 2:
        _fail(op, operands, "a bool index picks between exactly two branches")
    args = [(x.shape, x.dtype) for x in operands[1:]]
    first = None
    for k, branch in enumerate(branches):
        _region_takes(op, operands, branch, f"branch {k}", args)
        out = [(r.shape, r.dtype) for r in branch.results]
        if not out:
            _fail(op, operands, f"its branch {k} has no results")
        if first is None:
            first = out
        elif out != first:
            _fail(op, operands, f"its branch {k} returns ({_types(out)}), branch 0 "
                                f"({_types(first)})")
    return first[0]


def _axis_size(op, operands, attrs):
    n = attrs["axis_size"]
    if n < 1:
        _fail(op, operands, f"axis_size {n} is not positive")
    return n


def _all_reduce(op, operands, attrs):
    (x,) = operands
    _axis_size(op, operands, attrs)
    if dtypes.is_complex(x.dtype) and attrs["reduction"] != "sum":
        _fail(op, operands, "complex values have no order: only reduction=sum")
    return x.shape, x.dtype


def _all_gather(op, operands, attrs):
    (x,) = operands
    n = _axis_size(op, operands, attrs)
    axis = attrs["axis"]
    if not 0 <= axis <= x.ndim:
        _fail(op, operands, f"axis {axis} out of range for a new dim of a {x.ndim}-d value")
    return x.shape[:axis] + (n,) + x.shape[axis:], x.dtype


def _reduce_scatter(op, operands, attrs):
    (x,) = operands
    n = _axis_size(op, operands, attrs)
    axis = attrs["axis"]
    if not 0 <= axis < x.ndim or x.shape[axis] != n:
        _fail(op, operands, f"dim {axis} must exist and have the axis size {n}")
    return x.shape[:axis] + x.shape[axis + 1:], x.dtype


def _collective_permute(op, operands, attrs):
    (x,) = operands
    n = _axis_size(op, operands, attrs)
    pairs = attrs["pairs"]
    for src, dst in pairs:
        if not (0 <= src < n and 0 <= dst < n):
            _fail(op, operands, f"pair ({src}, {dst}) names a device outside 0..{n - 1}")
    for k in (0, 1):
        ends = [p[k] for p in pairs]
        if len(set(ends)) != len(ends):
            _fail(op, operands, f"a device is {'a source' if k == 0 else 'a target'} twice")
    return x.shape, x.dtype


def _axis_index(op, operands, attrs):
    _axis_size(op, operands, attrs)
    return (), np.dtype(np.int32)


RULES = {}
for _op in O.LEAF:
    RULES[_op] = _typed
for _op in O.UNARY:
    RULES[_op] = _unary
for _op in O.BINARY:
    RULES[_op] = _binary
for _op in O.REDUCE:
    RULES[_op] = _reduce
for _op in O.ARG_REDUCE:
    RULES[_op] = _arg_reduce
for _op in O.CUMULATIVE:
    RULES[_op] = _cumulative
RULES.update({
    Op.SELECT: _select, Op.CLAMP: _clamp, Op.BROADCAST_IN_DIM: _broadcast_in_dim,
    Op.RESHAPE: _reshape, Op.TRANSPOSE: _transpose, Op.SLICE: _slice, Op.PAD: _pad,
    Op.CONCATENATE: _concatenate, Op.REVERSE: _reverse, Op.DYNAMIC_SLICE: _dynamic_slice,
    Op.DYNAMIC_UPDATE_SLICE: _dynamic_update_slice, Op.GATHER: _gather, Op.SCATTER: _scatter,
    Op.DOT_GENERAL: _dot_general, Op.FUSION: _fusion, Op.GET_OUTPUT: _get_output,
    Op.WHILE: _while, Op.CONDITIONAL: _conditional, Op.SORT: _sort, Op.FFT: _fft,
    Op.ALL_REDUCE: _all_reduce, Op.ALL_GATHER: _all_gather,
    Op.REDUCE_SCATTER: _reduce_scatter, Op.COLLECTIVE_PERMUTE: _collective_permute,
    Op.AXIS_INDEX: _axis_index,
    Op.CHOLESKY: _cholesky, Op.TRIANGULAR_SOLVE: _triangular_solve, Op.LU: _decomposition,
    Op.QR: _decomposition, Op.EIGH: _decomposition, Op.SVD: _decomposition,
})
assert set(RULES) == set(Op), sorted(set(Op) - set(RULES))

ARITY = {Op.SELECT: 3, Op.CLAMP: 3, Op.PAD: 2, Op.GATHER: 2, Op.SCATTER: 3,
         Op.DOT_GENERAL: 2, Op.GET_OUTPUT: 1}
ARITY.update({op: 0 for op in O.LEAF})
ARITY.update({op: 1 for op in O.UNARY | O.REDUCE | O.ARG_REDUCE | O.CUMULATIVE})
ARITY.update({op: 2 for op in O.BINARY})
ARITY.update({op: 1 for op in O.COLLECTIVE - {Op.AXIS_INDEX}})
ARITY.update({op: 1 for op in O.LINALG - {Op.TRIANGULAR_SOLVE}})
ARITY[Op.TRIANGULAR_SOLVE] = 2
ARITY.update({Op.BROADCAST_IN_DIM: 1, Op.RESHAPE: 1, Op.TRANSPOSE: 1, Op.SLICE: 1,
              Op.REVERSE: 1})
# concatenate, dynamic_slice, dynamic_update_slice, sort and fusion are variadic.


def infer(op, operands, attrs):
    """The (shape, dtype) of `op` applied to `operands` with `attrs`.

    A FUSION's type is its body's first result's; a multi-output fusion is an operand of
    GET_OUTPUT only, which gives the type of the body result it picks.
    """
    if op.__class__ is not Op:
        op = Op(op)
    n = ARITY.get(op)
    if n is not None and len(operands) != n:
        _fail(op, operands, f"takes {n} operands, got {len(operands)}")
    if op is not Op.GET_OUTPUT:
        for i, x in enumerate(operands):
            if is_multi_output(x):
                _fail(op, operands, f"operand {i} is a multi-output {x.op}: "
                                    "use its results through get_output")
    shape, dtype = RULES[op](op, operands, attrs)
    if shape.__class__ is not tuple or not all_ints(shape):
        shape = tuple(int(d) for d in shape)
    return shape, dtypes.canonicalize(dtype)
