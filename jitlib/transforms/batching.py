"""Batching: the Module -> Module transform behind `vmap`.

`batch_module(module, in_axes, size, out_axes)` turns a per-example Module into one
that runs `size` examples at once. A parameter with an int in `in_axes` gets a batch
dimension of `size` at that axis; `None` leaves it as it is, shared by every example.
Each result gets its batch dimension at its `out_axes` entry.

Inside the transform every value is either *unbatched* (one value, the same for every
example) or *batched* with the batch dimension at axis 0. The axes the caller asked
for are met only at the boundary: parameters are transposed to axis 0 on the way in,
results moved to their out axis on the way out. Rules therefore see one layout.

`batch_rules[op](instr, args, flags, size)` rewrites one instruction whose operands
include at least one batched value: `args` are the rewritten operands (a batched one
has shape `(size,) + per-example shape`), `flags` says which are batched, and the rule
returns the batched result, batch dimension at axis 0. An instruction with no batched
operand is rebuilt as it is. Instructions that do not depend on the Module's own
parameters (constants, values captured from an enclosing trace) are kept unchanged.

The gather, scatter and dynamic-slice rules live in `batching_indexing.py`; the loop
and conditional rules in `batching_control.py`.
"""
import itertools

import numpy as np

from jitlib import errors
from jitlib.fusion.rewrite import rebuild
from jitlib.hlo import build, dtypes
from jitlib.hlo import ops as O
from jitlib.hlo.ir import Module, is_multi_output
from jitlib.hlo.ops import Op
from jitlib.transforms.core import depends_on_params

batch_rules = {}

# A leaf has no operands, so it is never batched: no rule needed.
NEVER_BATCHED = O.LEAF

_module_ids = itertools.count()


def batch_module(module, in_axes, size, out_axes):
    """`module` mapped over `size` examples; see the module docstring.

    `in_axes`: per parameter, an axis of the batched argument or None. `out_axes`: per
    result, an axis of the batched result, or None for a result that must not vary
    across examples. Axes may be negative; callers check their range (`vmap` does, with
    a message for the user).
    """
    k = next(_module_ids)
    params, args, flags = [], [], []
    for p, axis in zip(module.params, in_axes):
        axis = _normalize(axis, p.ndim + 1)
        shape = p.shape if axis is None else _insert(p.shape, axis, size)
        # A fresh name: an interned parameter equal to an outer one would be that one.
        new = build.parameter(p.attrs["index"], shape, p.dtype,
                              f"{p.attrs['name']}_v{k}", loc=p.loc)
        params.append(new)
        with build.locations(lambda: p.loc):
            args.append(new if axis is None else move_axis(new, axis, 0))
        flags.append(axis is not None)
    values = batch_into(module, args, flags, size)
    results = []
    for r, (value, is_batched), axis in zip(module.results, values, out_axes):
        with build.locations(lambda: r.loc):
            results.append(_place_result(value, is_batched, _normalize(axis, r.ndim + 1),
                                         size, r))
    return Module(f"vmap_{module.name}", params, results)


def _place_result(value, is_batched, axis, size, result):
    if axis is None:
        if is_batched:
            raise errors.JitlibTypeError(
                "vmap has a mapped output but out_axes is None for it", location=result.loc,
                hint="give that output an int out_axes, or return a value that does not "
                     "depend on the mapped arguments")
        return value
    return move_axis(value if is_batched else broadcast_batch(value, size), 0, axis)


def batch_into(module, args, flags, size):
    """The values of `module`'s results, built in the current IR, given rewritten
    arguments: a list of `(value, is_batched)`, one per result."""
    live = depends_on_params(module)
    env = dict(zip(module.params, args))
    is_batched = dict(zip(module.params, flags))
    for instr in module.instructions:
        if instr in env:
            continue
        if instr not in live:   # a constant or a captured value: the same for every example
            env[instr], is_batched[instr] = instr, False
            continue
        new_args = [env[o] for o in instr.operands]
        flags = [is_batched[o] for o in instr.operands]
        if not any(flags):
            env[instr], is_batched[instr] = rebuild(instr, new_args), False
            continue
        rule = batch_rules.get(instr.op)
        if rule is None:
            raise errors.UnsupportedError(
                f"vmap rule for '{instr.op}' not implemented", location=instr.loc,
                hint="compute this value outside vmap, or loop over the examples")
        with build.locations(lambda: instr.loc):
            env[instr], is_batched[instr] = rule(instr, new_args, flags, size), True
    return [(env[r], is_batched[r]) for r in module.results]


