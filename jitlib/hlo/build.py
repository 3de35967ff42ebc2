"""The builder: one function per op, each inferring and checking the result type.

Everything that creates IR (the tracer, the parser, passes, transforms) goes
through `make`, so every instruction is well typed by construction.

Source locations: while a trace is active it installs a location source with
`locations(fn)`; each new instruction records where the user's code built it.
Passes that rewrite an instruction pass its `loc` on explicitly. A trace may also keep a
log of every instruction asked for, found or new, with where it was asked for: the
loop roller (jitlib/trace/rolling.py) reads a Python loop's iterations from it.
"""
import contextlib
import threading

import numpy as np

from jitlib.hlo import dtypes
from jitlib.hlo.ir import Instr, Literal, all_ints, is_multi_output
from jitlib.hlo.ops import Op
from jitlib.hlo.shape_rules import infer

_state = threading.local()   # per thread: traces in two threads must not mix locations


@contextlib.contextmanager
def locations(source, log=None):
    """Record `source()` as the location of every instruction built inside; with `log`
    (a list), also append `(instr, loc)` to it for each `make` call. A nested
    `locations` without a log (a pass, a region being closed) logs nothing."""
    saved = getattr(_state, "source", None), getattr(_state, "log", None)
    _state.source, _state.log = source, log
    try:
        yield
    finally:
        _state.source, _state.log = saved


def here():
    """The location instructions built now get (None outside `locations`)."""
    source = getattr(_state, "source", None)
    return source() if source is not None else None


def swap_log(log):
    """Make `log` the one `make` appends to (None: none); returns the one it replaces."""
    saved = getattr(_state, "log", None)
    _state.log = log
    return saved


def make(op, operands=(), attrs=None, loc=None):
    """Build (or find, since instructions are interned) a type-checked instruction."""
    attrs = dict(attrs or {})
    shape, dtype = infer(op, operands, attrs)
    if loc is None:
        source = getattr(_state, "source", None)
        if source is not None:
            loc = source()
    instr = Instr.make(op, shape, dtype, operands, attrs, loc, typed=True)
    log = getattr(_state, "log", None)
    if log is not None:
        log.append((instr, loc))
    return instr


def _ints(xs):
    if xs.__class__ is tuple and all_ints(xs):
        return xs   # the common case, without a generator
    return tuple(int(x) for x in xs)


# -- leaves

def parameter(index, shape, dtype, name=None, loc=None):
    name = name if name is not None else f"p{index}"
    return make(Op.PARAMETER, (), dict(index=int(index), name=str(name), shape=_ints(shape),
                                       dtype=dtypes.name(dtype)), loc)


def constant(value, dtype=None, loc=None):
    """A constant; `value` is anything np.array accepts (scalars stay 0-d)."""
    lit = value if isinstance(value, Literal) else Literal(value, dtype)
    dtypes.canonicalize(lit.dtype)
    return make(Op.CONSTANT, (), dict(value=lit), loc)


def iota(shape, dtype, dimension=0, loc=None):
    return make(Op.IOTA, (), dict(shape=_ints(shape), dtype=dtypes.name(dtype),
                                  dimension=int(dimension)), loc)


# -- elementwise

def unary(op, x, loc=None):
    return make(op, (x,), None, loc)


def binary(op, x, y, loc=None):
    return make(op, (x, y), None, loc)


def compare(x, y, direction, loc=None):
    return make(Op.COMPARE, (x, y), dict(direction=direction), loc)


def convert(x, dtype, loc=None):
    if x.dtype is dtype:   # a canonical dtype already: the tracer's usual call
        return x
    dtype = dtypes.canonicalize(dtype)
    if x.dtype == dtype:
        return x
    return make(Op.CONVERT, (x,), dict(dtype=dtypes.name(dtype)), loc)


def select(pred, on_true, on_false, loc=None):
    return make(Op.SELECT, (pred, on_true, on_false), None, loc)


def clamp(lo, x, hi, loc=None):
    return make(Op.CLAMP, (lo, x, hi), None, loc)


# -- data movement

def broadcast_in_dim(x, shape, dims, loc=None):
    shape, dims = _ints(shape), _ints(dims)
    if x.shape == shape and dims == tuple(range(len(shape))):
        return x
    return make(Op.BROADCAST_IN_DIM, (x,), dict(shape=shape, dims=dims), loc)


def broadcast_to(x, shape, loc=None):
    """NumPy-style broadcast: align trailing dims."""
    shape = _ints(shape)
    offset = len(shape) - x.ndim
    return broadcast_in_dim(x, shape, range(offset, len(shape)), loc)


def reshape(x, shape, loc=None):
    shape = _ints(shape)
    if x.op is Op.RESHAPE:    # row-major reshapes compose: only the last one counts
        x = x.operands[0]
    if x.shape == shape:
        return x
    return make(Op.RESHAPE, (x,), dict(shape=shape), loc)