# -- helpers the rules share

def _normalize(axis, rank):
    """A possibly negative axis of a value of `rank` dims, as 0..rank-1 (None stays)."""
    if axis is None:
        return None
    if not -rank <= axis < rank:
        raise ValueError(f"axis {axis} is out of range for rank {rank}")
    return axis % rank


def _insert(shape, axis, size):
    return shape[:axis] + (size,) + shape[axis:]


def move_axis(x, src, dst):
    """`x` with its axis `src` moved to position `dst`, the others in order."""
    order = [d for d in range(x.ndim) if d != src]
    order.insert(dst, src)
    return build.transpose(x, order)


def broadcast_batch(x, size):
    """An unbatched value repeated for every example: a batch dimension at axis 0."""
    return build.broadcast_in_dim(x, (size,) + x.shape, range(1, x.ndim + 1))


def ensure_batched(x, is_batched, size):
    return x if is_batched else broadcast_batch(x, size)


def shift(axes):
    """Per-example axes as axes of the batched value."""
    return tuple(a + 1 for a in axes)


def _with(instr, args, **attrs):
    return build.make(instr.op, args, {**instr.attrs, **attrs})


# -- elementwise: every operand gets the batch dimension

def _elementwise(instr, args, flags, size):
    full = (size,) + instr.shape
    out = []
    for x, b in zip(args, flags):
        if b and x.shape != full:          # a batched scalar bound of clamp
            x = build.broadcast_in_dim(x, full, (0,))
        elif not b and (x.shape == instr.shape or instr.op is not Op.CLAMP):
            x = broadcast_batch(x, size)
        out.append(x)                      # an unbatched scalar clamp bound stays scalar
    return _with(instr, out)


for _op in O.ELEMENTWISE:
    batch_rules[_op] = _elementwise


# -- data movement

def _broadcast_in_dim(instr, args, flags, size):
    (x,) = args
    return build.broadcast_in_dim(x, (size,) + instr.attrs["shape"],
                                  (0,) + shift(instr.attrs["dims"]))


batch_rules[Op.BROADCAST_IN_DIM] = _broadcast_in_dim


def _reshape(instr, args, flags, size):
    return build.reshape(args[0], (size,) + instr.shape)


batch_rules[Op.RESHAPE] = _reshape


def _transpose(instr, args, flags, size):
    return build.transpose(args[0], (0,) + shift(instr.attrs["perm"]))


batch_rules[Op.TRANSPOSE] = _transpose


def _slice(instr, args, flags, size):
    a = instr.attrs
    return build.slice(args[0], (0,) + a["start"], (size,) + a["limit"], (1,) + a["strides"])


batch_rules[Op.SLICE] = _slice


def _pad(instr, args, flags, size):
    x, value = args
    x_batched, value_batched = flags
    a = instr.attrs
    low, high, interior = (0,) + a["low"], (0,) + a["high"], (0,) + a["interior"]
    x = ensure_batched(x, x_batched, size)
    if not value_batched:
        return build.pad(x, value, low, high, interior)
    # One pad value per example: pad with anything, then select where the padding went.
    filler = build.constant(np.zeros((), x.dtype))
    padded = build.pad(x, filler, low, high, interior)
    inside = build.pad(build.full(True, instr.operands[0].shape, dtypes.BOOL),
                       build.constant(False, dtypes.BOOL), a["low"], a["high"], a["interior"])
    values = build.broadcast_in_dim(value, padded.shape, (0,))
    return build.select(broadcast_batch(inside, size), padded, values)


batch_rules[Op.PAD] = _pad


def _concatenate(instr, args, flags, size):
    xs = [ensure_batched(x, b, size) for x, b in zip(args, flags)]
    return build.concatenate(xs, instr.attrs["dim"] + 1)