def transpose(x, perm, loc=None):
    perm = _ints(perm)
    if perm == tuple(range(x.ndim)):
        return x
    return make(Op.TRANSPOSE, (x,), dict(perm=perm), loc)


def slice(x, start, limit, strides=None, loc=None):  # noqa: A001 - the op's name
    strides = _ints(strides) if strides is not None else (1,) * x.ndim
    start, limit = _ints(start), _ints(limit)
    if start == (0,) * x.ndim and limit == x.shape and strides == (1,) * x.ndim:
        return x
    return make(Op.SLICE, (x,), dict(start=start, limit=limit, strides=strides), loc)


def pad(x, value, low, high, interior=None, loc=None):
    interior = _ints(interior) if interior is not None else (0,) * x.ndim
    return make(Op.PAD, (x, value), dict(low=_ints(low), high=_ints(high),
                                        interior=interior), loc)


def concatenate(xs, dim, loc=None):
    xs = _joined_slices(tuple(xs), int(dim))
    if len(xs) == 1:
        return xs[0]
    return make(Op.CONCATENATE, xs, dict(dim=int(dim)), loc)


def _joined_slices(xs, dim):
    """`xs` with each run of adjacent slices of one array along `dim` (np.stack of a loop's
    per-trip rows of its stacked output) joined into one slice: one new instruction a run,
    so joining a thousand rows costs a thousand comparisons, not a thousand slices."""
    if len(xs) < 2 or not any(x.op is Op.SLICE for x in xs):
        return xs
    out, i = [], 0
    while i < len(xs):
        first = j = i
        while j + 1 < len(xs) and _adjacent(xs[j], xs[j + 1], dim):
            j += 1
        if j == first:
            out.append(xs[i])
        else:
            # the run agrees off `dim`, so the joined slice spans its first start to its
            # last limit
            out.append(slice(xs[first].operands[0], xs[first].attrs["start"],
                             xs[j].attrs["limit"]))
        i = j + 1
    return tuple(out)


def _adjacent(a, b, dim):
    if a.op is not Op.SLICE or b.op is not Op.SLICE or a.operands[0] is not b.operands[0]:
        return False
    sa, sb = a.attrs, b.attrs
    ones = (1,) * a.ndim
    if sa["strides"] != ones or sb["strides"] != ones or sa["limit"][dim] != sb["start"][dim]:
        return False
    start_a, start_b, limit_a, limit_b = sa["start"], sb["start"], sa["limit"], sb["limit"]
    return start_a[:dim] == start_b[:dim] and start_a[dim + 1:] == start_b[dim + 1:] \
        and limit_a[:dim] == limit_b[:dim] and limit_a[dim + 1:] == limit_b[dim + 1:]


def reverse(x, dims, loc=None):
    dims = _ints(dims)
    if not dims:
        return x
    return make(Op.REVERSE, (x,), dict(dims=dims), loc)


def dynamic_slice(x, starts, sizes, loc=None):
    return make(Op.DYNAMIC_SLICE, (x, *starts), dict(sizes=_ints(sizes)), loc)


def dynamic_update_slice(x, update, starts, loc=None):
    return make(Op.DYNAMIC_UPDATE_SLICE, (x, update, *starts), None, loc)


def gather(x, indices, axis, loc=None):
    return make(Op.GATHER, (x, indices), dict(axis=int(axis)), loc)


def scatter(x, indices, updates, axis, mode="add", loc=None):
    return make(Op.SCATTER, (x, indices, updates), dict(axis=int(axis), mode=mode), loc)


def take_along(x, indices, axis, loc=None):
    """x[..., indices[..., j, ...], ...] along `axis` (np.take_along_axis), for `indices`
    of x's shape but for that axis: one gather from the flattened x at row-major
    positions."""
    shape, out = x.shape, indices.shape
    if 0 in out:
        return broadcast_in_dim(constant(np.zeros((), x.dtype)), out, (), loc)
    strides = [int(np.prod(shape[d + 1:], dtype=np.int64)) for d in range(len(shape))]
    step = broadcast_in_dim(constant(np.int64(strides[axis])), out, (), loc)
    linear = binary(Op.MUL, convert(indices, dtypes.INDEX, loc), step, loc)
    for d, n in enumerate(out):
        if d != axis and n > 1:
            stride = broadcast_in_dim(constant(np.int64(strides[d])), out, (), loc)
            linear = binary(Op.ADD, linear, binary(Op.MUL, iota(out, dtypes.INDEX, d, loc),
                                                    stride, loc), loc)
    flat = reshape(x, (int(np.prod(shape, dtype=np.int64)),), loc)
    return gather(flat, linear, 0, loc)


# -- reductions

def reduce(op, x, dims, loc=None):
    return make(op, (x,), dict(dims=tuple(sorted(_ints(dims)))), loc)


def arg_reduce(op, x, axis, index_dtype=dtypes.INDEX, loc=None):
    return make(op, (x,), dict(axis=int(axis), dtype=dtypes.name(index_dtype)), loc)