batch_rules[Op.CONCATENATE] = _concatenate


def _reverse(instr, args, flags, size):
    return build.reverse(args[0], shift(instr.attrs["dims"]))


batch_rules[Op.REVERSE] = _reverse


# -- reductions and scans: the per-example axes move up by one

def _reduce(instr, args, flags, size):
    return build.reduce(instr.op, args[0], shift(instr.attrs["dims"]))


for _op in O.REDUCE:
    batch_rules[_op] = _reduce


def _axis_op(instr, args, flags, size):
    return _with(instr, args, axis=instr.attrs["axis"] + 1)


for _op in O.ARG_REDUCE | O.CUMULATIVE:
    batch_rules[_op] = _axis_op


def _sort(instr, args, flags, size):
    # every key gets the example axis, so the sort runs along the shifted dimension
    keys = [ensure_batched(x, b, size) for x, b in zip(args, flags)]
    return _with(instr, keys, dimension=instr.attrs["dimension"] + 1)


batch_rules[Op.SORT] = _sort


def _fft(instr, args, flags, size):
    # the transform acts on the trailing dims: the example axis leads, untouched
    return _with(instr, [ensure_batched(args[0], flags[0], size)])


batch_rules[Op.FFT] = _fft


# -- linear algebra: the example axis is one more leading batch dim

def _linalg(instr, args, flags, size):
    return _with(instr, [ensure_batched(x, b, size) for x, b in zip(args, flags)])


for _op in O.LINALG:
    batch_rules[_op] = _linalg


# -- contraction

def _dot_general(instr, args, flags, size):
    lhs, rhs = args
    lhs_batched, rhs_batched = flags
    a = instr.attrs
    lc, rc, lb, rb = a["lhs_contract"], a["rhs_contract"], a["lhs_batch"], a["rhs_batch"]
    p = dict(precision=a.get("precision"))
    if lhs_batched and rhs_batched:
        # Both vary: the example axis becomes the first dot batch dimension.
        return build.dot_general(lhs, rhs, shift(lc), shift(rc), (0,) + shift(lb),
                                 (0,) + shift(rb), **p)
    if lhs_batched:
        # The example axis is lhs's first free dim: it lands after the dot batch dims.
        out = build.dot_general(lhs, rhs, shift(lc), rc, shift(lb), rb, **p)
        return move_axis(out, len(lb), 0)
    # rhs's first free dim: after the batch dims and lhs's free dims.
    out = build.dot_general(lhs, rhs, lc, shift(rc), lb, shift(rb), **p)
    lhs_free = lhs.ndim - len(lc) - len(lb)
    return move_axis(out, len(lb) + lhs_free, 0)


batch_rules[Op.DOT_GENERAL] = _dot_general


# -- kernels: a fusion's body is batched inline; the optimizer fuses the result again

def _fusion(instr, args, flags, size):
    values = batch_into(instr.attrs["body"], args, flags, size)
    outs = [ensure_batched(v, b, size) for v, b in values]
    return tuple(outs) if is_multi_output(instr) else outs[0]


batch_rules[Op.FUSION] = _fusion


def _get_output(instr, args, flags, size):
    (value,) = args
    return value[instr.attrs["index"]] if isinstance(value, tuple) else value


batch_rules[Op.GET_OUTPUT] = _get_output


def _collective(instr, args, flags, size):
    # vmap over a named axis (JAX's axis_name= on vmap) would give these a meaning;
    # until then a batched collective is refused rather than given a wrong one
    raise errors.UnsupportedError(
        f"vmap of {instr.op} over axis {instr.attrs['axis_name']!r} is not supported yet",
        hint="apply vmap outside the pmap'ed function, or inside it to code "
             "without collectives")


for _op in O.COLLECTIVE - O.LEAF:
    batch_rules[_op] = _collective


from jitlib.transforms import batching_indexing  # noqa: E402,F401  (registers its rules)
from jitlib.transforms import batching_control  # noqa: E402  (loops and conditionals)

batching_control.register()

assert set(batch_rules) | NEVER_BATCHED == set(Op), \
    sorted(set(Op) - set(batch_rules) - NEVER_BATCHED)