def cumulative(op, x, axis, reverse=False, loc=None):
    return make(op, (x,), dict(axis=int(axis), reverse=bool(reverse)), loc)


def sort(keys, dimension, indices=False, loc=None):
    """Stable sort along `dimension`: the sorted key, or (`indices`) the permutation that
    sorts the keys lexicographically, first key major."""
    return make(Op.SORT, tuple(keys), dict(dimension=int(dimension), indices=bool(indices)),
                loc)


def dot_general(lhs, rhs, lhs_contract, rhs_contract, lhs_batch=(), rhs_batch=(), loc=None,
                precision=None):
    """`precision`: "high" or "default" lets a backend round the products more coarsely
    (ops.PRECISIONS); None or "highest" (no attribute) keeps NumPy's products."""
    attrs = dict(lhs_contract=_ints(lhs_contract), rhs_contract=_ints(rhs_contract),
                 lhs_batch=_ints(lhs_batch), rhs_batch=_ints(rhs_batch))
    if precision not in (None, "highest"):
        attrs["precision"] = precision
    return make(Op.DOT_GENERAL, (lhs, rhs), attrs, loc)



# -- linear algebra (batch dims lead)

def cholesky(x, loc=None):
    """The lower Cholesky factor of x (its lower triangle read); NaN where x is not
    positive definite."""
    return make(Op.CHOLESKY, (x,), {}, loc)


def triangular_solve(a, b, left_side=True, lower=True, transpose_a=False,
                     unit_diagonal=False, loc=None):
    """out with op(a) @ out == b (left_side) or out @ op(a) == b, op(a) = a.T if
    transpose_a; only a's `lower` (or upper) triangle is read."""
    return make(Op.TRIANGULAR_SOLVE, (a, b), dict(
        left_side=bool(left_side), lower=bool(lower), transpose_a=bool(transpose_a),
        unit_diagonal=bool(unit_diagonal)), loc)


def lu(x, output, loc=None):
    """Partially pivoted LU of square x: 'lu' (packed), 'pivots' or 'permutation'."""
    return make(Op.LU, (x,), dict(output=output), loc)


def qr(x, output, full_matrices=False, loc=None):
    return make(Op.QR, (x,), dict(output=output, full_matrices=bool(full_matrices)), loc)


def eigh(x, output, loc=None):
    """Eigenvalues (ascending) or eigenvectors (columns) of symmetric x's lower triangle."""
    return make(Op.EIGH, (x,), dict(output=output), loc)


def svd(x, output, full_matrices=False, loc=None):
    return make(Op.SVD, (x,), dict(output=output, full_matrices=bool(full_matrices)), loc)


def full(value, shape, dtype, loc=None):
    """A scalar constant broadcast to `shape` (kept scalar until broadcast)."""
    return broadcast_in_dim(constant(np.array(value, dtype=dtypes.canonicalize(dtype)),
                                     loc=loc), shape, (), loc)


# -- kernels

def fusion(operands, body, kind, name, loc=None):
    """A kernel running the Module `body` on `operands` (one per body parameter).

    Its value is the body's result; with several results use `outputs` to get them.
    """
    return make(Op.FUSION, tuple(operands), dict(body=body, kind=kind, name=name), loc)


def get_output(fusion_instr, index, loc=None):
    return make(Op.GET_OUTPUT, (fusion_instr,), dict(index=int(index)), loc)


def outputs(fusion_instr, loc=None) -> list:
    """One value per body result: the fusion itself if it has one, else its get_outputs."""
    if not is_multi_output(fusion_instr):
        return [fusion_instr]
    loc = loc if loc is not None else fusion_instr.loc
    n = len(fusion_instr.attrs["body"].results)
    return [get_output(fusion_instr, i, loc) for i in range(n)]


# -- collectives over the named axis of a pmap (hlo/collectives.py gives their meaning)

def all_reduce(x, reduction, axis_name, axis_size, loc=None):
    return make(Op.ALL_REDUCE, (x,), dict(reduction=reduction, axis_name=str(axis_name),
                                          axis_size=int(axis_size)), loc)


def all_gather(x, axis, axis_name, axis_size, loc=None):
    return make(Op.ALL_GATHER, (x,), dict(axis=int(axis), axis_name=str(axis_name),
                                          axis_size=int(axis_size)), loc)


def reduce_scatter(x, axis, axis_name, axis_size, loc=None):
    return make(Op.REDUCE_SCATTER, (x,), dict(axis=int(axis), axis_name=str(axis_name),
                                              axis_size=int(axis_size)), loc)


def collective_permute(x, pairs, axis_name, axis_size, loc=None):
    pairs = tuple((int(s), int(d)) for s, d in pairs)
    return make(Op.COLLECTIVE_PERMUTE, (x,), dict(pairs=pairs, axis_name=str(axis_name),
                                                  axis_size=int(axis_size)), loc)


def axis_index(axis_name, axis_size, loc=None):
    return make(Op.AXIS_INDEX, (), dict(axis_name=str(axis_name), axis_size=int(axis_size)),
                loc)
